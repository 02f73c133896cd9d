#include "runtime/model_folder_check.h"

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "ebb/error.h"

namespace ebb::internal {
namespace fs = std::filesystem;

namespace {

// Inside `root` (both canonical or weakly canonical).
bool Inside(const fs::path& p, const fs::path& root) {
  const fs::path rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
}

[[noreturn]] void Refuse(const fs::path& folder, const std::string& what, const fs::path& to) {
  throw Error(ErrorCode::InvalidArgument,
              "model folder " + folder.string() + ": " + what + " resolves to " + to.string() +
                  ", outside the folder; a model's files must be inside its folder (copy the "
                  "file in)");
}

// Every string under a "filename" key, with its JSON pointer.
void Filenames(const nlohmann::json& j, const std::string& where,
               std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      // custom_ops_library names code the load would run: confined like the model's files.
      if ((k == "filename" || k == "custom_ops_library") && v.is_string()) {
        out.emplace_back(where + "/" + k, v.get<std::string>());
      } else {
        Filenames(v, where + "/" + k, out);
      }
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) Filenames(j[i], where + "/" + std::to_string(i), out);
  }
}

}  // namespace

void CheckModelFolderConfined(const fs::path& folder) {
  std::error_code ec;
  const fs::path root = fs::canonical(folder, ec);
  if (ec) return;  // the load reports a missing folder itself
  const fs::path config = root / "genai_config.json";
  if (fs::is_regular_file(config, ec)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(ReadRegularFile(config, 16u << 20, "genai_config.json"));
    } catch (const nlohmann::json::exception&) {
      return;  // the load reports a malformed config, naming the field
    }
    std::vector<std::pair<std::string, std::string>> names;
    Filenames(j, "", names);
    for (const auto& [pointer, name] : names) {
      const fs::path target = fs::weakly_canonical(root / name, ec);
      if (ec || !Inside(target, root)) {
        Refuse(root, "genai_config.json " + pointer + " '" + name + "'", target);
      }
    }
  }
  // Symlinks among the folder's files (ORT reads external data and tokenizers from here too).
  size_t seen = 0;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > 10000) break;
    if (it.depth() >= 3) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_symlink(ec)) continue;
    std::error_code ec2;
    const fs::path target = fs::weakly_canonical(it->path(), ec2);
    if (ec2 || !Inside(target, root)) {
      Refuse(root, "the symlink " + it->path().lexically_relative(root).string(), target);
    }
  }
}

}  // namespace ebb::internal
