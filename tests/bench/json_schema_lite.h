// A small JSON-Schema validator for the subset docs/bench.schema.json uses (draft 2020-12
// keywords): type, const, enum, required, properties, additionalProperties, items, minItems,
// minimum, oneOf, $ref to "#/$defs/...". Annotation keywords ($schema, $id, title, description)
// are ignored. Any other keyword is reported as an error, so the schema cannot silently use a
// keyword this validator would skip. Header-only; for tests.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace ebb::testing {

class JsonSchemaLite {
 public:
  explicit JsonSchemaLite(nlohmann::json schema) : root_(std::move(schema)) {}

  // Returns the errors (empty when `doc` is valid), each prefixed with its JSON pointer.
  std::vector<std::string> Validate(const nlohmann::json& doc) const {
    std::vector<std::string> errors;
    Check(root_, doc, "", errors);
    return errors;
  }

 private:
  static bool HasType(const nlohmann::json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
  }

  const nlohmann::json& Resolve(const std::string& ref, std::vector<std::string>& errors) const {
    static const nlohmann::json kEmpty = nlohmann::json::object();
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0 || !root_.contains("$defs") ||
        !root_["$defs"].contains(ref.substr(prefix.size()))) {
      errors.push_back("schema: unresolvable $ref " + ref);
      return kEmpty;
    }
    return root_["$defs"][ref.substr(prefix.size())];
  }

  void Check(const nlohmann::json& s, const nlohmann::json& v, const std::string& at,
             std::vector<std::string>& errors) const {
    static const std::set<std::string> kKnown{
        "$schema", "$id",      "title",   "description", "$defs",      "$ref",
        "type",    "const",    "enum",    "required",    "properties", "additionalProperties",
        "items",   "minItems", "minimum", "oneOf"};
    for (const auto& [k, _] : s.items()) {
      if (kKnown.count(k) == 0) errors.push_back("schema: unsupported keyword " + k + " at " + at);
    }
    if (s.contains("$ref")) Check(Resolve(s["$ref"], errors), v, at, errors);
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_string()) {
        ok = HasType(v, s["type"]);
      } else {
        for (const auto& t : s["type"]) ok = ok || HasType(v, t);
      }
      if (!ok) {
        errors.push_back(at + ": expected type " + s["type"].dump() + ", got " + v.dump());
        return;
      }
    }
    if (s.contains("const") && v != s["const"]) {
      errors.push_back(at + ": expected " + s["const"].dump() + ", got " + v.dump());
    }
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) errors.push_back(at + ": " + v.dump() + " is not one of " + s["enum"].dump());
    }
    if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>()) {
      errors.push_back(at + ": " + v.dump() + " is below the minimum " + s["minimum"].dump());
    }
    if (s.contains("oneOf")) {
      int matches = 0;
      for (const auto& sub : s["oneOf"]) {
        std::vector<std::string> sub_errors;
        Check(sub, v, at, sub_errors);
        matches += sub_errors.empty() ? 1 : 0;
      }
      if (matches != 1) {
        errors.push_back(at + ": matches " + std::to_string(matches) + " of oneOf, not 1");
      }
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const auto& r : s["required"]) {
          if (!v.contains(r.get<std::string>())) {
            errors.push_back(at + ": missing required " + r.get<std::string>());
          }
        }
      }
      for (const auto& [k, child] : v.items()) {
        if (s.contains("properties") && s["properties"].contains(k)) {
          Check(s["properties"][k], child, at + "/" + k, errors);
        } else if (s.contains("additionalProperties")) {
          const auto& ap = s["additionalProperties"];
          if (ap.is_boolean()) {
            if (!ap.get<bool>()) errors.push_back(at + ": unexpected property " + k);
          } else {
            Check(ap, child, at + "/" + k, errors);
          }
        }
      }
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) {
        errors.push_back(at + ": fewer than " + s["minItems"].dump() + " items");
      }
      if (s.contains("items")) {
        for (size_t i = 0; i < v.size(); ++i) {
          Check(s["items"], v[i], at + "/" + std::to_string(i), errors);
        }
      }
    }
  }

  nlohmann::json root_;
};

}  // namespace ebb::testing
