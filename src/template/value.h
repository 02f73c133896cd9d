// src/template/value.h — the dynamic value type of the Jinja-subset interpreter.
//
// A Value is one of: undefined, none, bool, int (int64), float (double), string (UTF-8),
// array (a list, or a tuple when is_tuple()), object (an insertion-ordered string-keyed map,
// also used for namespace() and the loop variable) or callable. Arrays, objects and callables
// are shared by reference (like Python objects); strings and scalars by value. Only namespace
// objects are mutated after creation (by `{% set ns.attr = ... %}`), so a Value tree built from
// the render inputs is never changed by a template.
//
// The helpers here follow Python/Jinja2 semantics as transformers renders chat templates:
// truthiness, ==, <, str() (PyStr), repr() (PyRepr) and json.dumps (ToJson). Operand errors
// throw ValueError, which the interpreter re-throws as ebb::Error with the source position.
//
// Thread-safety: Values are not synchronized; a render owns the values it creates. Values
// converted from the caller's JSON are created per render.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ebb::tmpl {

// An operand/type error without a position; the interpreter adds one.
class ValueError : public std::runtime_error {
 public:
  explicit ValueError(const std::string& message) : std::runtime_error(message) {}
};

class Value;
struct ObjectData;
struct CallArgs;

// A builtin or macro. Throws ValueError or ebb::Error.
struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kArray,
    kObject,
    kCallable
  };
  using ArrayData = std::vector<Value>;

  Value() = default;  // undefined
  static Value Undefined(std::string hint = {});
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value Array(ArrayData items = {}, bool tuple = false);
  static Value Object(std::shared_ptr<ObjectData> object);
  static Value NewObject();  // an empty object
  static Value Function(std::string name, std::function<Value(const CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python Number
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_tuple() const { return kind_ == Kind::kArray && tuple_; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_namespace() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }  // kInt (or kBool as 0/1 via AsInt64)
  double as_float() const { return f_; }
  const std::string& str() const { return s_; }  // kString; for kUndefined: the hint
  const ArrayData& array() const { return *a_; }
  const ObjectData& object() const { return *o_; }
  ObjectData& mutable_object() const { return *o_; }
  const Callable& callable() const { return *c_; }
  const std::shared_ptr<ObjectData>& object_ptr() const { return o_; }

 private:
  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<const ArrayData> a_;
  std::shared_ptr<ObjectData> o_;
  std::shared_ptr<const Callable> c_;
};

// Insertion-ordered map (Python dict order). Lookups are linear: chat-template dicts are small.
struct ObjectData {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;

  const Value* Find(std::string_view key) const;
  void Set(std::string key, Value value);
};

// Arguments of a call: positional then keyword (in call order).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`; nullptr when absent.
  const Value* Get(size_t index, std::string_view name) const;
};

// Python truthiness (undefined is false).
bool Truthy(const Value& v);
// Python == (numbers compare across bool/int/float; dicts ignore order; undefined == undefined).
bool Equals(const Value& a, const Value& b);
// Python <; throws ValueError for unorderable operands.
bool Less(const Value& a, const Value& b);
// Python str(): None -> "None", True -> "True", floats as repr, containers as repr.
std::string PyStr(const Value& v);
// Python repr().
std::string PyRepr(const Value& v);
// Python's repr of a float ("1.0", "1e+16", "0.1").
std::string PyFloatRepr(double d);
// Jinja's name for a value's type in error messages ("str", "int", "dict", "undefined", ...).
std::string_view TypeName(const Value& v);

// Options of Python's json.dumps as transformers' tojson filter passes them.
struct JsonFormat {
  int indent = -1;            // < 0: no newlines (Python indent=None)
  std::string indent_string;  // used instead of spaces when indent was a string
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator;  // empty: ", " (or "," when indenting)
  std::string key_separator;   // empty: ": "
  bool custom_separators = false;
};
// json.dumps(v); throws ValueError for undefined or callables.
std::string ToJson(const Value& v, const JsonFormat& format);

// Converts parsed JSON (insertion-ordered) to a Value. Throws ValueError past max_depth.
Value FromJson(const nlohmann::ordered_json& json, int max_depth = 256);

// UTF-8 helpers: byte offsets of each code point, plus a final offset == s.size().
// Invalid bytes count as one code point each.
std::vector<size_t> Utf8Offsets(std::string_view s);
size_t Utf8Length(std::string_view s);
void AppendUtf8(std::string& out, uint32_t code_point);

// Integer conversions for numbers (bool -> 0/1); throws ValueError otherwise.
int64_t AsInt64(const Value& v);
double AsDouble(const Value& v);

}  // namespace ebb::tmpl
