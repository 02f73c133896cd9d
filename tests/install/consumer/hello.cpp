// A C++ program that uses an installed ebb (tests/install/install_test.sh builds it with
// pkg-config and with CMake): loads MODEL_DIR, generates 8 tokens, prints them and the KV stats.
#include <ebb/generation.h>
#include <ebb/model.h>
#include <ebb/model_controls.h>
#include <ebb/runtime.h>
#include <ebb/stats.h>

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  try {
    auto model = ebb::LoadModel(argv[1]);
    ebb::GenerateRequest req;
    req.prompt = "Hello";
    req.max_new_tokens = 8;
    const ebb::GenerateResult r = ebb::Generate(model, req);
    const ebb::MemoryStats s = model->runtime().Stats();
    std::printf("c++: %zu completion tokens, finish %s, KV in use after %llu bytes\n",
                r.rows[0].generated_ids.size(),
                std::string(ebb::FinishReasonName(r.rows[0].finish_reason)).c_str(),
                static_cast<unsigned long long>(s.kv.in_use_bytes));
    return r.rows[0].generated_ids.empty() ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
