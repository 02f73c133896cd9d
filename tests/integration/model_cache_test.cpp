// The compiled-model cache (model_cache.dir, src/model/model_cache.h): the first load builds it,
// the next loads use it with identical greedy tokens, and every way it can go wrong (a corrupt,
// truncated or half-written entry, a changed model file or graph option, a process killed while
// writing, two builders at once, no writable folder) still loads correctly, rebuilding where
// needed, with a log line saying why. Each test works on its own copy of a synthesized model.
#include "model/model_cache.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache_build_wait.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/log.h"
#include "ebb/model.h"
#include "ebb/model_controls.h"
#include "ebb/model_manager.h"
#include "ebb/runtime.h"
#include "log_capture.h"
#include "model/model_views.h"
#include "model/prepack_chunks.h"
#include "model/prepacked_align.h"
#include "model/probe_run.h"
#include "ort/ort_env.h"
#include "platform/testing.h"
#include "test_env.h"

extern char** environ;

namespace ebb {
namespace {

namespace fs = std::filesystem;
using testing::CacheEntries;
using ::testing::HasSubstr;
using testing::LogCapture;
using ::testing::Not;

// A private copy of a test model under a fresh temp folder, removed at the end.
class ModelCopy {
 public:
  explicit ModelCopy(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    base_ = fs::temp_directory_path() /
            ("ebb-cache-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_);
    dir_ = base_ / name;
    fs::create_directories(dir_);
    // model_cache.dir=auto writes to the per-user folder: this test's own.
    ::setenv("XDG_CACHE_HOME", (base_ / "xdg").c_str(), 1);
    // Not the shared folder's own cache, which other tests' loads create there.
    for (const auto& e : fs::directory_iterator(testing::TestModelsDir() / name)) {
      if (e.path().filename() == ".ebb-cache") continue;
      fs::copy(e.path(), dir_ / e.path().filename(), fs::copy_options::recursive);
    }
  }
  ~ModelCopy() {
    ::unsetenv("XDG_CACHE_HOME");
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(base_, ec);
  }
  const fs::path& dir() const { return dir_; }
  const fs::path& base() const { return base_; }
  fs::path cache_root() const { return base_ / "xdg" / "ebb" / "models"; }

 private:
  fs::path base_, dir_;
};

// The unfinished temp folders under `root` (its entries: CacheEntries).
std::vector<fs::path> TempDirs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.path().filename().string().starts_with(".tmp-")) out.push_back(e.path());
  }
  return out;
}

std::vector<int32_t> Greedy(const std::shared_ptr<Model>& model) {
  GeneratorParams p;
  p.max_length = 20;
  Generator g(model, p);
  g.AppendTokens(std::vector<int32_t>{5, 17, 42, 99, 7, 300});
  while (!g.done()) g.GenerateNextToken();
  return {g.sequence(0).begin(), g.sequence(0).end()};
}

// The suite runs with EBB_MODEL_CACHE_DIR=off (tests/CMakeLists.txt): these tests ask for the
// default, auto, explicitly.
ModelOptions AutoCache() {
  ModelOptions o;
  o.Set("model_cache.dir", "auto");
  // Pressure on the test machine must not release weights behind a test's back; the pressure
  // tests turn it on with a cgroup folder they control.
  o.Set("memory.release_weights_on_pressure", "false");
  return o;
}

std::vector<int32_t> LoadAndGreedy(const fs::path& dir, const ModelOptions& o = AutoCache()) {
  return Greedy(ebb::LoadModel(dir, o));
}

// Reference tokens without any cache.
std::vector<int32_t> Uncached(const fs::path& dir) {
  ModelOptions off;
  off.Set("model_cache.dir", "off");
  return LoadAndGreedy(dir, off);
}

// Overwrites `n` bytes at `offset` of `p` with 0x5a, then restores its mtime when asked (so only
// the checksum can tell).
void Scribble(const fs::path& p, uint64_t offset, size_t n, bool keep_mtime) {
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    const std::string junk(n, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(n));
  }
  if (keep_mtime) {
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
  }
}

// Starts the CLI on `dir` (output discarded); returns its pid.
pid_t SpawnCli(const fs::path& dir) {
  const std::string cli = testing::CliPath();
  std::vector<std::string> args = {cli,           "generate", dir.string(),
                                   "--input-ids", "5,17,42",  "--max-length",
                                   "8",           "--option", "model_cache.dir=auto"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, cli.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

class ModelCacheTest : public ::testing::TestWithParam<std::string> {};

// Both kinds of weights (int4 MatMulNBits and fp32 MatMul, each with ORT's prepacked blobs) and
// every KV layout; llama-tiny-fp16io pins the probe's shared-buffer binding (an empty past made
// GQA refuse to reuse the buffer, and no entry was ever built for fp16-KV GQA graphs).
INSTANTIATE_TEST_SUITE_P(Models, ModelCacheTest,
                         // Every KV layout the probe must feed: GQA with a shared buffer
                         // (fp32, fp16 KV), ping-pong, gpt2's combined past, unfused phi3.
                         ::testing::Values("llama-int4-extdata", "llama-tiny-fp32",
                                           "llama-tiny-fp16io", "gpt2-tiny-fp32", "qwen2-tiny-fp32",
                                           "phi3-tiny-fp32-unfused"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST_P(ModelCacheTest, FirstLoadBuildsSecondLoadUsesItWithIdenticalTokens) {
  ModelCopy m(GetParam());
  const auto want = Uncached(m.dir());
  ASSERT_FALSE(fs::exists(m.cache_root())) << "model_cache.dir=off wrote a cache";
  LogCapture logs;
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("model cache: building"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  const fs::path entry = CacheEntries(m.cache_root())[0];
  EXPECT_TRUE(fs::exists(entry / "manifest.json"));
  EXPECT_TRUE(fs::exists(entry / "model.onnx"));
  EXPECT_TRUE(TempDirs(m.cache_root()).empty());

  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  log = logs.Take();
  EXPECT_THAT(log, HasSubstr("model cache: loaded"));
  EXPECT_THAT(log, Not(HasSubstr("model cache: build")));
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
}

TEST_P(ModelCacheTest, CorruptOrTruncatedFilesAreRebuilt) {
  ModelCopy m(GetParam());
  const auto want = Uncached(m.dir());
  LogCapture logs;
  ASSERT_EQ(LoadAndGreedy(m.dir()), want);
  const fs::path entry = CacheEntries(m.cache_root()).at(0);
  logs.Take();

  // Overwritten bytes (mtime changes, as with any write).
  Scribble(entry / "model.onnx.data", 100, 64, /*keep_mtime=*/false);
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("model cache: rebuilding"));
  EXPECT_THAT(log, HasSubstr("model.onnx.data was modified after the cache was written"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));

  // Corrupt graph bytes behind an unchanged size and mtime: only the checksum sees it.
  Scribble(entry / "model.onnx", 200, 16, /*keep_mtime=*/true);
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  log = logs.Take();
  EXPECT_THAT(log, HasSubstr("model.onnx fails its checksum (corrupt)"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));

  // Truncated.
  fs::resize_file(entry / "model.onnx.data", fs::file_size(entry / "model.onnx.data") / 2);
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  log = logs.Take();
  EXPECT_THAT(log, HasSubstr("(truncated or overwritten)"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));

  // Deleted manifest (as a crash between the data and the manifest would leave, had the entry
  // not been written under a temp name).
  fs::remove(entry / "manifest.json");
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  log = logs.Take();
  EXPECT_THAT(log, HasSubstr("it has no manifest"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));

  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u);
}

TEST(ModelCache, ChangedModelFileIsDetectedAndTheStaleEntryRemoved) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  LogCapture logs;
  ASSERT_EQ(LoadAndGreedy(m.dir()), want);
  const fs::path old_entry = CacheEntries(m.cache_root()).at(0);
  logs.Take();
  // touch: same bytes, new mtime.
  fs::last_write_time(m.dir() / "model.onnx.data",
                      fs::last_write_time(m.dir() / "model.onnx.data") + std::chrono::seconds(5));
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  const std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("removing stale entry"));
  EXPECT_THAT(log, HasSubstr("the model files changed since it was built"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));
  EXPECT_FALSE(fs::exists(old_entry));
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u);

  // Modified: a doc_string appended to the ModelProto (a valid edit that keeps the graph).
  {
    std::ofstream f(m.dir() / "model.onnx", std::ios::app | std::ios::binary);
    f.write(
        "\x32\x03"
        "abc",
        5);  // field 6 (doc_string), length 3
  }
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  const std::string log2 = logs.Take();
  EXPECT_THAT(log2, HasSubstr("removing stale entry"));
  EXPECT_THAT(log2, HasSubstr("model cache: built"));
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u);
}

TEST(ModelCache, GraphOptionsHaveTheirOwnEntriesAndRuntimeOptionsShareOne) {
  ModelCopy m("llama-tiny-fp32");
  const auto want = Uncached(m.dir());
  LogCapture logs;
  ASSERT_EQ(LoadAndGreedy(m.dir()), want);
  logs.Take();

  ModelOptions basic = AutoCache();
  basic.Set("session_options.graph_optimization_level", "basic");
  EXPECT_EQ(LoadAndGreedy(m.dir(), basic), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: built"));
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 2u);

  ModelOptions prepack_off = AutoCache();
  prepack_off.Set("session_options.session.disable_prepacking", "1");
  EXPECT_EQ(LoadAndGreedy(m.dir(), prepack_off), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: built"));
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 3u);

  // Threads change how the graph runs, not what ORT compiles.
  ModelOptions threads = AutoCache();
  threads.Set("session_options.intra_op_num_threads", "1");
  EXPECT_EQ(LoadAndGreedy(m.dir(), threads), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));
  EXPECT_EQ(LoadAndGreedy(m.dir(), basic), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));

  // A user who manages ORT's optimised-model output keeps control of it.
  ModelOptions own = AutoCache();
  own.Set("session_options.session.optimized_model_filepath", (m.base() / "mine.onnx").string());
  EXPECT_EQ(LoadAndGreedy(m.dir(), own), want);
  EXPECT_THAT(logs.Take(), HasSubstr("not used because session option "
                                     "session.optimized_model_filepath is set"));
  EXPECT_TRUE(fs::exists(m.base() / "mine.onnx"));
}

TEST(ModelCache, UnfinishedWritesAreNeverLoadedAndAreCleanedUp) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  LogCapture logs;
  ASSERT_EQ(LoadAndGreedy(m.dir()), want);
  const fs::path entry = CacheEntries(m.cache_root()).at(0);
  const std::string name = entry.filename().string();
  const std::string key = name.substr(name.rfind('-') + 1);
  fs::remove_all(entry);
  logs.Take();

  // What a crash leaves: a temp folder with a partial graph and no manifest, from a process
  // that no longer exists (a pid above pid_max).
  const fs::path partial = m.cache_root() / (".tmp-" + key + "-99999999-0");
  fs::create_directories(partial);
  std::ofstream(partial / "model.onnx") << "partial";
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  const std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("an unfinished cache write of process 99999999, which is gone"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u);
}

TEST(ModelCache, KillNineWhileWritingLeavesNothingThatLoads) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  // A child CLI builds the cache; kill -9 it as soon as its temp folder appears (ORT then is
  // still loading the model and writing the entry).
  bool killed_mid_write = false;
  for (int attempt = 0; attempt < 5 && !killed_mid_write; ++attempt) {
    fs::remove_all(m.cache_root());
    const pid_t pid = SpawnCli(m.dir());
    ASSERT_GT(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && TempDirs(m.cache_root()).empty()) {
      int st = 0;
      if (::waitpid(pid, &st, WNOHANG) == pid) break;  // finished before we saw it: retry
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!TempDirs(m.cache_root()).empty() && ::kill(pid, SIGKILL) == 0) {
      int st = 0;
      ::waitpid(pid, &st, 0);
      killed_mid_write =
          WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && CacheEntries(m.cache_root()).empty();
    } else {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  ASSERT_TRUE(killed_mid_write) << "could not catch the child while it wrote the cache";
  ASSERT_FALSE(TempDirs(m.cache_root()).empty());

  LogCapture logs;
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  const std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("which is gone (it crashed or was killed while writing)"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));
  EXPECT_TRUE(TempDirs(m.cache_root()).empty());
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));
}

TEST(ModelCache, ConcurrentBuildersLeaveOneCompleteEntry) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  // Two processes and two threads build the same entry at once.
  const pid_t a = SpawnCli(m.dir());
  const pid_t b = SpawnCli(m.dir());
  std::vector<int32_t> t1, t2;
  std::thread x([&] { t1 = LoadAndGreedy(m.dir()); });
  std::thread y([&] { t2 = LoadAndGreedy(m.dir()); });
  x.join();
  y.join();
  for (pid_t p : {a, b}) {
    int st = 0;
    ASSERT_EQ(::waitpid(p, &st, 0), p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a concurrent CLI load failed";
  }
  EXPECT_EQ(t1, want);
  EXPECT_EQ(t2, want);
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  EXPECT_TRUE(TempDirs(m.cache_root()).empty());
  LogCapture logs;
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));
}

TEST(ModelCache, OffWritesNothingAndAnExplicitFolderIsUsed) {
  ModelCopy m("llama-tiny-fp32");
  const fs::path xdg = m.base() / "xdg";
  ModelOptions off;
  off.Set("model_cache.dir", "off");
  LoadAndGreedy(m.dir(), off);
  LoadAndGreedy(m.dir(), off);
  EXPECT_FALSE(fs::exists(m.cache_root()));
  EXPECT_FALSE(fs::exists(xdg));

  ModelOptions explicit_dir;
  explicit_dir.Set("model_cache.dir", (m.base() / "mycache").string());
  const auto want = LoadAndGreedy(m.dir(), explicit_dir);
  EXPECT_EQ(CacheEntries(m.base() / "mycache").size(), 1u);
  EXPECT_FALSE(fs::exists(m.cache_root()));
  LogCapture logs;
  EXPECT_EQ(LoadAndGreedy(m.dir(), explicit_dir), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));

  EXPECT_THROW(explicit_dir.Set("model_cache.dir", " "), Error);
}

TEST(ModelCache, AutoUsesThePerUserFolderReadsAShippedEntryAndElseLoadsWithoutACache) {
  ModelCopy m("llama-tiny-fp32");
  const auto want = Uncached(m.dir());
  LogCapture logs;
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: built"));
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);

  // An entry shipped in the model folder's .ebb-cache is read when the per-user folder cannot
  // be written.
  const fs::path shipped = m.dir() / ".ebb-cache";
  fs::create_directories(shipped);
  const fs::path entry = CacheEntries(m.cache_root()).at(0);
  fs::rename(entry, shipped / entry.filename());
  ::setenv("XDG_CACHE_HOME", "/dev/null", 1);
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("model cache: loaded"));
  EXPECT_THAT(log, HasSubstr(shipped.string()));

  // No writable folder at all (.ebb-cache is a file: root could write a read-only folder): a log
  // line, no failure, nothing written.
  fs::remove_all(shipped);
  std::ofstream(shipped) << "not a folder";
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  log = logs.Take();
  EXPECT_THAT(log, HasSubstr("no writable cache folder"));
  EXPECT_THAT(log, HasSubstr("loading"));
}

TEST(ModelCache, DefaultIsAutoAndEbbModelCacheDirReplacesTheDefault) {
  ModelCopy m("llama-tiny-fp32");
  const auto want = Uncached(m.dir());
  const char* before = std::getenv("EBB_MODEL_CACHE_DIR");
  const std::string saved = before != nullptr ? before : "";
  ::unsetenv("EBB_MODEL_CACHE_DIR");
  EXPECT_EQ(LoadAndGreedy(m.dir(), ModelOptions{}), want);
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u) << "the default is auto: the per-user folder";

  const fs::path env_dir = m.base() / "from-env";
  ::setenv("EBB_MODEL_CACHE_DIR", env_dir.c_str(), 1);
  EXPECT_EQ(LoadAndGreedy(m.dir(), ModelOptions{}), want);
  EXPECT_EQ(CacheEntries(env_dir).size(), 1u);
  // An explicit option wins over the environment.
  ModelOptions off;
  off.Set("model_cache.dir", "off");
  fs::remove_all(env_dir);
  EXPECT_EQ(LoadAndGreedy(m.dir(), off), want);
  EXPECT_FALSE(fs::exists(env_dir));
  if (before != nullptr) {
    ::setenv("EBB_MODEL_CACHE_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("EBB_MODEL_CACHE_DIR");
  }
}

// The bug the aligned rewrite fixes, pinned: ORT's own saver leaves small prepacked MatMulNBits
// blobs at offsets that are not multiples of 64, and MLAS then reads them with another layout
// (NaN or wrong logits). The same blobs rewritten at aligned offsets compute exactly what the
// normal load computes.
TEST(ModelCache, SmallPrepackedBlobsAtUnalignedOffsetsMisreadAndAlignedTheyMatch) {
  ModelCopy m("llama-int4-extdata");
  ModelOptions off;
  off.Set("model_cache.dir", "off");
  off.Set("prefill_logits", "all");  // the graph as ORT's saver sees it, no ebb rewrite
  auto model = ebb::LoadModel(m.dir(), off);
  const internal::RunView mi(*model);
  const std::vector<float> want = internal::ProbeOutputs(
      mi.session(), mi.config(), mi.io(), mi.encoder(), mi.info().past_present_share_buffer);

  // What ORT writes by itself.
  const fs::path raw = m.base() / "raw";
  fs::create_directories(raw);
  {
    Ort::SessionOptions so;
    so.SetIntraOpNumThreads(1);
    so.SetOptimizedModelFilePath((raw / "model.onnx").c_str());
    so.AddConfigEntry("session.optimized_model_external_initializers_file_name", "model.onnx.data");
    so.AddConfigEntry("session.optimized_model_external_initializers_min_size_in_bytes", "1024");
    so.AddConfigEntry("session.save_external_prepacked_constant_initializers", "1");
    Ort::Session writer(internal::OrtEnvironment(), mi.config().model_path.c_str(), so);
  }
  ASSERT_GT(internal::CountMisalignedRegions(raw / "model.onnx", 64), 0u)
      << "ORT's saver aligned every blob: the workaround may no longer be needed";
  const fs::path aligned = m.base() / "aligned";
  fs::create_directories(aligned);
  const internal::AlignedExternalData a = internal::AlignExternalData(
      raw / "model.onnx", aligned / "model.onnx", "model.onnx.data", 4096);
  EXPECT_GT(a.num_prepacked_blobs, 0u);
  EXPECT_GT(a.num_were_misaligned, 0u);
  EXPECT_EQ(internal::CountMisalignedRegions(aligned / "model.onnx", 4096), 0u);

  auto probe = [&](const fs::path& graph) {
    Ort::SessionOptions so;
    so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
    Ort::Session s(internal::OrtEnvironment(), graph.c_str(), so);
    return internal::ProbeOutputs(s, mi.config(), mi.io(), mi.encoder(),
                                  mi.info().past_present_share_buffer);
  };
  EXPECT_EQ(internal::CompareProbeOutputs(want, probe(aligned / "model.onnx")), "");
  EXPECT_NE(internal::CompareProbeOutputs(want, probe(raw / "model.onnx")), "")
      << "the misaligned blobs read back correctly: MLAS no longer derives its layout from the "
         "address";
}

// The entry's blobs come from chunks (prepack_chunks.h): the optimised graph saved without
// prepacking, its MatMulNBits nodes cut into chunks of a few weights, each chunk prepacked and
// saved by ORT, and the blobs merged back (AlignExternalData's overlays). The merged graph computes
// exactly what the normal load computes, every weight has its blob (one per MatMulNBits), and a
// chunk holds no more than its byte budget unless one weight alone is larger.
TEST(ModelCache, ChunkedPrepackedBlobsMergeIntoAGraphThatComputesTheSame) {
  ModelCopy m("llama-int4-extdata");
  ModelOptions off;
  off.Set("model_cache.dir", "off");
  off.Set("prefill_logits", "all");  // the graph as ORT's saver sees it, no ebb rewrite
  auto model = ebb::LoadModel(m.dir(), off);
  const internal::RunView mi(*model);
  const std::vector<float> want = internal::ProbeOutputs(
      mi.session(), mi.config(), mi.io(), mi.encoder(), mi.info().past_present_share_buffer);

  auto save = [](const fs::path& model_file, const fs::path& dir, bool prepacked) {
    fs::create_directories(dir);
    Ort::SessionOptions so;
    so.SetIntraOpNumThreads(1);
    so.SetOptimizedModelFilePath((dir / "model.onnx").c_str());
    so.AddConfigEntry("session.optimized_model_external_initializers_file_name", "model.onnx.data");
    so.AddConfigEntry("session.optimized_model_external_initializers_min_size_in_bytes", "1024");
    if (prepacked) {
      so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
      so.AddConfigEntry("session.save_external_prepacked_constant_initializers", "1");
    } else {
      so.AddConfigEntry("session.disable_prepacking", "1");
    }
    Ort::Session writer(internal::OrtEnvironment(), model_file.c_str(), so);
  };
  const fs::path opt = m.base() / "optimized";
  save(mi.config().model_path, opt, /*prepacked=*/false);
  const uint64_t budget = 64 << 10;
  const internal::PrepackChunks chunks = internal::WritePrepackChunks(opt / "model.onnx", budget);
  ASSERT_GT(chunks.graphs.size(), 1u) << "the test model should need several chunks";
  EXPECT_GT(chunks.num_nodes, 0u);
  EXPECT_EQ(chunks.num_skipped, 0u);
  std::vector<fs::path> overlays;
  for (size_t i = 0; i < chunks.graphs.size(); ++i) {
    EXPECT_EQ(chunks.graphs[i].parent_path(), opt);
    const fs::path dir = m.base() / ("chunk-" + std::to_string(i));
    save(chunks.graphs[i], dir, /*prepacked=*/true);
    overlays.push_back(dir / "model.onnx");
  }
  const fs::path merged = m.base() / "merged";
  fs::create_directories(merged);
  const internal::AlignedExternalData a = internal::AlignExternalData(
      opt / "model.onnx", merged / "model.onnx", "model.onnx.data", 4096, overlays);
  EXPECT_EQ(a.num_prepacked_blobs, chunks.num_nodes);  // one blob per MatMulNBits weight
  EXPECT_EQ(a.num_from_overlays, chunks.num_nodes);
  EXPECT_EQ(internal::CountMisalignedRegions(merged / "model.onnx", 4096), 0u);

  Ort::SessionOptions so;
  so.SetGraphOptimizationLevel(ORT_DISABLE_ALL);
  Ort::Session s(internal::OrtEnvironment(), (merged / "model.onnx").c_str(), so);
  EXPECT_EQ(internal::CompareProbeOutputs(
                want, internal::ProbeOutputs(s, mi.config(), mi.io(), mi.encoder(),
                                             mi.info().past_present_share_buffer)),
            "");
  // Without the overlays the graph has no blobs: what the merge added is what the chunks saved.
  const internal::AlignedExternalData bare = internal::AlignExternalData(
      opt / "model.onnx", m.base() / "bare.onnx", "model.onnx.data", 4096);
  EXPECT_EQ(bare.num_prepacked_blobs, 0u);
  EXPECT_EQ(bare.num_tensors, a.num_tensors);
}

// An fp32 graph's MatMul weights are carried too (MLAS packs B), and the whole build through the
// load path reports its figures: the cache state, the load's time and its anonymous peak, then
// the background build's.
TEST(ModelCache, Fp32MatMulWeightsAreChunkedAndTheLoadReportsItsFigures) {
  ModelCopy m("llama-tiny-fp32");
  const auto want = Uncached(m.dir());
  {
    auto model = ebb::LoadModel(m.dir(), AutoCache());
    WeightsMemory w = model->runtime().Stats().weights;
    EXPECT_THAT(w.cache, ::testing::AnyOf("building", "built"));
    EXPECT_GT(w.load_ms, 0u);
    EXPECT_GT(w.load_peak_anon_bytes, 0u);
    EXPECT_EQ(Greedy(model), want);
    // The build finishes in the background while the model serves.
    w = testing::WaitForCacheBuild(*model);
    EXPECT_EQ(w.cache, "built");
    EXPECT_GT(w.cache_build_peak_anon_bytes, 0u);
    EXPECT_EQ(w.state, WeightsState::kAnonymous);  // this load still runs from its own copies
  }
  auto model = ebb::LoadModel(m.dir(), AutoCache());
  const WeightsMemory w = model->runtime().Stats().weights;
  EXPECT_EQ(w.cache, "loaded");
  EXPECT_EQ(w.state, WeightsState::kFileBacked);
  EXPECT_EQ(Greedy(model), want);
  // The entry holds prepacked blobs for the fp32 weights (ORT's "prepacked_N" records).
  const fs::path entry = CacheEntries(m.cache_root()).at(0);
  std::ifstream graph(entry / "model.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(graph)),
                          std::istreambuf_iterator<char>());
  EXPECT_THAT(bytes, HasSubstr("prepacked_"));
}

TEST(ModelCache, CachedWeightsAreFileBackedReleasedOnRequestAndComeBackIdentical) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  ModelOptions o = AutoCache();
  {
    Runtime rt;
    auto model = rt.Load("a", m.dir(), o);
    EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kAnonymous);
    EXPECT_EQ(model->runtime().Stats().weights.anon_bytes, model->weights_bytes());
    const WeightsRelease r = model->runtime().ReleaseWeights();
    EXPECT_FALSE(r.released);
    EXPECT_THAT(r.reason, HasSubstr("anonymous copies"));
  }  // the entry is built before the model goes
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  // Every blob of the entry starts on a page.
  EXPECT_EQ(internal::CountMisalignedRegions(CacheEntries(m.cache_root())[0] / "model.onnx", 4096),
            0u);

  Runtime rt;
  auto model = rt.Load("a", m.dir(), o);
  const WeightsMemory w = model->runtime().Stats().weights;
  EXPECT_EQ(w.state, WeightsState::kFileBacked);
  EXPECT_EQ(w.anon_bytes, 0u);
  EXPECT_GT(w.file_backed_bytes, model->weights_bytes()) << "the entry holds the prepacked blobs";
  const uint64_t charged = rt.Stats().weights_bytes;
  EXPECT_EQ(charged, model->weights_bytes());
  {
    // Not while a request runs.
    Generator g(model, GeneratorParams{});
    const WeightsRelease busy = model->runtime().ReleaseWeights();
    EXPECT_FALSE(busy.released);
    EXPECT_THAT(busy.reason, HasSubstr("running"));
  }
  const WeightsRelease r = model->runtime().ReleaseWeights();
  EXPECT_TRUE(r.released) << r.reason;
  EXPECT_LE(r.resident_after_bytes, r.resident_before_bytes);
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kReleased);
  EXPECT_EQ(model->runtime().Stats().weights.num_releases, 1u);
  EXPECT_EQ(rt.Stats().weights_bytes, 0u) << "released file-backed weights are not charged";
  EXPECT_EQ(Greedy(model), want);
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);
  EXPECT_EQ(rt.Stats().weights_bytes, charged) << "the request charged them again";
}

TEST(ModelCache, IdleModelReleasesItsWeightsAfterReleaseWeightsAfterS) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  LoadAndGreedy(m.dir());  // builds the entry
  ModelOptions o = AutoCache();
  o.Set("memory.release_weights_after_s", "1");
  auto model = ebb::LoadModel(m.dir(), o);
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (model->runtime().Stats().weights.state != WeightsState::kReleased &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kReleased);
  EXPECT_EQ(Greedy(model), want);
  EXPECT_THROW(o.Set("memory.release_weights_after_s", "-1"), Error);
}

// A cgroup v2 folder the test controls: the files ebb reads, with values the test sets.
class FakeCgroup {
 public:
  FakeCgroup() : dir_(fs::temp_directory_path() / ("ebb-fake-cgroup-" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
    Write("memory.current", "104857600\n");
    Write("memory.high", "max\n");
    Write("memory.max", "max\n");
    Events(0, 0);
    Psi(0.0);
  }
  ~FakeCgroup() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }
  // Written to a temporary file and renamed, as the kernel's files change: a sample never reads
  // a half-written file (which read as "no counter" and hid the rise: a CI flake).
  void Write(const std::string& name, const std::string& text) {
    const fs::path tmp = dir_ / (name + ".tmp");
    std::ofstream(tmp, std::ios::trunc) << text;
    fs::rename(tmp, dir_ / name);
  }
  void Events(int high, int max) {
    Write("memory.events", "low 0\nhigh " + std::to_string(high) + "\nmax " + std::to_string(max) +
                               "\noom 0\noom_kill 0\n");
  }
  void Psi(double avg10) {
    Write("memory.pressure", "some avg10=" + std::to_string(avg10) +
                                 " avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 "
                                 "avg300=0.00 total=1\n");
  }

 private:
  fs::path dir_;
};

bool WaitForWeightsState(const std::shared_ptr<Model>& model, WeightsState state,
                         std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (model->runtime().Stats().weights.state != state) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

TEST(ModelCache, IdleModelReleasesItsWeightsUnderMemoryPressureAndABusyOneKeepsThem) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  LoadAndGreedy(m.dir());  // builds the entry
  FakeCgroup cg;
  ModelOptions o = AutoCache();
  o.Set("memory.release_weights_on_pressure", "true");
  o.Set("memory.pressure_cgroup", cg.dir().string());
  LogCapture log;
  auto model = ebb::LoadModel(m.dir(), o);
  ASSERT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);
  EXPECT_THAT(log.Take(), HasSubstr("under memory pressure of cgroup " + cg.dir().string()));
  // No pressure: nothing happens, however long the model is idle.
  EXPECT_FALSE(WaitForWeightsState(model, WeightsState::kReleased, std::chrono::seconds(3)));

  // The cgroup was throttled at memory.high while a request runs: the running model keeps its
  // weights; once it has been idle for a second, they go.
  {
    Generator g(model, GeneratorParams{});
    cg.Events(1, 0);
    EXPECT_FALSE(WaitForWeightsState(model, WeightsState::kReleased, std::chrono::seconds(3)));
  }
  ASSERT_TRUE(WaitForWeightsState(model, WeightsState::kReleased, std::chrono::seconds(10)));
  EXPECT_THAT(log.Take(), HasSubstr("memory.events high rose by 1"));
  EXPECT_EQ(Greedy(model), want) << "tokens after a release";
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);

  // PSI: tasks stalled on memory for 25 % of the last 10 s.
  cg.Psi(25.0);
  ASSERT_TRUE(WaitForWeightsState(model, WeightsState::kReleased, std::chrono::seconds(10)));
  cg.Psi(0.0);  // before the next sample, a poll period after the release
  EXPECT_THAT(log.Take(), HasSubstr("memory PSI some avg10=25.00%"));
  EXPECT_EQ(Greedy(model), want);
  // Quiet again: the model stays file-backed.
  EXPECT_FALSE(WaitForWeightsState(model, WeightsState::kReleased, std::chrono::seconds(3)));

  // Headroom: 98 MiB used of a 100 MiB memory.high.
  cg.Write("memory.current", std::to_string(98ull << 20) + "\n");
  cg.Write("memory.high", std::to_string(100ull << 20) + "\n");
  ASSERT_TRUE(WaitForWeightsState(model, WeightsState::kReleased, std::chrono::seconds(10)));
  EXPECT_THAT(log.Take(), HasSubstr("headroom < 5%"));
  EXPECT_EQ(Greedy(model), want);
}

TEST(ModelCache, PressureCgroupThatIsNotAFolderIsRefusedBeforeTheLoad) {
  ModelCopy m("llama-tiny-fp32");
  ModelOptions o = AutoCache();
  o.Set("memory.release_weights_on_pressure", "true");
  o.Set("memory.pressure_cgroup", "/nonexistent/cgroup");
  try {
    ebb::LoadModel(m.dir(), o);
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("memory.pressure_cgroup=/nonexistent/cgroup: not a folder"));
  }
  EXPECT_THROW(o.Set("memory.pressure_cgroup", ""), Error);
  o.Set("memory.release_weights_on_pressure", "false");
  EXPECT_NO_THROW(ebb::LoadModel(m.dir(), o)) << "the folder is read only when the policy is on";
}

TEST(ModelCache, DiskBudgetRemovesTheLeastRecentlyUsedEntry) {
  ModelCopy m("llama-tiny-fp32");
  const auto want = Uncached(m.dir());
  ModelOptions a = AutoCache();
  ModelOptions b = AutoCache();
  b.Set("session_options.graph_optimization_level", "basic");
  ASSERT_EQ(LoadAndGreedy(m.dir(), a), want);
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  const fs::path first = CacheEntries(m.cache_root())[0];
  // A budget that holds one entry, not two.
  uint64_t bytes = 0;
  for (const auto& f : fs::directory_iterator(first)) bytes += f.file_size();
  b.Set("model_cache.max_bytes", std::to_string(bytes + bytes / 2));
  LogCapture logs;
  ASSERT_EQ(LoadAndGreedy(m.dir(), b), want);
  EXPECT_THAT(logs.Take(), HasSubstr("the least recently used entry"));
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  EXPECT_FALSE(fs::exists(first));
  EXPECT_EQ(LoadAndGreedy(m.dir(), b), want);
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));
}

TEST(ModelCache, DiskFullDuringTheBuildLeavesNoEntryAndTheLoadServes) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  // A child CLI whose file-size limit (RLIMIT_FSIZE) stops the cache write, as a full disk does.
  const std::string cli = testing::CliPath();
  const fs::path out = m.base() / "out.txt";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    struct rlimit lim {
      64 * 1024, 64 * 1024
    };
    ::setrlimit(RLIMIT_FSIZE, &lim);
    ::execl(cli.c_str(), cli.c_str(), "generate", m.dir().c_str(), "--input-ids",
            "5,17,42,99,7,300", "--max-length", "20", "--option", "model_cache.dir=auto",
            "--log-level", "info", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << text;
  EXPECT_THAT(text, HasSubstr("model cache: not caching"));
  EXPECT_TRUE(CacheEntries(m.cache_root()).empty());
  EXPECT_TRUE(TempDirs(m.cache_root()).empty());
  // The next load builds it properly.
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  EXPECT_EQ(CacheEntries(m.cache_root()).size(), 1u);
}

// RLIMIT_AS cannot apply under a sanitizer: its shadow memory reserves terabytes of address space.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EBB_TEST_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EBB_TEST_SANITIZER 1
#endif
#endif

#ifndef EBB_TEST_SANITIZER
// The process's size at this moment (VmSize, bytes): what RLIMIT_AS is compared against; 0 when
// /proc cannot say.
uint64_t AddressSpaceBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.starts_with("VmSize:")) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

// This process's threads (/proc/self/task).
size_t ThreadCount() {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/self/task", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}
#endif  // EBB_TEST_SANITIZER

// A load that runs out of memory while ONNX Runtime maps the entry says so and keeps the entry:
// running out is the machine's state at that moment, not the entry's fault (before, the entry
// was removed and a rebuild tried, which needs more of the memory that was missing). A forked
// child loads under an address-space limit 32 MiB above its size: the entry's 66 MiB of weights
// and 41 MiB of repacked int4 weights do not fit, the threads' stacks (8 MiB each) do. Then this
// process loads from the same entry.
TEST(ModelCache, OutOfMemoryWhileLoadingTheEntryKeepsIt) {
#ifdef EBB_TEST_SANITIZER
  GTEST_SKIP() << "RLIMIT_AS cannot apply under a sanitizer (its shadow memory reserves "
                  "terabytes of address space); the Debug build runs this test";
#else
  ModelCopy m("llama-small-int4");
  {
    auto model = ebb::LoadModel(m.dir(), AutoCache());
    ASSERT_EQ(testing::WaitForCacheBuild(*model).cache, "built");
  }
  const auto entries = CacheEntries(m.cache_root());
  ASSERT_EQ(entries.size(), 1u);
  const fs::path entry = entries[0];
  const auto manifest_mtime = fs::last_write_time(entry / "manifest.json");
  // fork() copies this thread only: no other may hold a lock the child needs (the cache build's
  // and the load sampler's threads have been joined).
  ASSERT_EQ(ThreadCount(), 1u) << "a thread outlived the load";

  const fs::path out = m.base() / "child.txt";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string text;
    {
      LogCapture logs;
      struct rlimit lim {};
      const uint64_t size = AddressSpaceBytes();
      if (size == 0 || ::getrlimit(RLIMIT_AS, &lim) != 0) {
        text = "SETUP cannot read the address space or its limit\n";
      } else {
        const struct rlimit before = lim;
        lim.rlim_cur = size + (32ull << 20);
        if (::setrlimit(RLIMIT_AS, &lim) != 0) {
          text = std::string("SETUP setrlimit: ") + std::strerror(errno) + "\n";
        } else {
          try {
            ebb::LoadModel(m.dir(), AutoCache());
            text = "LOADED\n";
          } catch (const Error& e) {
            text = "ERROR " + std::to_string(static_cast<int>(e.code())) + " " + e.what() + "\n";
          } catch (const std::exception& e) {
            text = std::string("OTHER ") + e.what() + "\n";
          }
          ::setrlimit(RLIMIT_AS, &before);  // the soft limit back, to write the result
        }
      }
      text += logs.Take();
    }
    std::ofstream(out) << text;
    ::_exit(0);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
      << "the child died (status " << st << "): " << text;
  ASSERT_THAT(text, Not(HasSubstr("SETUP")));
  // The child's load failed on the entry, for want of memory (or of address space for a thread),
  // and said it keeps the entry.
  EXPECT_THAT(text, HasSubstr("model cache: could not load " + entry.string()));
  EXPECT_THAT(text, HasSubstr("the entry is kept"));
  EXPECT_THAT(text, Not(HasSubstr("rebuilding")));
  // The load itself goes on from the model file: it fits in what is left (the failed session's
  // memory is back), or it fails cleanly as ResourceExhausted, naming the limit to raise; both
  // were seen, from one run to the next.
  if (!text.starts_with("LOADED")) {
    EXPECT_THAT(text, ::testing::StartsWith("ERROR " + std::to_string(static_cast<int>(
                                                           ErrorCode::ResourceExhausted))));
    EXPECT_THAT(text, HasSubstr("ulimit"));
  }
  // The entry is untouched, and the next load maps it.
  ASSERT_TRUE(fs::exists(entry / "manifest.json"));
  EXPECT_EQ(fs::last_write_time(entry / "manifest.json"), manifest_mtime);
  EXPECT_TRUE(TempDirs(m.cache_root()).empty());
  LogCapture logs;
  auto model = ebb::LoadModel(m.dir(), AutoCache());
  EXPECT_THAT(logs.Take(), HasSubstr("model cache: loaded"));
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);
  EXPECT_EQ(Greedy(model), Uncached(m.dir()));
#endif
}

// A load that cannot read the model files to compute the cache key (a descriptor refused:
// injected) does not use the cache: a key from a partial fingerprint would miss the entry, and a
// build would then remove that entry as stale (it names the same source with another
// fingerprint). The entry stays, and the next load maps it.
TEST(ModelCache, AModelFileThatCannotBeReadForTheKeyLeavesTheEntries) {
  ModelCopy m("llama-int4-extdata");
  {
    auto model = ebb::LoadModel(m.dir(), AutoCache());
    ASSERT_EQ(testing::WaitForCacheBuild(*model).cache, "built");
  }
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  const fs::path entry = CacheEntries(m.cache_root())[0];
  LogCapture logs;
  {
    const ModelOptions o = AutoCache();
    const internal::EffectiveSessionOptions session({}, o);
    const internal::ModelCache c = [&] {
      // The key's fingerprint opens the model files first: the first open of ModelCache::Plan.
      const platform::testing::ClearFailuresOnExit disarm;
      platform::testing::FailNext(platform::testing::Op::kOpen, EMFILE, 1);
      return internal::ModelCache::Plan(m.dir() / "model.onnx", "auto", session, {}, o);
    }();
    EXPECT_EQ(c.action(), internal::ModelCache::Action::kOff);
    EXPECT_TRUE(c.build_skipped());
  }
  const std::string text = logs.Take();
  EXPECT_THAT(text, HasSubstr("model cache: not used for this load"));
  EXPECT_THAT(text, HasSubstr("model.onnx cannot be read (Too many open files)"));
  ASSERT_EQ(CacheEntries(m.cache_root()), std::vector<fs::path>{entry});
  auto model = ebb::LoadModel(m.dir(), AutoCache());
  EXPECT_EQ(model->runtime().Stats().weights.cache, "loaded");
}

// Each file ebb opens while loading from a cache entry, refused in turn for want of descriptors
// (EMFILE at the n-th open of the platform seam, for n = 0, 1, ... until a load makes fewer
// opens): the entry is never removed nor rebuilt, and each load either fails with an error that
// names the cause or computes the uncached tokens, from the entry or from the model file. Among
// those opens are the key's fingerprint ("not used for this load"), the entry's checksums
// (VerifyEntry: "cannot check ... now"), which once called an entry they could not read corrupt
// and rebuilt it, and the int4 kernels' pack files, which a kernel then repacks into anonymous
// memory (said). Unarmed, the next load maps the entry.
TEST(ModelCache, EachOpenOfALoadFromTheEntryRefusedInTurnLeavesTheEntry) {
  ModelCopy m("llama-int4-extdata");
  const std::vector<int32_t> want = Uncached(m.dir());
  {
    auto model = ebb::LoadModel(m.dir(), AutoCache());
    ASSERT_EQ(testing::WaitForCacheBuild(*model).cache, "built");
  }
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  const fs::path entry = CacheEntries(m.cache_root())[0];
  const auto manifest_mtime = fs::last_write_time(entry / "manifest.json");
  LogCapture logs;
  int refused = 0;
  bool keyed = false, checked = false, repacked = false, swept = false;
  for (int n = 0; n < 500 && !swept; ++n) {
    std::string error, state;
    std::vector<int32_t> tokens;
    bool taken = false;
    {
      const platform::testing::ClearFailuresOnExit disarm;
      platform::testing::FailAfter(platform::testing::Op::kOpen, n, EMFILE, 1);
      std::shared_ptr<Model> model;
      try {
        model = ebb::LoadModel(m.dir(), AutoCache());
        state = testing::WaitForCacheBuild(*model).cache;
      } catch (const Error& e) {
        error = e.what();
      }
      taken = platform::testing::FailuresLeft(platform::testing::Op::kOpen) == 0;
      platform::testing::ClearFailures();
      if (model) tokens = Greedy(model);
    }
    const std::string text = logs.Take();
    swept = !taken;  // the load made n opens or fewer: every one has been refused
    if (swept) break;
    ++refused;
    SCOPED_TRACE("open " + std::to_string(n) + " refused; the load's log:\n" + text);
    if (!error.empty()) {
      EXPECT_THAT(error, HasSubstr("Too many open files"));
    } else {
      EXPECT_THAT(state, ::testing::AnyOf("loaded", "skipped")) << "a build started";
      EXPECT_EQ(tokens, want);
    }
    EXPECT_THAT(text, Not(HasSubstr("rebuilding")));
    ASSERT_EQ(CacheEntries(m.cache_root()), std::vector<fs::path>{entry});
    ASSERT_EQ(fs::last_write_time(entry / "manifest.json"), manifest_mtime);
    keyed |= text.find("model cache: not used for this load") != std::string::npos;
    checked |=
        text.find("model cache: cannot check " + entry.string() + " now (") != std::string::npos;
    repacked |= text.find("packs were not mapped from " + entry.string()) != std::string::npos;
  }
  ASSERT_TRUE(swept) << "a load made 500 opens or more";
  EXPECT_GE(refused, 3) << "the load opens the model files and the entry's";
  EXPECT_TRUE(keyed) << "no open of the key's fingerprint was refused";
  EXPECT_TRUE(checked) << "no open of the entry's check was refused";
  // The entry holds pack files where ebb's int4 matmul ran (a CPU with AVX2 + FMA).
  if (internal::ModelCache::WeightFiles(entry).size() > 1) {
    EXPECT_TRUE(repacked) << "no pack file's open was refused, or it was not said";
  }
  auto model = ebb::LoadModel(m.dir(), AutoCache());
  EXPECT_EQ(model->runtime().Stats().weights.cache, "loaded");
  EXPECT_EQ(Greedy(model), want);
}

// Each write of a load that builds the cache refused in turn (ENOSPC at the n-th File::WriteAll of
// the platform seam, as a disk that fills; ORT's own writes of the graph and the manifest's
// std::ofstream are not refused), for n = 0, 1, ... until a build makes fewer writes: the load
// computes the uncached tokens, and either no entry is committed or the committed entry is whole: a
// load from it maps every pack file (no "were not mapped") and computes the same tokens. Before, a
// pack file that could not be written left a committed entry without it, and every load of that
// entry repacked the weights again.
TEST(ModelCache, EachWriteOfABuildRefusedInTurnCommitsNoPartialEntry) {
  ModelCopy m("llama-int4-extdata");
  const std::vector<int32_t> want = Uncached(m.dir());
  LogCapture logs;
  int refused = 0;
  bool swept = false, packs_refused = false;
  for (int n = 0; n < 500 && !swept; ++n) {
    fs::remove_all(m.cache_root());  // a new build each time
    bool taken = false;
    {
      const platform::testing::ClearFailuresOnExit disarm;
      platform::testing::FailAfter(platform::testing::Op::kWrite, n, ENOSPC, 1);
      auto model = ebb::LoadModel(m.dir(), AutoCache());
      EXPECT_NE(testing::WaitForCacheBuild(*model).cache, "building");
      taken = platform::testing::FailuresLeft(platform::testing::Op::kWrite) == 0;
      platform::testing::ClearFailures();
      EXPECT_EQ(Greedy(model), want) << "write " << n << " refused";
    }
    const std::string text = logs.Take();
    swept = !taken;  // the build made n writes or fewer: every one has been refused
    if (swept) break;
    ++refused;
    SCOPED_TRACE("write " + std::to_string(n) + " refused; the build's log:\n" + text);
    packs_refused |= text.find("packs could not be written into the entry") != std::string::npos;
    EXPECT_TRUE(TempDirs(m.cache_root()).empty()) << "a failed build left its folder";
    if (!CacheEntries(m.cache_root()).empty()) {
      auto again = ebb::LoadModel(m.dir(), AutoCache());
      EXPECT_EQ(again->runtime().Stats().weights.cache, "loaded");
      EXPECT_THAT(logs.Take(), Not(HasSubstr("packs were not mapped")));
      EXPECT_EQ(Greedy(again), want);
    }
  }
  ASSERT_TRUE(swept) << "a build made 500 writes or more";
  EXPECT_GE(refused, 1) << "the build writes its prepacked blobs through ebb's file layer";
  // Unarmed: the entry is built; where it holds pack files (ebb's int4 matmul ran: AVX2 + FMA),
  // the sweep refused their writes and the build said so.
  fs::remove_all(m.cache_root());
  {
    auto model = ebb::LoadModel(m.dir(), AutoCache());
    ASSERT_EQ(testing::WaitForCacheBuild(*model).cache, "built");
  }
  ASSERT_EQ(CacheEntries(m.cache_root()).size(), 1u);
  if (internal::ModelCache::WeightFiles(CacheEntries(m.cache_root())[0]).size() > 1) {
    EXPECT_TRUE(packs_refused) << "no pack file's write was refused, or it was not said";
  }
}

TEST(ModelCache, TheKeyNamesTheIsaLevelAndOrtVersion) {
  const std::string isa = internal::IsaLevel();
#if defined(__x86_64__)
  EXPECT_THAT(isa, ::testing::StartsWith("x86-64"));
#endif
  ModelCopy m("llama-tiny-fp32");
  LoadAndGreedy(m.dir());
  const fs::path entry = CacheEntries(m.cache_root()).at(0);
  std::ifstream f(entry / "manifest.json");
  const std::string manifest((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_THAT(manifest, HasSubstr("isa=" + isa));
  EXPECT_THAT(manifest, HasSubstr("ort="));
  EXPECT_THAT(manifest, HasSubstr("prepacked_blobs=aligned-4096"));
  // Entries are immutable: read-only files.
  EXPECT_EQ(fs::status(entry / "model.onnx.data").permissions() & fs::perms::owner_write,
            fs::perms::none);
}

// The red team's SIGBUS: a cache file truncated under a process that runs from it. The request
// that reads the missing pages fails with a clear error, the process lives, the model says it is
// broken, and a new load rebuilds the entry and computes the right tokens.
TEST(ModelCache, EntryTruncatedUnderARunningModelFailsTheRequestNotTheProcess) {
  ModelCopy m("llama-int4-extdata");
  const auto want = Uncached(m.dir());
  LoadAndGreedy(m.dir());  // builds the entry
  auto model = ebb::LoadModel(m.dir(), AutoCache());
  ASSERT_EQ(model->runtime().Stats().weights.state, WeightsState::kFileBacked);
  const fs::path data = CacheEntries(m.cache_root()).at(0) / "model.onnx.data";
  // Drop the pages too, so that every read faults on the truncated file.
  model->runtime().ReleaseWeights();
  ::truncate(data.c_str(), 0);
  try {
    Greedy(model);
    ADD_FAILURE() << "a request on truncated weights did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unavailable);
    EXPECT_THAT(e.what(), HasSubstr("truncated or changed while mapped"));
    EXPECT_THAT(e.what(), HasSubstr("load the model again"));
  }
  EXPECT_EQ(model->runtime().Stats().weights.state, WeightsState::kBroken);
  EXPECT_THROW(Greedy(model), Error) << "a broken model keeps failing until it is reloaded";
  LogCapture logs;
  EXPECT_EQ(LoadAndGreedy(m.dir()), want);
  const std::string log = logs.Take();
  EXPECT_THAT(log, HasSubstr("(truncated or overwritten)"));
  EXPECT_THAT(log, HasSubstr("model cache: built"));
}

// The service's side (ModelManager, what ebb serve runs on): under memory.limit it releases an
// idle model's file-backed weights before it evicts anything, and a model whose cache file was
// truncated under it is reloaded on its next request, with the right tokens.
TEST(ModelCache, TheManagerReleasesIdleWeightsBeforeEvictingAndReloadsABrokenModel) {
  ModelCopy m("llama-tiny-fp32");
  const auto want = Uncached(m.dir());
  LoadAndGreedy(m.dir());  // builds the entry
  const fs::path data = CacheEntries(m.cache_root()).at(0) / "model.onnx.data";
  Runtime rt;
  ModelManagerOptions o;
  for (const char* id : {"a", "b"}) o.models[id].path = m.dir();
  o.defaults = {{"model_cache.dir", "auto"}};
  ModelManager mm(rt, o);
  {
    auto a = mm.Acquire("a");
    ASSERT_EQ(a->runtime().Stats().weights.state, WeightsState::kFileBacked);
    // Room for one model's weights and a request's KV, not two models.
    rt.SetMemoryLimit(a->weights_bytes() + a->weights_bytes() / 2);
  }
  {
    auto b = mm.Acquire("b");
    EXPECT_EQ(Greedy(b.model()), want);
  }
  EXPECT_TRUE(mm.Get("a").loaded) << "a was evicted although releasing its weights made room";
  EXPECT_EQ(rt.Get("a")->runtime().Stats().weights.state, WeightsState::kReleased);
  EXPECT_EQ(mm.num_evictions(), 0u);

  // a's entry is truncated while a is loaded (released: every read faults).
  ASSERT_EQ(::truncate(data.c_str(), 0), 0);
  {
    auto a = mm.Acquire("a");  // makes room again: b's weights are released
    EXPECT_EQ(rt.Get("b")->runtime().Stats().weights.state, WeightsState::kReleased);
    EXPECT_THROW(Greedy(a.model()), Error);
    EXPECT_EQ(a->runtime().Stats().weights.state, WeightsState::kBroken);
  }
  rt.SetMemoryLimit(0);
  LogCapture logs;
  auto a = mm.Acquire("a");
  EXPECT_THAT(logs.Take(), HasSubstr("reloading model 'a'"));
  EXPECT_NE(a->runtime().Stats().weights.state, WeightsState::kBroken);
  EXPECT_EQ(Greedy(a.model()), want);
}

}  // namespace
}  // namespace ebb
