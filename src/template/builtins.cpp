#include "template/builtins.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <unordered_set>

#include "ebb/error.h"
#include "template/interpreter.h"

namespace ebb::tmpl {
// Iterates a value the way Python's iter() does for the supported types.
Value::ArrayData Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kArray:
      return v.array();
    case Value::Kind::kObject: {
      Value::ArrayData keys;
      for (const auto& item : v.object().items) keys.push_back(Value::String(item.first));
      return keys;
    }
    case Value::Kind::kString: {
      Value::ArrayData chars;
      std::vector<size_t> off = Utf8Offsets(v.str());
      for (size_t i = 0; i + 1 < off.size(); ++i) {
        chars.push_back(Value::String(v.str().substr(off[i], off[i + 1] - off[i])));
      }
      return chars;
    }
    default:
      throw ValueError("'" + std::string(TypeName(v)) + "' object is not iterable");
  }
}

namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja's sandbox MAX_RANGE

// ---- argument helpers ------------------------------------------------------------------------
const Value* Arg(const CallArgs& args, size_t index, std::string_view name) {
  const Value* v = args.Get(index, name);
  return v != nullptr && !v->is_undefined() ? v : nullptr;
}
bool BoolArg(const CallArgs& args, size_t index, std::string_view name, bool def) {
  const Value* v = Arg(args, index, name);
  return v == nullptr ? def : Truthy(*v);
}
int64_t IntArg(const CallArgs& args, size_t index, std::string_view name, int64_t def) {
  const Value* v = Arg(args, index, name);
  if (v == nullptr || v->is_none()) return def;
  if (v->is_float()) return static_cast<int64_t>(v->as_float());
  return AsInt64(*v);
}
std::string StrArg(const CallArgs& args, size_t index, std::string_view name,
                   const std::string& def) {
  const Value* v = Arg(args, index, name);
  if (v == nullptr || v->is_none()) return def;
  if (!v->is_string()) throw ValueError("expected a string argument '" + std::string(name) + "'");
  return v->str();
}
const std::string& RequireString(const Value& v, std::string_view what) {
  if (!v.is_string()) {
    throw ValueError(std::string(what) + " expects a string, got " + std::string(TypeName(v)));
  }
  return v.str();
}

// ---- string helpers (ASCII case mapping; other characters are left as they are) --------------
bool IsAsciiSpace(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
         (c >= 0x1c && c <= 0x1f);
}
char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
std::string ToUpper(std::string s) {
  for (char& c : s) c = Upper(c);
  return s;
}
std::string ToLower(std::string s) {
  for (char& c : s) c = Lower(c);
  return s;
}

// Python's str.strip family. Without chars: whitespace (ASCII plus U+0085, U+00A0, U+2000..200A,
// U+2028, U+2029, U+202F, U+205F, U+3000). With chars: any of those code points.
bool IsUnicodeSpace(uint32_t cp) {
  return (cp < 0x80 && IsAsciiSpace(static_cast<unsigned char>(cp))) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}
uint32_t DecodeAt(std::string_view s, size_t begin, size_t end) {
  unsigned char c = static_cast<unsigned char>(s[begin]);
  size_t len = end - begin;
  if (len == 1) return c;
  uint32_t cp = c & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[begin + k]) & 0x3F);
  return cp;
}
std::string Strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<size_t> off = Utf8Offsets(s);
  std::vector<uint32_t> set;
  if (chars != nullptr && !chars->is_none()) {
    const std::string& c = RequireString(*chars, "strip");
    std::vector<size_t> co = Utf8Offsets(c);
    for (size_t i = 0; i + 1 < co.size(); ++i) set.push_back(DecodeAt(c, co[i], co[i + 1]));
  }
  auto strip_cp = [&](uint32_t cp) {
    return chars != nullptr && !chars->is_none()
               ? std::find(set.begin(), set.end(), cp) != set.end()
               : IsUnicodeSpace(cp);
  };
  size_t n = off.size() - 1, b = 0, e = n;
  if (left) {
    while (b < e && strip_cp(DecodeAt(s, off[b], off[b + 1]))) ++b;
  }
  if (right) {
    while (e > b && strip_cp(DecodeAt(s, off[e - 1], off[e]))) --e;
  }
  return s.substr(off[b], off[e] - off[b]);
}

std::vector<std::string> SplitWhitespace(const std::string& s, int64_t maxsplit) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    while (i < s.size() && IsAsciiSpace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t e = s.size();
      while (e > i && IsAsciiSpace(static_cast<unsigned char>(s[e - 1]))) --e;
      out.push_back(s.substr(i, e - i));
      break;
    }
    size_t j = i;
    while (j < s.size() && !IsAsciiSpace(static_cast<unsigned char>(s[j]))) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> SplitSep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (sep.empty()) throw ValueError("empty separator");
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    size_t j = (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) ? std::string::npos
                                                                               : s.find(sep, i);
    if (j == std::string::npos) {
      out.push_back(s.substr(i));
      return out;
    }
    out.push_back(s.substr(i, j - i));
    i = j + sep.size();
  }
}

std::vector<std::string> RSplitSep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (maxsplit < 0) return SplitSep(s, sep, -1);
  if (sep.empty()) throw ValueError("empty separator");
  std::vector<std::string> out;
  size_t end = s.size();
  while (static_cast<int64_t>(out.size()) < maxsplit) {
    if (end < sep.size()) break;
    size_t j = s.rfind(sep, end - sep.size());
    if (j == std::string::npos) break;
    out.push_back(s.substr(j + sep.size(), end - j - sep.size()));
    end = j;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

// str.splitlines(): \n \r \r\n \v \f \x1c \x1d \x1e U+0085 U+2028 U+2029.
std::vector<std::string> SplitLines(const std::string& s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      len = 2;
    } else if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d ||
               c == 0x1e) {
      len = 1;
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      len = 2;
    } else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      len = 3;
    }
    if (len == 0) {
      ++i;
      continue;
    }
    out.push_back(s.substr(start, (keepends ? i + len : i) - start));
    i += len;
    start = i;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

Value StringList(const std::vector<std::string>& parts) {
  Value::ArrayData items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::String(p));
  return Value::Array(std::move(items));
}

std::string Replace(Interpreter& in, const std::string& s, const std::string& old,
                    const std::string& repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    std::vector<size_t> off = Utf8Offsets(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < off.size() + 1; ++i) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (i + 1 < off.size()) out.append(s, off[i], off[i + 1] - off[i]);
      in.CheckString(out.size());
    }
    return out;
  }
  size_t i = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t j = s.find(old, i);
    if (j == std::string::npos) break;
    out.append(s, i, j - i);
    out += repl;
    in.CheckString(out.size());
    i = j + old.size();
    ++done;
  }
  out.append(s, i, std::string::npos);
  in.CheckString(out.size());
  return out;
}

std::string Capitalize(const std::string& s) {
  std::string out = ToLower(s);
  if (!out.empty()) out[0] = Upper(out[0]);
  return out;
}

// Python str.title(): a letter after a non-letter is upper-cased, other letters lower-cased.
std::string PyTitle(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    if (IsAlpha(c)) {
      c = prev_cased ? Lower(c) : Upper(c);
      prev_cased = true;
    } else {
      prev_cased = (static_cast<unsigned char>(c) & 0x80) != 0 && prev_cased;
    }
  }
  return out;
}

// Jinja's title filter: words start after runs of [-\s({[<].
std::string JinjaTitle(const std::string& s) {
  auto is_sep = [](char c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
           IsAsciiSpace(static_cast<unsigned char>(c));
  };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    bool sep = is_sep(s[i]);
    while (j < s.size() && is_sep(s[j]) == sep) ++j;
    std::string piece = s.substr(i, j - i);
    if (!sep) piece = Capitalize(piece);
    out += piece;
    i = j;
  }
  return out;
}

// Jinja's attribute getter: "a.b.0" walks getitem for each part.
Value GetAttrPath(Interpreter& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? in.GetItem(cur, Value::Int(std::stoll(part)))
                 : in.GetItem(cur, Value::String(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// The sort key of sort/unique/min/max: attribute lookup and case folding of strings.
Value SortKey(Interpreter& in, const Value& v, const std::string& attribute, bool case_sensitive) {
  Value key = attribute.empty() ? v : GetAttrPath(in, v, attribute);
  if (!case_sensitive && key.is_string()) return Value::String(ToLower(key.str()));
  return key;
}

CallArgs Tail(const CallArgs& args, size_t from) {
  CallArgs rest;
  for (size_t i = from; i < args.positional.size(); ++i)
    rest.positional.push_back(args.positional[i]);
  rest.keyword = args.keyword;
  return rest;
}

Value SelectOrReject(Interpreter& in, const Value& value, const CallArgs& args, bool select,
                     bool by_attribute) {
  Value::ArrayData out;
  std::string attr;
  size_t test_index = 0;
  if (by_attribute) {
    if (args.positional.empty()) throw ValueError("selectattr/rejectattr need an attribute");
    attr = RequireString(args.positional[0], "attribute");
    test_index = 1;
  }
  const Value* test = test_index < args.positional.size() ? &args.positional[test_index] : nullptr;
  CallArgs test_args = Tail(args, test_index + 1);
  test_args.keyword.clear();
  for (const Value& item : Iterate(value)) {
    Value subject = by_attribute ? GetAttrPath(in, item, attr) : item;
    bool ok = test == nullptr ? Truthy(subject)
                              : in.CallTest(RequireString(*test, "test name"), subject, test_args);
    if (ok == select) out.push_back(item);
  }
  return Value::Array(std::move(out));
}

double RoundPython(double x, int64_t digits) {
  if (!std::isfinite(x)) return x;
  if (digits > 300) return x;
  if (digits < -300) return 0.0 * x;
  char buf[512];
  if (digits >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(digits), x);  // correctly rounded
    return std::strtod(buf, nullptr);
  }
  double p = std::pow(10.0, static_cast<double>(-digits));
  return std::nearbyint(x / p) * p;
}

int64_t ParseIntString(const std::string& raw, int64_t base, bool* ok) {
  std::string s;
  for (char c : raw) {
    if (c != '_') s += c;
  }
  size_t b = 0, e = s.size();
  while (b < e && IsAsciiSpace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && IsAsciiSpace(static_cast<unsigned char>(s[e - 1]))) --e;
  s = s.substr(b, e - b);
  *ok = false;
  if (s.empty()) return 0;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, static_cast<int>(base));
  if (end == s.c_str() + s.size() && errno == 0) {
    *ok = true;
    return v;
  }
  return 0;
}

// ---- filters ---------------------------------------------------------------------------------
using FilterFn = Value (*)(Interpreter&, const Value&, const CallArgs&);

Value FAbs(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_float()) return Value::Float(std::fabs(v.as_float()));
  int64_t i = AsInt64(v);
  if (i == INT64_MIN) throw ValueError("integer overflow");
  return Value::Int(i < 0 ? -i : i);
}
Value FCapitalize(Interpreter&, const Value& v, const CallArgs&) {
  return Value::String(Capitalize(PyStr(v)));
}
Value FLength(Interpreter&, const Value& v, const CallArgs&) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return Value::Int(0);
    case Value::Kind::kString:
      return Value::Int(static_cast<int64_t>(Utf8Length(v.str())));
    case Value::Kind::kArray:
      return Value::Int(static_cast<int64_t>(v.array().size()));
    case Value::Kind::kObject:
      return Value::Int(static_cast<int64_t>(v.object().items.size()));
    default:
      throw ValueError("object of type '" + std::string(TypeName(v)) + "' has no len()");
  }
}
Value FDefault(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* def = args.Get(0, "default_value");
  bool boolean = BoolArg(args, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !Truthy(v))) {
    return def != nullptr ? *def : Value::String("");
  }
  return v;
}
Value FFirst(Interpreter&, const Value& v, const CallArgs&) {
  Value::ArrayData items = Iterate(v);
  if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}
Value FLast(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_object()) throw ValueError("'dict' object is not reversible");
  Value::ArrayData items = Iterate(v);
  if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}
Value FFloat(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* def = Arg(args, 0, "default");
  if (v.is_number()) return Value::Float(AsDouble(v));
  if (v.is_string()) {
    const char* s = v.str().c_str();
    char* end = nullptr;
    double d = std::strtod(s, &end);
    while (end != nullptr && *end != '\0' && IsAsciiSpace(static_cast<unsigned char>(*end))) ++end;
    if (end != s && end != nullptr && *end == '\0') return Value::Float(d);
  }
  return def != nullptr ? *def : Value::Float(0.0);
}
Value FIndent(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* width = Arg(args, 0, "width");
  std::string indention =
      width == nullptr ? std::string(4, ' ')
      : width->is_string()
          ? width->str()
          : std::string(static_cast<size_t>(std::clamp<int64_t>(AsInt64(*width), 0, 1024)), ' ');
  bool first = BoolArg(args, 1, "first", false);
  bool blank = BoolArg(args, 2, "blank", false);
  std::string s = PyStr(v) + "\n";
  std::vector<std::string> lines = SplitLines(s, false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + indention;
      rv += lines[i];
      in.CheckString(rv.size());
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
      in.CheckString(rv.size());
    }
  }
  if (first) rv = indention + rv;
  return Value::String(std::move(rv));
}
Value FInt(Interpreter&, const Value& v, const CallArgs& args) {
  int64_t def = IntArg(args, 0, "default", 0);
  int64_t base = IntArg(args, 1, "base", 10);
  if (v.is_bool() || v.is_int()) return Value::Int(AsInt64(v));
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return Value::Int(def);
    return Value::Int(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (base < 2 || base > 36) base = 10;
    bool ok = false;
    int64_t i = ParseIntString(v.str(), base, &ok);
    if (ok) return Value::Int(i);
    char* end = nullptr;
    double d = std::strtod(v.str().c_str(), &end);
    if (end != v.str().c_str() && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(d));
    }
  }
  return Value::Int(def);
}
Value FItems(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::Array();
  if (!v.is_object()) throw ValueError("Can only get item pairs from a mapping.");
  Value::ArrayData out;
  for (const auto& [k, item] : v.object().items) {
    out.push_back(Value::Array({Value::String(k), item}, true));
  }
  return Value::Array(std::move(out));
}
Value FJoin(Interpreter& in, const Value& v, const CallArgs& args) {
  std::string sep = StrArg(args, 0, "d", "");
  const Value* attr = Arg(args, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : Iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += PyStr(attr != nullptr ? GetAttrPath(in, item, PyStr(*attr)) : item);
    in.CheckString(out.size());
  }
  return Value::String(std::move(out));
}
Value FList(Interpreter&, const Value& v, const CallArgs&) { return Value::Array(Iterate(v)); }
Value FLower(Interpreter&, const Value& v, const CallArgs&) {
  return Value::String(ToLower(PyStr(v)));
}
Value FUpper(Interpreter&, const Value& v, const CallArgs&) {
  return Value::String(ToUpper(PyStr(v)));
}
Value FMap(Interpreter& in, const Value& v, const CallArgs& args) {
  Value::ArrayData out;
  const Value* attribute = args.Get(99, "attribute");
  if (attribute != nullptr) {
    const Value* def = args.Get(99, "default");
    for (const Value& item : Iterate(v)) {
      Value r = GetAttrPath(in, item, PyStr(*attribute));
      if (r.is_undefined() && def != nullptr) r = *def;
      out.push_back(std::move(r));
    }
    return Value::Array(std::move(out));
  }
  if (args.positional.empty()) throw ValueError("map requires a filter name or attribute=");
  const std::string& filter = RequireString(args.positional[0], "map");
  if (!IsKnownFilter(filter)) throw ValueError("unsupported filter '" + filter + "' in map");
  CallArgs rest = Tail(args, 1);
  for (const Value& item : Iterate(v)) out.push_back(in.CallFilter(filter, item, rest));
  return Value::Array(std::move(out));
}
Value MinMax(Interpreter& in, const Value& v, const CallArgs& args, bool want_max) {
  bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  std::string attribute = StrArg(args, 1, "attribute", "");
  Value::ArrayData items = Iterate(v);
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = SortKey(in, items[0], attribute, case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = SortKey(in, items[i], attribute, case_sensitive);
    if (want_max ? Less(best_key, key) : Less(key, best_key)) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}
Value FMax(Interpreter& in, const Value& v, const CallArgs& a) { return MinMax(in, v, a, true); }
Value FMin(Interpreter& in, const Value& v, const CallArgs& a) { return MinMax(in, v, a, false); }
Value FReject(Interpreter& in, const Value& v, const CallArgs& a) {
  return SelectOrReject(in, v, a, false, false);
}
Value FRejectAttr(Interpreter& in, const Value& v, const CallArgs& a) {
  return SelectOrReject(in, v, a, false, true);
}
Value FSelect(Interpreter& in, const Value& v, const CallArgs& a) {
  return SelectOrReject(in, v, a, true, false);
}
Value FSelectAttr(Interpreter& in, const Value& v, const CallArgs& a) {
  return SelectOrReject(in, v, a, true, true);
}
Value FReplace(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* old = args.Get(0, "old");
  const Value* repl = args.Get(1, "new");
  if (old == nullptr || repl == nullptr) throw ValueError("replace needs old and new");
  int64_t count = IntArg(args, 2, "count", -1);
  return Value::String(Replace(in, PyStr(v), PyStr(*old), PyStr(*repl), count));
}
Value FReverse(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::vector<size_t> off = Utf8Offsets(v.str());
    std::string out;
    for (size_t i = off.size() - 1; i > 0; --i)
      out.append(v.str(), off[i - 1], off[i] - off[i - 1]);
    return Value::String(std::move(out));
  }
  Value::ArrayData items = Iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::Array(std::move(items));
}
Value FRound(Interpreter&, const Value& v, const CallArgs& args) {
  int64_t precision = IntArg(args, 0, "precision", 0);
  std::string method = StrArg(args, 1, "method", "common");
  if (method != "common" && method != "ceil" && method != "floor") {
    throw ValueError("method must be common, ceil or floor");
  }
  if (method == "common" && (v.is_int() || v.is_bool())) return Value::Int(AsInt64(v));
  double x = AsDouble(v);
  if (method == "common") return Value::Float(RoundPython(x, precision));
  double p = std::pow(10.0, static_cast<double>(precision));
  double r = method == "ceil" ? std::ceil(x * p) / p : std::floor(x * p) / p;
  return Value::Float(r);
}
Value FSafe(Interpreter&, const Value& v, const CallArgs&) { return v; }
Value FSort(Interpreter& in, const Value& v, const CallArgs& args) {
  bool reverse = BoolArg(args, 0, "reverse", false);
  bool case_sensitive = BoolArg(args, 1, "case_sensitive", false);
  std::string attribute = StrArg(args, 2, "attribute", "");
  Value::ArrayData items = Iterate(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    keyed.emplace_back(SortKey(in, items[i], attribute, case_sensitive), i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? Less(b.first, a.first) : Less(a.first, b.first);
  });
  Value::ArrayData out;
  for (const auto& k : keyed) out.push_back(items[k.second]);
  return Value::Array(std::move(out));
}
Value FDictSort(Interpreter& in, const Value& v, const CallArgs& args) {
  if (!v.is_object()) throw ValueError("dictsort expects a mapping");
  bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  std::string by = StrArg(args, 1, "by", "key");
  bool reverse = BoolArg(args, 2, "reverse", false);
  Value items = FItems(in, v, CallArgs{});
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.array().size(); ++i) {
    Value key = items.array()[i].array()[by == "value" ? 1 : 0];
    if (!case_sensitive && key.is_string()) key = Value::String(ToLower(key.str()));
    keyed.emplace_back(key, i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& a, const auto& b) {
    return reverse ? Less(b.first, a.first) : Less(a.first, b.first);
  });
  Value::ArrayData out;
  for (const auto& k : keyed) out.push_back(items.array()[k.second]);
  return Value::Array(std::move(out));
}
Value FString(Interpreter&, const Value& v, const CallArgs&) { return Value::String(PyStr(v)); }
Value FSum(Interpreter& in, const Value& v, const CallArgs& args) {
  std::string attribute = StrArg(args, 0, "attribute", "");
  const Value* start = Arg(args, 1, "start");
  Value total = start != nullptr ? *start : Value::Int(0);
  for (const Value& item : Iterate(v)) {
    Value x = attribute.empty() ? item : GetAttrPath(in, item, attribute);
    if (!total.is_number() || !x.is_number()) throw ValueError("sum of non-numbers");
    if (total.is_float() || x.is_float()) {
      total = Value::Float(AsDouble(total) + AsDouble(x));
    } else {
      int64_t r;
      if (__builtin_add_overflow(AsInt64(total), AsInt64(x), &r))
        throw ValueError("integer overflow");
      total = Value::Int(r);
    }
  }
  return total;
}
Value FTitle(Interpreter&, const Value& v, const CallArgs&) {
  return Value::String(JinjaTitle(PyStr(v)));
}
Value FToJson(Interpreter& in, const Value& v, const CallArgs& args) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonFormat f;
  f.ensure_ascii = BoolArg(args, 0, "ensure_ascii", false);
  const Value* indent = Arg(args, 1, "indent");
  if (indent != nullptr && !indent->is_none()) {
    if (indent->is_string()) {
      f.indent_string = indent->str();
      f.indent = f.indent_string.empty() ? 0 : -1;
    } else {
      f.indent = static_cast<int>(std::clamp<int64_t>(AsInt64(*indent), 0, 64));
    }
  }
  const Value* seps = Arg(args, 2, "separators");
  if (seps != nullptr && !seps->is_none()) {
    if (!seps->is_array() || seps->array().size() != 2 || !seps->array()[0].is_string() ||
        !seps->array()[1].is_string()) {
      throw ValueError("separators must be an (item_separator, key_separator) pair");
    }
    f.custom_separators = true;
    f.item_separator = seps->array()[0].str();
    f.key_separator = seps->array()[1].str();
  }
  f.sort_keys = BoolArg(args, 3, "sort_keys", false);
  std::string out = ToJson(v, f);
  in.CheckString(out.size());
  return Value::String(std::move(out));
}
Value FTrim(Interpreter&, const Value& v, const CallArgs& args) {
  return Value::String(Strip(PyStr(v), Arg(args, 0, "chars"), true, true));
}
Value FUnique(Interpreter& in, const Value& v, const CallArgs& args) {
  bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  std::string attribute = StrArg(args, 1, "attribute", "");
  Value::ArrayData out, seen;
  for (const Value& item : Iterate(v)) {
    Value key = SortKey(in, item, attribute, case_sensitive);
    bool dup =
        std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, key); });
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::Array(std::move(out));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};
constexpr FilterEntry kFilters[] = {
    {"abs", FAbs},
    {"capitalize", FCapitalize},
    {"count", FLength},
    {"d", FDefault},
    {"default", FDefault},
    {"dictsort", FDictSort},
    {"first", FFirst},
    {"float", FFloat},
    {"indent", FIndent},
    {"int", FInt},
    {"items", FItems},
    {"join", FJoin},
    {"last", FLast},
    {"length", FLength},
    {"list", FList},
    {"lower", FLower},
    {"map", FMap},
    {"max", FMax},
    {"min", FMin},
    {"reject", FReject},
    {"rejectattr", FRejectAttr},
    {"replace", FReplace},
    {"reverse", FReverse},
    {"round", FRound},
    {"safe", FSafe},
    {"select", FSelect},
    {"selectattr", FSelectAttr},
    {"sort", FSort},
    {"string", FString},
    {"sum", FSum},
    {"title", FTitle},
    {"tojson", FToJson},
    {"trim", FTrim},
    {"unique", FUnique},
    {"upper", FUpper},
};

const FilterEntry* FindFilter(std::string_view name) {
  for (const auto& f : kFilters) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// ---- tests -----------------------------------------------------------------------------------
bool IsLowerString(const std::string& s) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
    if (c >= 'a' && c <= 'z') cased = true;
  }
  return cased;
}
bool IsUpperString(const std::string& s) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') return false;
    if (c >= 'A' && c <= 'Z') cased = true;
  }
  return cased;
}
const Value& Operand(const CallArgs& args, std::string_view test) {
  if (args.positional.empty())
    throw ValueError("test '" + std::string(test) + "' needs an argument");
  return args.positional[0];
}
bool Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        throw ValueError("'in <string>' requires string as left operand, not " +
                         std::string(TypeName(item)));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kArray:
      for (const Value& v : container.array()) {
        if (Equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kObject:
      return item.is_string() && container.object().Find(item.str()) != nullptr;
    default:
      throw ValueError("argument of type '" + std::string(TypeName(container)) +
                       "' is not iterable");
  }
}

bool RunTest(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object() && !v.is_namespace();
  if (name == "iterable") {
    return v.is_undefined() || v.is_string() || v.is_array() ||
           (v.is_object() && !v.is_namespace());
  }
  if (name == "sequence") {
    return v.is_undefined() || v.is_string() || v.is_array() ||
           (v.is_object() && !v.is_namespace());
  }
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "odd") return AsInt64(v) % 2 != 0;
  if (name == "even") return AsInt64(v) % 2 == 0;
  if (name == "divisibleby") {
    int64_t d = AsInt64(Operand(args, name));
    if (d == 0) throw ValueError("integer division or modulo by zero");
    return AsInt64(v) % d == 0;
  }
  if (name == "lower") return v.is_string() && IsLowerString(v.str());
  if (name == "upper") return v.is_string() && IsUpperString(v.str());
  if (name == "eq" || name == "equalto" || name == "==") return Equals(v, Operand(args, name));
  if (name == "ne" || name == "!=") return !Equals(v, Operand(args, name));
  if (name == "lt" || name == "lessthan" || name == "<") return Less(v, Operand(args, name));
  if (name == "le" || name == "<=") return !Less(Operand(args, name), v);
  if (name == "gt" || name == "greaterthan" || name == ">") return Less(Operand(args, name), v);
  if (name == "ge" || name == ">=") return !Less(v, Operand(args, name));
  if (name == "in") return Contains(Operand(args, name), v);
  if (name == "sameas") {
    const Value& o = Operand(args, name);
    if (v.kind() != o.kind()) return false;
    switch (v.kind()) {
      case Value::Kind::kNone:
      case Value::Kind::kUndefined:
        return true;
      case Value::Kind::kBool:
        return v.as_bool() == o.as_bool();
      case Value::Kind::kObject:
        return v.object_ptr() == o.object_ptr();
      case Value::Kind::kArray:
        return &v.array() == &o.array();
      default:
        return Equals(v, o);
    }
  }
  throw ValueError("unsupported test '" + name + "'");
}

constexpr std::string_view kTests[] = {
    "defined", "undefined", "none",   "boolean",     "false",    "true",     "integer",
    "float",   "number",    "string", "mapping",     "iterable", "sequence", "callable",
    "escaped", "odd",       "even",   "divisibleby", "lower",    "upper",    "eq",
    "equalto", "==",        "ne",     "!=",          "lt",       "lessthan", "<",
    "le",      "<=",        "gt",     "greaterthan", ">",        "ge",       ">=",
    "in",      "sameas"};

// ---- methods ---------------------------------------------------------------------------------
bool PrefixMatch(const std::string& s, const Value& prefix, bool at_end) {
  auto one = [&](const Value& p) {
    const std::string& x = RequireString(p, at_end ? "endswith" : "startswith");
    if (x.size() > s.size()) return false;
    return at_end ? s.compare(s.size() - x.size(), x.size(), x) == 0
                  : s.compare(0, x.size(), x) == 0;
  };
  if (prefix.is_array()) {
    for (const Value& p : prefix.array()) {
      if (one(p)) return true;
    }
    return false;
  }
  return one(prefix);
}

Value StringMethod(Interpreter& in, const std::string& s, const std::string& name,
                   const CallArgs& args) {
  if (name == "strip") return Value::String(Strip(s, Arg(args, 0, "chars"), true, true));
  if (name == "lstrip") return Value::String(Strip(s, Arg(args, 0, "chars"), true, false));
  if (name == "rstrip") return Value::String(Strip(s, Arg(args, 0, "chars"), false, true));
  if (name == "split" || name == "rsplit") {
    const Value* sep = Arg(args, 0, "sep");
    int64_t maxsplit = IntArg(args, 1, "maxsplit", -1);
    if (sep == nullptr || sep->is_none())
      return StringList(SplitWhitespace(s, name == "split" ? maxsplit : -1));
    const std::string& sep_s = RequireString(*sep, name);
    return StringList(name == "split" ? SplitSep(s, sep_s, maxsplit)
                                      : RSplitSep(s, sep_s, maxsplit));
  }
  if (name == "splitlines") return StringList(SplitLines(s, BoolArg(args, 0, "keepends", false)));
  if (name == "startswith" || name == "endswith") {
    const Value* p = args.Get(0, "prefix");
    if (p == nullptr) throw ValueError(name + "() takes at least 1 argument");
    return Value::Bool(PrefixMatch(s, *p, name == "endswith"));
  }
  if (name == "upper") return Value::String(ToUpper(s));
  if (name == "lower") return Value::String(ToLower(s));
  if (name == "title") return Value::String(PyTitle(s));
  if (name == "capitalize") return Value::String(Capitalize(s));
  if (name == "replace") {
    const Value* old = args.Get(0, "old");
    const Value* repl = args.Get(1, "new");
    if (old == nullptr || repl == nullptr) throw ValueError("replace() takes at least 2 arguments");
    return Value::String(Replace(in, s, RequireString(*old, "replace"),
                                 RequireString(*repl, "replace"), IntArg(args, 2, "count", -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const Value* sub = args.Get(0, "sub");
    if (sub == nullptr) throw ValueError(name + "() takes at least 1 argument");
    const std::string& x = RequireString(*sub, name);
    if (name == "count") {
      if (x.empty()) return Value::Int(static_cast<int64_t>(Utf8Length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(x); p != std::string::npos; p = s.find(x, p + x.size())) ++n;
      return Value::Int(n);
    }
    size_t p = (name == "find" || name == "index") ? s.find(x) : s.rfind(x);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") throw ValueError("substring not found");
      return Value::Int(-1);
    }
    return Value::Int(static_cast<int64_t>(Utf8Length(std::string_view(s).substr(0, p))));
  }
  if (name == "join") {
    const Value* items = args.Get(0, "iterable");
    if (items == nullptr) throw ValueError("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& item : Iterate(*items)) {
      if (!first) out += s;
      first = false;
      out += RequireString(item, "join");
      in.CheckString(out.size());
    }
    return Value::String(std::move(out));
  }
  auto all = [&](auto pred) {
    return Value::Bool(!s.empty() && std::all_of(s.begin(), s.end(), pred));
  };
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
    return all([](char c) { return c >= '0' && c <= '9'; });
  }
  if (name == "isalpha") return all([](char c) { return IsAlpha(c); });
  if (name == "isalnum") return all([](char c) { return IsAlpha(c) || (c >= '0' && c <= '9'); });
  if (name == "isspace")
    return all([](char c) { return IsAsciiSpace(static_cast<unsigned char>(c)); });
  if (name == "islower") return Value::Bool(IsLowerString(s));
  if (name == "isupper") return Value::Bool(IsUpperString(s));
  throw ValueError("'str object' has no attribute '" + name + "'");
}

constexpr std::string_view kStringMethods[] = {
    "strip",     "lstrip",  "rstrip",  "split",   "rsplit",     "splitlines", "startswith",
    "endswith",  "upper",   "lower",   "title",   "capitalize", "replace",    "find",
    "rfind",     "index",   "rindex",  "count",   "join",       "isdigit",    "isnumeric",
    "isdecimal", "isalpha", "isalnum", "isspace", "islower",    "isupper"};

Value DictMethod(const Value& self, const std::string& name, const CallArgs& args) {
  const ObjectData& o = self.object();
  if (name == "items") {
    Value::ArrayData out;
    for (const auto& [k, v] : o.items) out.push_back(Value::Array({Value::String(k), v}, true));
    return Value::Array(std::move(out));
  }
  if (name == "keys") {
    Value::ArrayData out;
    for (const auto& item : o.items) out.push_back(Value::String(item.first));
    return Value::Array(std::move(out));
  }
  if (name == "values") {
    Value::ArrayData out;
    for (const auto& item : o.items) out.push_back(item.second);
    return Value::Array(std::move(out));
  }
  if (name == "get") {
    const Value* key = args.Get(0, "key");
    if (key == nullptr) throw ValueError("get expected at least 1 argument");
    const Value* def = args.Get(1, "default");
    const Value* found = key->is_string() ? o.Find(key->str()) : nullptr;
    if (found != nullptr) return *found;
    return def != nullptr ? *def : Value::None();
  }
  throw ValueError("'dict object' has no attribute '" + name + "'");
}

// strftime with a bounded buffer.
std::string FormatTime(const std::string& fmt, std::chrono::system_clock::time_point now) {
  if (fmt.empty()) return std::string();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::vector<char> buf(256);
  while (true) {
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0 || buf.size() >= 65536) return std::string(buf.data(), n);
    buf.resize(buf.size() * 4);
  }
}

}  // namespace

bool IsKnownFilter(std::string_view name) { return FindFilter(name) != nullptr; }

bool IsKnownTest(std::string_view name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

Value ApplyFilter(Interpreter& in, const std::string& name, const Value& value,
                  const CallArgs& args) {
  const FilterEntry* f = FindFilter(name);
  if (f == nullptr) throw ValueError("unsupported filter '" + name + "'");
  // Filters other than default/d, list-ish ones and length treat undefined like Jinja's
  // Undefined: it stringifies to "" and iterates as empty.
  return f->fn(in, value, args);
}

bool ApplyTest(Interpreter&, const std::string& name, const Value& value, const CallArgs& args) {
  return RunTest(name, value, args);
}

Value BindMethod(Interpreter& in, const Value& self, const std::string& name) {
  if (self.is_string()) {
    if (std::find(std::begin(kStringMethods), std::end(kStringMethods), name) ==
        std::end(kStringMethods)) {
      return Value::Undefined("'str object' has no attribute '" + name + "'");
    }
    Interpreter* ip = &in;
    std::string s = self.str();
    return Value::Function("str." + name, [ip, s, name](const CallArgs& args) {
      return StringMethod(*ip, s, name, args);
    });
  }
  if (self.is_object() && !self.is_namespace() &&
      (name == "items" || name == "keys" || name == "values" || name == "get")) {
    return Value::Function("dict." + name, [self, name](const CallArgs& args) {
      return DictMethod(self, name, args);
    });
  }
  return Value::Undefined();
}

std::vector<std::pair<std::string, Value>> MakeGlobals(Interpreter& in) {
  Interpreter* ip = &in;
  std::vector<std::pair<std::string, Value>> g;
  g.emplace_back(
      "range", Value::Function("range", [ip](const CallArgs& args) {
        if (!args.keyword.empty()) throw ValueError("range() takes no keyword arguments");
        const auto& p = args.positional;
        if (p.empty() || p.size() > 3) throw ValueError("range expected 1 to 3 arguments");
        int64_t start = 0, stop = 0, step = 1;
        if (p.size() == 1) {
          stop = AsInt64(p[0]);
        } else {
          start = AsInt64(p[0]);
          stop = AsInt64(p[1]);
          if (p.size() == 3) step = AsInt64(p[2]);
        }
        if (step == 0) throw ValueError("range() arg 3 must not be zero");
        // Exact count in 128 bits, then start + k * step: stepping `i += step` near INT64_MAX
        // wrapped around and looped until bad_alloc.
        __extension__ typedef __int128 I128;
        const I128 span = step > 0 ? I128{stop} - start : I128{start} - stop;
        const I128 abs_step = step > 0 ? I128{step} : -I128{step};
        const I128 count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
        if (count > kMaxRange) {
          throw ValueError(
              "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        }
        Value::ArrayData out;
        for (I128 k = 0; k < count; ++k) {
          out.push_back(Value::Int(static_cast<int64_t>(I128{start} + k * step)));
        }
        ip->CheckItems(out.size());
        return Value::Array(std::move(out));
      }));
  auto make_object = [](const CallArgs& args, bool ns) {
    auto obj = std::make_shared<ObjectData>();
    obj->is_namespace = ns;
    for (const Value& p : args.positional) {
      if (!p.is_object()) throw ValueError("expected a mapping as positional argument");
      for (const auto& [k, v] : p.object().items) obj->Set(k, v);
    }
    for (const auto& [k, v] : args.keyword) obj->Set(k, v);
    return Value::Object(std::move(obj));
  };
  g.emplace_back("dict", Value::Function("dict", [make_object](const CallArgs& args) {
                   return make_object(args, false);
                 }));
  g.emplace_back("namespace", Value::Function("namespace", [make_object, ip](const CallArgs& args) {
                   Value ns = make_object(args, true);
                   ip->TrackNamespace(ns.object_ptr());
                   return ns;
                 }));
  g.emplace_back(
      "raise_exception", Value::Function("raise_exception", [](const CallArgs& args) -> Value {
        const Value* msg = args.Get(0, "message");
        throw Error(ErrorCode::InvalidArgument, msg != nullptr ? PyStr(*msg) : std::string());
      }));
  g.emplace_back("strftime_now", Value::Function("strftime_now", [ip](const CallArgs& args) {
                   const Value* fmt = args.Get(0, "format");
                   if (fmt == nullptr) throw ValueError("strftime_now() takes a format argument");
                   auto now =
                       ip->env().clock ? ip->env().clock() : std::chrono::system_clock::now();
                   return Value::String(FormatTime(RequireString(*fmt, "strftime_now"), now));
                 }));
  return g;
}

}  // namespace ebb::tmpl
