// JsonRef: a read-only view of one node of a parsed tokenizer.json that knows its JSON
// pointer, so every load error names the exact construct:
//   "tokenizer.json: /pre_tokenizer/pretokenizers/1/type: unsupported pre-tokenizer \"X\"".
// Does not own the JSON document or the source name; both must outlive it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ebb::tok {

class JsonRef {
 public:
  JsonRef(const nlohmann::json& node, std::string path, const std::string& source)
      : node_(&node), path_(std::move(path)), source_(&source) {}

  const nlohmann::json& node() const { return *node_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }

  // Throws ebb::Error(InvalidArgument) "<source>: <path>: <message>".
  [[noreturn]] void Fail(std::string_view message) const;

  bool IsNull() const { return node_->is_null(); }
  bool IsObject() const { return node_->is_object(); }
  bool IsArray() const { return node_->is_array(); }
  bool IsString() const { return node_->is_string(); }
  bool Has(std::string_view key) const;  // present and not null

  // Child access; At() fails when the key is missing (or null) or not an object.
  JsonRef At(std::string_view key) const;
  std::optional<JsonRef> Find(std::string_view key) const;  // absent or null -> nullopt
  JsonRef Index(size_t i) const;
  size_t Size() const;  // array or object size (fails for other kinds)

  // Typed values; fail with a message naming the expected type.
  std::string String() const;
  bool Bool() const;
  int64_t Int() const;
  double Number() const;

  // Typed member with a default for absent/null members.
  std::string GetString(std::string_view key, std::string_view fallback) const;
  bool GetBool(std::string_view key, bool fallback) const;
  int64_t GetInt(std::string_view key, int64_t fallback) const;

  // The "type" member (required) as a string.
  std::string Type() const { return At("type").String(); }

 private:
  static std::string Escape(std::string_view key);  // JSON pointer escaping (~0, ~1)

  const nlohmann::json* node_;
  std::string path_;
  const std::string* source_;
};

}  // namespace ebb::tok
