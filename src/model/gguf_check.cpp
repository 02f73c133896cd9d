#include "model/gguf_check.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "ebb/error.h"

namespace ebb::internal {
namespace fs = std::filesystem;

namespace {

bool HasGgufExtension(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".gguf";
}

}  // namespace

bool IsGgufFile(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  if (in && in.read(magic, sizeof magic)) {
    return magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' && magic[3] == 'F';
  }
  return HasGgufExtension(file);
}

fs::path FindGgufFile(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return {};
  int looked = 0;
  for (const fs::directory_iterator end; it != end && looked < 4096; it.increment(ec), ++looked) {
    if (ec) return {};
    const fs::path& p = it->path();
    if (HasGgufExtension(p) && IsGgufFile(p)) return p;
  }
  return {};
}

std::string GgufRefusalMessage(const fs::path& gguf) {
  return gguf.string() +
         ": a GGUF file (llama.cpp's format); ebb runs ONNX models in onnxruntime-genai's "
         "layout: a folder with genai_config.json, the ONNX decoder (model.onnx) and "
         "tokenizer.json. Make one with ONNX Runtime's model builder (pip install "
         "onnxruntime-genai), from the Hugging Face checkpoint: python3 -m "
         "onnxruntime_genai.models.builder -m <hf-model-id> -o <folder> -p int4 -e cpu; or from "
         "this GGUF file (LLaMA, Mistral, Phi-3, Gemma): add -i " +
         gguf.string() +
         ". Or download a ready ONNX export (e.g. microsoft/Phi-3-mini-4k-instruct-onnx on "
         "Hugging Face). See docs/models.md";
}

void RefuseGgufModel(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "genai_config.json", ec)) return;
    const fs::path gguf = FindGgufFile(path);
    if (!gguf.empty()) throw Error(ErrorCode::InvalidArgument, GgufRefusalMessage(gguf));
    return;
  }
  if (IsGgufFile(path)) throw Error(ErrorCode::InvalidArgument, GgufRefusalMessage(path));
}

}  // namespace ebb::internal
