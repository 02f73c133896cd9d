// The model manager's parts that are pure (runtime/manager_policy.h) or need only a folder tree
// (runtime/model_catalog.h): which model makes room, the keep-alive a request gets, and which
// ids exist. The manager's locking and loads are tested in tests/integration/model_manager_test.
#include "runtime/manager_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ebb/error.h"
#include "runtime/model_catalog.h"

namespace ebb {
namespace {

using internal::PlanRoom;
using internal::RoomCandidate;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

RoomCandidate Idle(std::string id, int64_t last_used, bool file_backed = false,
                   bool pinned = false) {
  RoomCandidate c;
  c.id = std::move(id);
  c.last_used_unix_ms = last_used;
  c.file_backed_weights = file_backed;
  c.pinned = pinned;
  return c;
}

TEST(PlanRoom, ReleasesTheOldestFileBackedWeightsAndEvictsTheOldestUnpinned) {
  const auto plan = PlanRoom({Idle("a", 300, /*file_backed=*/true), Idle("b", 100),
                              Idle("c", 200, /*file_backed=*/true), Idle("d", 50, false, true)},
                             "new");
  EXPECT_EQ(plan.release, "c");  // the oldest with file-backed weights
  EXPECT_EQ(plan.evict, "b");    // d is older but pinned
}

TEST(PlanRoom, APinnedModelMayReleaseItsWeightsButIsNeverEvicted) {
  const auto plan = PlanRoom({Idle("p", 10, /*file_backed=*/true, /*pinned=*/true)}, "new");
  EXPECT_EQ(plan.release, "p");
  EXPECT_EQ(plan.evict, "");
}

TEST(PlanRoom, NeverTouchesABusyModelOrTheOneRoomIsFor) {
  RoomCandidate busy = Idle("busy", 1, /*file_backed=*/true);
  busy.busy = true;
  const auto plan = PlanRoom({busy, Idle("self", 2, /*file_backed=*/true)}, "self");
  EXPECT_EQ(plan.release, "");
  EXPECT_EQ(plan.evict, "");
  EXPECT_EQ(PlanRoom({}, "x").evict, "");
}

TEST(PlanRoom, TiesGoToTheFirstCandidate) {
  const auto plan = PlanRoom({Idle("x", 5), Idle("y", 5)}, "new");
  EXPECT_EQ(plan.evict, "x");
}

TEST(EffectiveKeepAlive, ARequestMayShortenButLengthenOnlyWhenAllowed) {
  using internal::EffectiveKeepAlive;
  const KeepAlive five{std::chrono::minutes(5)};
  const KeepAlive one{std::chrono::minutes(1)};
  const KeepAlive forever{-1};
  EXPECT_EQ(EffectiveKeepAlive(five, std::nullopt, false), five);
  EXPECT_EQ(EffectiveKeepAlive(five, one, false), one);
  EXPECT_EQ(EffectiveKeepAlive(one, five, false), one);
  EXPECT_EQ(EffectiveKeepAlive(one, five, true), five);
  EXPECT_EQ(EffectiveKeepAlive(five, forever, false), five);  // forever is the longest
  EXPECT_EQ(EffectiveKeepAlive(five, forever, true), forever);
  EXPECT_EQ(EffectiveKeepAlive(forever, one, false), one);
  EXPECT_EQ(EffectiveKeepAlive(five, KeepAlive{0}, false), KeepAlive{0});  // unload at once
}

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ebb_catalog_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Folder(const std::string& id, const std::string& file) {
    const fs::path p = dir_ / "models" / id / file;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "x";
  }
  fs::path dir_;
};

TEST_F(CatalogTest, ListsExplicitIdsAndModelFoldersOnly) {
  Folder("genai", "genai_config.json");
  Folder("quantized", "onnx/model_quantized.onnx");  // issue 38: loaded but was not listed
  Folder("notes", "README.md");                      // not a model folder
  std::map<std::string, ManagedModelSpec> models;
  models["explicit"] = ManagedModelSpec{dir_ / "elsewhere", {}, std::nullopt, false};
  internal::ModelCatalog c(models, dir_ / "models");
  EXPECT_THAT(c.KnownIds(), ElementsAre("explicit", "genai", "quantized"));
  EXPECT_EQ(c.KnownIdsText(), "explicit, genai, quantized");
  EXPECT_EQ(c.Resolve("explicit").path, dir_ / "elsewhere");
  EXPECT_EQ(c.Resolve("genai").path, fs::canonical(dir_ / "models" / "genai"));
}

TEST_F(CatalogTest, RefusesPathsEscapesAndUnknownIdsWithTheFix) {
  Folder("genai", "genai_config.json");
  fs::create_directories(dir_ / "outside");
  fs::create_directory_symlink(dir_ / "outside", dir_ / "models" / "link");
  internal::ModelCatalog c({}, dir_ / "models");
  try {
    c.Resolve("../outside");
    FAIL() << "a path was accepted as an id";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("(no paths)"));
  }
  try {
    c.Resolve("link");
    FAIL() << "a symlink out of the models directory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("outside the models directory"));
  }
  try {
    c.Resolve("missing");
    FAIL() << "an unknown id resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("known models: genai (see GET /v1/models)"));
  }
}

TEST_F(CatalogTest, RefusesAnInvalidExplicitIdAndAMissingModelsDirectory) {
  std::map<std::string, ManagedModelSpec> bad;
  bad["a/b"] = ManagedModelSpec{dir_, {}, std::nullopt, false};
  EXPECT_THROW(internal::ModelCatalog(bad, {}), Error);
  try {
    internal::ModelCatalog({}, dir_ / "nope");
    FAIL() << "a missing models directory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("is not a folder; create it or fix the path"));
  }
}

}  // namespace
}  // namespace ebb
