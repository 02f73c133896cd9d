// Recognises GGUF files (llama.cpp's format), which ebb does not run, so that a user who points
// ebb at one is told what ebb runs and how to get it, instead of "genai_config.json: not found".
#pragma once

#include <filesystem>
#include <string>

namespace ebb::internal {

// Whether `file` is a GGUF file: its first four bytes are the magic "GGUF", or it cannot be read
// and its name ends in ".gguf" (any case). Never throws.
bool IsGgufFile(const std::filesystem::path& file);

// The first GGUF file directly inside folder `dir` (not recursive, at most 4096 entries looked
// at), or an empty path. Never throws.
std::filesystem::path FindGgufFile(const std::filesystem::path& dir);

// Throws ebb::Error(InvalidArgument) when `path` is a GGUF file, or a folder without
// genai_config.json that holds one: the message names the file, says that ebb runs ONNX models
// in onnxruntime-genai's layout (genai_config.json, model.onnx, tokenizer.json) and how to make
// one with ONNX Runtime's model builder. Otherwise does nothing.
void RefuseGgufModel(const std::filesystem::path& path);

// The message RefuseGgufModel throws, for the GGUF file `gguf`.
std::string GgufRefusalMessage(const std::filesystem::path& gguf);

}  // namespace ebb::internal
