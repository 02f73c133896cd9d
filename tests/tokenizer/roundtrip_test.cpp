// Round trips on byte-level tokenizers: decode(encode(s)) == s for 10,000 random valid UTF-8
// strings, and streaming decode == decode for the same ids.
#include <atomic>
#include <random>
#include <thread>

#include "tokenizer_test_util.h"

namespace ebb::testing {
namespace {

// A random valid UTF-8 string mixing ASCII, whitespace, controls, Latin, CJK, emoji, marks.
std::string RandomUtf8(std::mt19937& rng) {
  static const std::pair<char32_t, char32_t> kRanges[] = {
      {0x20, 0x7E},       {0x20, 0x7E},       {0x20, 0x7E},     {0x00, 0x1F},
      {0x80, 0x24F},      {0x300, 0x36F},     {0x370, 0x52F},   {0x590, 0x6FF},
      {0x900, 0x97F},     {0x2000, 0x206F},   {0x3000, 0x30FF}, {0x4E00, 0x9FFF},
      {0xAC00, 0xD7A3},   {0xE000, 0xF8FF},   {0xFE00, 0xFFFD}, {0x1F300, 0x1FAFF},
      {0x20000, 0x2A6DF}, {0x10000, 0x10FFFF}};
  std::uniform_int_distribution<int> len_dist(0, 40);
  std::uniform_int_distribution<size_t> range_dist(0, std::size(kRanges) - 1);
  std::string s;
  const int n = len_dist(rng);
  for (int i = 0; i < n; ++i) {
    const auto [lo, hi] = kRanges[range_dist(rng)];
    char32_t cp = std::uniform_int_distribution<char32_t>(lo, hi)(rng);
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
    // Encode UTF-8.
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return s;
}

void RoundTrip(const Tokenizer& t, uint32_t seed) {
  std::mt19937 rng(seed);
  size_t failures = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::string s = RandomUtf8(rng);
    const auto ids = t.Encode(s, /*add_special_tokens=*/false);
    const std::string back = t.Decode(ids);
    if (back != s && ++failures <= 5) {
      ADD_FAILURE() << "round trip failed for " << nlohmann::json(s).dump() << " -> "
                    << nlohmann::json(back).dump();
    }
    StreamDecoder sd(t);
    std::string streamed;
    for (int32_t id : ids) streamed += sd.Put(id);
    streamed += sd.Flush();
    if (streamed != back && ++failures <= 5) {
      ADD_FAILURE() << "stream != decode for " << nlohmann::json(s).dump();
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST(TokenizerRoundTrip, Llama3Style) {
  RoundTrip(CachedTokenizer(TokenizerDataDir() / "llama3_style.tokenizer.json"), 1);
}

TEST(TokenizerRoundTrip, Gpt2) {
  EBB_SKIP_UNLESS_EXISTS(Gpt2Path());
  RoundTrip(CachedTokenizer(Gpt2Path()), 2);
}

TEST(TokenizerRoundTrip, Whisper) {
  EBB_SKIP_UNLESS_EXISTS(WhisperDir());
  RoundTrip(CachedTokenizer(WhisperDir()), 3);
}

// Encode/Decode from several threads at once give the single-threaded answers (the BPE word
// cache and the thread-local scratch buffers are shared state).
TEST(TokenizerRoundTrip, ConcurrentUseIsConsistent) {
  const Tokenizer& t = CachedTokenizer(TokenizerDataDir() / "mistral_style.tokenizer.json");
  std::mt19937 rng(7);
  std::vector<std::string> texts;
  for (int i = 0; i < 2000; ++i) texts.push_back(RandomUtf8(rng));
  std::vector<std::vector<int32_t>> want;
  for (const auto& s : texts) want.push_back(t.Encode(s));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (size_t i = 0; i < texts.size(); ++i) {
        const size_t j = (i * 7 + static_cast<size_t>(k) * 13) % texts.size();
        if (t.Encode(texts[j]) != want[j]) ++mismatches;
        if (t.Decode(want[j]) != t.Decode(want[j])) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace ebb::testing
