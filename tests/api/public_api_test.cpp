// Built against the shared libebb.so and include/ebb/ only (no src/ headers, no ebb_internal):
// what a user's program sees. If a symbol the public headers need were not exported, this
// would not link.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/runtime.h"

namespace {

std::filesystem::path TestModels() {
  const char* v = std::getenv("EBB_TEST_MODELS");
  return (v != nullptr && *v != '\0') ? v : EBB_TEST_MODELS_DEFAULT;
}

TEST(PublicApi, LoadGenerateStatsAndUnloadThroughTheSharedLibrary) {
  ebb::RuntimeOptions ro;
  ro.Set("memory.limit", "256MiB");
  ebb::Runtime rt(ro);
  ebb::ModelOptions mo;
  mo.Set("kv_cache.mode", "dynamic");
  auto model = rt.Load("tiny", TestModels() / "llama-tiny-fp32", mo);
  ebb::GenerateRequest req;
  req.input_ids = {{5, 17, 42}};
  req.params.Set("max_length", "12");
  const ebb::GenerateResult r = ebb::Generate(model, req);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].prompt_ids.size() + r.rows[0].generated_ids.size(), 12u);
  EXPECT_EQ(r.usage.prompt_tokens, 3u);
  model->runtime().ShrinkArena();
  EXPECT_EQ(model->runtime().Stats().num_shrinks, 1u);
  EXPECT_EQ(rt.List().size(), 1u);
  try {
    rt.Get("nope");
    FAIL();
  } catch (const ebb::Error& e) {  // the exception type crosses the shared library
    EXPECT_EQ(e.code(), ebb::ErrorCode::NotFound);
  }
  model.reset();
  rt.Unload("tiny");
  EXPECT_EQ(rt.num_models(), 0);
}

}  // namespace
