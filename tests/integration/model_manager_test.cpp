// ModelManager: models on demand under memory.limit (keep-alive, LRU eviction, pins, leases).
#include "ebb/model_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ebb/error.h"
#include "ebb/generation.h"
#include "test_env.h"

namespace ebb {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::filesystem::path Tiny() { return testing::TestModelsDir() / "llama-tiny-fp32"; }

uint64_t TinyWeights() {
  Runtime rt;
  return rt.Load("probe", Tiny())->weights_bytes();
}

// Three ids over one folder, and a budget that fits two of them (plus a request's KV).
ModelManagerOptions ThreeModels(KeepAlive keep_alive = kKeepAliveForever) {
  ModelManagerOptions o;
  for (const char* id : {"a", "b", "c"}) o.models[id].path = Tiny();
  o.keep_alive = keep_alive;
  return o;
}

bool Loaded(const ModelManager& m, const std::string& id) { return m.Get(id).loaded; }

TEST(KeepAlive, ParsesOllamaDurations) {
  EXPECT_EQ(ParseKeepAlive("5m"), 5min);
  EXPECT_EQ(ParseKeepAlive("30s"), 30s);
  EXPECT_EQ(ParseKeepAlive("1h30m"), 90min);
  EXPECT_EQ(ParseKeepAlive("250ms"), 250ms);
  EXPECT_EQ(ParseKeepAlive("300"), 300s);
  EXPECT_EQ(ParseKeepAlive("0"), 0ms);
  EXPECT_EQ(ParseKeepAlive("-1"), kKeepAliveForever);
  EXPECT_EQ(ParseKeepAlive("-1m"), kKeepAliveForever);
  for (const char* bad : {"", "soon", "5x", "m", "-", "1e9h", "99999999999"}) {
    try {
      ParseKeepAlive(bad, "--keep-alive");
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("--keep-alive"));
    }
  }
  EXPECT_EQ(FormatKeepAlive(90min), "1h30m");
  EXPECT_EQ(FormatKeepAlive(kKeepAliveForever), "forever");
  EXPECT_EQ(FormatKeepAlive(1500ms), "1500ms");
}

TEST(ModelManager, EvictsTheLeastRecentlyUsedIdleModelAndNeverOneInUse) {
  const uint64_t w = TinyWeights();
  Runtime rt;
  rt.SetMemoryLimit(2 * w + w / 2);
  ModelManagerOptions opts = ThreeModels();
  opts.evict_wait = 0ms;  // fail at once when both loaded models are busy
  ModelManager m(rt, opts);
  std::vector<std::string> events;
  m.SetEventListener([&](ManagerEvent e, const std::string& id) {
    events.push_back(std::string(ManagerEventName(e)) + ":" + id);
  });
  {
    auto a = m.Acquire("a");  // held: a request running on a
    m.Acquire("b").Reset();
    EXPECT_TRUE(Loaded(m, "a") && Loaded(m, "b"));
    auto c = m.Acquire("c");  // b is idle, a is not: b goes
    EXPECT_TRUE(Loaded(m, "a"));
    EXPECT_FALSE(Loaded(m, "b"));
    EXPECT_TRUE(Loaded(m, "c"));
    EXPECT_EQ(m.num_evictions(), 1u);
    // Both loaded models are in use: a third cannot fit, and nothing running is disturbed.
    try {
      m.Acquire("b");
      FAIL() << "expected ResourceExhausted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
      EXPECT_THAT(e.what(), HasSubstr("cannot load model 'b'"));
      EXPECT_THAT(e.what(), HasSubstr("a ("));
    }
    EXPECT_TRUE(Loaded(m, "a") && Loaded(m, "c"));
    GenerateRequest req;
    req.input_ids = {{1, 2, 3}};
    req.max_new_tokens = 4;
    req.params.max_length = 16;  // its KV fits beside the two models' weights
    EXPECT_EQ(Generate(a.model(), req).rows[0].generated_ids.size(), 4u);
    // Release a, then c, on different milliseconds: the order is by release time (ms), and the
    // scope's end released c first and a within the same ms only when the machine was quiet.
    a.Reset();
    std::this_thread::sleep_for(5ms);
    c.Reset();
  }
  // Now both are idle; c was used last, so a goes first.
  m.Acquire("b").Reset();
  EXPECT_FALSE(Loaded(m, "a"));
  EXPECT_TRUE(Loaded(m, "b") && Loaded(m, "c"));
  EXPECT_EQ(m.num_evictions(), 2u);
  EXPECT_THAT(events, ::testing::ElementsAre("loaded:a", "loaded:b", "evicted:b", "loaded:c",
                                             "evicted:a", "loaded:b"));
  const MemoryStats s = rt.Stats();
  EXPECT_LE(s.weights_bytes + s.kv.in_use_bytes, rt.memory_limit());
}

TEST(ModelManager, ALoadThatDoesNotFitWaitsForABusyModelToBecomeIdle) {
  const uint64_t w = TinyWeights();
  Runtime rt;
  rt.SetMemoryLimit(2 * w + w / 2);
  ModelManagerOptions opts = ThreeModels();
  opts.evict_wait = 10s;
  ModelManager m(rt, opts);
  auto a = m.Acquire("a");
  auto b = m.Acquire("b");  // both busy: c fits only once one of them is idle
  std::atomic<bool> got_c{false};
  std::string error;
  std::thread t([&] {
    try {
      m.Acquire("c").Reset();
      got_c = true;
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(got_c) << "c was loaded while a and b were both in use";
  EXPECT_TRUE(Loaded(m, "a") && Loaded(m, "b"));
  b.Reset();  // b is idle now: c's load evicts it
  t.join();
  EXPECT_TRUE(got_c) << error;
  EXPECT_TRUE(Loaded(m, "a"));
  EXPECT_FALSE(Loaded(m, "b"));
  EXPECT_EQ(m.num_evictions(), 1u);

  // Nothing running that could free memory: no wait, however long evict_wait is.
  ModelManagerOptions pinned = ThreeModels();
  pinned.evict_wait = 60s;
  pinned.models["a"].pin = true;
  pinned.models["b"].pin = true;
  Runtime rt2;
  rt2.SetMemoryLimit(2 * w + w / 2);
  ModelManager m2(rt2, pinned);
  m2.Acquire("a").Reset();
  m2.Acquire("b").Reset();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(m2.Acquire("c"), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s) << "waited with nothing to wait for";
}

TEST(ModelManager, APinnedModelIsNeverEvicted) {
  const uint64_t w = TinyWeights();
  Runtime rt;
  rt.SetMemoryLimit(2 * w + w / 2);
  ModelManager m(rt, ThreeModels());
  m.Load("a", {}, std::nullopt, /*pin=*/true);
  m.Acquire("b").Reset();
  m.Acquire("c").Reset();  // a is older but pinned: b goes
  EXPECT_TRUE(Loaded(m, "a"));
  EXPECT_FALSE(Loaded(m, "b"));
  EXPECT_TRUE(m.Get("a").pinned);
  m.Pin("a", false);
  m.Acquire("b").Reset();  // now a, the least recently used, goes
  EXPECT_FALSE(Loaded(m, "a"));
}

// ModelManagerOptions::decode_batch_rows (ebb serve's --parallel) reaches a model only when no
// option of it names decode_batch.max_rows: the defaults', its own, or a load's; 1 there is off.
TEST(ModelManager, DefaultBatchRowsGoOnlyToModelsWhoseOptionsDoNotNameThem) {
  Runtime rt;
  ModelManagerOptions o = ThreeModels();
  o.decode_batch_rows = 3;
  o.models["b"].options = {{"decode_batch.max_rows", "1"}};
  ModelManager m(rt, o);
  EXPECT_EQ(m.Load("a")->options().decode_batch_max_rows, 3);
  EXPECT_EQ(m.Load("b")->options().decode_batch_max_rows, 1);
  EXPECT_EQ(m.Load("c", {{"decode_batch.max_rows", "1"}})->options().decode_batch_max_rows, 1);
  Runtime rt2;
  o.defaults = {{"decode_batch.max_rows", "2"}};
  ModelManager with_default(rt2, o);
  EXPECT_EQ(with_default.Load("a")->options().decode_batch_max_rows, 2);
}

TEST(ModelManager, ConcurrentFirstUsesShareOneLoad) {
  Runtime rt;
  ModelManager m(rt, ThreeModels());
  std::atomic<int> loads{0};
  m.SetEventListener([&](ManagerEvent e, const std::string&) {
    if (e == ManagerEvent::kLoaded) ++loads;
  });
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<Model>> got(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] { got[i] = m.Acquire("a").model(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(loads.load(), 1);
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
}

TEST(ModelManager, KeepAliveUnloadsAndARequestMayOnlyShortenIt) {
  Runtime rt;
  ModelManager m(rt, ThreeModels(/*keep_alive=*/300ms));
  m.Acquire("a", /*keep_alive=*/std::chrono::hours(1)).Reset();  // longer: not allowed
  EXPECT_TRUE(Loaded(m, "a"));
  EXPECT_GT(m.Get("a").expires_at_unix_ms, 0);
  const auto t0 = std::chrono::steady_clock::now();
  // The entry shows unloaded a moment before the expiry is counted (after Runtime::Unload).
  while ((Loaded(m, "a") || m.num_expirations() == 0) &&
         std::chrono::steady_clock::now() - t0 < 5s) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(Loaded(m, "a"));
  EXPECT_EQ(m.num_expirations(), 1u);
  EXPECT_FALSE(rt.Contains("a"));
  // A lease holds the model past its keep-alive.
  {
    auto b = m.Acquire("b", 0ms);
    std::this_thread::sleep_for(400ms);
    EXPECT_TRUE(Loaded(m, "b"));
  }
  const auto t1 = std::chrono::steady_clock::now();
  while (Loaded(m, "b") && std::chrono::steady_clock::now() - t1 < 5s) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(Loaded(m, "b")) << "keep_alive 0 unloads when the request ends";
}

// Issue 24 items 5-6: 4 clients send requests while another loop force-unloads and the
// keep-alive (0: unload as soon as a request ends) expires models under them. Every
// request succeeds: a request for a model being unloaded waits and loads it again; a forced
// unload waits for the leases of running requests; KV in use returns to 0 and the counters
// equal what was sent.
// Issue 22 item 7: the manager reads an injected clock, so keep-alive expiry is driven here by
// moving a fake clock (and Tick), not by sleeping through it.
TEST(ModelManager, KeepAliveExpiresOnTheInjectedClockWithoutSleeping) {
  Runtime rt;
  auto o = ThreeModels(/*keep_alive=*/std::chrono::minutes(5));
  std::mutex clock_mu;
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1000);
  o.clock = [&] {
    std::lock_guard<std::mutex> lock(clock_mu);
    return now;
  };
  const auto advance = [&](std::chrono::milliseconds by) {
    std::lock_guard<std::mutex> lock(clock_mu);
    now += by;
  };
  std::mutex expired_mu;
  std::vector<std::string> expired;  // by Tick, or by the timer thread if it re-read the clock
  ModelManager m(rt, o);             // after what its listener and clock use: destroyed first
  m.SetEventListener([&](ManagerEvent e, const std::string& id) {
    std::lock_guard<std::mutex> lock(expired_mu);
    if (e == ManagerEvent::kExpired) expired.push_back(id);
  });
  m.Acquire("a").Reset();
  m.Acquire("b", /*keep_alive=*/std::chrono::minutes(1)).Reset();  // a request may shorten it
  const auto expires_a = m.Get("a").expires_at_unix_ms;
  EXPECT_GT(expires_a, 0);
  advance(std::chrono::seconds(59));
  m.Tick();
  EXPECT_TRUE(Loaded(m, "a"));
  EXPECT_TRUE(Loaded(m, "b"));
  advance(std::chrono::seconds(2));  // b's minute is over; a has 4 left
  m.Tick();
  EXPECT_TRUE(Loaded(m, "a"));
  EXPECT_FALSE(Loaded(m, "b"));
  advance(std::chrono::minutes(3));
  m.Tick();
  EXPECT_TRUE(Loaded(m, "a")) << "4 min 1 s of 5";
  {
    auto lease = m.Acquire("a");  // a request restarts the keep-alive when it ends
    advance(std::chrono::hours(1));
    m.Tick();
    EXPECT_TRUE(Loaded(m, "a")) << "a model with a running request never expires";
  }
  advance(std::chrono::minutes(4));
  m.Tick();
  EXPECT_TRUE(Loaded(m, "a"));
  advance(std::chrono::minutes(1));
  m.Tick();
  EXPECT_FALSE(Loaded(m, "a"));
  std::lock_guard<std::mutex> lock(expired_mu);
  EXPECT_EQ(expired, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(m.num_expirations(), 2u);
}

TEST(ModelManager, ForcedUnloadsAndExpiriesUnderLoadLoseNoRequest) {
  Runtime rt;
  ModelManager m(rt, ThreeModels(/*keep_alive=*/0ms));
  constexpr int kClients = 4, kPerClient = 150;
  std::atomic<int> ok{0}, failed{0};
  std::atomic<bool> done{false};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const char* ids[] = {"a", "b", "c"};
      for (int i = 0; i < kPerClient; ++i) {
        try {
          auto lease = m.Acquire(ids[(c + i) % 3]);
          GenerateRequest req;
          req.input_ids = {{1, 2, 3}};
          req.max_new_tokens = 3;
          req.params.max_length = 16;
          if (Generate(lease.model(), req).rows[0].generated_ids.size() != 3u) {
            throw std::runtime_error("short generation");
          }
          ++ok;
        } catch (const std::exception& e) {
          ++failed;
          std::lock_guard<std::mutex> lock(errors_mu);
          if (errors.size() < 50) errors.push_back(e.what());
        }
      }
    });
  }
  std::thread unloader([&] {
    int n = 0;
    while (!done) {
      try {
        m.Unload(n % 2 == 0 ? "a" : "b", /*force=*/true);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::NotFound) << e.what();  // not loaded right now
      }
      ++n;
      std::this_thread::sleep_for(2ms);
    }
  });
  for (auto& t : clients) t.join();
  done = true;
  unloader.join();
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_EQ(failed.load(), 0) << all;
  EXPECT_EQ(ok.load(), kClients * kPerClient);
  EXPECT_EQ(rt.Stats().kv.in_use_bytes, 0u);
  EXPECT_GT(m.num_expirations(), 0u) << "the test expired nothing";
}

TEST(ModelManager, ClientKeepAliveLongerThanTheAdminsWhenAllowed) {
  Runtime rt;
  ModelManagerOptions o = ThreeModels(100ms);
  o.allow_client_keep_alive = true;
  ModelManager m(rt, o);
  m.Acquire("a", std::chrono::hours(1)).Reset();
  std::this_thread::sleep_for(400ms);
  EXPECT_TRUE(Loaded(m, "a"));
}

// Issue 24 finding 8: a loaded model whose folder is deleted keeps serving until it is
// unloaded (it was a 404 "does not exist" while still loaded and charged to the budget); then
// the id is gone.
TEST(ModelManager, ALoadedModelWhoseFolderIsDeletedKeepsServingUntilUnloaded) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb_mm_deleted";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "models");
  std::filesystem::copy(Tiny(), dir / "models" / "m");
  Runtime rt;
  ModelManagerOptions o;
  o.models_dir = dir / "models";
  ModelManager m(rt, o);
  m.Acquire("m").Reset();
  std::filesystem::remove_all(dir / "models" / "m");
  for (int i = 0; i < 2; ++i) {
    auto lease = m.Acquire("m");
    GenerateRequest req;
    req.input_ids = {{1, 2, 3}};
    req.max_new_tokens = 2;
    req.params.max_length = 16;
    EXPECT_EQ(Generate(lease.model(), req).rows[0].generated_ids.size(), 2u);
  }
  EXPECT_TRUE(Loaded(m, "m"));
  m.Unload("m", /*force=*/false);
  try {
    m.Acquire("m");
    FAIL() << "an unloaded model whose folder is gone was loaded again";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(ModelManager, IdsAreConfinedToTheModelsDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb_mm_confine";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "models");
  std::filesystem::create_directory_symlink(Tiny(), dir / "models" / "escape");
  std::filesystem::copy(Tiny(), dir / "models" / "inside");
  Runtime rt;
  ModelManagerOptions o;
  o.models_dir = dir / "models";
  ModelManager m(rt, o);
  EXPECT_NO_THROW(m.Acquire("inside"));
  for (const char* bad : {"..", ".", "../models/inside", "/etc", "a/b", ""}) {
    try {
      m.Acquire(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << bad << ": " << e.what();
    }
  }
  try {
    m.Acquire("escape");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("outside the models directory"));
  }
  try {
    m.Acquire("missing");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("known models: inside"));
  }
  std::vector<std::string> ids;
  for (const auto& mm : m.List()) ids.push_back(mm.id);
  EXPECT_THAT(ids, ::testing::Contains("inside"));
  std::filesystem::remove_all(dir);
}

// Issue 38: the models-dir listing had its own folder test, which missed an encoder export
// whose only ONNX file is onnx/model_quantized.onnx (it loaded but was not listed). Listing and
// loading now share model/encoder_folder.cpp's detector.
TEST(ModelManager, EveryFolderLayoutThatLoadsIsListed) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb_mm_layouts";
  std::filesystem::remove_all(dir);
  for (const auto& [name, onnx] : {std::pair<const char*, const char*>{"root", "model.onnx"},
                                   {"onnx-dir", "onnx/model.onnx"},
                                   {"quantized", "onnx/model_quantized.onnx"}}) {
    const auto folder = dir / name;
    std::filesystem::create_directories((folder / onnx).parent_path());
    std::ofstream(folder / onnx) << "x";
  }
  std::filesystem::create_directories(dir / "not-a-model");
  std::ofstream(dir / "not-a-model" / "notes.txt") << "x";
  Runtime rt;
  ModelManagerOptions o;
  o.models_dir = dir;
  ModelManager m(rt, o);
  std::vector<std::string> ids;
  for (const auto& mm : m.List()) ids.push_back(mm.id);
  EXPECT_THAT(ids, ::testing::UnorderedElementsAre("root", "onnx-dir", "quantized"));
  std::filesystem::remove_all(dir);
}

TEST(ModelManager, AFailedLoadLeavesNothingAndIsReportedToEveryWaiter) {
  const auto dir = std::filesystem::temp_directory_path() / "ebb_mm_broken";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy(Tiny(), dir / "m");
  { std::ofstream(dir / "m" / "model.onnx", std::ios::trunc) << "not onnx"; }
  Runtime rt;
  ModelManagerOptions o;
  o.models["broken"].path = dir / "m";
  ModelManager m(rt, o);
  EXPECT_THROW(m.Acquire("broken"), Error);
  EXPECT_FALSE(rt.Contains("broken"));
  EXPECT_FALSE(m.Get("broken").loaded);
  EXPECT_EQ(rt.Stats().weights_bytes, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ebb
