// constrain/json_schema.cpp — JSON Schema to Grammar (the contract is in json_schema.h).
//
// Pipeline: scan the nesting depth (so hostile input cannot recurse deeply anywhere below) ->
// parse (nlohmann::ordered_json keeps the document's property order) -> rewrite every $ref to
// an absolute URI and index the $id's -> compile from the root, one rule per $ref target (so
// recursion becomes rule references) -> prune what derives no finite text (false schemas,
// contradictions, required properties that recurse without end) -> report left recursion in
// schema terms -> Validate.
//
// How keywords combine: each validation keyword constrains one JSON type, so an object schema
// compiles to a choice over its allowed types, each branch applying its type's keywords.
// allOf is merged into one schema keyword by keyword (MergeInto: exact, or "not supported");
// anyOf with sibling keywords distributes the siblings into every branch (s ∧ (a ∨ b) =
// (s ∧ a) ∨ (s ∧ b)); oneOf is compiled as anyOf when its branches provably cannot overlap
// (CheckDisjoint), else refused; enum/const compile to the canonical texts of the listed values
// that the rest of the schema accepts (checked by a small validator, Valid()). Integer bounds
// become exact digit-range grammars of any size; number bounds exact decimal comparisons of
// fixed-point text (BoundedNumber).
#include "constrain/json_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "constrain/regex.h"
#include "core/json_scan.h"
#include "ebb/error.h"

namespace ebb::constrain {
namespace {

using Json = nlohmann::ordered_json;

// Limits on hostile input. Each is far above what a real schema needs.
constexpr int kMaxNesting = 256;         // JSON nesting of the schema document
constexpr int kMaxMembers = 10000;       // members of one JSON object in the document
constexpr int kMaxCompileDepth = 512;    // nested subschemas, $ref/allOf expansion included
constexpr int64_t kMaxSteps = 50000;     // subschemas compiled or merged
constexpr int64_t kMaxChecks = 1000000;  // validator steps (enum/const filtering)
constexpr size_t kMaxAnyOfProduct = 64;  // branches from combining two anyOf lists
constexpr int kMaxAnyDepthOption = 64;   // JsonSchemaOptions::max_any_depth

// ---------------------------------------------------------------------------------------------
// Messages

[[noreturn]] void Fail(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, "json_schema: " + message);
}

// A JSON pointer as messages show it: the root is "/".
std::string Where(const std::string& ptr) { return ptr.empty() ? "/" : ptr; }

std::string Child(const std::string& ptr, std::string_view key) {
  std::string out = ptr + "/";
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Child(const std::string& ptr, size_t index) {
  return ptr + "/" + std::to_string(index);
}

[[noreturn]] void Unsupported(std::string_view keyword, const std::string& ptr,
                              const std::string& why) {
  Fail("keyword '" + std::string(keyword) + "' at " + Where(ptr) + " is not supported (" + why +
       ")");
}

[[noreturn]] void BadValue(std::string_view keyword, const std::string& ptr,
                           const std::string& what) {
  Fail("keyword '" + std::string(keyword) + "' at " + Where(ptr) + " " + what);
}

std::string Shown(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// ---------------------------------------------------------------------------------------------
// Canonical JSON text (json_schema.h): compact, JSON.stringify's string escapes, integral
// numbers as plain integers.

void AppendStringBody(std::string& out, std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
}

std::string StringBody(std::string_view s) {
  std::string out;
  AppendStringBody(out, s);
  return out;
}

bool IsIntegral(const Json& v) {
  if (v.is_number_integer()) return true;  // unsigned included
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::trunc(d) == d;
}

// An integral double as exact decimal digits.
std::string IntegralDoubleText(double d) {
  if (d == 0) return "0";
  char buf[400];
  std::snprintf(buf, sizeof(buf), "%.0f", d);
  return buf;
}

// A number as JSON.stringify writes it (shortest round-trip digits; exponent form below 1e-6),
// except that integral values are always plain integers.
std::string NumberText(const Json& v) {
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  const double d = v.get<double>();
  if (IsIntegral(v)) return IntegralDoubleText(d);
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // "-1.2345e-07"
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out += '-';
    i = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t j = i; j < e; ++j) {
    if (sci[j] != '.') digits += sci[j];
  }
  const int n = std::stoi(sci.substr(e + 1)) + 1;  // decimal point after n digits
  const int k = static_cast<int>(digits.size());
  if (k <= n && n <= 21) {
    out += digits + std::string(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<size_t>(n)) + "." + digits.substr(static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0." + std::string(static_cast<size_t>(-n), '0') + digits;
  } else {
    out += digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += (n - 1 >= 0 ? "e+" : "e-") + std::to_string(std::abs(n - 1));
  }
  return out;
}

// `schema` (may be null) orders an object's keys: those its `properties` lists first, in that
// order, then the others in the value's own order. Nested values follow properties/items.
void AppendCanonical(std::string& out, const Json& v, const Json* schema) {
  const Json* props = nullptr;
  if (schema && schema->is_object()) {
    const auto it = schema->find("properties");
    if (it != schema->end() && it->is_object()) props = &*it;
  }
  switch (v.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::string:
      out += '"';
      AppendStringBody(out, v.get_ref<const std::string&>());
      out += '"';
      return;
    case Json::value_t::array: {
      const Json* items = nullptr;
      if (schema && schema->is_object()) {
        const auto it = schema->find("items");
        if (it != schema->end()) items = &*it;
      }
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        const Json* sub = nullptr;
        if (items && items->is_array()) {
          if (i < items->size()) sub = &(*items)[i];
        } else {
          sub = items;
        }
        AppendCanonical(out, v[i], sub);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      std::vector<std::pair<const std::string*, const Json*>> members;
      if (props) {
        for (const auto& [k, sub] : props->items()) {
          if (v.contains(k)) members.emplace_back(&k, &sub);
        }
      }
      for (const auto& [k, val] : v.items()) {
        if (!props || !props->contains(k)) members.emplace_back(&k, nullptr);
      }
      out += '{';
      bool first = true;
      for (const auto& [k, sub] : members) {
        if (!first) out += ',';
        first = false;
        out += '"';
        AppendStringBody(out, *k);
        out += "\":";
        AppendCanonical(out, v.at(*k), sub);
      }
      out += '}';
      return;
    }
    default:
      out += NumberText(v);
      return;
  }
}

std::vector<uint32_t> DecodeUtf8(std::string_view s) {
  // The input is valid UTF-8 (nlohmann refuses anything else).
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + static_cast<size_t>(k) < s.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
    }
    out.push_back(cp);
    i += static_cast<size_t>(n);
  }
  return out;
}

size_t CodepointCount(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string EncodeUtf8(uint32_t cp) {
  std::string out;
  AppendUtf8(cp, out);
  return out;
}

// The canonical text of one code point inside a JSON string.
std::string EncodeChar(uint32_t cp) { return StringBody(EncodeUtf8(cp)); }

bool IsEscaped(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

// ---------------------------------------------------------------------------------------------
// Numbers: comparison, equality, exact integer bounds.

long double AsLongDouble(const Json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

// -1, 0, 1. Integers compare exactly; a float against anything compares as long double (exact
// for int64 and double on x86-64).
int CompareNumbers(const Json& a, const Json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    const bool au = a.is_number_unsigned(), bu = b.is_number_unsigned();
    if (au && bu) {
      const uint64_t x = a.get<uint64_t>(), y = b.get<uint64_t>();
      return x < y ? -1 : x > y;
    }
    if (!au && !bu) {
      const int64_t x = a.get<int64_t>(), y = b.get<int64_t>();
      return x < y ? -1 : x > y;
    }
    // One unsigned (possibly above INT64_MAX), one signed.
    if (au) return -CompareNumbers(b, a);
    const int64_t x = a.get<int64_t>();
    const uint64_t y = b.get<uint64_t>();
    if (x < 0) return -1;
    const auto ux = static_cast<uint64_t>(x);
    return ux < y ? -1 : ux > y;
  }
  const long double x = AsLongDouble(a), y = AsLongDouble(b);
  return x < y ? -1 : x > y;
}

// JSON Schema equality: numbers by value (1 == 1.0), objects regardless of key order.
bool JsonEqual(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [k, v] : a.items()) {
      const auto it = b.find(k);
      if (it == b.end() || !JsonEqual(v, *it)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!JsonEqual(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

// An integer of any size: sign and decimal magnitude without leading zeros ("0" is not
// negative). Bounds of any JSON number become exact integers this way.
struct DecInt {
  bool neg = false;
  std::string mag = "0";
};

int CompareMag(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : a > b;
}

int CompareDec(const DecInt& a, const DecInt& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  const int c = CompareMag(a.mag, b.mag);
  return a.neg ? -c : c;
}

std::string MagPlusOne(std::string m) {
  for (size_t i = m.size(); i-- > 0;) {
    if (m[i] != '9') {
      ++m[i];
      return m;
    }
    m[i] = '0';
  }
  return "1" + m;
}

std::string MagMinusOne(std::string m) {  // m > 0
  for (size_t i = m.size(); i-- > 0;) {
    if (m[i] != '0') {
      --m[i];
      break;
    }
    m[i] = '9';
  }
  const size_t nz = m.find_first_not_of('0');
  return nz == std::string::npos ? "0" : m.substr(nz);
}

DecInt PlusOne(DecInt x) {
  if (!x.neg) return {false, MagPlusOne(x.mag)};
  x.mag = MagMinusOne(x.mag);
  if (x.mag == "0") x.neg = false;
  return x;
}

DecInt MinusOne(DecInt x) {
  if (x.neg) return {true, MagPlusOne(x.mag)};
  if (x.mag == "0") return {true, "1"};
  return {false, MagMinusOne(x.mag)};
}

// ceil(v) (up) or floor(v) of a JSON number, exactly.
DecInt RoundToInteger(const Json& v, bool up) {
  if (v.is_number_unsigned()) return {false, std::to_string(v.get<uint64_t>())};
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    const uint64_t mag = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    return {i < 0, std::to_string(mag)};
  }
  const double d = v.get<double>();
  const double r = up ? std::ceil(d) : std::floor(d);
  if (r == 0) return {};
  return {r < 0, IntegralDoubleText(std::fabs(r))};
}

// An exact decimal: sign, integer digits (canonical, "0" for none) and fraction digits (no
// trailing zeros). Bounds on `number` become these: a float bound is the shortest decimal that
// reads back as the same double (the bound 1.1 is 1.1, not 1.100000000000000088...).
struct Decimal {
  bool neg = false;
  std::string ip = "0";
  std::string fp;
};

Decimal DecimalOf(const Json& v) {
  if (v.is_number_integer()) {
    const DecInt i = RoundToInteger(v, false);
    return {i.neg, i.mag, ""};
  }
  const double d = v.get<double>();
  if (d == 0) return {};
  char buf[64];
  const auto res =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(d), std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t j = 0; j < e; ++j) {
    if (sci[j] != '.') digits += sci[j];
  }
  const int n = std::stoi(sci.substr(e + 1)) + 1;
  const int k = static_cast<int>(digits.size());
  Decimal out;
  out.neg = d < 0;
  if (n <= 0) {
    out.fp = std::string(static_cast<size_t>(-n), '0') + digits;
  } else if (n >= k) {
    out.ip = digits + std::string(static_cast<size_t>(n - k), '0');
  } else {
    out.ip = digits.substr(0, static_cast<size_t>(n));
    out.fp = digits.substr(static_cast<size_t>(n));
  }
  while (!out.fp.empty() && out.fp.back() == '0') out.fp.pop_back();
  return out;
}

int CompareMagnitude(const Decimal& a, const Decimal& b) {
  const int c = CompareMag(a.ip, b.ip);
  if (c) return c;
  return a.fp < b.fp ? -1 : a.fp > b.fp;  // no trailing zeros: lexicographic is numeric
}

int CompareDecimal(const Decimal& a, const Decimal& b) {
  const bool az = a.ip == "0" && a.fp.empty(), bz = b.ip == "0" && b.fp.empty();
  const bool an = a.neg && !az, bn = b.neg && !bz;
  if (an != bn) return an ? -1 : 1;
  const int c = CompareMagnitude(a, b);
  return an ? -c : c;
}

// 0 < |x| < 1e-6: JSON.stringify writes such numbers with an exponent.
bool IsTiny(const Decimal& d) {
  return d.ip == "0" && !d.fp.empty() && d.fp.compare(0, 6, "000000") == 0;
}

// ---------------------------------------------------------------------------------------------
// URIs: just enough of RFC 3986 to resolve $ref against $id.

struct Uri {
  std::string scheme, authority, path, query, fragment;
  bool has_scheme = false, has_authority = false, has_query = false, has_fragment = false;
};

Uri ParseUri(const std::string& s) {
  Uri u;
  size_t i = 0;
  const size_t colon = s.find(':');
  if (colon != std::string::npos && colon > 0 && std::isalpha(static_cast<unsigned char>(s[0]))) {
    bool ok = true;
    for (size_t j = 0; j < colon; ++j) {
      const char c = s[j];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
        ok = false;
      }
    }
    if (ok) {
      u.has_scheme = true;
      u.scheme = s.substr(0, colon);
      i = colon + 1;
    }
  }
  if (s.compare(i, 2, "//") == 0) {
    const size_t end = s.find_first_of("/?#", i + 2);
    u.has_authority = true;
    u.authority = s.substr(i + 2, end == std::string::npos ? std::string::npos : end - i - 2);
    i = end == std::string::npos ? s.size() : end;
  }
  const size_t pend = s.find_first_of("?#", i);
  u.path = s.substr(i, pend == std::string::npos ? std::string::npos : pend - i);
  i = pend == std::string::npos ? s.size() : pend;
  if (i < s.size() && s[i] == '?') {
    const size_t qend = s.find('#', i);
    u.has_query = true;
    u.query = s.substr(i + 1, qend == std::string::npos ? std::string::npos : qend - i - 1);
    i = qend == std::string::npos ? s.size() : qend;
  }
  if (i < s.size() && s[i] == '#') {
    u.has_fragment = true;
    u.fragment = s.substr(i + 1);
  }
  return u;
}

std::string RemoveDotSegments(std::string in) {
  std::string out;
  while (!in.empty()) {
    if (in.rfind("../", 0) == 0) {
      in.erase(0, 3);
    } else if (in.rfind("./", 0) == 0) {
      in.erase(0, 2);
    } else if (in.rfind("/./", 0) == 0) {
      in.erase(0, 2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.rfind("/../", 0) == 0 || in == "/..") {
      in = in == "/.." ? "/" : in.substr(3);
      const size_t slash = out.rfind('/');
      out.erase(slash == std::string::npos ? 0 : slash);
    } else if (in == "." || in == "..") {
      in.clear();
    } else {
      const size_t next = in.find('/', in[0] == '/' ? 1 : 0);
      out += in.substr(0, next);
      in.erase(0, next == std::string::npos ? in.size() : next);
    }
  }
  return out;
}

std::string ResolveUri(const std::string& base_text, const std::string& ref_text) {
  const Uri b = ParseUri(base_text), r = ParseUri(ref_text);
  Uri t;
  if (r.has_scheme) {
    t = r;
    t.path = RemoveDotSegments(r.path);
  } else {
    if (r.has_authority) {
      t.has_authority = true;
      t.authority = r.authority;
      t.path = RemoveDotSegments(r.path);
      t.has_query = r.has_query;
      t.query = r.query;
    } else {
      if (r.path.empty()) {
        t.path = b.path;
        t.has_query = r.has_query || b.has_query;
        t.query = r.has_query ? r.query : b.query;
      } else {
        if (r.path[0] == '/') {
          t.path = RemoveDotSegments(r.path);
        } else {
          std::string merged;
          if (b.has_authority && b.path.empty()) {
            merged = "/" + r.path;
          } else {
            const size_t slash = b.path.rfind('/');
            merged = (slash == std::string::npos ? "" : b.path.substr(0, slash + 1)) + r.path;
          }
          t.path = RemoveDotSegments(merged);
        }
        t.has_query = r.has_query;
        t.query = r.query;
      }
      t.has_authority = b.has_authority;
      t.authority = b.authority;
    }
    t.has_scheme = b.has_scheme;
    t.scheme = b.scheme;
  }
  t.has_fragment = r.has_fragment;
  t.fragment = r.fragment;
  std::string out;
  if (t.has_scheme) out += t.scheme + ":";
  if (t.has_authority) out += "//" + t.authority;
  out += t.path;
  if (t.has_query) out += "?" + t.query;
  if (t.has_fragment) out += "#" + t.fragment;
  return out;
}

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Keywords

enum : unsigned {
  kNull = 1,
  kBoolean = 2,
  kObject = 4,
  kArray = 8,
  kInteger = 16,   // integral numbers
  kFraction = 32,  // other numbers ("number" is kInteger | kFraction)
  kString = 64,
  kAllTypes = 127,
};

unsigned TypeBit(const std::string& name) {
  if (name == "null") return kNull;
  if (name == "boolean") return kBoolean;
  if (name == "object") return kObject;
  if (name == "array") return kArray;
  if (name == "integer") return kInteger;
  if (name == "number") return kInteger | kFraction;
  if (name == "string") return kString;
  return 0;
}

Json TypeJson(unsigned mask) {
  Json out = Json::array();
  if (mask & kNull) out.push_back("null");
  if (mask & kBoolean) out.push_back("boolean");
  if (mask & kObject) out.push_back("object");
  if (mask & kArray) out.push_back("array");
  if (mask & kFraction) {
    out.push_back("number");
  } else if (mask & kInteger) {
    out.push_back("integer");
  }
  if (mask & kString) out.push_back("string");
  return out;
}

unsigned ValueType(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return kNull;
    case Json::value_t::boolean:
      return kBoolean;
    case Json::value_t::object:
      return kObject;
    case Json::value_t::array:
      return kArray;
    case Json::value_t::string:
      return kString;
    default:
      return IsIntegral(v) ? kInteger : kFraction;
  }
}

bool IsAnnotation(const std::string& k) {
  return k == "title" || k == "description" || k == "default" || k == "examples" ||
         k == "$comment" || k == "readOnly" || k == "writeOnly" || k == "deprecated";
}

// Keywords that neither constrain nor hold constraints for this schema object.
bool IsInert(const std::string& k) {
  return IsAnnotation(k) || k == "$schema" || k == "$id" || k == "definitions" || k == "$defs";
}

bool HasConstraints(const Json& s) {
  for (const auto& [k, v] : s.items()) {
    if (!IsInert(k)) return true;
  }
  return false;
}

bool IsSchemaValue(const Json& v) { return v.is_object() || v.is_boolean(); }

const std::set<std::string>& KnownFormats() {
  static const std::set<std::string> k{"date",  "time", "date-time", "uuid",
                                       "email", "ipv4", "ipv6"};
  return k;
}

std::string UnsupportedReason(const std::string& k) {
  static const std::map<std::string, std::string> hints{
      {"not", "a grammar cannot express negation; list the allowed types or values"},
      {"if", "write the cases as anyOf branches"},
      {"then", "write the cases as anyOf branches"},
      {"else", "write the cases as anyOf branches"},
      {"dependencies", "write the cases as anyOf branches"},
      {"dependentRequired", "write the cases as anyOf branches"},
      {"dependentSchemas", "write the cases as anyOf branches"},
      {"patternProperties", "list the property names under 'properties'"},
      {"propertyNames",
       "list the property names under 'properties' and set "
       "additionalProperties to false"},
      {"contains", "describe every item with 'items'"},
      {"minContains", "describe every item with 'items'"},
      {"maxContains", "describe every item with 'items'"},
      {"multipleOf", "a grammar cannot check divisibility; use an enum or a range"},
      {"minProperties", "list the properties and mark the needed ones 'required'"},
      {"maxProperties", "list the properties and set additionalProperties to false"},
      {"prefixItems", "use draft 7's array form of 'items' with 'additionalItems'"},
      {"unevaluatedProperties", "use additionalProperties"},
      {"unevaluatedItems", "use additionalItems"},
      {"contentMediaType", "describe the string with 'pattern'"},
      {"contentEncoding", "describe the string with 'pattern'"},
      {"contentSchema", "describe the string with 'pattern'"},
      {"$anchor", "use a JSON-pointer $ref such as \"#/definitions/name\""},
      {"$dynamicRef", "use a JSON-pointer $ref such as \"#/definitions/name\""},
      {"$dynamicAnchor", "use a JSON-pointer $ref such as \"#/definitions/name\""},
      {"$recursiveRef", "use a JSON-pointer $ref such as \"#/definitions/name\""},
      {"$recursiveAnchor", "use a JSON-pointer $ref such as \"#/definitions/name\""},
      {"nullable", "use \"type\": [\"<type>\", \"null\"]"},
  };
  const auto it = hints.find(k);
  if (it != hints.end()) return it->second;
  return "unknown keyword; a keyword that is not understood is refused rather than ignored: "
         "check its spelling or remove it";
}

// A non-negative integer keyword value (2.0 counts), saturated at 2^62.
int64_t CountValue(const Json& v, const char* keyword, const std::string& ptr) {
  if (v.is_number_unsigned()) {
    return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), uint64_t{1} << 62));
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  if (v.is_number_float() && IsIntegral(v) && v.get<double>() >= 0) {
    return static_cast<int64_t>(std::min(v.get<double>(), 4.6e18));
  }
  BadValue(keyword, ptr, "must be a non-negative integer, not " + Shown(v));
}

// ---------------------------------------------------------------------------------------------
// Formats: exact grammars for the string body (no characters need escaping in any of them).

class FormatBuilder {
 public:
  explicit FormatBuilder(Grammar& g) : g_(g) {}

  // Returns the body rule for `format`, or -1 for a format this file does not know.
  int32_t Build(const std::string& format) {
    if (format == "date") return Date();
    if (format == "time") return Time();
    if (format == "date-time") return Seq({R(Date()), Set("Tt"), R(Time())}, "date-time");
    if (format == "uuid") {
      const Symbol h = Set("0-9a-fA-F");
      return Seq({R(N(h, 8)), C('-'), R(N(h, 4)), C('-'), R(N(h, 4)), C('-'), R(N(h, 4)), C('-'),
                  R(N(h, 12))},
                 "uuid");
    }
    if (format == "email") return Email();
    if (format == "ipv4") return Ipv4();
    if (format == "ipv6") return Ipv6();
    return -1;
  }

 private:
  Symbol R(int32_t rule) { return Symbol::Rule(rule); }
  Symbol C(char c) { return g_.Byte(static_cast<uint8_t>(c)); }
  // "0-9a-f" style: single characters and ranges.
  Symbol Set(std::string_view spec) {
    ByteSet s;
    for (size_t i = 0; i < spec.size(); ++i) {
      if (i + 2 < spec.size() && spec[i + 1] == '-') {
        for (int c = static_cast<unsigned char>(spec[i]);
             c <= static_cast<unsigned char>(spec[i + 2]); ++c) {
          s.set(static_cast<size_t>(c));
        }
        i += 2;
      } else {
        s.set(static_cast<unsigned char>(spec[i]));
      }
    }
    return g_.Bytes(s);
  }
  int32_t Seq(Sequence seq, std::string_view name = "fmt") {
    return g_.Choice({std::move(seq)}, name);
  }
  int32_t Alt(std::vector<Sequence> alts, std::string_view name = "fmt") {
    return g_.Choice(std::move(alts), name);
  }
  Sequence L(std::string_view text) {
    Sequence s;
    g_.AppendLiteral(s, text);
    return s;
  }
  static Sequence Cat(Sequence a, const Sequence& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  int32_t N(Symbol s, int64_t n) { return g_.Repeat(s, n, n, "fmt"); }
  std::string Two(int v) {
    char b[3] = {static_cast<char>('0' + v / 10), static_cast<char>('0' + v % 10), 0};
    return b;
  }
  // "+hh:mm" / "-hh:mm" for `minutes` after midnight. Built by appends: GCC 12's -O2 -Wrestrict
  // misreads "+" + std::string&& (a false positive, GCC bug 105329).
  std::string Offset(char sign, int minutes) {
    std::string s(1, sign);
    s += Two(minutes / 60);
    s += ':';
    s += Two(minutes % 60);
    return s;
  }

  int32_t Date() {
    if (date_ >= 0) return date_;
    const Symbol d = Set("0-9");
    const int32_t year = N(d, 4);
    const int32_t mon31 = Alt({{C('0'), Set("13578")}, {C('1'), Set("02")}});
    const int32_t mon30 = Alt({{C('0'), Set("469")}, L("11")});
    const int32_t day31 = Alt({{C('0'), Set("1-9")}, {Set("12"), d}, {C('3'), Set("01")}});
    const int32_t day30 = Alt({{C('0'), Set("1-9")}, {Set("12"), d}, L("30")});
    const int32_t day28 = Alt({{C('0'), Set("1-9")}, {C('1'), d}, {C('2'), Set("0-8")}});
    // Leap years: divisible by 4, and centuries only when divisible by 400.
    const int32_t yy4 =
        Alt({{C('0'), Set("48")}, {Set("2468"), Set("048")}, {Set("13579"), Set("26")}});
    const int32_t cc4 =
        Alt({{C('0'), Set("048")}, {Set("2468"), Set("048")}, {Set("13579"), Set("26")}});
    const int32_t leap = Alt({{d, d, R(yy4)}, {R(cc4), C('0'), C('0')}});
    date_ = Alt({{R(year), C('-'), R(mon31), C('-'), R(day31)},
                 {R(year), C('-'), R(mon30), C('-'), R(day30)},
                 Cat({R(year)}, Cat(L("-02-"), {R(day28)})),
                 Cat({R(leap)}, L("-02-29"))},
                "date");
    return date_;
  }

  int32_t Time() {
    if (time_ >= 0) return time_;
    const Symbol d = Set("0-9");
    const int32_t hh = Alt({{Set("01"), d}, {C('2'), Set("0-3")}});
    const int32_t mm = Seq({Set("0-5"), d});
    const int32_t frac = Alt({{C('.'), R(g_.Repeat(d, 1, -1, "fmt"))}, {}});
    const int32_t offset = Alt({{Set("Zz")}, {Set("+-"), R(hh), C(':'), R(mm)}});
    std::vector<Sequence> alts{{R(hh), C(':'), R(mm), C(':'), R(mm), R(frac), R(offset)}};
    // A leap second (:60) is valid only at 23:59 UTC: for local time h:m the offset must be
    // +(h:m + 1 minute) or -(23:59 - h:m), or Z at 23:59.
    for (int h = 0; h < 24; ++h) {
      std::vector<Sequence> minutes;
      for (int m = 0; m < 60; ++m) {
        const int local = h * 60 + m;
        const int plus = (local + 1) % 1440, minus = 1439 - local;
        const Sequence head = Cat(L(Two(m) + ":60"), {R(frac)});
        minutes.push_back(Cat(head, L(Offset('+', plus))));
        minutes.push_back(Cat(head, L(Offset('-', minus))));
        if (local == 1439) minutes.push_back(Cat(head, {Set("Zz")}));
      }
      alts.push_back(Cat(L(Two(h) + ":"), {R(Alt(std::move(minutes), "leap"))}));
    }
    time_ = Alt(std::move(alts), "time");
    return time_;
  }

  int32_t DecOctet() {
    if (octet_ >= 0) return octet_;
    const Symbol d = Set("0-9");
    octet_ = Alt({{C('2'), C('5'), Set("0-5")},
                  {C('2'), Set("0-4"), d},
                  {C('1'), d, d},
                  {Set("1-9"), d},
                  {d}},
                 "octet");
    return octet_;
  }

  int32_t Ipv4() {
    if (ipv4_ >= 0) return ipv4_;
    const Symbol o = R(DecOctet());
    ipv4_ = Seq({o, C('.'), o, C('.'), o, C('.'), o}, "ipv4");
    return ipv4_;
  }

  // RFC 3986's IPv6address.
  int32_t Ipv6() {
    if (ipv6_ >= 0) return ipv6_;
    const int32_t h16 = g_.Repeat(Set("0-9a-fA-F"), 1, 4, "h16");
    const int32_t h16c = Seq({R(h16), C(':')}, "h16c");
    const int32_t ls32 = Alt({{R(h16), C(':'), R(h16)}, {R(Ipv4())}}, "ls32");
    auto rep = [&](int64_t n) { return R(g_.Repeat(R(h16c), n, n, "h16n")); };
    // [ *k( h16 ":" ) h16 ] as a nullable rule.
    auto head = [&](int64_t k) {
      return R(Alt({{R(g_.Repeat(R(h16c), 0, k, "h16n")), R(h16)}, {}}, "h16head"));
    };
    const Symbol dc = R(g_.Literal("::", "dc"));
    ipv6_ = Alt({{rep(6), R(ls32)},
                 {dc, rep(5), R(ls32)},
                 {head(0), dc, rep(4), R(ls32)},
                 {head(1), dc, rep(3), R(ls32)},
                 {head(2), dc, rep(2), R(ls32)},
                 {head(3), dc, R(h16c), R(ls32)},
                 {head(4), dc, R(ls32)},
                 {head(5), dc, R(h16)},
                 {head(6), dc}},
                "ipv6");
    return ipv6_;
  }

  // RFC 5321 Mailbox: dot-string or quoted-string local part; a host name (labels of letters,
  // digits and inner hyphens, at most 63 characters each) or an address literal.
  int32_t Email() {
    const Symbol atext = Set("A-Za-z0-9!#$%&'*+/=?^_`{|}~-");
    const int32_t atom = g_.Repeat(atext, 1, -1, "atom");
    const int32_t more_atoms = g_.Repeat(R(Seq({C('.'), R(atom)})), 0, -1, "atoms");
    const int32_t dot_string = Seq({R(atom), R(more_atoms)}, "dot-string");
    // Inside a JSON string the quotes are \" and a backslash is \\.
    ByteSet qtext;
    for (int c = 0x20; c <= 0x7E; ++c) {
      if (c != '"' && c != '\\') qtext.set(static_cast<size_t>(c));
    }
    const int32_t pair_char = Alt({{g_.Bytes(qtext)}, L("\\\""), L("\\\\")});
    const int32_t qcontent = Alt({{g_.Bytes(qtext)}, Cat(L("\\\\"), {R(pair_char)})}, "qcontent");
    const int32_t quoted = Seq(
        Cat(Cat(L("\\\""), {R(g_.Repeat(R(qcontent), 0, -1, "qcontents"))}), L("\\\"")), "quoted");
    const Symbol alnum = Set("A-Za-z0-9");
    const int32_t label =
        Alt({{alnum}, {alnum, R(g_.Repeat(Set("A-Za-z0-9-"), 0, 61, "ldh")), alnum}}, "label");
    const int32_t host =
        Seq({R(label), R(g_.Repeat(R(Seq({C('.'), R(label)})), 0, -1, "labels"))}, "host");
    const int32_t domain =
        Alt({{R(host)}, {C('['), R(Ipv4()), C(']')}, Cat(Cat(L("[IPv6:"), {R(Ipv6())}), L("]"))},
            "domain");
    return Alt({{R(dot_string), C('@'), R(domain)}, {R(quoted), C('@'), R(domain)}}, "email");
  }

  Grammar& g_;
  int32_t date_ = -1, time_ = -1, octet_ = -1, ipv4_ = -1, ipv6_ = -1;
};

// Fixed text length of a format's strings, or -1 when it varies.
int64_t FormatLength(const std::string& format) {
  if (format == "date") return 10;
  if (format == "uuid") return 36;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// The compiler

struct Target {
  const Json* node = nullptr;
  std::string ptr;  // JSON pointer in the document, for messages
};

class Compiler {
 public:
  explicit Compiler(const JsonSchemaOptions& options) : options_(options) {
    if (options.max_any_depth < 0 || options.max_any_depth > kMaxAnyDepthOption) {
      Fail("options.max_any_depth must be between 0 and " + std::to_string(kMaxAnyDepthOption) +
           ", not " + std::to_string(options.max_any_depth));
    }
    never_ = g_.AddRule("never");  // no alternatives: pruned wherever it is referenced
  }

  Grammar CompileText(std::string_view text) {
    try {
      return CompileTextUnprefixed(text);
    } catch (const Error& e) {
      throw Prefixed(e);
    } catch (const nlohmann::json::exception& e) {
      // Values are checked before use, so this is a bug here, not in the schema.
      throw Error(ErrorCode::Internal, std::string("json_schema: internal error: ") + e.what());
    }
  }

  Grammar AnyObject() {
    try {
      return Finish(AnyObjectRule(std::max(options_.max_any_depth, 1)));
    } catch (const Error& e) {
      throw Prefixed(e);
    }
  }

 private:
  // Grammar's own limits (rule count, repetition) throw without this file's prefix.
  static Error Prefixed(const Error& e) {
    const std::string what = e.what();
    if (what.rfind("json_schema:", 0) == 0) return e;
    return Error(e.code(), "json_schema: the schema needs too large a grammar: " + what);
  }

  Grammar CompileTextUnprefixed(std::string_view text) {
    CheckShape(text);
    try {
      doc_ = Json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
      Fail(std::string("the schema is not valid JSON: ") + e.what());
    }
    if (!IsSchemaValue(doc_)) {
      Fail("the schema must be a JSON object or a boolean, not " + Shown(doc_));
    }
    if (doc_.is_object()) {
      const auto dialect = doc_.find("$schema");
      if (dialect != doc_.end() && dialect->is_string()) {
        const std::string& d = dialect->get_ref<const std::string&>();
        if (d.find("draft-04") != std::string::npos || d.find("draft-03") != std::string::npos) {
          Unsupported("$schema", "", "draft 4 and older differ in meaning; write draft 7");
        }
        ref_siblings_apply_ =
            d.find("2019-09") != std::string::npos || d.find("2020-12") != std::string::npos;
      }
    }
    Index(doc_, "", "", 0);
    return Finish(RefRule({&doc_, ""}, 0));
  }

  // ----- the document

  // Before parsing: the nesting depth (so nothing below recurses deeply) and the members of
  // one object (nlohmann::ordered_json inserts a key in time linear in the object's size).
  static void CheckShape(std::string_view text) {
    std::vector<std::pair<char, int>> open;  // bracket, members so far
    internal::ScanJsonStructure(text, 0, [&](size_t, char c) {
      if (c == '{' || c == '[') {
        if (open.size() >= static_cast<size_t>(kMaxNesting)) {
          Fail("the schema nests more than " + std::to_string(kMaxNesting) +
               " levels deep: flatten it with definitions and $ref");
        }
        open.emplace_back(c, 0);
      } else if (c == '}' || c == ']') {
        if (!open.empty()) open.pop_back();
      } else if (c == ',' && !open.empty() && open.back().first == '{' &&
                 ++open.back().second >= kMaxMembers) {
        Fail("an object in the schema has more than " + std::to_string(kMaxMembers) +
             " members: split it");
      }
      return true;
    });
  }

  // Rewrites every $ref (at schema positions) to an absolute URI and records each $id, so a
  // reference resolves the same wherever a copy of its schema ends up (MergeInto copies).
  void Index(Json& node, std::string base, const std::string& ptr, int depth) {
    if (!node.is_object() || depth > kMaxNesting) return;
    const auto ref = node.find("$ref");
    if (ref != node.end() && ref->is_string()) {
      *ref = ResolveUri(base, ref->get<std::string>());
    }
    const auto id = node.find("$id");
    if (id != node.end() && id->is_string() && (ref == node.end() || ref_siblings_apply_)) {
      const std::string abs = ResolveUri(base, id->get<std::string>());
      const size_t hash = abs.find('#');
      const std::string doc = abs.substr(0, hash);
      if (hash == std::string::npos || hash + 1 == abs.size()) {
        ids_[doc] = {&node, ptr};
      } else {
        ids_[abs] = {&node, ptr};  // a plain-name fragment ("#foo")
      }
      base = doc;
    }
    if (depth == 0) ids_.emplace(base, Target{&node, ptr});
    if (depth == 0 && !base.empty()) ids_.emplace("", Target{&node, ptr});
    for (auto& [k, v] : node.items()) {
      const std::string p = Child(ptr, k);
      if (k == "additionalProperties" || k == "additionalItems" || k == "not" || k == "if" ||
          k == "then" || k == "else" || k == "contains" || k == "propertyNames") {
        Index(v, base, p, depth + 1);
      } else if (k == "items" || k == "allOf" || k == "anyOf" || k == "oneOf") {
        if (v.is_array()) {
          for (size_t i = 0; i < v.size(); ++i) Index(v[i], base, Child(p, i), depth + 1);
        } else {
          Index(v, base, p, depth + 1);
        }
      } else if (k == "properties" || k == "patternProperties" || k == "definitions" ||
                 k == "$defs" || k == "dependencies") {
        if (v.is_object()) {
          for (auto& [name, sub] : v.items()) Index(sub, base, Child(p, name), depth + 1);
        }
      }
    }
  }

  // The schema a resolved $ref URI names.
  Target Lookup(const std::string& uri, const std::string& where) const {
    const size_t hash = uri.find('#');
    const std::string doc = uri.substr(0, hash);
    const std::string fragment = hash == std::string::npos ? "" : uri.substr(hash + 1);
    if (!fragment.empty() && fragment[0] != '/') {
      const auto it = ids_.find(uri);
      if (it == ids_.end()) {
        BadValue("$ref", where, "names '" + uri + "', which no \"$id\" in this document defines");
      }
      return it->second;
    }
    const auto it = ids_.find(doc);
    if (it == ids_.end()) {
      Unsupported("$ref", where,
                  "'" + uri +
                      "' is outside this document and remote schemas are not fetched; "
                      "copy the schema under 'definitions'");
    }
    Target t = it->second;
    const std::string pointer = PercentDecode(fragment);
    size_t i = 1;
    while (i <= pointer.size() && !pointer.empty()) {
      const size_t end = std::min(pointer.find('/', i), pointer.size());
      std::string token;
      for (size_t j = i; j < end; ++j) {
        if (pointer[j] == '~' && j + 1 < end && (pointer[j + 1] == '0' || pointer[j + 1] == '1')) {
          token += pointer[j + 1] == '0' ? '~' : '/';
          ++j;
        } else {
          token += pointer[j];
        }
      }
      const Json* next = nullptr;
      if (t.node->is_object()) {
        const auto f = t.node->find(token);
        if (f != t.node->end()) next = &*f;
      } else if (t.node->is_array() && !token.empty() &&
                 token.find_first_not_of("0123456789") == std::string::npos &&
                 (token.size() == 1 || token[0] != '0') && token.size() < 10) {
        const size_t index = std::stoul(token);
        if (index < t.node->size()) next = &(*t.node)[index];
      }
      if (!next) {
        BadValue("$ref", where,
                 "points at '" + uri + "', which does not exist (no '" + token + "' at " +
                     Where(t.ptr) + "): fix the JSON pointer");
      }
      t = {next, Child(t.ptr, token)};
      i = end + 1;
    }
    return t;
  }

  static const std::string& RefValue(const Json& s, const std::string& ptr) {
    const Json& r = s.at("$ref");
    if (!r.is_string()) BadValue("$ref", ptr, "must be a string such as \"#/definitions/name\"");
    return r.get_ref<const std::string&>();
  }

  // Whether `s` is a plain reference: a $ref whose siblings do not apply.
  bool IsPlainRef(const Json& s) const {
    if (!s.is_object() || !s.contains("$ref")) return false;
    if (!ref_siblings_apply_) return true;
    for (const auto& [k, v] : s.items()) {
      if (k != "$ref" && !IsInert(k)) return false;
    }
    return true;
  }

  // Follows a chain of plain $refs to the schema at its end.
  Target FollowRef(const Json& s, const std::string& ptr) const {
    std::set<const Json*> seen{&s};
    Target t = Lookup(RefValue(s, ptr), ptr);
    while (IsPlainRef(*t.node)) {
      if (!seen.insert(t.node).second) {
        BadValue("$ref", ptr,
                 "starts a cycle of $refs that never reaches a schema (through " + Where(t.ptr) +
                     "): point one of them at a real schema");
      }
      t = Lookup(RefValue(*t.node, t.ptr), t.ptr);
    }
    return t;
  }

  // ----- keyword checks

  // Every keyword of `s` must be supported and well-formed (values of subschemas are checked
  // when they are compiled).
  void CheckKeywords(const Json& s, const std::string& ptr) const {
    for (const auto& [k, v] : s.items()) {
      if (IsAnnotation(k)) continue;
      if (k == "$id" || k == "$schema" || k == "$ref" || k == "pattern") {
        if (!v.is_string()) BadValue(k, ptr, "must be a string, not " + Shown(v));
      } else if (k == "definitions" || k == "$defs") {
        if (!v.is_object()) BadValue(k, ptr, "must be an object of named schemas");
      } else if (k == "type") {
        const auto check = [&](const Json& t) {
          if (!t.is_string() || !TypeBit(t.get<std::string>())) {
            BadValue("type", ptr,
                     "has unknown type " + Shown(t) +
                         ": use null, boolean, object, array, number, integer or string");
          }
        };
        if (v.is_array()) {
          if (v.empty()) BadValue(k, ptr, "must not be an empty array");
          for (const Json& t : v) check(t);
        } else {
          check(v);
        }
      } else if (k == "properties") {
        if (!v.is_object()) BadValue(k, ptr, "must be an object mapping names to schemas");
        for (const auto& [name, sub] : v.items()) {
          if (!IsSchemaValue(sub)) {
            BadValue(k, ptr,
                     "has property '" + name +
                         "' whose schema is not an object or a boolean: " + Shown(sub));
          }
        }
      } else if (k == "required") {
        if (!v.is_array()) BadValue(k, ptr, "must be an array of property names, not " + Shown(v));
        for (const Json& n : v) {
          if (!n.is_string())
            BadValue(k, ptr, "must hold property names (strings), not " + Shown(n));
        }
      } else if (k == "additionalProperties" || k == "additionalItems") {
        if (!IsSchemaValue(v)) BadValue(k, ptr, "must be a schema (an object or a boolean)");
      } else if (k == "items") {
        if (v.is_array()) {
          for (const Json& sub : v) {
            if (!IsSchemaValue(sub)) BadValue(k, ptr, "must hold schemas (objects or booleans)");
          }
        } else if (!IsSchemaValue(v)) {
          BadValue(k, ptr, "must be a schema or an array of schemas");
        }
      } else if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems") {
        CountValue(v, k.c_str(), ptr);
      } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" ||
                 k == "exclusiveMaximum") {
        if (v.is_boolean()) {
          BadValue(k, ptr,
                   "must be a number: draft 4's boolean form is not supported, write "
                   "\"" +
                       k + "\": <bound> instead of minimum/maximum");
        }
        if (!v.is_number()) BadValue(k, ptr, "must be a number, not " + Shown(v));
      } else if (k == "enum") {
        if (!v.is_array()) BadValue(k, ptr, "must be an array of values, not " + Shown(v));
      } else if (k == "const") {
      } else if (k == "anyOf" || k == "allOf" || k == "oneOf") {
        if (!v.is_array() || v.empty()) BadValue(k, ptr, "must be a non-empty array of schemas");
        for (const Json& sub : v) {
          if (!IsSchemaValue(sub)) BadValue(k, ptr, "must hold schemas (objects or booleans)");
        }
        if (k == "oneOf") CheckDisjoint(v, ptr);
      } else if (k == "format") {
        if (!v.is_string()) BadValue(k, ptr, "must be a string, not " + Shown(v));
        if (!KnownFormats().count(v.get<std::string>())) {
          Unsupported(k, ptr,
                      "format '" + v.get<std::string>() +
                          "' is not known here: the supported formats are date, time, "
                          "date-time, uuid, email, ipv4 and ipv6; use 'pattern' instead");
        }
      } else if (k == "uniqueItems") {
        if (!v.is_boolean()) BadValue(k, ptr, "must be a boolean");
        if (v.get<bool>()) Unsupported(k, ptr, "a grammar cannot compare items with each other");
      } else {
        Unsupported(k, ptr, UnsupportedReason(k));
      }
    }
  }

  // oneOf compiles as anyOf when no value can match two branches, which this checks soundly
  // (it may miss disjoint branches, never the reverse): the branches accept different JSON
  // types, or, where both accept only objects, both require a property whose const/enum
  // values differ (a tagged union).
  void CheckDisjoint(const Json& branches, const std::string& ptr) const {
    std::vector<unsigned> types;
    for (size_t i = 0; i < branches.size(); ++i) {
      int budget = 1000;
      types.push_back(PossibleTypes(branches[i], Child(Child(ptr, "oneOf"), i), 0, budget));
    }
    for (size_t i = 0; i < branches.size(); ++i) {
      for (size_t j = i + 1; j < branches.size(); ++j) {
        const unsigned both = types[i] & types[j];
        if (both == 0) continue;
        if (both == kObject && DisjointTags(branches[i], branches[j], ptr)) continue;
        Unsupported("oneOf", ptr,
                    "branches " + std::to_string(i) + " and " + std::to_string(j) +
                        " may both match, and a grammar cannot check that only one does; make "
                        "them accept different types, or require a property with a different "
                        "const in each, or use anyOf");
      }
    }
  }

  // The JSON types `s` can accept, over-approximated; `budget` bounds the work (all types
  // once it runs out).
  unsigned PossibleTypes(const Json& s, const std::string& ptr, int depth, int& budget) const {
    if (--budget < 0 || depth > kMaxCompileDepth) return kAllTypes;
    if (s.is_boolean()) return s.get<bool>() ? unsigned{kAllTypes} : 0u;
    if (!s.is_object()) return kAllTypes;
    unsigned m = kAllTypes;
    if (s.contains("$ref") && s.at("$ref").is_string()) {
      const Target t = IsPlainRef(s) ? FollowRef(s, ptr) : Lookup(RefValue(s, ptr), ptr);
      m &= PossibleTypes(*t.node, t.ptr, depth + 1, budget);
      if (IsPlainRef(s)) return m;
    }
    if (const auto t = s.find("type"); t != s.end()) {
      unsigned declared = 0;
      for (const Json& name : t->is_array() ? *t : Json::array({*t})) {
        declared |= name.is_string() ? TypeBit(name.get<std::string>()) : kAllTypes;
      }
      m &= declared;
    }
    if (const auto c = s.find("const"); c != s.end()) m &= ValueType(*c);
    if (const auto e = s.find("enum"); e != s.end() && e->is_array()) {
      unsigned listed = 0;
      for (const Json& v : *e) listed |= ValueType(v);
      m &= listed;
    }
    for (const char* k : {"allOf", "anyOf", "oneOf"}) {
      const auto it = s.find(k);
      if (it == s.end() || !it->is_array()) continue;
      unsigned u = std::string_view(k) == "allOf" ? unsigned{kAllTypes} : 0u;
      for (size_t i = 0; i < it->size(); ++i) {
        const unsigned b = PossibleTypes((*it)[i], Child(Child(ptr, k), i), depth + 1, budget);
        u = std::string_view(k) == "allOf" ? (u & b) : (u | b);
      }
      m &= u;
    }
    return m;
  }

  // Whether two object schemas both require a property whose listed values never meet.
  bool DisjointTags(const Json& a_in, const Json& b_in, const std::string& ptr) const {
    const auto resolve = [&](const Json& s) -> const Json* {
      return IsPlainRef(s) ? FollowRef(s, ptr).node : &s;
    };
    const Json* a = resolve(a_in);
    const Json* b = resolve(b_in);
    if (!a->is_object() || !b->is_object()) return false;
    const auto values = [&](const Json& s, const std::string& name) {
      std::vector<const Json*> out;
      const auto props = s.find("properties");
      if (props == s.end() || !props->is_object() || !props->contains(name)) return out;
      const Json* p = resolve(props->at(name));
      if (!p->is_object()) return out;
      if (const auto c = p->find("const"); c != p->end()) {
        out.push_back(&*c);
      } else if (const auto e = p->find("enum"); e != p->end() && e->is_array()) {
        for (const Json& v : *e) out.push_back(&v);
      }
      return out;
    };
    const auto ra = a->find("required"), rb = b->find("required");
    if (ra == a->end() || rb == b->end() || !ra->is_array() || !rb->is_array()) return false;
    for (const Json& name : *ra) {
      if (!name.is_string() || std::find(rb->begin(), rb->end(), name) == rb->end()) continue;
      const auto va = values(*a, name.get<std::string>());
      const auto vb = values(*b, name.get<std::string>());
      if (va.empty() || vb.empty()) continue;
      bool meet = false;
      for (const Json* x : va) {
        for (const Json* y : vb) meet = meet || JsonEqual(*x, *y);
      }
      if (!meet) return true;
    }
    return false;
  }

  static unsigned TypeMask(const Json& s) {
    const auto it = s.find("type");
    if (it == s.end()) return kAllTypes;
    if (it->is_string()) return TypeBit(it->get<std::string>());
    unsigned m = 0;
    for (const Json& t : *it) m |= TypeBit(t.get<std::string>());
    return m;
  }

  void Tick(const std::string& ptr, int depth) {
    if (++steps_ > kMaxSteps) {
      Fail("the schema expands to more than " + std::to_string(kMaxSteps) +
           " subschemas (allOf/anyOf combinations or $ref copies): simplify it");
    }
    if (depth > kMaxCompileDepth) {
      Fail("the schema at " + Where(ptr) + " expands more than " +
           std::to_string(kMaxCompileDepth) +
           " levels deep (a $ref cycle through anyOf or allOf next to other keywords?): move the "
           "recursive $ref into an object property or array item");
    }
  }

  // ----- compiling

  Symbol Rule(int32_t r) const { return Symbol::Rule(r); }

  // Terminals, cached: Grammar::Bytes interns by the set's full text, which is slow to make.
  Symbol ByteRange(uint8_t lo, uint8_t hi) {
    const int key = lo * 256 + hi;
    const auto it = byte_ranges_.find(key);
    if (it != byte_ranges_.end()) return it->second;
    const Symbol sym = g_.ByteRange(lo, hi);
    byte_ranges_.emplace(key, sym);
    return sym;
  }
  Symbol Byte(uint8_t b) { return ByteRange(b, b); }
  void AppendLiteral(Sequence& seq, std::string_view text) {
    for (const char c : text) seq.push_back(Byte(static_cast<uint8_t>(c)));
  }

  int32_t Lit(const std::string& text) {
    const auto it = literals_.find(text);
    if (it != literals_.end()) return it->second;
    Sequence seq;
    AppendLiteral(seq, text);
    const int32_t r = g_.Choice({std::move(seq)}, "lit");
    literals_.emplace(text, r);
    return r;
  }

  int32_t Seq(Sequence s, std::string_view name) { return g_.Choice({std::move(s)}, name); }

  // One rule per referenced schema: recursion through $ref becomes a rule reference.
  int32_t RefRule(const Target& t, int depth) {
    const auto it = ref_rules_.find(t.node);
    if (it != ref_rules_.end()) return it->second;
    const int32_t r = g_.AddRule(t.ptr.empty() ? "root" : "ref:" + t.ptr);
    ref_rules_.emplace(t.node, r);
    ref_ptrs_.emplace(r, Where(t.ptr));
    const int32_t body = Compile(*t.node, t.ptr, depth + 1);
    g_.AddAlternative(r, {Rule(body)});
    return r;
  }

  int32_t Compile(const Json& s, const std::string& ptr, int depth) {
    Tick(ptr, depth);
    if (s.is_boolean()) return s.get<bool>() ? AnyValue(options_.max_any_depth) : never_;
    if (!s.is_object()) {
      Fail("the schema at " + Where(ptr) + " must be an object or a boolean, not " + Shown(s));
    }
    if (s.contains("$ref")) {
      if (IsPlainRef(s)) return RefRule(FollowRef(s, ptr), depth);
      return CompileMerged(s, ptr, depth);  // 2019-09+: the $ref and its siblings all apply
    }
    CheckKeywords(s, ptr);
    if (s.contains("allOf")) return CompileMerged(s, ptr, depth);
    const bool any = s.contains("anyOf"), one = s.contains("oneOf");
    if (any && one) return CompileMerged(s, ptr, depth);  // the product of the two
    if (any) return CompileUnion(s, "anyOf", ptr, depth);
    if (one) return CompileUnion(s, "oneOf", ptr, depth);  // branches checked disjoint
    return CompileTyped(s, ptr, depth);
  }

  // anyOf (or a disjoint oneOf): a choice of the branches, each with the sibling keywords
  // merged in.
  int32_t CompileUnion(const Json& s, const char* keyword, const std::string& ptr, int depth) {
    const Json& branches = s.at(keyword);
    Json base = Json::object();
    for (const auto& [k, v] : s.items()) {
      if (!IsInert(k) && k != keyword) base[k] = v;
    }
    std::vector<Sequence> alts;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string p = Child(Child(ptr, keyword), i);
      int32_t r;
      if (base.empty()) {
        r = Compile(branches[i], p, depth + 1);
      } else {
        Json acc = base;
        std::set<const Json*> seen;
        MergeInto(acc, branches[i], p, depth + 1, seen);
        r = Compile(acc, p, depth + 1);
      }
      if (r != never_) alts.push_back({Rule(r)});
    }
    if (alts.empty()) return never_;
    return alts.size() == 1 ? alts[0][0].index : g_.Choice(std::move(alts), "anyof");
  }

  int32_t CompileMerged(const Json& s, const std::string& ptr, int depth) {
    Json acc = Json::object();
    std::set<const Json*> seen;
    MergeInto(acc, s, ptr, depth, seen);
    return Compile(acc, ptr, depth + 1);
  }

  int32_t CompileTyped(const Json& s, const std::string& ptr, int depth) {
    if (s.contains("enum") || s.contains("const")) return CompileEnum(s, ptr);
    if (!HasConstraints(s)) return AnyValue(options_.max_any_depth);
    const unsigned types = TypeMask(s);
    std::vector<Sequence> alts;
    const auto add = [&](int32_t r) {
      if (r != never_) alts.push_back({Rule(r)});
    };
    if (types & kNull) add(Lit("null"));
    if (types & kBoolean) add(Boolean());
    if (types & kFraction) {
      add(BoundedNumber(s, ptr));
    } else if (types & kInteger) {
      add(IntegerRange(s));
    }
    if (types & kString) add(StringRule(s, ptr));
    if (types & kArray) add(ArrayRule(s, ptr, depth));
    if (types & kObject) add(ObjectRule(s, ptr, depth));
    if (alts.empty()) return never_;
    return alts.size() == 1 ? alts[0][0].index : g_.Choice(std::move(alts), "value");
  }

  // enum/const: the canonical texts of the listed values the whole schema accepts.
  int32_t CompileEnum(const Json& s, const std::string& ptr) {
    std::vector<const Json*> values;
    const auto c = s.find("const");
    const auto e = s.find("enum");
    if (e != s.end()) {
      for (const Json& v : *e) {
        if (c == s.end() || JsonEqual(v, *c)) values.push_back(&v);
      }
    } else {
      values.push_back(&*c);
    }
    std::vector<Sequence> alts;
    std::set<std::string> texts;
    for (const Json* v : values) {
      if (!Valid(*v, s, ptr, 0)) continue;
      std::string text;
      AppendCanonical(text, *v, &s);
      if (!texts.insert(text).second) continue;
      Sequence seq;
      AppendLiteral(seq, text);
      alts.push_back(std::move(seq));
    }
    if (alts.empty()) return never_;
    return g_.Choice(std::move(alts), "enum");
  }

  // ----- scalars

  int32_t Boolean() {
    if (boolean_ < 0) boolean_ = g_.Choice({{Rule(Lit("true"))}, {Rule(Lit("false"))}}, "boolean");
    return boolean_;
  }

  Symbol Digit() { return ByteRange('0', '9'); }

  int32_t Digits(int64_t min) {  // min or more digits
    const auto it = digit_runs_.find(min);
    if (it != digit_runs_.end()) return it->second;
    const int32_t r = g_.Repeat(Digit(), min, -1, "digits");
    digit_runs_.emplace(min, r);
    return r;
  }

  int32_t ExactDigits(int64_t n) {
    const auto it = exact_digits_.find(n);
    if (it != exact_digits_.end()) return it->second;
    const int32_t r = g_.Repeat(Digit(), n, n, "digits");
    exact_digits_.emplace(n, r);
    return r;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  int32_t Number() {
    if (number_ >= 0) return number_;
    const int32_t integer = g_.Choice({{Byte('0')}, {ByteRange('1', '9'), Rule(Digits(0))}}, "int");
    const int32_t frac = g_.Choice({{Byte('.'), Rule(Digits(1))}, {}}, "frac");
    ByteSet e, sign;
    e.set('e');
    e.set('E');
    sign.set('+');
    sign.set('-');
    const int32_t exp = g_.Choice(
        {{g_.Bytes(e), g_.Bytes(sign), Rule(Digits(1))}, {g_.Bytes(e), Rule(Digits(1))}, {}},
        "exp");
    number_ = g_.Choice(
        {{Byte('-'), Rule(integer), Rule(frac), Rule(exp)}, {Rule(integer), Rule(frac), Rule(exp)}},
        "number");
    return number_;
  }

  // Canonical integers: 0 | -?[1-9][0-9]* ("-0" is written 0).
  int32_t Integer() {
    if (integer_ < 0) {
      integer_ = g_.Choice({{Byte('0')},
                            {ByteRange('1', '9'), Rule(Digits(0))},
                            {Byte('-'), ByteRange('1', '9'), Rule(Digits(0))}},
                           "integer");
    }
    return integer_;
  }

  // The digit strings of length len(lo) = len(hi) from lo to hi.
  int32_t SameLength(const std::string& lo, const std::string& hi) {
    const std::string key = lo + "-" + hi;
    const auto it = same_length_.find(key);
    if (it != same_length_.end()) return it->second;
    int32_t r;
    if (lo == hi) {
      r = Lit(lo);
    } else {
      size_t i = 0;
      while (lo[i] == hi[i]) ++i;
      const size_t rest = lo.size() - i - 1;
      const bool low_zeros = lo.find_first_not_of('0', i + 1) == std::string::npos;
      const bool high_nines = hi.find_first_not_of('9', i + 1) == std::string::npos;
      Sequence prefix;
      AppendLiteral(prefix, lo.substr(0, i));
      std::vector<Sequence> alts;
      const auto with_prefix = [&](Sequence tail) {
        Sequence s = prefix;
        s.insert(s.end(), tail.begin(), tail.end());
        alts.push_back(std::move(s));
      };
      const char first = static_cast<char>(lo[i] + (low_zeros ? 0 : 1));
      const char last = static_cast<char>(hi[i] - (high_nines ? 0 : 1));
      if (!low_zeros) {
        with_prefix({Byte(static_cast<uint8_t>(lo[i])),
                     Rule(SameLength(lo.substr(i + 1), std::string(rest, '9')))});
      }
      if (first <= last) {
        Sequence s{ByteRange(static_cast<uint8_t>(first), static_cast<uint8_t>(last))};
        if (rest) s.push_back(Rule(ExactDigits(static_cast<int64_t>(rest))));
        with_prefix(std::move(s));
      }
      if (!high_nines) {
        with_prefix({Byte(static_cast<uint8_t>(hi[i])),
                     Rule(SameLength(std::string(rest, '0'), hi.substr(i + 1)))});
      }
      r = g_.Choice(std::move(alts), "range");
    }
    same_length_.emplace(key, r);
    return r;
  }

  // Naturals from lo to hi (hi null: unbounded), canonical (no leading zeros).
  int32_t Naturals(const std::string& lo, const std::string* hi) {
    std::vector<Sequence> alts;
    const size_t la = lo.size();
    if (hi && hi->size() == la) return SameLength(lo, *hi);
    alts.push_back({Rule(SameLength(lo, std::string(la, '9')))});
    // Whole lengths between: [1-9][0-9]{la, lb-2}.
    const int64_t from = static_cast<int64_t>(la);
    const int64_t to = hi ? static_cast<int64_t>(hi->size()) - 2 : -1;
    if (!hi || to >= from) {
      const int32_t tail = hi ? g_.Repeat(Digit(), from, to, "digits") : Digits(from);
      alts.push_back({ByteRange('1', '9'), Rule(tail)});
    }
    if (hi) alts.push_back({Rule(SameLength("1" + std::string(hi->size() - 1, '0'), *hi))});
    return g_.Choice(std::move(alts), "range");
  }

  int32_t IntegerRange(const Json& s) {
    std::unique_ptr<DecInt> lo, hi;
    const auto raise = [&](DecInt v) {
      if (!lo || CompareDec(v, *lo) > 0) lo = std::make_unique<DecInt>(std::move(v));
    };
    const auto lower = [&](DecInt v) {
      if (!hi || CompareDec(v, *hi) < 0) hi = std::make_unique<DecInt>(std::move(v));
    };
    if (const auto it = s.find("minimum"); it != s.end()) raise(RoundToInteger(*it, true));
    if (const auto it = s.find("exclusiveMinimum"); it != s.end()) {
      raise(PlusOne(RoundToInteger(*it, false)));
    }
    if (const auto it = s.find("maximum"); it != s.end()) lower(RoundToInteger(*it, false));
    if (const auto it = s.find("exclusiveMaximum"); it != s.end()) {
      lower(MinusOne(RoundToInteger(*it, true)));
    }
    if (!lo && !hi) return Integer();
    if (lo && hi && CompareDec(*lo, *hi) > 0) return never_;
    std::vector<Sequence> alts;
    // Non-negative part: [max(lo, 0), hi].
    if (!hi || !hi->neg) {
      const std::string from = lo && !lo->neg ? lo->mag : "0";
      alts.push_back({Rule(Naturals(from, hi ? &hi->mag : nullptr))});
    }
    // Negative part: -[max(1, -hi), -lo].
    if (!lo || lo->neg) {
      const std::string from = hi && hi->neg ? hi->mag : "1";
      alts.push_back({Byte('-'), Rule(Naturals(from, lo ? &lo->mag : nullptr))});
    }
    return g_.Choice(std::move(alts), "integer");
  }

  // ----- numbers with bounds

  // A bound: a decimal, whether it is included, and where it came from (for messages).
  struct Bound {
    Decimal value;
    bool inclusive = true;
    const char* keyword = "";
  };

  // `number` with minimum/maximum/exclusive*: the canonical texts of the numbers in range.
  // Fixed-point texts (-?int(.digits)?), compared digit by digit with the bounds, and, where the
  // range holds every number between 0 and 1e-6 of a sign, the exponent form JSON.stringify
  // uses for those ([1-9](.digits)?e-N, N >= 7). A bound closer to 0 than 1e-6 (other than 0)
  // would cut through the exponent forms: not supported.
  int32_t BoundedNumber(const Json& s, const std::string& ptr) {
    std::unique_ptr<Bound> lo, hi;
    for (const auto& [k, inclusive, lower] :
         {std::tuple{"minimum", true, true}, std::tuple{"exclusiveMinimum", false, true},
          std::tuple{"maximum", true, false}, std::tuple{"exclusiveMaximum", false, false}}) {
      const auto it = s.find(k);
      if (it == s.end()) continue;
      Bound b{DecimalOf(*it), inclusive, k};
      if (IsTiny(b.value)) {
        Unsupported(k, ptr,
                    "a bound between -1e-6 and 1e-6 other than 0 cuts through numbers written "
                    "with an exponent; use 0 or a bound further from 0");
      }
      std::unique_ptr<Bound>& slot = lower ? lo : hi;
      const int c = slot ? CompareDecimal(b.value, slot->value) : 0;
      if (!slot || (lower ? c > 0 : c < 0) || (c == 0 && !b.inclusive)) {
        slot = std::make_unique<Bound>(b);
      }
    }
    if (!lo && !hi) return Number();
    if (lo && hi) {
      const int c = CompareDecimal(lo->value, hi->value);
      if (c > 0 || (c == 0 && !(lo->inclusive && hi->inclusive))) return never_;
    }
    const Decimal zero;
    const Decimal micro{false, "0", "000001"};
    std::vector<Sequence> alts;
    // x >= 0: magnitudes from max(lo, 0) to hi.
    const bool nonneg = !hi || !hi->value.neg || CompareDecimal(hi->value, zero) == 0;
    if (nonneg && !(hi && CompareDecimal(hi->value, zero) == 0 && !hi->inclusive)) {
      const bool from_lo = lo && CompareDecimal(lo->value, zero) >= 0;
      Decimal from = from_lo ? lo->value : zero;
      from.neg = false;
      Decimal to;
      if (hi) {
        to = hi->value;
        to.neg = false;
      }
      alts.push_back({Rule(
          Magnitudes(from, !from_lo || lo->inclusive, hi ? &to : nullptr, !hi || hi->inclusive))});
      // Positive tiny numbers: all in range when lo <= 0 and hi >= 1e-6.
      if ((!lo || CompareDecimal(lo->value, zero) <= 0) &&
          (!hi || CompareDecimal(hi->value, micro) >= 0)) {
        alts.push_back({Rule(Tiny())});
      }
    }
    // x < 0: "-" and magnitudes from max(-hi, 0) (exclusive at 0) to -lo.
    if (!lo || (lo->value.neg && CompareDecimal(lo->value, zero) < 0)) {
      const bool from_hi = hi && hi->value.neg && CompareDecimal(hi->value, zero) < 0;
      Decimal from = from_hi ? hi->value : zero;
      from.neg = false;
      Decimal to;
      if (lo) {
        to = lo->value;
        to.neg = false;
      }
      alts.push_back({Byte('-'), Rule(Magnitudes(from, from_hi && hi->inclusive, lo ? &to : nullptr,
                                                 !lo || lo->inclusive))});
      if ((!hi || CompareDecimal(hi->value, zero) >= 0) &&
          (!lo || CompareMagnitude(lo->value, micro) >= 0)) {
        alts.push_back({Byte('-'), Rule(Tiny())});
      }
    }
    if (alts.empty()) return never_;
    return g_.Choice(std::move(alts), "number");
  }

  // [1-9](\.[0-9]+)?e-([7-9]|[1-9][0-9]+): 0 < x < 1e-6 as JSON.stringify writes it.
  int32_t Tiny() {
    if (tiny_ >= 0) return tiny_;
    const int32_t mantissa = g_.Choice(
        {{ByteRange('1', '9')}, {ByteRange('1', '9'), Byte('.'), Rule(Digits(1))}}, "mantissa");
    const int32_t exponent =
        g_.Choice({{ByteRange('7', '9')}, {ByteRange('1', '9'), Rule(Digits(1))}}, "exponent");
    tiny_ = Seq({Rule(mantissa), Byte('e'), Byte('-'), Rule(exponent)}, "tiny");
    return tiny_;
  }

  // Fixed-point texts int(.digits)? whose value lies between `from` and `to` (null: no upper
  // bound), each end included or not. Both are non-negative.
  int32_t Magnitudes(const Decimal& from, bool from_in, const Decimal* to, bool to_in) {
    if (to) {
      const int c = CompareMagnitude(from, *to);
      if (c > 0 || (c == 0 && !(from_in && to_in))) return never_;
    }
    const FracState none;
    if (to && from.ip == to->ip) {
      return Seq(
          {Rule(Lit(from.ip)), Rule(Fraction({true, from_in, from.fp, true, to_in, to->fp}))},
          "magnitude");
    }
    std::vector<Sequence> alts;
    alts.push_back({Rule(Lit(from.ip)), Rule(Fraction({true, from_in, from.fp, false, true, ""}))});
    const std::string next = MagPlusOne(from.ip);
    const std::string last = to ? MagMinusOne(to->ip) : "";
    if (!to || CompareMag(next, last) <= 0) {
      alts.push_back({Rule(Naturals(next, to ? &last : nullptr)), Rule(Fraction(none))});
    }
    if (to) {
      alts.push_back({Rule(Lit(to->ip)), Rule(Fraction({false, true, "", true, to_in, to->fp}))});
    }
    return g_.Choice(std::move(alts), "magnitude");
  }

  // The rest of a fraction compared with the rest of a lower and an upper bound's fraction
  // digits (an inactive side is already decided).
  struct FracState {
    bool lo_on = false, lo_in = true;
    std::string lo;
    bool hi_on = false, hi_in = true;
    std::string hi;
    std::string Key() const {
      return std::string(lo_on ? (lo_in ? "[" : "(") : "-") + lo + "," +
             (hi_on ? (hi_in ? "]" : ")") : "-") + hi;
    }
    // The remaining digits may end here (they read as zeros).
    bool ZeroOk() const {
      return (!lo_on || (lo.empty() && lo_in)) && (!hi_on || !hi.empty() || hi_in);
    }
  };

  // ε (when the fraction may be zero) | "." digits, the digits in range.
  int32_t Fraction(const FracState& st) {
    std::string key = ".";  // appended, not "." + Key(): GCC 12's -Wrestrict false positive
    key += st.Key();
    const auto it = fractions_.find(key);
    if (it != fractions_.end()) return it->second;
    std::vector<Sequence> alts;
    if (st.ZeroOk()) alts.push_back({});
    const int32_t digits = FracDigits(st, true);
    if (digits != never_) alts.push_back({Byte('.'), Rule(digits)});
    const int32_t r = alts.empty() ? never_ : g_.Choice(std::move(alts), "fraction");
    fractions_.emplace(key, r);
    return r;
  }

  // Digit strings (non-empty when `nonempty`) whose value as a fraction satisfies `st`.
  int32_t FracDigits(const FracState& st, bool nonempty) {
    if (!st.lo_on && !st.hi_on) return Digits(nonempty ? 1 : 0);
    const std::string key = (nonempty ? "+" : "*") + st.Key();
    const auto it = fractions_.find(key);
    if (it != fractions_.end()) return it->second;
    const int32_t r = g_.AddRule("fraction");  // registered first: states can repeat ("0"*)
    fractions_.emplace(key, r);
    if (!nonempty && st.ZeroOk()) g_.AddAlternative(r, {});
    // Group the digits by the state they lead to.
    std::vector<std::pair<std::pair<int, int>, FracState>> groups;
    for (int c = 0; c <= 9; ++c) {
      FracState next = st;
      if (st.lo_on) {
        const int l = st.lo.empty() ? 0 : st.lo[0] - '0';
        if (c < l) continue;
        if (c > l) {
          next.lo_on = false;
        } else if (!st.lo.empty()) {
          next.lo = st.lo.substr(1);
        }
      }
      if (st.hi_on) {
        const int h = st.hi.empty() ? 0 : st.hi[0] - '0';
        if (c > h) continue;
        if (c < h) {
          next.hi_on = false;
        } else if (!st.hi.empty()) {
          next.hi = st.hi.substr(1);
        }
      }
      if (!groups.empty() && groups.back().first.second == c - 1 &&
          groups.back().second.Key() == next.Key()) {
        groups.back().first.second = c;
      } else {
        groups.push_back({{c, c}, next});
      }
    }
    for (const auto& [range, next] : groups) {
      const int32_t rest = FracDigits(next, false);
      if (rest == never_) continue;
      g_.AddAlternative(r, {ByteRange(static_cast<uint8_t>('0' + range.first),
                                      static_cast<uint8_t>('0' + range.second)),
                            Rule(rest)});
    }
    return r;  // no alternatives: the pruning pass removes it
  }

  // ----- strings

  // A code point other than `excluded`, in its canonical form inside a JSON string.
  int32_t CharExcept(const std::set<uint32_t>& excluded) {
    std::vector<Sequence> alts;
    ByteSet ascii;
    for (uint32_t c = 0x20; c < 0x80; ++c) {
      if (c != '"' && c != '\\' && !excluded.count(c)) ascii.set(c);
    }
    if (ascii.any()) alts.push_back({g_.Bytes(ascii)});
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    uint32_t next = 0x80;
    bool escapes_excluded = false;
    for (const uint32_t c : excluded) {
      if (IsEscaped(c)) escapes_excluded = true;
      if (c < 0x80) continue;
      if (c > next) ranges.emplace_back(next, c - 1);
      next = c + 1;
    }
    if (next == 0x80) {
      alts.push_back({Rule(NonAscii())});
    } else {
      ranges.emplace_back(next, 0x10FFFF);
      g_.AppendCodepointAlternatives(ranges, alts);
    }
    if (!escapes_excluded) {
      alts.push_back({Rule(Escape())});
    } else {
      for (uint32_t c = 0; c < 0x80; ++c) {
        if (IsEscaped(c) && !excluded.count(c)) {
          Sequence seq;
          AppendLiteral(seq, EncodeChar(c));
          alts.push_back(std::move(seq));
        }
      }
    }
    return g_.Choice(std::move(alts), "char");
  }

  int32_t NonAscii() {
    if (non_ascii_ < 0) non_ascii_ = g_.AddCodepointRange(0x80, 0x10FFFF, "utf8");
    return non_ascii_;
  }

  // \" \\ \b \f \n \r \t and \u00XX (lower-case hex) for the other control characters.
  int32_t Escape() {
    if (escape_ >= 0) return escape_;
    ByteSet simple, low, high;
    for (const char c : std::string("\"\\bfnrt")) simple.set(static_cast<unsigned char>(c));
    for (const char c : std::string("01234567bef")) low.set(static_cast<unsigned char>(c));
    for (const char c : std::string("0123456789abcdef")) high.set(static_cast<unsigned char>(c));
    Sequence u;
    AppendLiteral(u, "u00");
    const int32_t hex =
        g_.Choice({{Byte('0'), g_.Bytes(low)}, {Byte('1'), g_.Bytes(high)}}, "u00xx");
    u.push_back(Rule(hex));
    const int32_t after = g_.Choice({{g_.Bytes(simple)}, std::move(u)}, "escape-char");
    escape_ = g_.Choice({{Byte('\\'), Rule(after)}}, "escape");
    return escape_;
  }

  int32_t Char() {
    if (char_ < 0) char_ = CharExcept({});
    return char_;
  }

  int32_t Chars() {  // char*
    if (chars_ < 0) chars_ = g_.Repeat(Rule(Char()), 0, -1, "chars");
    return chars_;
  }

  int32_t String() {
    if (string_ < 0) string_ = Seq({Byte('"'), Rule(Chars()), Byte('"')}, "string");
    return string_;
  }

  int32_t Format(const std::string& name) {
    const auto it = formats_.find(name);
    if (it != formats_.end()) return it->second;
    if (!format_builder_) format_builder_ = std::make_unique<FormatBuilder>(g_);
    const int32_t r = format_builder_->Build(name);
    formats_.emplace(name, r);
    return r;
  }

  int32_t StringRule(const Json& s, const std::string& ptr) {
    const auto min_it = s.find("minLength"), max_it = s.find("maxLength");
    const int64_t min = min_it == s.end() ? 0 : CountValue(*min_it, "minLength", ptr);
    const int64_t max = max_it == s.end() ? -1 : CountValue(*max_it, "maxLength", ptr);
    const bool has_length = min_it != s.end() || max_it != s.end();
    if (max >= 0 && min > max) return never_;
    const auto pattern = s.find("pattern");
    const auto format = s.find("format");
    int32_t body;
    if (format != s.end()) {
      const std::string name = format->get<std::string>();
      if (pattern != s.end()) {
        Unsupported("pattern", ptr,
                    "together with 'format': the two cannot be intersected; "
                    "keep one of them");
      }
      if (has_length) {
        const int64_t n = FormatLength(name);
        if (n < 0) {
          Unsupported(min_it != s.end() ? "minLength" : "maxLength", ptr,
                      "together with 'format' '" + name + "'; drop the length or use 'pattern'");
        }
        if (n < min || (max >= 0 && n > max)) return never_;
      }
      body = Format(name);
    } else if (pattern != s.end()) {
      if (has_length) {
        Unsupported(min_it != s.end() ? "minLength" : "maxLength", ptr,
                    "together with 'pattern': a grammar cannot intersect the two; put the length "
                    "into the pattern, e.g. ^.{1,20}$");
      }
      const std::string source = "json_schema: keyword 'pattern' at " + Where(ptr);
      RegexOptions ro;
      ro.search = true;
      ro.json_string_body = true;
      ro.source = source;
      body = CompileRegex(g_, pattern->get<std::string>(), ro);
    } else {
      for (const auto& [kw, n] : {std::pair{"minLength", min}, std::pair{"maxLength", max}}) {
        if (n > Grammar::kMaxRepeat) {
          Unsupported(kw, ptr,
                      "values above " + std::to_string(Grammar::kMaxRepeat) +
                          " would make the grammar too large; lower it or remove it");
        }
      }
      if (min == 0 && max < 0) {
        body = Chars();
      } else {
        // Shared by equal lengths: a bounded count costs max-min rules.
        const auto [it, added] = char_repeats_.emplace(std::pair{min, max}, -1);
        if (added) it->second = g_.Repeat(Rule(Char()), min, max, "chars");
        body = it->second;
      }
    }
    return Seq({Byte('"'), Rule(body), Byte('"')}, "string");
  }

  // A JSON string whose value is none of `names` (the key of an additional property).
  int32_t KeyNotIn(const std::vector<std::string>& names) {
    if (names.empty()) return String();
    struct Node {
      std::map<uint32_t, size_t> next;
      bool end = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& name : names) {
      size_t cur = 0;
      for (const uint32_t cp : DecodeUtf8(name)) {
        const auto it = trie[cur].next.find(cp);
        if (it != trie[cur].next.end()) {
          cur = it->second;
        } else {
          trie.emplace_back();
          trie[cur].next.emplace(cp, trie.size() - 1);
          cur = trie.size() - 1;
        }
      }
      trie[cur].end = true;
    }
    // Each node's rule matches the rest of the key and the closing quote. Children come after
    // their parents in `trie`, so build from the back.
    const int32_t tail = Seq({Rule(Chars()), Byte('"')}, "key-tail");
    std::vector<int32_t> rules(trie.size());
    for (size_t i = trie.size(); i-- > 0;) {
      std::vector<Sequence> alts;
      if (!trie[i].end) alts.push_back({Byte('"')});
      std::set<uint32_t> taken;
      for (const auto& [cp, child] : trie[i].next) {
        taken.insert(cp);
        Sequence seq;
        AppendLiteral(seq, EncodeChar(cp));
        seq.push_back(Rule(rules[child]));
        alts.push_back(std::move(seq));
      }
      alts.push_back({Rule(taken.empty() ? Char() : CharExcept(taken)), Rule(tail)});
      rules[i] = g_.Choice(std::move(alts), "key");
    }
    return Seq({Byte('"'), Rule(rules[0])}, "key");
  }

  // ----- containers

  int32_t ArrayRule(const Json& s, const std::string& ptr, int depth) {
    const auto min_it = s.find("minItems"), max_it = s.find("maxItems");
    const int64_t min = min_it == s.end() ? 0 : CountValue(*min_it, "minItems", ptr);
    const int64_t max = max_it == s.end() ? -1 : CountValue(*max_it, "maxItems", ptr);
    if (max >= 0 && min > max) return never_;
    for (const auto& [kw, n] : {std::pair{"minItems", min}, std::pair{"maxItems", max}}) {
      if (n > Grammar::kMaxRepeat) {
        Unsupported(kw, ptr,
                    "values above " + std::to_string(Grammar::kMaxRepeat) +
                        " would make the grammar too large; lower it or remove it");
      }
    }
    std::vector<int32_t> prefix;
    int32_t rest;
    const auto items = s.find("items");
    if (items == s.end()) {
      rest = AnyValue(options_.max_any_depth);
    } else if (items->is_array()) {
      const std::string p = Child(ptr, "items");
      for (size_t i = 0; i < items->size(); ++i) {
        prefix.push_back(Compile((*items)[i], Child(p, i), depth + 1));
      }
      const auto extra = s.find("additionalItems");
      rest = extra == s.end() ? AnyValue(options_.max_any_depth)
                              : Compile(*extra, Child(ptr, "additionalItems"), depth + 1);
    } else {
      rest = Compile(*items, Child(ptr, "items"), depth + 1);
    }
    const auto n = static_cast<int64_t>(prefix.size());
    // tail(i): the rest of the array after i elements, the closing bracket included.
    const int64_t kmin = std::max<int64_t>(min - n, 0);
    const int64_t kmax = max < 0 ? -1 : max - n;
    int32_t tail = never_;
    if (max < 0 || kmax >= 0) {
      if (rest == never_ || kmax == 0) {
        if (kmin == 0) tail = Lit("]");
      } else if (n > 0) {
        const int32_t more = Seq({Byte(','), Rule(rest)}, "item");
        tail = Seq({Rule(g_.Repeat(Rule(more), kmin, kmax, "items")), Byte(']')}, "items");
      } else {
        const int32_t more = Seq({Byte(','), Rule(rest)}, "item");
        const int32_t reps = g_.Repeat(Rule(more), std::max<int64_t>(kmin - 1, 0),
                                       kmax < 0 ? -1 : kmax - 1, "items");
        std::vector<Sequence> alts{{Rule(rest), Rule(reps), Byte(']')}};
        if (kmin == 0) alts.push_back({Byte(']')});
        tail = g_.Choice(std::move(alts), "items");
      }
    }
    for (int64_t i = n; i-- > 0;) {
      std::vector<Sequence> alts;
      if (i >= min) alts.push_back({Byte(']')});
      if ((max < 0 || i < max) && prefix[static_cast<size_t>(i)] != never_ && tail != never_) {
        Sequence seq;
        if (i > 0) seq.push_back(Byte(','));
        seq.push_back(Rule(prefix[static_cast<size_t>(i)]));
        seq.push_back(Rule(tail));
        alts.push_back(std::move(seq));
      }
      tail = alts.empty() ? never_ : g_.Choice(std::move(alts), "tuple");
    }
    if (tail == never_) return never_;
    return Seq({Byte('['), Rule(tail)}, "array");
  }

  int32_t ObjectRule(const Json& s, const std::string& ptr, int depth) {
    const auto props = s.find("properties");
    const auto required = s.find("required");
    const auto extra = s.find("additionalProperties");
    int32_t extra_rule;
    if (extra == s.end()) {
      extra_rule = AnyValue(options_.max_any_depth);
    } else {
      extra_rule = Compile(*extra, Child(ptr, "additionalProperties"), depth + 1);
    }
    std::set<std::string> needed;
    if (required != s.end()) {
      for (const Json& n : *required) needed.insert(n.get<std::string>());
    }
    std::vector<std::string> names;
    std::vector<int32_t> values;
    std::set<std::string> listed;
    if (props != s.end()) {
      const std::string p = Child(ptr, "properties");
      for (const auto& [name, sub] : props->items()) {
        names.push_back(name);
        listed.insert(name);
        values.push_back(Compile(sub, Child(p, name), depth + 1));
      }
    }
    // Required names that `properties` does not list come next, valued by
    // additionalProperties, in the order `required` gives them.
    if (required != s.end()) {
      for (const Json& n : *required) {
        const std::string& name = n.get_ref<const std::string&>();
        if (listed.insert(name).second) {
          names.push_back(name);
          values.push_back(extra_rule);
        }
      }
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (needed.count(names[i]) && values[i] == never_) return never_;
    }
    // rest[first]: the rest of the object after the listed properties, '}' included; `first`
    // when no member was written yet (no leading comma).
    int32_t rest[2];
    if (extra_rule == never_) {
      rest[0] = rest[1] = Lit("}");
    } else {
      const int32_t member = Seq({Rule(KeyNotIn(names)), Byte(':'), Rule(extra_rule)}, "member");
      const int32_t more = g_.AddRule("members");  // more ::= '}' | ',' member more
      g_.AddAlternative(more, {Byte('}')});
      g_.AddAlternative(more, {Byte(','), Rule(member), Rule(more)});
      rest[0] = more;
      rest[1] = g_.Choice({{Byte('}')}, {Rule(member), Rule(more)}}, "members");
    }
    for (size_t i = names.size(); i-- > 0;) {
      int32_t next[2];
      for (int first = 0; first < 2; ++first) {
        std::vector<Sequence> alts;
        if (values[i] != never_) {
          Sequence seq;
          std::string key = first ? "\"" : ",\"";
          AppendStringBody(key, names[i]);
          key += "\":";
          AppendLiteral(seq, key);
          seq.push_back(Rule(values[i]));
          seq.push_back(Rule(rest[0]));
          alts.push_back(std::move(seq));
        }
        if (!needed.count(names[i])) alts.push_back({Rule(rest[first])});
        next[first] = g_.Choice(std::move(alts), "props");
      }
      rest[0] = next[0];
      rest[1] = next[1];
    }
    return Seq({Byte('{'), Rule(rest[1])}, "object");
  }

  // Any JSON value with at most `depth` levels of containers.
  int32_t AnyValue(int depth) {
    if (any_.size() <= static_cast<size_t>(depth)) any_.resize(static_cast<size_t>(depth) + 1, -1);
    if (any_[static_cast<size_t>(depth)] >= 0) return any_[static_cast<size_t>(depth)];
    std::vector<Sequence> alts{
        {Rule(Lit("null"))}, {Rule(Boolean())}, {Rule(Number())}, {Rule(String())}};
    if (depth > 0) {
      alts.push_back({Rule(AnyObjectRule(depth))});
      const int32_t v = AnyValue(depth - 1);
      const int32_t more =
          g_.Repeat(Rule(Seq({Byte(','), Rule(v)}, "any-item")), 0, -1, "any-items");
      alts.push_back({Rule(g_.Choice(
          {{Byte('['), Byte(']')}, {Byte('['), Rule(v), Rule(more), Byte(']')}}, "any-array"))});
    }
    const int32_t r = g_.Choice(std::move(alts), "any" + std::to_string(depth));
    any_[static_cast<size_t>(depth)] = r;
    return r;
  }

  int32_t AnyObjectRule(int depth) {  // depth >= 1
    const int32_t v = AnyValue(depth - 1);
    const int32_t member = Seq({Rule(String()), Byte(':'), Rule(v)}, "any-member");
    const int32_t more =
        g_.Repeat(Rule(Seq({Byte(','), Rule(member)}, "any-member")), 0, -1, "any-members");
    return g_.Choice({{Byte('{'), Byte('}')}, {Byte('{'), Rule(member), Rule(more), Byte('}')}},
                     "any-object");
  }

  // ----- allOf: merging schemas

  // A schema that means both `a` and `b`.
  static Json AllOf2(const Json& a, const Json& b) {
    const auto trivial = [](const Json& x) {
      return (x.is_boolean() && x.get<bool>()) || (x.is_object() && x.empty());
    };
    if (trivial(a)) return b;
    if (trivial(b)) return a;
    if ((a.is_boolean() && !a.get<bool>()) || (b.is_boolean() && !b.get<bool>())) return false;
    if (JsonEqual(a, b)) return a;
    return Json{{"allOf", Json::array({a, b})}};
  }

  // Adds the constraints of schema `s` to `acc` (an object schema, or `false` once the two
  // contradict), exactly: acc := acc ∧ s. `seen` holds the schemas merged into `acc` already
  // (x ∧ x = x, which also ends allOf/$ref cycles).
  void MergeInto(Json& acc, const Json& s, const std::string& ptr, int depth,
                 std::set<const Json*>& seen) {
    Tick(ptr, depth);
    if (acc.is_boolean()) return;
    if (s.is_boolean()) {
      if (!s.get<bool>()) acc = false;
      return;
    }
    if (!s.is_object()) {
      Fail("the schema at " + Where(ptr) + " must be an object or a boolean, not " + Shown(s));
    }
    if (!seen.insert(&s).second) return;
    if (s.contains("$ref")) {
      const Target t = IsPlainRef(s) ? FollowRef(s, ptr) : Lookup(RefValue(s, ptr), ptr);
      MergeInto(acc, *t.node, t.ptr, depth + 1, seen);
      if (IsPlainRef(s)) return;
    }
    CheckKeywords(s, ptr);
    if (s.contains("properties") || s.contains("additionalProperties")) MergeObject(acc, s);
    if (s.contains("items")) MergeItems(acc, s);
    for (const auto& [k, v] : s.items()) {
      if (acc.is_boolean()) return;
      if (IsInert(k) || k == "$ref" || k == "allOf" || k == "properties" ||
          k == "additionalProperties" || k == "items" || k == "additionalItems" ||
          k == "uniqueItems") {
        continue;
      }
      // A oneOf passed CheckDisjoint: it means the same as anyOf.
      const std::string key = k == "oneOf" ? "anyOf" : k;
      const auto have = acc.find(key);
      if (have == acc.end()) {
        acc[key] = v;
        continue;
      }
      if (k == "type") {
        const unsigned m = TypeMask(acc) & TypeMask(s);
        if (m == 0) {
          acc = false;
        } else {
          acc[k] = TypeJson(m);
        }
      } else if (k == "minLength" || k == "minItems" || k == "minimum" || k == "exclusiveMinimum") {
        if (CompareNumbers(v, *have) > 0) *have = v;
      } else if (k == "maxLength" || k == "maxItems" || k == "maximum" || k == "exclusiveMaximum") {
        if (CompareNumbers(v, *have) < 0) *have = v;
      } else if (k == "required") {
        for (const Json& n : v) {
          if (std::find(have->begin(), have->end(), n) == have->end()) have->push_back(n);
        }
      } else if (k == "enum") {
        Json both = Json::array();
        for (const Json& x : *have) {
          if (std::any_of(v.begin(), v.end(), [&](const Json& y) { return JsonEqual(x, y); })) {
            both.push_back(x);
          }
        }
        *have = std::move(both);
      } else if (k == "const") {
        if (!JsonEqual(*have, v)) acc = false;
      } else if (k == "pattern" || k == "format") {
        if (*have != v) {
          Unsupported(k, ptr,
                      "two different '" + k +
                          "' values in allOf or around anyOf cannot be combined; merge "
                          "them into one");
        }
      } else if (key == "anyOf") {
        if (have->size() * v.size() > kMaxAnyOfProduct) {
          Unsupported(k, ptr,
                      "combining anyOf lists of " + std::to_string(have->size()) + " and " +
                          std::to_string(v.size()) + " branches makes more than " +
                          std::to_string(kMaxAnyOfProduct) + "; write the cases out");
        }
        Json product = Json::array();
        for (const Json& a : *have) {
          for (const Json& b : v) product.push_back(AllOf2(a, b));
        }
        *have = std::move(product);
      }
    }
    if (const auto all = s.find("allOf"); all != s.end()) {
      for (size_t i = 0; i < all->size(); ++i) {
        MergeInto(acc, (*all)[i], Child(Child(ptr, "allOf"), i), depth + 1, seen);
      }
    }
  }

  // properties/additionalProperties of acc ∧ s: a name only one side lists must also satisfy
  // the other side's additionalProperties.
  static void MergeObject(Json& acc, const Json& s) {
    const auto none = Json();
    const Json* sp = s.contains("properties") ? &s.at("properties") : nullptr;
    const Json s_extra = s.contains("additionalProperties") ? s.at("additionalProperties") : none;
    const Json a_extra =
        acc.contains("additionalProperties") ? acc.at("additionalProperties") : none;
    if (sp) {
      if (!acc.contains("properties")) acc["properties"] = Json::object();
    }
    if (acc.contains("properties")) {
      Json& ap = acc["properties"];
      if (!s_extra.is_null()) {
        for (auto& [name, sub] : ap.items()) {
          if (!sp || !sp->contains(name)) sub = AllOf2(sub, s_extra);
        }
      }
      if (sp) {
        for (const auto& [name, sub] : sp->items()) {
          if (ap.contains(name)) {
            ap[name] = AllOf2(ap[name], sub);
          } else {
            ap[name] = a_extra.is_null() ? sub : AllOf2(a_extra, sub);
          }
        }
      }
    }
    if (!s_extra.is_null()) {
      acc["additionalProperties"] = a_extra.is_null() ? s_extra : AllOf2(a_extra, s_extra);
    }
  }

  // items/additionalItems of acc ∧ s, position by position.
  static void MergeItems(Json& acc, const Json& s) {
    struct View {
      std::vector<Json> prefix;
      Json rest = true;
    };
    const auto view = [](const Json& x) {
      View v;
      const auto it = x.find("items");
      if (it == x.end()) return v;
      if (it->is_array()) {
        v.prefix.assign(it->begin(), it->end());
        if (x.contains("additionalItems")) v.rest = x.at("additionalItems");
      } else {
        v.rest = *it;
      }
      return v;
    };
    const View a = view(acc), b = view(s);
    const auto at = [](const View& v, size_t i) {
      return i < v.prefix.size() ? v.prefix[i] : v.rest;
    };
    const size_t n = std::max(a.prefix.size(), b.prefix.size());
    const Json rest = AllOf2(a.rest, b.rest);
    acc.erase("items");
    acc.erase("additionalItems");
    if (n == 0) {
      acc["items"] = rest;
      return;
    }
    Json prefix = Json::array();
    for (size_t i = 0; i < n; ++i) prefix.push_back(AllOf2(at(a, i), at(b, i)));
    acc["items"] = std::move(prefix);
    acc["additionalItems"] = rest;
  }

  // ----- the validator (enum/const values against the rest of their schema)

  bool Valid(const Json& v, const Json& s, const std::string& ptr, int depth) {
    if (++checks_ > kMaxChecks || depth > kMaxCompileDepth) {
      Fail("checking the enum/const values at " + Where(ptr) +
           " does not end (a $ref cycle through anyOf or allOf?): simplify the schema");
    }
    if (s.is_boolean()) return s.get<bool>();
    if (!s.is_object()) {
      Fail("the schema at " + Where(ptr) + " must be an object or a boolean, not " + Shown(s));
    }
    if (s.contains("$ref")) {
      const Target t = IsPlainRef(s) ? FollowRef(s, ptr) : Lookup(RefValue(s, ptr), ptr);
      if (!Valid(v, *t.node, t.ptr, depth + 1)) return false;
      if (IsPlainRef(s)) return true;
    }
    CheckKeywords(s, ptr);
    if (s.contains("type") && !(TypeMask(s) & ValueType(v))) return false;
    if (const auto e = s.find("enum"); e != s.end()) {
      if (std::none_of(e->begin(), e->end(), [&](const Json& x) { return JsonEqual(x, v); })) {
        return false;
      }
    }
    if (const auto c = s.find("const"); c != s.end() && !JsonEqual(*c, v)) return false;
    if (const auto all = s.find("allOf"); all != s.end()) {
      for (size_t i = 0; i < all->size(); ++i) {
        if (!Valid(v, (*all)[i], Child(Child(ptr, "allOf"), i), depth + 1)) return false;
      }
    }
    if (const auto any = s.find("anyOf"); any != s.end()) {
      bool ok = false;
      for (size_t i = 0; i < any->size() && !ok; ++i) {
        ok = Valid(v, (*any)[i], Child(Child(ptr, "anyOf"), i), depth + 1);
      }
      if (!ok) return false;
    }
    if (const auto one = s.find("oneOf"); one != s.end()) {
      int n = 0;
      for (size_t i = 0; i < one->size(); ++i) {
        n += Valid(v, (*one)[i], Child(Child(ptr, "oneOf"), i), depth + 1);
      }
      if (n != 1) return false;
    }
    if (v.is_string()) return ValidString(v.get_ref<const std::string&>(), s, ptr);
    if (v.is_number()) {
      for (const auto& [k, sign, strict] :
           {std::tuple{"minimum", 1, false}, std::tuple{"exclusiveMinimum", 1, true},
            std::tuple{"maximum", -1, false}, std::tuple{"exclusiveMaximum", -1, true}}) {
        const auto it = s.find(k);
        if (it == s.end()) continue;
        const int c = CompareNumbers(v, *it) * sign;
        if (c < 0 || (strict && c == 0)) return false;
      }
      return true;
    }
    if (v.is_object()) {
      if (const auto r = s.find("required"); r != s.end()) {
        for (const Json& n : *r) {
          if (!v.contains(n.get<std::string>())) return false;
        }
      }
      const auto props = s.find("properties");
      const auto extra = s.find("additionalProperties");
      for (const auto& [k, x] : v.items()) {
        if (props != s.end() && props->contains(k)) {
          if (!Valid(x, props->at(k), Child(Child(ptr, "properties"), k), depth + 1)) return false;
        } else if (extra != s.end()) {
          if (!Valid(x, *extra, Child(ptr, "additionalProperties"), depth + 1)) return false;
        }
      }
      return true;
    }
    if (v.is_array()) {
      const auto n = static_cast<int64_t>(v.size());
      if (const auto it = s.find("minItems");
          it != s.end() && n < CountValue(*it, "minItems", ptr)) {
        return false;
      }
      if (const auto it = s.find("maxItems");
          it != s.end() && n > CountValue(*it, "maxItems", ptr)) {
        return false;
      }
      const auto items = s.find("items");
      if (items == s.end()) return true;
      const auto extra = s.find("additionalItems");
      for (size_t i = 0; i < v.size(); ++i) {
        if (items->is_array()) {
          if (i < items->size()) {
            if (!Valid(v[i], (*items)[i], Child(Child(ptr, "items"), i), depth + 1)) return false;
          } else if (extra != s.end()) {
            if (!Valid(v[i], *extra, Child(ptr, "additionalItems"), depth + 1)) return false;
          }
        } else if (!Valid(v[i], *items, Child(ptr, "items"), depth + 1)) {
          return false;
        }
      }
    }
    return true;
  }

  bool ValidString(const std::string& v, const Json& s, const std::string& ptr) {
    const auto n = static_cast<int64_t>(CodepointCount(v));
    if (const auto it = s.find("minLength");
        it != s.end() && n < CountValue(*it, "minLength", ptr)) {
      return false;
    }
    if (const auto it = s.find("maxLength");
        it != s.end() && n > CountValue(*it, "maxLength", ptr)) {
      return false;
    }
    const std::string body = StringBody(v);
    if (const auto it = s.find("pattern"); it != s.end()) {
      const std::string& pattern = it->get_ref<const std::string&>();
      auto g = checkers_.find("p:" + pattern);
      if (g == checkers_.end()) {
        Grammar grammar;
        const std::string source = "json_schema: keyword 'pattern' at " + Where(ptr);
        RegexOptions ro;
        ro.search = true;
        ro.json_string_body = true;
        ro.source = source;
        grammar.set_root(CompileRegex(grammar, pattern, ro));
        g = checkers_.emplace("p:" + pattern, std::move(grammar)).first;
      }
      if (!Matches(g->second, body)) return false;
    }
    if (const auto it = s.find("format"); it != s.end()) {
      const std::string& format = it->get_ref<const std::string&>();
      auto g = checkers_.find("f:" + format);
      if (g == checkers_.end()) {
        Grammar grammar;
        FormatBuilder fb(grammar);
        grammar.set_root(fb.Build(format));
        g = checkers_.emplace("f:" + format, std::move(grammar)).first;
      }
      if (!Matches(g->second, body)) return false;
    }
    return true;
  }

  // ----- finishing: prune, order, check left recursion, validate

  Grammar Finish(int32_t root) {
    const auto& rules = g_.rules();
    const auto& sets = g_.sets();
    const size_t n = rules.size();
    // Productive rules (derive some finite text), by counting unproductive references.
    struct Alt {
      int32_t rule;
      size_t index;
      size_t pending;
    };
    std::vector<Alt> alts;
    std::vector<std::vector<size_t>> uses(n);
    std::vector<char> productive(n, 0);
    std::vector<int32_t> work;
    for (size_t r = 0; r < n; ++r) {
      for (size_t a = 0; a < rules[r].alternatives.size(); ++a) {
        const Sequence& seq = rules[r].alternatives[a];
        bool dead = false;
        size_t pending = 0;
        for (const Symbol& sym : seq) {
          if (!sym.is_rule && sets[static_cast<size_t>(sym.index)].none()) dead = true;
          if (sym.is_rule) ++pending;
        }
        if (dead) continue;
        alts.push_back({static_cast<int32_t>(r), a, pending});
        for (const Symbol& sym : seq) {
          if (sym.is_rule) uses[static_cast<size_t>(sym.index)].push_back(alts.size() - 1);
        }
        if (pending == 0 && !productive[r]) {
          productive[r] = 1;
          work.push_back(static_cast<int32_t>(r));
        }
      }
    }
    while (!work.empty()) {
      const auto r = static_cast<size_t>(work.back());
      work.pop_back();
      for (const size_t a : uses[r]) {
        if (--alts[a].pending == 0 && !productive[static_cast<size_t>(alts[a].rule)]) {
          productive[static_cast<size_t>(alts[a].rule)] = 1;
          work.push_back(alts[a].rule);
        }
      }
    }
    if (!productive[static_cast<size_t>(root)]) {
      Fail(
          "the schema accepts no JSON value at all (false, contradictory keywords, or required "
          "properties that recurse without end), so no output can satisfy it");
    }
    const auto live = [&](const Sequence& seq) {
      for (const Symbol& sym : seq) {
        if (sym.is_rule ? !productive[static_cast<size_t>(sym.index)]
                        : sets[static_cast<size_t>(sym.index)].none()) {
          return false;
        }
      }
      return true;
    };
    // Reachable rules in post-order (a rule after the rules it uses, cycles aside), so fixed
    // points over the new grammar (Validate's) settle in few passes.
    std::vector<int32_t> order;
    std::vector<int32_t> remap(n, -1);
    {
      std::vector<char> state(n, 0);
      std::vector<std::pair<int32_t, size_t>> stack{{root, 0}};
      std::vector<std::vector<int32_t>> edges(n);
      state[static_cast<size_t>(root)] = 1;
      const auto fill = [&](int32_t r) {
        for (const Sequence& seq : rules[static_cast<size_t>(r)].alternatives) {
          if (!live(seq)) continue;
          for (const Symbol& sym : seq) {
            if (sym.is_rule) edges[static_cast<size_t>(r)].push_back(sym.index);
          }
        }
      };
      fill(root);
      while (!stack.empty()) {
        auto& [r, e] = stack.back();
        if (e < edges[static_cast<size_t>(r)].size()) {
          const int32_t next = edges[static_cast<size_t>(r)][e++];
          if (!state[static_cast<size_t>(next)]) {
            state[static_cast<size_t>(next)] = 1;
            fill(next);
            stack.emplace_back(next, 0);
          }
        } else {
          remap[static_cast<size_t>(r)] = static_cast<int32_t>(order.size());
          order.push_back(r);
          stack.pop_back();
        }
      }
    }
    Grammar out;
    std::vector<int32_t> set_map(sets.size(), -1);
    for (const int32_t r : order) out.AddRule(rules[static_cast<size_t>(r)].name);
    for (const int32_t r : order) {
      for (const Sequence& seq : rules[static_cast<size_t>(r)].alternatives) {
        if (!live(seq)) continue;
        Sequence copy;
        copy.reserve(seq.size());
        for (const Symbol& sym : seq) {
          if (sym.is_rule) {
            copy.push_back(Symbol::Rule(remap[static_cast<size_t>(sym.index)]));
            continue;
          }
          int32_t& set = set_map[static_cast<size_t>(sym.index)];
          if (set < 0) set = out.Bytes(sets[static_cast<size_t>(sym.index)]).index;
          copy.push_back(Symbol::Bytes(set));
        }
        out.AddAlternative(remap[static_cast<size_t>(r)], std::move(copy));
      }
    }
    out.set_root(remap[static_cast<size_t>(root)]);
    CheckLeftRecursion(out, order);
    out.Validate("json_schema");
    return out;
  }

  // A $ref that reaches its own schema before any text is matched cannot run (the matcher
  // would loop): report it as the schema location, not as a rule name.
  void CheckLeftRecursion(const Grammar& g, const std::vector<int32_t>& old_ids) const {
    // The cycle Grammar finds, named by a $ref target on it.
    for (const int32_t q : g.LeftRecursiveCycle()) {
      const auto it = ref_ptrs_.find(old_ids[static_cast<size_t>(q)]);
      if (it != ref_ptrs_.end()) {
        Fail("the schema at " + it->second +
             " can reach itself through $ref before any text (left recursion, e.g. "
             "{\"anyOf\": [{\"$ref\": \"#\"}, ...]}), which never ends: put the "
             "recursive $ref inside an object property or an array item");
      }
    }
  }

  JsonSchemaOptions options_;
  Json doc_;
  Grammar g_;
  bool ref_siblings_apply_ = false;  // 2019-09 and later: $ref's siblings apply too
  std::unordered_map<std::string, Target> ids_;
  std::map<const Json*, int32_t> ref_rules_;
  std::map<int32_t, std::string> ref_ptrs_;
  std::map<std::string, int32_t> literals_, same_length_, formats_, fractions_;
  std::map<int64_t, int32_t> digit_runs_, exact_digits_;
  std::unordered_map<int, Symbol> byte_ranges_;
  std::map<std::pair<int64_t, int64_t>, int32_t> char_repeats_;
  std::map<std::string, Grammar> checkers_;  // pattern/format grammars for Valid()
  std::unique_ptr<FormatBuilder> format_builder_;
  std::vector<int32_t> any_;
  int64_t steps_ = 0, checks_ = 0;
  int32_t never_ = -1, boolean_ = -1, number_ = -1, integer_ = -1, non_ascii_ = -1, escape_ = -1,
          char_ = -1, chars_ = -1, string_ = -1, tiny_ = -1;
};

}  // namespace

Grammar CompileJsonSchema(std::string_view schema, const JsonSchemaOptions& options) {
  Compiler c(options);
  return c.CompileText(schema);
}

Grammar AnyJsonObjectGrammar(const JsonSchemaOptions& options) {
  Compiler c(options);
  return c.AnyObject();
}

}  // namespace ebb::constrain
