// memory.release_file_pages: after ebb::LoadModel, the pages of the model's external-data file that
// ORT mapped while loading are no longer resident, the model still generates the same tokens,
// and the option turns it off. Residency is read here from /proc/self/smaps by the test itself.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <string>
#include <vector>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "test_env.h"

namespace ebb {
namespace {

std::filesystem::path ExtData() { return testing::TestModelsDir() / "llama-int4-extdata"; }

// Resident bytes of every mapping of a file under `dir`, from /proc/self/smaps.
uint64_t ResidentUnder(const std::filesystem::path& dir) {
  const std::string prefix = std::filesystem::canonical(dir).string() + "/";
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool in_file = false;
  uint64_t total = 0;
  while (std::getline(in, line)) {
    const size_t slash = line.find('/');
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {  // a mapping's header line
      in_file = slash != std::string::npos && line.compare(slash, prefix.size(), prefix) == 0;
    } else if (in_file && line.rfind("Rss:", 0) == 0) {
      total += std::stoull(line.substr(4)) * 1024;
    }
  }
  return total;
}

std::vector<int32_t> Greedy(const std::shared_ptr<Model>& model) {
  GeneratorParams p;
  p.max_length = 24;
  Generator g(model, p);
  g.AppendTokens(std::vector<int32_t>{5, 17, 42, 99, 7, 300, 8, 9});
  while (!g.done()) g.GenerateNextToken();
  return {g.sequence(0).begin(), g.sequence(0).end()};
}

TEST(ModelFilePages, ReleasedAfterLoadAndTheModelStillGeneratesTheSameTokens) {
  ASSERT_TRUE(std::filesystem::exists(ExtData() / "model.onnx.data"));
  // Without the compiled-model cache: its entry (under the model folder) is what ORT maps on a
  // cached load, and ebb deliberately keeps it mapped (tests/integration/model_cache_test.cpp).
  ModelOptions keep;
  keep.Set("memory.release_file_pages", "false");
  keep.Set("model_cache.dir", "off");
  std::vector<int32_t> kept_tokens;
  uint64_t kept_resident = 0;
  {
    auto model = ebb::LoadModel(ExtData(), keep);
    kept_resident = ResidentUnder(ExtData());
    kept_tokens = Greedy(model);
    EXPECT_GT(model->runtime().Stats().process.file_bytes, 0);
  }
  // ORT maps the file and leaves what it touched resident (the MatMulNBits scales).
  ASSERT_GE(kept_resident, 256u * 1024) << "the fixture no longer exercises the release";

  ModelOptions release;  // default: released
  release.Set("model_cache.dir", "off");
  auto model = ebb::LoadModel(ExtData(), release);
  const uint64_t released_resident = ResidentUnder(ExtData());
  EXPECT_LT(released_resident * 4, kept_resident)
      << "released " << released_resident << " B, kept " << kept_resident << " B";
  EXPECT_EQ(Greedy(model), kept_tokens);  // whatever is read again faults back in from the file
  EXPECT_EQ(Greedy(model), kept_tokens);
}

TEST(ModelFilePages, TheOptionTakesBooleansOnly) {
  ModelOptions o;
  o.Set("memory.release_file_pages", "0");
  EXPECT_FALSE(o.release_file_pages);
  o.Set("memory.release_file_pages", "true");
  EXPECT_TRUE(o.release_file_pages);
  try {
    o.Set("memory.release_file_pages", "yes");
    FAIL() << "accepted 'yes'";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "memory.release_file_pages='yes' is not a boolean; use true, false, 1 or 0");
  }
}

}  // namespace
}  // namespace ebb
