#include "tokenizer/json_ref.h"

#include "ebb/error.h"

namespace ebb::tok {

void JsonRef::Fail(std::string_view message) const {
  throw Error(
      ErrorCode::InvalidArgument,
      *source_ + ": " + (path_.empty() ? std::string("/") : path_) + ": " + std::string(message));
}

std::string JsonRef::Escape(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

bool JsonRef::Has(std::string_view key) const {
  if (!node_->is_object()) return false;
  auto it = node_->find(key);
  return it != node_->end() && !it->is_null();
}

JsonRef JsonRef::At(std::string_view key) const {
  if (!node_->is_object()) Fail("expected an object");
  auto it = node_->find(key);
  if (it == node_->end() || it->is_null()) {
    JsonRef(*node_, path_ + "/" + Escape(key), *source_).Fail("missing required field");
  }
  return JsonRef(*it, path_ + "/" + Escape(key), *source_);
}

std::optional<JsonRef> JsonRef::Find(std::string_view key) const {
  if (!node_->is_object()) Fail("expected an object");
  auto it = node_->find(key);
  if (it == node_->end() || it->is_null()) return std::nullopt;
  return JsonRef(*it, path_ + "/" + Escape(key), *source_);
}

JsonRef JsonRef::Index(size_t i) const {
  if (!node_->is_array()) Fail("expected an array");
  if (i >= node_->size()) Fail("index out of range");
  return JsonRef((*node_)[i], path_ + "/" + std::to_string(i), *source_);
}

size_t JsonRef::Size() const {
  if (!node_->is_array() && !node_->is_object()) Fail("expected an array or object");
  return node_->size();
}

std::string JsonRef::String() const {
  if (!node_->is_string()) Fail("expected a string");
  return node_->get<std::string>();
}

bool JsonRef::Bool() const {
  if (!node_->is_boolean()) Fail("expected a boolean");
  return node_->get<bool>();
}

int64_t JsonRef::Int() const {
  if (!node_->is_number_integer()) Fail("expected an integer");
  return node_->get<int64_t>();
}

double JsonRef::Number() const {
  if (!node_->is_number()) Fail("expected a number");
  return node_->get<double>();
}

std::string JsonRef::GetString(std::string_view key, std::string_view fallback) const {
  auto v = Find(key);
  return v ? v->String() : std::string(fallback);
}

bool JsonRef::GetBool(std::string_view key, bool fallback) const {
  auto v = Find(key);
  return v ? v->Bool() : fallback;
}

int64_t JsonRef::GetInt(std::string_view key, int64_t fallback) const {
  auto v = Find(key);
  return v ? v->Int() : fallback;
}

}  // namespace ebb::tok
