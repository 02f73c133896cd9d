// A genai program (genai's C++ API, ort_genai.h) built against the installed
// include/onnxruntime-genai/ and linked against ebb's libonnxruntime-genai.so: greedy generation
// of a few tokens from fixed ids. usage: hello_genai MODEL_DIR
#include <cstdio>
#include <exception>
#include <vector>

#include "ort_genai.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  OgaHandle handle;
  try {
    auto model = OgaModel::Create(argv[1]);
    auto params = OgaGeneratorParams::Create(*model);
    params->SetSearchOption("max_length", 12);
    auto generator = OgaGenerator::Create(*model, *params);
    const std::vector<int32_t> prompt = {1, 5, 9};
    generator->AppendTokens(prompt.data(), prompt.size());
    while (!generator->IsDone()) generator->GenerateNextToken();
    std::printf("hello_genai: %zu tokens\n", generator->GetSequenceCount(0));
    return generator->GetSequenceCount(0) == 12 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hello_genai: %s\n", e.what());
    return 1;
  }
}
