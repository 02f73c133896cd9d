#include "template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace ebb::tmpl {
namespace {

constexpr int kMaxPrintDepth = 128;  // guards against self-referencing namespaces

void CheckDepth(int depth) {
  if (depth > kMaxPrintDepth) throw ValueError("value nested too deeply (or self-referencing)");
}

void AppendPyRepr(std::string& out, const Value& v, int depth);

void AppendStringRepr(std::string& out, std::string_view s) {
  char quote = '\'';
  if (s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos) quote = '"';
  out += quote;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += quote;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
}

void AppendPyRepr(std::string& out, const Value& v, int depth) {
  CheckDepth(depth);
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      out += "Undefined";
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += PyFloatRepr(v.as_float());
      return;
    case Value::Kind::kString:
      AppendStringRepr(out, v.str());
      return;
    case Value::Kind::kArray: {
      out += v.is_tuple() ? '(' : '[';
      bool first = true;
      for (const Value& item : v.array()) {
        if (!first) out += ", ";
        first = false;
        AppendPyRepr(out, item, depth + 1);
      }
      if (v.is_tuple() && v.array().size() == 1) out += ',';
      out += v.is_tuple() ? ')' : ']';
      return;
    }
    case Value::Kind::kObject: {
      if (v.is_namespace()) {
        out += "<Namespace {";
      } else {
        out += '{';
      }
      bool first = true;
      for (const auto& [key, item] : v.object().items) {
        if (!first) out += ", ";
        first = false;
        AppendStringRepr(out, key);
        out += ": ";
        AppendPyRepr(out, item, depth + 1);
      }
      out += v.is_namespace() ? "}>" : "}";
      return;
    }
    case Value::Kind::kCallable:
      out += "<function " + v.callable().name + ">";
      return;
  }
}

void AppendJsonString(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  const std::vector<size_t> offsets = ensure_ascii ? Utf8Offsets(s) : std::vector<size_t>{};
  auto append_u = [&out](uint32_t u) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", u);
    out += buf;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      append_u(c);
    } else if (c < 0x80 || !ensure_ascii) {
      out += static_cast<char>(c);
    } else {
      // Decode one UTF-8 sequence and escape it (surrogate pairs above the BMP).
      auto it = std::upper_bound(offsets.begin(), offsets.end(), i);
      size_t end = it == offsets.end() ? s.size() : *it;
      uint32_t cp = 0;
      size_t len = end - i;
      if (len == 1) {
        cp = c;
      } else {
        cp = c & (0xFF >> (len + 1));
        for (size_t k = 1; k < len; ++k)
          cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      }
      if (cp >= 0x10000) {
        cp -= 0x10000;
        append_u(0xD800 + (cp >> 10));
        append_u(0xDC00 + (cp & 0x3FF));
      } else {
        append_u(cp);
      }
      i = end - 1;
    }
  }
  out += '"';
}

void AppendJson(std::string& out, const Value& v, const JsonFormat& f, int level) {
  CheckDepth(level);
  const bool indenting = f.indent >= 0 || !f.indent_string.empty();
  const std::string item_sep =
      f.custom_separators ? f.item_separator : (indenting ? std::string(",") : std::string(", "));
  const std::string key_sep = f.custom_separators ? f.key_separator : std::string(": ");
  auto newline = [&](int lvl) {
    out += '\n';
    for (int i = 0; i < lvl; ++i) {
      if (!f.indent_string.empty()) {
        out += f.indent_string;
      } else {
        out.append(static_cast<size_t>(f.indent), ' ');
      }
    }
  };
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      throw ValueError("Object of type Undefined is not JSON serializable");
    case Value::Kind::kCallable:
      throw ValueError("Object of type function is not JSON serializable");
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      double d = v.as_float();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        out += PyFloatRepr(d);
      }
      return;
    }
    case Value::Kind::kString:
      AppendJsonString(out, v.str(), f.ensure_ascii);
      return;
    case Value::Kind::kArray: {
      if (v.array().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Value& item : v.array()) {
        if (!first) out += item_sep;
        first = false;
        if (indenting) newline(level + 1);
        AppendJson(out, item, f, level + 1);
      }
      if (indenting) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::kObject: {
      const auto& items = v.object().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> order;
      order.reserve(items.size());
      for (const auto& item : items) order.push_back(&item);
      if (f.sort_keys) {
        std::stable_sort(order.begin(), order.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      bool first = true;
      for (const auto* item : order) {
        if (!first) out += item_sep;
        first = false;
        if (indenting) newline(level + 1);
        AppendJsonString(out, item->first, f.ensure_ascii);
        out += key_sep;
        AppendJson(out, item->second, f, level + 1);
      }
      if (indenting) newline(level);
      out += '}';
      return;
    }
  }
}

int CompareNumbers(const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) {
    int64_t x = AsInt64(a), y = AsInt64(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  double x = AsDouble(a), y = AsDouble(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

bool EqualsDepth(const Value& a, const Value& b, int depth) {
  CheckDepth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return AsDouble(a) == AsDouble(b);
    return AsInt64(a) == AsInt64(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kArray: {
      if (a.is_tuple() != b.is_tuple() || a.array().size() != b.array().size()) return false;
      for (size_t i = 0; i < a.array().size(); ++i) {
        if (!EqualsDepth(a.array()[i], b.array()[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kObject: {
      if (a.is_namespace() || b.is_namespace()) return a.object_ptr() == b.object_ptr();
      const auto& x = a.object().items;
      if (x.size() != b.object().items.size()) return false;
      for (const auto& [key, value] : x) {
        const Value* other = b.object().Find(key);
        if (other == nullptr || !EqualsDepth(value, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

}  // namespace

Value Value::Undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}
Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}
Value Value::Array(ArrayData items, bool tuple) {
  Value v;
  v.kind_ = Kind::kArray;
  v.tuple_ = tuple;
  v.a_ = std::make_shared<const ArrayData>(std::move(items));
  return v;
}
Value Value::Object(std::shared_ptr<ObjectData> object) {
  Value v;
  v.kind_ = Kind::kObject;
  v.o_ = std::move(object);
  return v;
}
Value Value::NewObject() { return Object(std::make_shared<ObjectData>()); }
Value Value::Function(std::string name, std::function<Value(const CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.c_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}
bool Value::is_namespace() const { return kind_ == Kind::kObject && o_->is_namespace; }

const Value* ObjectData::Find(std::string_view key) const {
  for (const auto& item : items) {
    if (item.first == key) return &item.second;
  }
  return nullptr;
}

void ObjectData::Set(std::string key, Value value) {
  for (auto& item : items) {
    if (item.first == key) {
      item.second = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_float() != 0.0;
    case Value::Kind::kString:
      return !v.str().empty();
    case Value::Kind::kArray:
      return !v.array().empty();
    case Value::Kind::kObject:
      return v.is_namespace() || !v.object().items.empty();
    case Value::Kind::kCallable:
      return true;
  }
  return false;
}

bool Equals(const Value& a, const Value& b) { return EqualsDepth(a, b, 0); }

bool Less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b) < 0;
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // byte order == code point order
  if (a.is_array() && b.is_array()) {
    const auto& x = a.array();
    const auto& y = b.array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw ValueError(std::string("'<' not supported between instances of '") +
                   std::string(TypeName(a)) + "' and '" + std::string(TypeName(b)) + "'");
}

std::string PyStr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return std::string();
    case Value::Kind::kString:
      return v.str();
    default: {
      std::string out;
      AppendPyRepr(out, v, 0);
      return out;
    }
  }
}

std::string PyRepr(const Value& v) {
  std::string out;
  AppendPyRepr(out, v, 0);
  return out;
}

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+02", shortest round-trip digits
  bool negative = false;
  size_t pos = 0;
  if (sci[0] == '-') {
    negative = true;
    pos = 1;
  }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exponent = std::stoi(sci.substr(e + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  if (exponent >= -5 + 1 && exponent < 16) {  // Python repr: fixed for 1e-4 <= |d| < 1e16
    if (exponent >= 0) {
      if (static_cast<int>(digits.size()) <= exponent + 1) {
        out += digits;
        out.append(static_cast<size_t>(exponent + 1) - digits.size(), '0');
        out += ".0";
      } else {
        out += digits.substr(0, static_cast<size_t>(exponent + 1));
        out += '.';
        out += digits.substr(static_cast<size_t>(exponent + 1));
      }
    } else {
      out += "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  out += ebuf;
  return out;
}

std::string_view TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kArray:
      return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::kObject:
      return v.is_namespace() ? "Namespace" : "dict";
    case Value::Kind::kCallable:
      return "function";
  }
  return "?";
}

std::string ToJson(const Value& v, const JsonFormat& format) {
  std::string out;
  AppendJson(out, v, format, 0);
  return out;
}

Value FromJson(const nlohmann::ordered_json& json, int max_depth) {
  if (max_depth < 0) throw ValueError("input JSON nested too deeply");
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::Float(static_cast<double>(u));
      return Value::Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Value::ArrayData items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJson(item, max_depth - 1));
      return Value::Array(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto object = std::make_shared<ObjectData>();
      object->items.reserve(json.size());
      for (const auto& [key, item] : json.items()) {
        object->items.emplace_back(key, FromJson(item, max_depth - 1));
      }
      return Value::Object(std::move(object));
    }
    default:
      throw ValueError("unsupported JSON value (binary or discarded)");
  }
}

std::vector<size_t> Utf8Offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t i = 0;
  while (i < s.size()) {
    offsets.push_back(i);
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    }
    i += len;
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (char ch : s) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  }
  return n;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int64_t AsInt64(const Value& v) {
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_int()) return v.as_int();
  throw ValueError(std::string("expected an integer, got ") + std::string(TypeName(v)));
}

double AsDouble(const Value& v) {
  if (v.is_float()) return v.as_float();
  if (v.is_int()) return static_cast<double>(v.as_int());
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  throw ValueError(std::string("expected a number, got ") + std::string(TypeName(v)));
}

}  // namespace ebb::tmpl
