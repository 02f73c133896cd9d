// src/template/interpreter.h — renders a parsed template (the AST) with a set of variables.
//
// One Interpreter is one render: it owns the variable scopes, the output buffer and the
// counters that enforce RenderLimits. Create one per render; it is not thread-safe, but many
// Interpreters can render the same (immutable) AST concurrently.
//
// Semantics follow Jinja2 as configured by Hugging Face transformers (sandboxed, default
// Undefined): undefined variables print as "" and are falsy; attribute access on an undefined
// value is an error; `set` inside a for loop is local to that iteration; `if` opens no scope.
// Errors: ebb::Error(InvalidArgument) with "<source>:<line>:<col>: ..." (raise_exception's
// message is passed through verbatim), ebb::Error(ResourceExhausted) when a limit is hit.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace ebb::tmpl {

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;  // rendered text and any string built on the way
  uint64_t max_steps = 20'000'000;             // statements + loop iterations + calls
  int max_call_depth = 16;                     // macro recursion
  size_t max_items = 1'000'000;                // elements of one list built by the template
};

// What stays the same across renders of one template.
struct RenderEnv {
  std::string source_name = "template";
  RenderLimits limits;
  // Clock for strftime_now(); formats in local time. Null: std::chrono::system_clock::now.
  std::function<std::chrono::system_clock::time_point()> clock;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderEnv& env);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with the variables of `context` (an object; later keys win).
  std::string Render(const Body& body, const ObjectData& context);

  // ---- used by builtins ----
  const RenderEnv& env() const { return env_; }
  // Jinja's environment.getattr / getitem (sandboxed): methods first for attributes, keys first
  // for subscripts; a miss is Undefined, except on an undefined object (ValueError).
  Value GetAttr(const Value& object, const std::string& name);
  Value GetItem(const Value& object, const Value& key);
  Value CallFilter(const std::string& name, const Value& value, const CallArgs& args);
  bool CallTest(const std::string& name, const Value& value, const CallArgs& args);
  Value CallValue(const Value& callee, const CallArgs& args);
  // Throws ResourceExhausted when a string of `bytes` or a list of `items` would pass a limit.
  void CheckString(size_t bytes) const;
  void CheckItems(size_t items) const;
  // Records a namespace() object; the destructor empties them all, which breaks any reference
  // cycle a template made through namespace attributes (`set ns.me = ns`).
  void TrackNamespace(const std::shared_ptr<ObjectData>& ns) { namespaces_.push_back(ns); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using Frame = std::vector<std::pair<std::string, Value>>;

  Flow ExecBody(const Body& body);
  Flow Exec(const Stmt& stmt);
  void ExecFor(const Stmt& stmt);
  void ExecIf(const Stmt& stmt, Flow* flow);
  Value Eval(const Expr& expr);
  Value EvalImpl(const Expr& expr);
  Value EvalBinary(const std::string& op, const Value& a, const Value& b);
  bool EvalCompare(const std::string& op, const Value& a, const Value& b);
  CallArgs EvalArgs(const Expr& expr, size_t first_arg);
  Value MakeMacro(const Stmt& stmt);
  std::string Capture(const Body& body);

  Value Lookup(const std::string& name) const;
  void Assign(const std::string& name, Value value);
  void Unpack(const std::vector<std::string>& targets, const Value& value, SourcePos pos);
  void Append(std::string_view text);
  void Tick(SourcePos pos);
  [[noreturn]] void Fail(SourcePos pos, std::string_view message) const;

  const RenderEnv& env_;
  std::vector<Frame> frames_;  // [0] globals, [1] render context / top level, then loop scopes
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  SourcePos current_pos_;
  std::vector<std::weak_ptr<ObjectData>> namespaces_;
};

}  // namespace ebb::tmpl
