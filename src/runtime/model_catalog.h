// The model manager's catalog: which model ids exist and where their folders are. Explicit ids
// (ModelManagerOptions::models) come first, then the folders under models_dir, found on use (a
// folder copied in is known without a restart). Ids under models_dir are confined to it: one
// folder name, no paths, and no symlink out of the directory.
// Thread-safety: read-only after construction; every method is thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ebb/model_manager.h"

namespace ebb::internal {

// Whether `id` is a valid managed id: 1 to 128 letters, digits, '.', '_', '-' or ':', and not
// "." or "..".
bool ValidManagedId(const std::string& id);

class ModelCatalog {
 public:
  // Throws InvalidArgument for an explicit id that is not valid, or a models_dir that is not a
  // folder. An empty models_dir: explicit ids only.
  ModelCatalog(std::map<std::string, ManagedModelSpec> models, std::filesystem::path models_dir);

  // The spec of `id`: the explicit one, else the folder under models_dir (its canonical path,
  // no options). Throws InvalidArgument (an invalid id, or a folder that resolves outside
  // models_dir) or NotFound (no such model; the message lists the known ones).
  ManagedModelSpec Resolve(const std::string& id) const;
  // Every id it knows now: the explicit ones and the model folders under models_dir, sorted.
  std::vector<std::string> KnownIds() const;
  std::string KnownIdsText() const;  // KnownIds joined by ", "; "(none)" when empty

 private:
  std::map<std::string, ManagedModelSpec> models_;
  std::filesystem::path dir_;       // as given
  std::filesystem::path dir_real_;  // canonical; empty when none
};

}  // namespace ebb::internal
