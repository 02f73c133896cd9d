#include "runtime/model_catalog.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/strings.h"
#include "ebb/error.h"
#include "model/genai_config.h"

namespace ebb::internal {

bool ValidManagedId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':';
  });
}

ModelCatalog::ModelCatalog(std::map<std::string, ManagedModelSpec> models,
                           std::filesystem::path models_dir)
    : models_(std::move(models)), dir_(std::move(models_dir)) {
  for (const auto& [id, spec] : models_) {
    if (!ValidManagedId(id)) {
      throw Error(ErrorCode::InvalidArgument,
                  "model id '" + EscapeForMessage(id, 200) +
                      "' is not valid: use 1 to 128 letters, digits, '.', '_', '-' or ':'");
    }
  }
  if (!dir_.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
      throw Error(ErrorCode::InvalidArgument, "the models directory " + dir_.string() +
                                                  " is not a folder; create it or fix the path");
    }
    dir_real_ = std::filesystem::canonical(dir_, ec);
  }
}

ManagedModelSpec ModelCatalog::Resolve(const std::string& id) const {
  if (auto it = models_.find(id); it != models_.end()) return it->second;
  if (!ValidManagedId(id)) {
    throw Error(ErrorCode::InvalidArgument,
                "model id '" + EscapeForMessage(id, 80) +
                    "' is not valid: use one folder name of 1 to 128 letters, digits, '.', "
                    "'_', '-' or ':' (no paths)");
  }
  if (!dir_real_.empty()) {
    std::error_code ec;
    const auto candidate = dir_ / id;
    if (std::filesystem::exists(candidate, ec)) {
      const auto real = std::filesystem::canonical(candidate, ec);
      if (ec) {
        throw Error(ErrorCode::NotFound, "model '" + id + "': cannot resolve " +
                                             candidate.string() + ": " + ec.message());
      }
      const auto rel = real.lexically_relative(dir_real_);
      if (rel.empty() || *rel.begin() == ".." || rel.is_absolute()) {
        throw Error(ErrorCode::InvalidArgument,
                    "model '" + id + "' resolves to " + real.string() +
                        ", outside the models directory " + dir_real_.string() +
                        "; ids are confined to it (copy the model in, or give it with "
                        "--model ID=PATH)");
      }
      if (!std::filesystem::is_directory(real, ec)) {
        throw Error(ErrorCode::NotFound,
                    "model '" + id + "': " + real.string() + " is not a model folder");
      }
      return ManagedModelSpec{real, {}, std::nullopt, false};
    }
  }
  throw Error(ErrorCode::NotFound, "model '" + id + "' does not exist; known models: " +
                                       KnownIdsText() + " (see GET /v1/models)");
}

std::vector<std::string> ModelCatalog::KnownIds() const {
  std::set<std::string> ids;
  for (const auto& [id, spec] : models_) ids.insert(id);
  if (!dir_real_.empty()) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_real_, ec)) {
      const std::string name = e.path().filename().string();
      if (!ValidManagedId(name) || !e.is_directory(ec)) continue;
      // A symlink out of the directory is not a model of it (Resolve refuses it too).
      const auto real = std::filesystem::canonical(e.path(), ec);
      const auto rel = real.lexically_relative(dir_real_);
      if (ec || rel.empty() || *rel.begin() == "..") continue;
      if (LooksLikeModelFolder(e.path())) ids.insert(name);
    }
  }
  return {ids.begin(), ids.end()};
}

std::string ModelCatalog::KnownIdsText() const {
  std::string s;
  for (const auto& id : KnownIds()) s += (s.empty() ? "" : ", ") + id;
  return s.empty() ? "(none)" : s;
}

}  // namespace ebb::internal
