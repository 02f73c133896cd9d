// libFuzzer target for the tokenizer: Encode on arbitrary bytes (invalid UTF-8 must be
// rejected with ebb::Error, never crash), round trips, and Decode / StreamDecoder on arbitrary
// id sequences (streamed text must equal Decode).
//
// Build (standalone):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
//     fuzz/tokenizer_fuzz.cpp src/tokenizer/*.cpp src/core/error.cpp -lpcre2-8 -lutf8proc
// Run: ./tokenizer_fuzz -max_total_time=60 fuzz/corpus/tokenizer
// Tokenizers: built-in small ones, plus every path in $EBB_FUZZ_TOKENIZERS (':'-separated
// tokenizer.json files or model folders), plus gpt2 and phi3 from $EBB_SHARED_DIR when set.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ebb/error.h"
#include "ebb/tokenizer.h"

namespace {

// A tiny byte-level BPE (GPT-2 style) with merges, added tokens and a template.
constexpr const char* kByteLevelJson = R"({
  "added_tokens": [
    {"id": 261, "content": "<|end|>", "special": true, "normalized": false, "lstrip": false,
     "rstrip": false, "single_word": false},
    {"id": 262, "content": "  ", "special": false, "normalized": true, "lstrip": false,
     "rstrip": false, "single_word": false},
    {"id": 263, "content": "<m>", "special": true, "normalized": false, "lstrip": true,
     "rstrip": true, "single_word": false}],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [261], "tokens": ["<|end|>"]}}},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "ignore_merges": true, "vocab": VOCAB, "merges": [
    ["\u0120", "t"], ["h", "e"], ["\u0120t", "he"], ["i", "n"], ["\u0120", "a"]]}
})";

// A tiny SentencePiece-style BPE with byte fallback.
constexpr const char* kSentencePieceJson = R"({
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true, "normalized": false, "lstrip": false,
     "rstrip": false, "single_word": false},
    {"id": 1, "content": "<s>", "special": true, "normalized": false, "lstrip": false,
     "rstrip": false, "single_word": false},
    {"id": 2, "content": "</s>", "special": false, "normalized": false, "lstrip": false,
     "rstrip": true, "single_word": false}],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
    "vocab": VOCAB, "merges": [["\u2581", "t"], ["h", "e"], ["\u2581t", "he"], ["\u2581", "\u2581"]]}
})";

constexpr const char* kWordPieceJson = R"({
  "normalizer": {"type": "BertNormalizer", "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "decoder": {"type": "WordPiece"},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[PAD]": 0, "[UNK]": 1,
    "[CLS]": 2, "[SEP]": 3, "the": 4, "##s": 5, "a": 6, "##a": 7, "b": 8, "##b": 9, "!": 10}}
})";

std::string ByteLevelVocab() {
  // 256 byte characters (GPT-2 order) + merges' results.
  std::string v = "{";
  int id = 0;
  auto add = [&](const std::string& tok) {
    if (id) v += ",";
    v += "\"" + tok + "\":" + std::to_string(id++);
  };
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const unsigned cp = printable ? static_cast<unsigned>(b) : 256u + n++;
    char buf[16];
    if (cp == '"' || cp == '\\') {
      std::snprintf(buf, sizeof buf, "\\%c", static_cast<char>(cp));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    }
    add(buf);
  }
  for (const char* t : {"\\u0120t", "he", "\\u0120the", "in", "\\u0120a"}) add(t);
  return v + "}";
}

std::string SentencePieceVocab() {
  std::string v = R"({"<unk>":0,"<s>":1,"</s>":2)";
  int id = 3;
  char buf[32];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, ",\"<0x%02X>\":%d", b, id++);
    v += buf;
  }
  for (const char* t :
       {"\\u2581", "t", "h", "e", "a", "\\u2581t", "he", "\\u2581the", "\\u2581\\u2581"}) {
    v += ",\"" + std::string(t) + "\":" + std::to_string(id++);
  }
  return v + "}";
}

std::string WithVocab(std::string json, const std::string& vocab) {
  return json.replace(json.find("VOCAB"), 5, vocab);
}

const std::vector<std::unique_ptr<ebb::Tokenizer>>& Tokenizers() {
  static const auto* list = [] {
    auto* v = new std::vector<std::unique_ptr<ebb::Tokenizer>>();
    v->push_back(ebb::Tokenizer::FromJson(WithVocab(kByteLevelJson, ByteLevelVocab()), "bl"));
    v->push_back(
        ebb::Tokenizer::FromJson(WithVocab(kSentencePieceJson, SentencePieceVocab()), "sp"));
    v->push_back(ebb::Tokenizer::FromJson(kWordPieceJson, "wp"));
    std::vector<std::filesystem::path> paths;
    if (const char* shared = std::getenv("EBB_SHARED_DIR")) {
      paths.push_back(std::filesystem::path(shared) / "models/tiny-random-gpt2-fp32");
      paths.push_back(std::filesystem::path(shared) / "models/tokenizers/phi3");
    }
    if (const char* extra = std::getenv("EBB_FUZZ_TOKENIZERS")) {
      std::string s = extra;
      size_t start = 0;
      while (start <= s.size()) {
        size_t end = s.find(':', start);
        if (end == std::string::npos) end = s.size();
        if (end > start) paths.emplace_back(s.substr(start, end - start));
        start = end + 1;
      }
    }
    for (const auto& p : paths)
      if (std::filesystem::exists(p)) v->push_back(ebb::Tokenizer::FromFile(p));
    return v;
  }();
  return *list;
}

void CheckStream(const ebb::Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
  const std::string want = t.Decode(ids, skip);
  ebb::StreamDecoder sd(t, skip);
  std::string got;
  for (int32_t id : ids) got += sd.Put(id);
  got += sd.Flush();
  if (got != want) std::abort();
}

}  // namespace

// Builds the tokenizers before the first input: loading phi3's 32k-token tokenizer.json under
// the fuzzer's instrumentation takes seconds, and inside the first input it counts against the
// per-input -timeout (it timed out on a busy 2-core machine).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  Tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& toks = Tokenizers();
  const ebb::Tokenizer& t = *toks[data[0] % toks.size()];
  const bool add_special = (data[0] >> 4) & 1;
  const bool as_ids = (data[0] >> 5) & 1;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (!as_ids) {
    std::vector<int32_t> ids;
    try {
      ids = t.Encode(rest, add_special);
    } catch (const ebb::Error& e) {
      if (e.code() != ebb::ErrorCode::InvalidArgument) std::abort();
      return 0;  // invalid UTF-8 (or a model error) is reported, not crashed on
    }
    for (int32_t id : ids)
      if (id < 0 || static_cast<size_t>(id) >= t.vocab_size()) std::abort();
    (void)t.Decode(ids, false);
    CheckStream(t, ids, false);
    CheckStream(t, ids, true);
    return 0;
  }
  // Interpret the bytes as token ids (2 bytes each, modulo the vocabulary).
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < rest.size(); i += 2) {
    const uint32_t v = static_cast<uint8_t>(rest[i]) | (static_cast<uint8_t>(rest[i + 1]) << 8);
    const auto id = static_cast<int32_t>(v % t.vocab_size());
    if (t.IdToToken(id).empty()) continue;  // a hole in the id space
    ids.push_back(id);
  }
  CheckStream(t, ids, false);
  CheckStream(t, ids, true);
  return 0;
}
