// Single-threaded encode throughput (MB/s of UTF-8 input) for byte-level BPE and
// SentencePiece-style BPE on >= 1 MiB of English + C code (tokenizer_corpus.h).
//
//   build/bench/tokenizer_bench [--benchmark_filter=...]
//
// Tokenizers: gpt2 and phi3 from ../shared when present (EBB_SHARED_DIR overrides), else the
// project's llama3_style / mistral_style test tokenizers. Compare with
// tools/tokref/bench.js (Hugging Face tokenizers, single-threaded) on the same corpus; the
// figures are in docs/tokenizer.md.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "ebb/tokenizer.h"
#include "tokenizer_corpus.h"

#ifndef EBB_SOURCE_DIR
#define EBB_SOURCE_DIR "."
#endif

namespace {

namespace fs = std::filesystem;

fs::path SharedDir() {
  const char* v = std::getenv("EBB_SHARED_DIR");
  return (v != nullptr && *v != '\0') ? fs::path(v) : fs::path(EBB_SOURCE_DIR) / ".." / "shared";
}

fs::path DataDir() { return fs::path(EBB_SOURCE_DIR) / "tests" / "tokenizer" / "data"; }

const std::vector<std::string>& Docs() {
  static const auto docs = ebb::bench::TokenizerCorpus();
  return docs;
}

const std::vector<std::string>& Lines() {
  static const auto lines = ebb::bench::SplitLines(Docs());
  return lines;
}

const ebb::Tokenizer* Load(const fs::path& shared_rel, const std::string& fallback) {
  const fs::path p =
      fs::exists(SharedDir() / shared_rel) ? SharedDir() / shared_rel : DataDir() / fallback;
  static std::vector<std::unique_ptr<ebb::Tokenizer>> keep;
  keep.push_back(ebb::Tokenizer::FromFile(p));
  return keep.back().get();
}

const ebb::Tokenizer* ByteLevel() {
  static const ebb::Tokenizer* t =
      Load("models/tiny-random-gpt2-fp32/tokenizer.json", "llama3_style.tokenizer.json");
  return t;
}

const ebb::Tokenizer* SentencePiece() {
  static const ebb::Tokenizer* t =
      Load("models/tokenizers/phi3/tokenizer.json", "mistral_style.tokenizer.json");
  return t;
}

void Run(benchmark::State& state, const ebb::Tokenizer* t, const std::vector<std::string>& in) {
  size_t bytes = 0, tokens = 0;
  for (const auto& s : in) bytes += s.size();
  for (auto _ : state) {
    tokens = 0;
    for (const auto& s : in) {
      auto ids = t->Encode(s);
      tokens += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["docs"] = static_cast<double>(in.size());
  state.SetLabel(t->source_name());
}

void BM_EncodeByteLevelDocs(benchmark::State& s) { Run(s, ByteLevel(), Docs()); }
void BM_EncodeByteLevelLines(benchmark::State& s) { Run(s, ByteLevel(), Lines()); }
void BM_EncodeSentencePieceDocs(benchmark::State& s) { Run(s, SentencePiece(), Docs()); }
void BM_EncodeSentencePieceLines(benchmark::State& s) { Run(s, SentencePiece(), Lines()); }

void BM_DecodeByteLevel(benchmark::State& state) {
  const ebb::Tokenizer* t = ByteLevel();
  std::vector<std::vector<int32_t>> ids;
  size_t bytes = 0;
  for (const auto& d : Docs()) {
    ids.push_back(t->Encode(d, false));
    bytes += d.size();
  }
  for (auto _ : state) {
    for (const auto& v : ids) benchmark::DoNotOptimize(t->Decode(v).size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}

BENCHMARK(BM_EncodeByteLevelDocs)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_EncodeByteLevelLines)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_EncodeSentencePieceDocs)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_EncodeSentencePieceLines)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_DecodeByteLevel)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
