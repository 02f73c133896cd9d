// prefill_logits=last (src/model/last_logits.h): the load-time rewrite that computes the LM head
// only at the sampled position. Checked against the same model loaded as it is
// (prefill_logits=all): the same tokens and the same logits for every graph family the project
// generates (GQA shared buffer, external data, position_ids, fp16 logits, left-padded gpt2),
// chunked prefill, right-padded batches of different lengths, and the compiled-model cache; and
// the rewrite's refusals, which leave the model loading as it is.
#include "model/last_logits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Model> LoadWith(const std::string& name, const std::string& prefill_logits,
                                const std::string& cache_dir = "off") {
  ModelOptions o;
  o.Set("prefill_logits", prefill_logits);
  o.Set("model_cache.dir", cache_dir);
  return ebb::LoadModel(testing::TestModelsDir() / name, o);
}

struct Run {
  std::vector<std::vector<int32_t>> tokens;  // per row: generated tokens
  std::vector<float> first_logits;           // all rows' logits of the first sampled step
};

// Greedy generation of `rows` (one prompt per row), `chunk` tokens per prefill Run.
Run Generate(const std::shared_ptr<Model>& m, const std::vector<std::vector<int32_t>>& rows,
             int chunk, int new_tokens) {
  GeneratorParams p;
  p.batch_size = static_cast<int32_t>(rows.size());
  p.prefill_chunk_size = chunk;
  size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.size());
  p.max_length = static_cast<int32_t>(longest) + new_tokens;
  Generator g(m, p);
  if (rows.size() == 1) {
    g.AppendTokens(rows[0]);
  } else {
    g.AppendTokens(rows);
  }
  Run out;
  out.tokens.resize(rows.size());
  for (int i = 0; i < new_tokens && !g.done(); ++i) {
    g.GenerateNextToken();
    if (i == 0) {
      const auto l = g.GetLogits();
      out.first_logits.assign(l.begin(), l.end());
    }
    const auto next = g.GetNextTokens();
    for (size_t b = 0; b < rows.size(); ++b) out.tokens[b].push_back(next[b]);
  }
  return out;
}

std::vector<int32_t> Prompt(int n, int vocab, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((i * 37 + 11 + salt * 101) % (vocab - 16) + 8);
  return p;
}

void ExpectSame(const Run& last, const Run& all, double tol) {
  EXPECT_EQ(last.tokens, all.tokens);
  ASSERT_EQ(last.first_logits.size(), all.first_logits.size());
  double worst = 0;
  for (size_t i = 0; i < all.first_logits.size(); ++i) {
    worst =
        std::max(worst, static_cast<double>(std::fabs(last.first_logits[i] - all.first_logits[i])));
  }
  EXPECT_LE(worst, tol) << "largest logit difference";
}

class LastLogitsFamilies : public ::testing::TestWithParam<const char*> {};

TEST_P(LastLogitsFamilies, SameTokensAndLogitsAsEveryPosition) {
  const std::string name = GetParam();
  auto last = LoadWith(name, "last");
  auto all = LoadWith(name, "all");
  EXPECT_TRUE(last->info().last_position_logits) << name << ": the rewrite did not apply";
  EXPECT_FALSE(all->info().last_position_logits);
  const int vocab = last->info().vocab_size;
  const double tol = name.find("fp16") != std::string::npos ? 2e-2 : 1e-4;
  // Whole prompt in one Run, and in chunks of 4 (the later chunks run after a past).
  for (int chunk : {0, 4}) {
    SCOPED_TRACE("prefill_chunk_size=" + std::to_string(chunk));
    ExpectSame(Generate(last, {Prompt(11, vocab, 0)}, chunk, 12),
               Generate(all, {Prompt(11, vocab, 0)}, chunk, 12), tol);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, LastLogitsFamilies,
                         ::testing::Values("llama-tiny-fp32", "llama-tiny-int4",
                                           "llama-int4-extdata", "phi3-tiny-fp32-unfused",
                                           "qwen2-tiny-fp32", "llama-tiny-fp16io",
                                           "gpt2-tiny-fp32"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Rows of different lengths: each row's logits come from its own last real position (right
// padding on GQA graphs, left padding on gpt2).
TEST(LastLogits, BatchRowsOfDifferentLengths) {
  for (const char* name : {"llama-tiny-fp32", "gpt2-tiny-fp32"}) {
    SCOPED_TRACE(name);
    auto last = LoadWith(name, "last");
    auto all = LoadWith(name, "all");
    const int vocab = last->info().vocab_size;
    const std::vector<std::vector<int32_t>> rows{Prompt(3, vocab, 1), Prompt(9, vocab, 2),
                                                 Prompt(6, vocab, 3)};
    ExpectSame(Generate(last, rows, 0, 10), Generate(all, rows, 0, 10), 1e-4);
  }
}

// A cached load (the optimised graph saved from the rewritten one) keeps the rewrite.
TEST(LastLogits, CompiledModelCacheKeepsTheRewrite) {
  const fs::path cache =
      fs::temp_directory_path() / ("ebb-last-logits-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const auto reference = Generate(LoadWith("llama-tiny-fp32", "all"), {Prompt(11, 1024, 0)}, 0, 12);
  for (int load = 0; load < 2; ++load) {  // builds the entry, then loads it
    SCOPED_TRACE(load == 0 ? "building load" : "cached load");
    auto m = LoadWith("llama-tiny-fp32", "last", cache.string());
    EXPECT_TRUE(m->info().last_position_logits);
    ExpectSame(Generate(m, {Prompt(11, 1024, 0)}, 0, 12), reference, 1e-4);
  }
  EXPECT_FALSE(fs::is_empty(cache)) << "no cache entry was written";
  fs::remove_all(cache);
}

// The rewrite declines (and says why) instead of guessing; the model then loads as it is.
TEST(LastLogits, DeclinesWhatItCannotRewrite) {
  const fs::path onnx = testing::TestModelsDir() / "llama-tiny-fp32" / "model.onnx";
  std::string why;
  EXPECT_FALSE(internal::RewriteForLastLogits(onnx, "no_such_output", 64, &why));
  EXPECT_NE(why.find("no node produces the logits output 'no_such_output'"), std::string::npos)
      << why;
  EXPECT_FALSE(internal::RewriteForLastLogits(onnx, "logits", 0, &why));
  EXPECT_NE(why.find("hidden_size"), std::string::npos) << why;
  // Not an LM head: present.0.key comes from GroupQueryAttention.
  EXPECT_FALSE(internal::RewriteForLastLogits(onnx, "present.0.key", 64, &why));
  EXPECT_NE(why.find("GroupQueryAttention node, not a MatMul"), std::string::npos) << why;
  // A truncated file.
  const fs::path cut =
      fs::temp_directory_path() / ("ebb-cut-" + std::to_string(::getpid()) + ".onnx");
  {
    std::ifstream in(onnx, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary).write(head.data(), in.gcount());
  }
  EXPECT_FALSE(internal::RewriteForLastLogits(cut, "logits", 64, &why));
  EXPECT_NE(why.find("cannot parse the model"), std::string::npos) << why;
  fs::remove(cut);
  // The rewritten file itself: the input is already there.
  auto once = internal::RewriteForLastLogits(onnx, "logits", 64, &why);
  ASSERT_TRUE(once) << why;
  EXPECT_FALSE(internal::RewriteForLastLogits(once->path(), "logits", 64, &why));
  EXPECT_NE(why.find("already has an input named ebb_logits_index"), std::string::npos) << why;
}

TEST(LastLogits, BadOptionValueNamesTheChoices) {
  ModelOptions o;
  try {
    o.Set("prefill_logits", "first");
    FAIL() << "accepted prefill_logits=first";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not one of: last all"), std::string::npos) << e.what();
  }
}

// profile_file_prefix: ORT's per-operator trace, written when the model unloads; "off" writes
// nothing. (This file's tests are the ones that profile decoding; tools/ort_profile.py reads it.)
TEST(OrtProfile, WrittenAtUnloadAndOffWritesNothing) {
  const fs::path dir = fs::temp_directory_path() / ("ebb-profile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string& prefix : {(dir / "off").string(), (dir / "trace").string()}) {
    ModelOptions o;
    o.Set("session_options.profile_file_prefix",
          prefix.ends_with("off") ? std::string("off") : prefix);
    auto m = ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32", o);
    Generate(m, {Prompt(5, 1024, 0)}, 0, 3);
  }  // the model unloads here
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "expected one trace (the 'off' load writes none)";
  EXPECT_TRUE(files[0].filename().string().starts_with("trace_")) << files[0];
  std::ifstream in(files[0]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"model_run\""), std::string::npos);
  EXPECT_NE(text.find("MatMul"), std::string::npos);
  fs::remove_all(dir);
}

// A prefix ORT could not write to is refused at load (ORT itself would only log, at unload).
TEST(OrtProfile, UnwritablePrefixOrBlankIsRefusedAtLoad) {
  for (const std::string bad : {"   ", "/nonexistent-ebb-folder/trace"}) {
    SCOPED_TRACE("'" + bad + "'");
    ModelOptions o;
    o.Set("session_options.profile_file_prefix", bad);
    try {
      ebb::LoadModel(testing::TestModelsDir() / "llama-tiny-fp32", o);
      FAIL() << "loaded with profile_file_prefix='" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("profile_file_prefix"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ebb
