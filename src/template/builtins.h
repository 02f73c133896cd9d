// src/template/builtins.h — Jinja filters, tests, Python methods and globals of the subset.
//
// Filters: abs capitalize count d default first float indent int items join last length
//   list lower map max min reject rejectattr replace reverse round safe select selectattr sort
//   string sum title tojson trim unique upper (see docs/chat_templates.md for arguments).
// Tests: boolean callable defined divisibleby eq equalto escaped even false float ge gt in
//   integer iterable le lower lt mapping ne none number odd sameas sequence string true
//   undefined upper == != < <= > >=.
// Methods: str.{strip,lstrip,rstrip,split,rsplit,splitlines,startswith,endswith,upper,lower,
//   title,capitalize,replace,find,count,join,isdigit,isalpha,isspace,...},
//   dict.{items,keys,values,get}.
// Globals: range dict namespace raise_exception strftime_now.
//
// All functions are stateless apart from the Interpreter passed in. Operand errors throw
// ValueError (the interpreter adds the position); raise_exception throws ebb::Error.
#pragma once

#include <string>
#include <string_view>

#include "template/value.h"

namespace ebb::tmpl {

class Interpreter;

// Iterates a value the way Python's iter() does: arrays, object keys, the characters of a string;
// undefined gives nothing. Throws ValueError for anything else.
Value::ArrayData Iterate(const Value& v);

bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);

Value ApplyFilter(Interpreter& in, const std::string& name, const Value& value,
                  const CallArgs& args);
bool ApplyTest(Interpreter& in, const std::string& name, const Value& value, const CallArgs& args);

// A bound method of a str or dict value, or Undefined when `name` is not a method of it.
Value BindMethod(Interpreter& in, const Value& self, const std::string& name);

// The global functions (range, dict, namespace, raise_exception, strftime_now).
std::vector<std::pair<std::string, Value>> MakeGlobals(Interpreter& in);

}  // namespace ebb::tmpl
