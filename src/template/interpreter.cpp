#include "template/interpreter.h"

#include <cmath>

#include "template/builtins.h"

namespace ebb::tmpl {
namespace {

Value UndefinedName(const std::string& name) {
  return Value::Undefined("'" + name + "' is undefined");
}

[[noreturn]] void FailUndefined(const Value& v) {
  throw ValueError(v.str().empty() ? std::string("value is undefined") : v.str());
}

Value::ArrayData IterateForLoop(const Value& v) {
  if (v.kind() == Value::Kind::kObject && v.is_namespace()) {
    throw ValueError("'Namespace' object is not iterable");
  }
  return Iterate(v);
}

// Python slice index normalization.
void SliceIndices(int64_t length, const Value& start_v, const Value& stop_v, const Value& step_v,
                  int64_t* start, int64_t* stop, int64_t* step) {
  *step = step_v.is_none() || step_v.is_undefined() ? 1 : AsInt64(step_v);
  if (*step == 0) throw ValueError("slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t def, bool is_stop) {
    if (v.is_none() || v.is_undefined()) return def;
    int64_t i = AsInt64(v);
    if (i < 0) {
      i += length;
      if (i < 0) i = *step < 0 ? -1 : 0;
    } else if (i >= length) {
      i = *step < 0 ? length - 1 : length;
    }
    (void)is_stop;
    return i;
  };
  if (*step > 0) {
    *start = norm(start_v, 0, false);
    *stop = norm(stop_v, length, true);
  } else {
    *start = norm(start_v, length - 1, false);
    *stop = norm(stop_v, -1, true);
  }
}

bool CheckedAdd(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
bool CheckedSub(int64_t a, int64_t b, int64_t* r) { return !__builtin_sub_overflow(a, b, r); }
bool CheckedMul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

std::string OperandError(const std::string& op, const Value& a, const Value& b) {
  return "unsupported operand type(s) for " + op + ": '" + std::string(TypeName(a)) + "' and '" +
         std::string(TypeName(b)) + "'";
}

}  // namespace

Interpreter::Interpreter(const RenderEnv& env) : env_(env) {}

Interpreter::~Interpreter() {
  for (const auto& weak : namespaces_) {
    if (auto ns = weak.lock()) ns->items.clear();
  }
}

std::string Interpreter::Render(const Body& body, const ObjectData& context) {
  frames_.clear();
  frames_.emplace_back(MakeGlobals(*this));
  frames_.emplace_back();
  for (const auto& [k, v] : context.items) {
    bool replaced = false;
    for (auto& item : frames_.back()) {
      if (item.first == k) {
        item.second = v;
        replaced = true;
      }
    }
    if (!replaced) frames_.back().emplace_back(k, v);
  }
  std::string out;
  out_ = &out;
  steps_ = 0;
  call_depth_ = 0;
  ExecBody(body);
  out_ = nullptr;
  return out;
}

// ---- helpers ---------------------------------------------------------------------------------
void Interpreter::Fail(SourcePos pos, std::string_view message) const {
  ThrowAt(env_.source_name, pos, message);
}

void Interpreter::Tick(SourcePos pos) {
  if (++steps_ > env_.limits.max_steps) {
    ThrowLimit(
        env_.source_name, pos,
        "render exceeded " + std::to_string(env_.limits.max_steps) + " steps (a runaway loop?)");
  }
}

void Interpreter::CheckString(size_t bytes) const {
  if (bytes > env_.limits.max_output_bytes) {
    ThrowLimit(env_.source_name, current_pos_,
               "string of " + std::to_string(bytes) + " bytes exceeds the render limit of " +
                   std::to_string(env_.limits.max_output_bytes) + " bytes");
  }
}

void Interpreter::CheckItems(size_t items) const {
  if (items > env_.limits.max_items) {
    ThrowLimit(env_.source_name, current_pos_,
               "list of " + std::to_string(items) + " items exceeds the render limit of " +
                   std::to_string(env_.limits.max_items));
  }
}

void Interpreter::Append(std::string_view text) {
  if (out_->size() + text.size() > env_.limits.max_output_bytes) {
    ThrowLimit(
        env_.source_name, current_pos_,
        "rendered output exceeds " + std::to_string(env_.limits.max_output_bytes) + " bytes");
  }
  out_->append(text);
}

Value Interpreter::Lookup(const std::string& name) const {
  for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
    for (auto it = frame->rbegin(); it != frame->rend(); ++it) {
      if (it->first == name) return it->second;
    }
  }
  return UndefinedName(name);
}

void Interpreter::Assign(const std::string& name, Value value) {
  Frame& frame = frames_.back();
  for (auto& item : frame) {
    if (item.first == name) {
      item.second = std::move(value);
      return;
    }
  }
  frame.emplace_back(name, std::move(value));
}

void Interpreter::Unpack(const std::vector<std::string>& targets, const Value& value,
                         SourcePos pos) {
  if (targets.size() == 1) {
    Assign(targets[0], value);
    return;
  }
  Value::ArrayData items;
  try {
    items = IterateForLoop(value);
  } catch (const ValueError& e) {
    Fail(pos, std::string("cannot unpack: ") + e.what());
  }
  if (items.size() != targets.size()) {
    Fail(pos, "cannot unpack " + std::to_string(items.size()) + " values into " +
                  std::to_string(targets.size()) + " names");
  }
  for (size_t i = 0; i < targets.size(); ++i) Assign(targets[i], items[i]);
}

std::string Interpreter::Capture(const Body& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    ExecBody(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

// ---- statements ------------------------------------------------------------------------------
Interpreter::Flow Interpreter::ExecBody(const Body& body) {
  for (const StmtPtr& stmt : body) {
    Flow flow = Exec(*stmt);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::Exec(const Stmt& s) {
  Tick(s.pos);
  current_pos_ = s.pos;
  try {
    switch (s.kind) {
      case Stmt::Kind::kText:
        Append(s.text);
        return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        Value v = Eval(*s.expr);
        current_pos_ = s.pos;
        if (v.is_string()) {
          Append(v.str());
        } else {
          Append(PyStr(v));
        }
        return Flow::kNormal;
      }
      case Stmt::Kind::kIf: {
        Flow flow = Flow::kNormal;
        ExecIf(s, &flow);
        return flow;
      }
      case Stmt::Kind::kFor:
        ExecFor(s);
        return Flow::kNormal;
      case Stmt::Kind::kSet: {
        Value v = Eval(*s.expr);
        Unpack(s.targets, v, s.pos);
        return Flow::kNormal;
      }
      case Stmt::Kind::kSetAttr: {
        Value target = Lookup(s.targets[0]);
        if (!target.is_namespace()) {
          Fail(s.pos, "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
        }
        target.mutable_object().Set(s.targets[1], Eval(*s.expr));
        return Flow::kNormal;
      }
      case Stmt::Kind::kSetBlock:
        Assign(s.targets[0], Value::String(Capture(s.body)));
        return Flow::kNormal;
      case Stmt::Kind::kMacro:
        Assign(s.name, MakeMacro(s));
        return Flow::kNormal;
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
      case Stmt::Kind::kFilterBlock: {
        std::string body = Capture(s.body);
        frames_.emplace_back();
        frames_.back().emplace_back(kFilterBodyName, Value::String(std::move(body)));
        Value result;
        try {
          result = Eval(*s.expr);
        } catch (...) {
          frames_.pop_back();
          throw;
        }
        frames_.pop_back();
        Append(PyStr(result));
        return Flow::kNormal;
      }
      case Stmt::Kind::kGeneration:
        return ExecBody(s.body);
    }
  } catch (const ValueError& e) {
    Fail(s.pos, e.what());
  }
  return Flow::kNormal;
}

void Interpreter::ExecIf(const Stmt& s, Flow* flow) {
  for (const auto& [cond, body] : s.branches) {
    if (Truthy(Eval(*cond))) {
      *flow = ExecBody(body);
      return;
    }
  }
  *flow = ExecBody(s.else_body);
}

void Interpreter::ExecFor(const Stmt& s) {
  Value iterable = Eval(*s.expr);
  Value::ArrayData items = IterateForLoop(iterable);
  if (s.cond) {
    Value::ArrayData kept;
    for (const Value& item : items) {
      Tick(s.pos);
      frames_.emplace_back();
      try {
        Unpack(s.targets, item, s.pos);
        if (Truthy(Eval(*s.cond))) kept.push_back(item);
      } catch (...) {
        frames_.pop_back();
        throw;
      }
      frames_.pop_back();
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    ExecBody(s.else_body);
    return;
  }
  const int64_t length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    Tick(s.pos);
    auto loop = std::make_shared<ObjectData>();
    loop->items.reserve(12);
    loop->items.emplace_back("index", Value::Int(i + 1));
    loop->items.emplace_back("index0", Value::Int(i));
    loop->items.emplace_back("revindex", Value::Int(length - i));
    loop->items.emplace_back("revindex0", Value::Int(length - i - 1));
    loop->items.emplace_back("first", Value::Bool(i == 0));
    loop->items.emplace_back("last", Value::Bool(i == length - 1));
    loop->items.emplace_back("length", Value::Int(length));
    loop->items.emplace_back("depth", Value::Int(1));
    loop->items.emplace_back("depth0", Value::Int(0));
    loop->items.emplace_back("previtem", i > 0 ? items[static_cast<size_t>(i - 1)]
                                               : Value::Undefined("there is no previous item"));
    loop->items.emplace_back("nextitem", i + 1 < length
                                             ? items[static_cast<size_t>(i + 1)]
                                             : Value::Undefined("there is no next item"));
    loop->items.emplace_back(
        "cycle", Value::Function("loop.cycle", [i](const CallArgs& args) {
          if (args.positional.empty()) throw ValueError("no items for cycling given");
          return args.positional[static_cast<size_t>(i) % args.positional.size()];
        }));
    frames_.emplace_back();
    Flow flow = Flow::kNormal;
    try {
      Unpack(s.targets, items[static_cast<size_t>(i)], s.pos);
      Assign("loop", Value::Object(std::move(loop)));
      flow = ExecBody(s.body);
    } catch (...) {
      frames_.pop_back();
      throw;
    }
    frames_.pop_back();
    if (flow == Flow::kBreak) break;
  }
}

Value Interpreter::MakeMacro(const Stmt& s) {
  const Stmt* stmt = &s;
  return Value::Function(s.name, [this, stmt](const CallArgs& args) -> Value {
    if (call_depth_ >= env_.limits.max_call_depth) {
      ThrowLimit(env_.source_name, stmt->pos,
                 "macro calls nested deeper than " + std::to_string(env_.limits.max_call_depth));
    }
    if (args.positional.size() > stmt->params.size()) {
      throw ValueError("macro '" + stmt->name + "' takes " + std::to_string(stmt->params.size()) +
                       " arguments, got " + std::to_string(args.positional.size()));
    }
    for (const auto& [key, value] : args.keyword) {
      bool known = false;
      for (const auto& p : stmt->params) known = known || p.first == key;
      if (!known) throw ValueError("macro '" + stmt->name + "' has no parameter '" + key + "'");
    }
    // The macro body sees the globals and the top-level variables, not the caller's loops.
    std::vector<Frame> saved(std::make_move_iterator(frames_.begin() + 2),
                             std::make_move_iterator(frames_.end()));
    frames_.resize(2);
    frames_.emplace_back();
    ++call_depth_;
    std::string result;
    try {
      for (size_t i = 0; i < stmt->params.size(); ++i) {
        const auto& [pname, pdefault] = stmt->params[i];
        const Value* given = args.Get(i, pname);
        Value v;
        if (given != nullptr) {
          v = *given;
        } else if (pdefault) {
          v = Eval(*pdefault);
        } else {
          v = Value::Undefined("parameter '" + pname + "' was not provided");
        }
        Assign(pname, std::move(v));
      }
      result = Capture(stmt->body);
    } catch (...) {
      --call_depth_;
      frames_.resize(2);
      for (auto& f : saved) frames_.push_back(std::move(f));
      throw;
    }
    --call_depth_;
    frames_.resize(2);
    for (auto& f : saved) frames_.push_back(std::move(f));
    return Value::String(std::move(result));
  });
}

// ---- expressions -----------------------------------------------------------------------------
Value Interpreter::Eval(const Expr& e) {
  try {
    return EvalImpl(e);
  } catch (const ValueError& err) {
    Fail(e.pos, err.what());
  }
}

CallArgs Interpreter::EvalArgs(const Expr& e, size_t first_arg) {
  CallArgs args;
  for (size_t i = first_arg; i < e.args.size(); ++i) args.positional.push_back(Eval(*e.args[i]));
  for (const auto& [key, value] : e.kwargs) args.keyword.emplace_back(key, Eval(*value));
  return args;
}

Value Interpreter::GetAttr(const Value& object, const std::string& name) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      FailUndefined(object);
    case Value::Kind::kString:
      return BindMethod(*this, object, name);
    case Value::Kind::kObject: {
      if (!object.is_namespace()) {
        Value method = BindMethod(*this, object, name);
        if (method.is_callable()) return method;
      }
      const Value* v = object.object().Find(name);
      if (v != nullptr) return *v;
      return Value::Undefined("'dict object' has no attribute '" + name + "'");
    }
    default:
      return Value::Undefined("'" + std::string(TypeName(object)) + " object' has no attribute '" +
                              name + "'");
  }
}

Value Interpreter::GetItem(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      FailUndefined(object);
    case Value::Kind::kArray:
    case Value::Kind::kString: {
      if (key.is_string()) return GetAttr(object, key.str());
      if (!key.is_int() && !key.is_bool()) {
        return Value::Undefined(std::string(TypeName(object)) + " indices must be integers");
      }
      int64_t i = AsInt64(key);
      if (object.is_array()) {
        int64_t n = static_cast<int64_t>(object.array().size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::Undefined("list index out of range");
        return object.array()[static_cast<size_t>(i)];
      }
      std::vector<size_t> off = Utf8Offsets(object.str());
      int64_t n = static_cast<int64_t>(off.size()) - 1;
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::Undefined("string index out of range");
      size_t b = off[static_cast<size_t>(i)];
      return Value::String(object.str().substr(b, off[static_cast<size_t>(i) + 1] - b));
    }
    case Value::Kind::kObject: {
      if (key.is_string()) {
        const Value* v = object.object().Find(key.str());
        if (v != nullptr) return *v;
        if (!object.is_namespace()) {
          Value method = BindMethod(*this, object, key.str());
          if (method.is_callable()) return method;
        }
      }
      return Value::Undefined("'dict object' has no attribute " + PyRepr(key));
    }
    default:
      return Value::Undefined("'" + std::string(TypeName(object)) +
                              "' object is not subscriptable");
  }
}

Value Interpreter::CallFilter(const std::string& name, const Value& value, const CallArgs& args) {
  return ApplyFilter(*this, name, value, args);
}

bool Interpreter::CallTest(const std::string& name, const Value& value, const CallArgs& args) {
  return ApplyTest(*this, name, value, args);
}

Value Interpreter::CallValue(const Value& callee, const CallArgs& args) {
  if (callee.is_callable()) {
    Tick(current_pos_);
    return callee.callable().fn(args);
  }
  if (callee.is_undefined()) FailUndefined(callee);
  throw ValueError("'" + std::string(TypeName(callee)) + "' object is not callable");
}

Value Interpreter::EvalBinary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = PyStr(a) + PyStr(b);
    CheckString(s.size());
    return Value::String(std::move(s));
  }
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  const bool numbers = a.is_number() && b.is_number();
  const bool floats = numbers && (a.is_float() || b.is_float());
  if (op == "+") {
    if (numbers) {
      if (floats) return Value::Float(AsDouble(a) + AsDouble(b));
      int64_t r;
      if (!CheckedAdd(AsInt64(a), AsInt64(b), &r)) throw ValueError("integer overflow");
      return Value::Int(r);
    }
    if (a.is_string() && b.is_string()) {
      CheckString(a.str().size() + b.str().size());
      return Value::String(a.str() + b.str());
    }
    if (a.is_array() && b.is_array() && a.is_tuple() == b.is_tuple()) {
      CheckItems(a.array().size() + b.array().size());
      Value::ArrayData items = a.array();
      items.insert(items.end(), b.array().begin(), b.array().end());
      return Value::Array(std::move(items), a.is_tuple());
    }
    if (a.is_string()) {
      throw ValueError("can only concatenate str (not \"" + std::string(TypeName(b)) +
                       "\") to str");
    }
    throw ValueError(OperandError(op, a, b));
  }
  if (op == "-") {
    if (!numbers) throw ValueError(OperandError(op, a, b));
    if (floats) return Value::Float(AsDouble(a) - AsDouble(b));
    int64_t r;
    if (!CheckedSub(AsInt64(a), AsInt64(b), &r)) throw ValueError("integer overflow");
    return Value::Int(r);
  }
  if (op == "*") {
    if (numbers) {
      if (floats) return Value::Float(AsDouble(a) * AsDouble(b));
      int64_t r;
      if (!CheckedMul(AsInt64(a), AsInt64(b), &r)) throw ValueError("integer overflow");
      return Value::Int(r);
    }
    const Value* seq = nullptr;
    const Value* count = nullptr;
    if ((a.is_string() || a.is_array()) && (b.is_int() || b.is_bool())) {
      seq = &a;
      count = &b;
    } else if ((b.is_string() || b.is_array()) && (a.is_int() || a.is_bool())) {
      seq = &b;
      count = &a;
    }
    if (seq == nullptr) throw ValueError(OperandError(op, a, b));
    int64_t n = std::max<int64_t>(0, AsInt64(*count));
    if (seq->is_string()) {
      if (n > 0 && seq->str().size() > env_.limits.max_output_bytes / static_cast<uint64_t>(n)) {
        CheckString(env_.limits.max_output_bytes + 1);
      }
      std::string s;
      s.reserve(seq->str().size() * static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) s += seq->str();
      return Value::String(std::move(s));
    }
    if (n > 0 && seq->array().size() > env_.limits.max_items / static_cast<uint64_t>(n)) {
      CheckItems(env_.limits.max_items + 1);
    }
    Value::ArrayData items;
    for (int64_t i = 0; i < n; ++i)
      items.insert(items.end(), seq->array().begin(), seq->array().end());
    return Value::Array(std::move(items), seq->is_tuple());
  }
  if (!numbers) throw ValueError(OperandError(op, a, b));
  if (op == "/") {
    double d = AsDouble(b);
    if (d == 0) throw ValueError("division by zero");
    return Value::Float(AsDouble(a) / d);
  }
  if (op == "//" || op == "%") {
    if (floats) {
      double x = AsDouble(a), y = AsDouble(b);
      if (y == 0) throw ValueError("float division by zero");
      double mod = std::fmod(x, y);
      if (mod != 0 && ((mod < 0) != (y < 0))) mod += y;
      if (op == "%") return Value::Float(mod);
      return Value::Float(std::floor((x - mod) / y + 0.5));
    }
    int64_t x = AsInt64(a), y = AsInt64(b);
    if (y == 0) throw ValueError("integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) {
      if (op == "%") return Value::Int(0);
      throw ValueError("integer overflow");
    }
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      r += y;
      --q;
    }
    return Value::Int(op == "//" ? q : r);
  }
  if (op == "**") {
    if (!floats && AsInt64(b) >= 0) {
      int64_t base = AsInt64(a), exp = AsInt64(b), r = 1;
      while (exp > 0) {
        if (exp & 1) {
          if (!CheckedMul(r, base, &r)) throw ValueError("integer overflow");
        }
        exp >>= 1;
        if (exp > 0 && !CheckedMul(base, base, &base)) throw ValueError("integer overflow");
      }
      return Value::Int(r);
    }
    double x = AsDouble(a), y = AsDouble(b);
    if (x == 0 && y < 0) throw ValueError("0.0 cannot be raised to a negative power");
    return Value::Float(std::pow(x, y));
  }
  throw ValueError("unsupported operator '" + op + "'");
}

bool Interpreter::EvalCompare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Equals(a, b);
  if (op == "!=") return !Equals(a, b);
  if (op == "in" || op == "notin") {
    CallArgs args;
    args.positional.push_back(b);
    bool r = ApplyTest(*this, "in", a, args);
    return op == "in" ? r : !r;
  }
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  if (op == "<") return Less(a, b);
  if (op == ">") return Less(b, a);
  if (op == "<=") return !Less(b, a);
  if (op == ">=") return !Less(a, b);
  throw ValueError("unsupported comparison '" + op + "'");
}

Value Interpreter::EvalImpl(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.literal;
    case Expr::Kind::kName:
      return Lookup(e.name);
    case Expr::Kind::kGetAttr:
      return GetAttr(Eval(*e.args[0]), e.name);
    case Expr::Kind::kGetItem: {
      Value object = Eval(*e.args[0]);
      return GetItem(object, Eval(*e.args[1]));
    }
    case Expr::Kind::kSlice: {
      Value object = Eval(*e.args[0]);
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        parts[i] = e.args[static_cast<size_t>(i) + 1] ? Eval(*e.args[static_cast<size_t>(i) + 1])
                                                      : Value::None();
      }
      if (object.is_undefined()) FailUndefined(object);
      int64_t start, stop, step;
      if (object.is_array()) {
        const auto& items = object.array();
        SliceIndices(static_cast<int64_t>(items.size()), parts[0], parts[1], parts[2], &start,
                     &stop, &step);
        Value::ArrayData out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
          out.push_back(items[static_cast<size_t>(i)]);
        }
        return Value::Array(std::move(out), object.is_tuple());
      }
      if (object.is_string()) {
        std::vector<size_t> off = Utf8Offsets(object.str());
        SliceIndices(static_cast<int64_t>(off.size()) - 1, parts[0], parts[1], parts[2], &start,
                     &stop, &step);
        std::string out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
          size_t b = off[static_cast<size_t>(i)];
          out.append(object.str(), b, off[static_cast<size_t>(i) + 1] - b);
        }
        return Value::String(std::move(out));
      }
      throw ValueError("'" + std::string(TypeName(object)) + "' object is not subscriptable");
    }
    case Expr::Kind::kCall: {
      Value callee = Eval(*e.args[0]);
      CallArgs args = EvalArgs(e, 1);
      current_pos_ = e.pos;
      return CallValue(callee, args);
    }
    case Expr::Kind::kFilter: {
      Value value = Eval(*e.args[0]);
      CallArgs args = EvalArgs(e, 1);
      current_pos_ = e.pos;
      return ApplyFilter(*this, e.name, value, args);
    }
    case Expr::Kind::kTest: {
      Value value = Eval(*e.args[0]);
      CallArgs args = EvalArgs(e, 1);
      bool r = ApplyTest(*this, e.name, value, args);
      return Value::Bool(e.negated ? !r : r);
    }
    case Expr::Kind::kNot:
      return Value::Bool(!Truthy(Eval(*e.args[0])));
    case Expr::Kind::kNeg: {
      Value v = Eval(*e.args[0]);
      if (v.is_float()) return Value::Float(-v.as_float());
      if (v.is_int() || v.is_bool()) {
        int64_t i = AsInt64(v);
        if (i == INT64_MIN) throw ValueError("integer overflow");
        return Value::Int(-i);
      }
      if (v.is_undefined()) FailUndefined(v);
      throw ValueError("bad operand type for unary -: '" + std::string(TypeName(v)) + "'");
    }
    case Expr::Kind::kPos: {
      Value v = Eval(*e.args[0]);
      if (v.is_number()) return v.is_bool() ? Value::Int(AsInt64(v)) : v;
      if (v.is_undefined()) FailUndefined(v);
      throw ValueError("bad operand type for unary +: '" + std::string(TypeName(v)) + "'");
    }
    case Expr::Kind::kBinary: {
      Value a = Eval(*e.args[0]);
      Value b = Eval(*e.args[1]);
      current_pos_ = e.pos;
      return EvalBinary(e.name, a, b);
    }
    case Expr::Kind::kAnd: {
      Value a = Eval(*e.args[0]);
      return Truthy(a) ? Eval(*e.args[1]) : a;
    }
    case Expr::Kind::kOr: {
      Value a = Eval(*e.args[0]);
      return Truthy(a) ? a : Eval(*e.args[1]);
    }
    case Expr::Kind::kCompare: {
      Value left = Eval(*e.args[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = Eval(*e.args[i + 1]);
        if (!EvalCompare(e.ops[i], left, right)) return Value::Bool(false);
        left = std::move(right);
      }
      return Value::Bool(true);
    }
    case Expr::Kind::kCond:
      if (Truthy(Eval(*e.args[0]))) return Eval(*e.args[1]);
      if (e.args[2]) return Eval(*e.args[2]);
      return Value::Undefined("the inline if-expression evaluated to false and no else was given");
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      Value::ArrayData items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(Eval(*a));
      return Value::Array(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      auto object = std::make_shared<ObjectData>();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value key = Eval(*e.args[i]);
        if (!key.is_string()) {
          throw ValueError("only string keys are supported in dict literals, got " +
                           std::string(TypeName(key)));
        }
        object->Set(key.str(), Eval(*e.args[i + 1]));
      }
      return Value::Object(std::move(object));
    }
  }
  throw ValueError("unknown expression");
}

}  // namespace ebb::tmpl
