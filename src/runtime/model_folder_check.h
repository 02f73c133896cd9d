// Model folders are confined: every file a managed model's folder names, and every symlink in
// it, must resolve inside the folder (docs/http_api.md#security-model). The model manager
// checks this before it loads a folder, so that a config naming "../x.onnx" or an absolute
// path, or a symlink out, cannot make `ebb serve` read files outside --models-dir.
#pragma once

#include <filesystem>

namespace ebb::internal {

// Throws ebb::Error(InvalidArgument) naming the file (the config field, or the symlink, and
// where it points) when something in `folder` resolves outside it: a "filename" field anywhere
// in genai_config.json, or a symlink among the folder's files (down to a few levels).
void CheckModelFolderConfined(const std::filesystem::path& folder);

}  // namespace ebb::internal
