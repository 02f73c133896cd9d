// The generation loop (ebb/generation.h): stop strings, max_new_tokens, finish reasons,
// cancellation, decoding errors, streaming, and the prompt-primed stream decoder.
#include "ebb/generation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "test_env.h"

namespace ebb {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Rows = std::vector<std::vector<int32_t>>;

const fs::path kLlama = testing::TestModelsDir() / "llama-tiny-fp32";
const std::vector<int32_t> kPrompt = {5, 17, 42, 99, 7};

std::shared_ptr<Model> LoadLlama(const ModelOptions& mo = {}) { return ebb::LoadModel(kLlama, mo); }

// Runs `req` collecting the streamed pieces of each row.
struct Streamed {
  GenerateResult result;
  std::vector<std::vector<std::string>> pieces;
};
Streamed RunStreamed(const std::shared_ptr<Model>& model, const GenerateRequest& req) {
  Streamed s;
  s.result = Generate(model, req, [&](size_t row, std::string_view piece) {
    if (s.pieces.size() <= row) s.pieces.resize(row + 1);
    s.pieces[row].emplace_back(piece);
  });
  return s;
}

std::string Concat(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p;
  return out;
}

GenerateRequest IdsRequest(int32_t max_length) {
  GenerateRequest req;
  req.input_ids = {kPrompt};
  req.params.max_length = max_length;
  return req;
}

TEST(Generation, FinishReasonNames) {
  EXPECT_EQ(FinishReasonName(FinishReason::kStop), "stop");
  EXPECT_EQ(FinishReasonName(FinishReason::kLength), "length");
  EXPECT_EQ(FinishReasonName(FinishReason::kCancelled), "cancelled");
  EXPECT_EQ(FinishReasonName(FinishReason::kError), "error");
}

TEST(Generation, MatchesTheGeneratorAndStreamedPiecesConcatenateToTheText) {
  auto model = LoadLlama();
  const Streamed s = RunStreamed(model, IdsRequest(40));
  ASSERT_EQ(s.result.rows.size(), 1u);
  const GenerateRow& row = s.result.rows[0];
  // The same tokens as a bare Generator.
  std::vector<int32_t> seq;
  {
    GeneratorParams p;
    p.max_length = 40;
    Generator g(model, p);
    g.AppendTokens(kPrompt);
    while (!g.done()) g.GenerateNextToken();
    seq.assign(g.sequence(0).begin(), g.sequence(0).end());
  }
  EXPECT_EQ(row.prompt_ids, kPrompt);
  EXPECT_EQ(row.generated_ids, std::vector<int32_t>(seq.begin() + kPrompt.size(), seq.end()));
  // The text is the decode of the generated tokens, relative to the prompt.
  const Tokenizer& tok = *model->tokenizer();
  const std::string full = tok.Decode(seq, true);
  const std::string prompt = tok.Decode(kPrompt, true);
  ASSERT_TRUE(full.starts_with(prompt));
  EXPECT_EQ(row.text, full.substr(prompt.size()));
  ASSERT_FALSE(s.pieces.empty());
  EXPECT_EQ(Concat(s.pieces[0]), row.text);
  const bool eos = row.generated_ids.back() == model->info().eos_token_ids[0];
  EXPECT_EQ(row.finish_reason, eos ? FinishReason::kStop : FinishReason::kLength);
  EXPECT_EQ(s.result.usage.prompt_tokens, kPrompt.size());
  EXPECT_EQ(s.result.usage.completion_tokens, row.generated_ids.size());
  EXPECT_FALSE(s.result.error.has_value());
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(Generation, MaxNewTokensEndsTheRowWithLength) {
  auto model = LoadLlama();
  GenerateRequest req = IdsRequest(100);
  req.max_new_tokens = 4;
  const GenerateResult r = Generate(model, req);
  ASSERT_EQ(r.rows[0].generated_ids.size(), 4u);
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.stats.generated_tokens, 4u);
}

TEST(Generation, StopStringSplitAcrossTokensIsNeverStreamed) {
  auto model = LoadLlama();
  const Streamed full = RunStreamed(model, IdsRequest(60));
  const auto& pieces = full.pieces.at(0);
  // A stop string made of the end of one piece and the start of the next.
  size_t k = 0;
  while (k + 1 < pieces.size() && (pieces[k].size() < 2 || pieces[k + 1].size() < 2)) ++k;
  ASSERT_LT(k + 1, pieces.size()) << "no two consecutive pieces of 2+ bytes";
  const std::string stop = pieces[k].substr(pieces[k].size() - 2) + pieces[k + 1].substr(0, 2);
  const std::string& text = full.result.rows[0].text;
  const size_t at = text.find(stop);
  ASSERT_NE(at, std::string::npos);

  GenerateRequest req = IdsRequest(60);
  req.stop = {"\x01never", stop};
  const Streamed s = RunStreamed(model, req);
  const GenerateRow& row = s.result.rows[0];
  EXPECT_EQ(row.finish_reason, FinishReason::kStop);
  EXPECT_EQ(row.text, text.substr(0, at));
  const std::string streamed = s.pieces.empty() ? "" : Concat(s.pieces[0]);
  EXPECT_EQ(streamed, row.text);
  EXPECT_EQ(streamed.find(stop), std::string::npos);
  // Generation stopped at the token that completed the stop string.
  EXPECT_LT(row.generated_ids.size(), full.result.rows[0].generated_ids.size());
}

TEST(Generation, TextHeldBackForAStopStringThatNeverCompletesIsReleased) {
  auto model = LoadLlama();
  const Streamed full = RunStreamed(model, IdsRequest(40));
  const std::string& text = full.result.rows[0].text;
  ASSERT_GE(text.size(), 3u);
  GenerateRequest req = IdsRequest(40);
  // Every prefix of the generated text could start this stop string, up to its last byte.
  req.stop = {text + "\x01"};
  const Streamed s = RunStreamed(model, req);
  EXPECT_EQ(s.result.rows[0].text, text);
  EXPECT_EQ(s.pieces.empty() ? "" : Concat(s.pieces[0]), text);
  EXPECT_EQ(s.result.rows[0].finish_reason, full.result.rows[0].finish_reason);
}

TEST(Generation, BatchRowsEndOnTheirOwn) {
  auto model = LoadLlama();
  GenerateRequest req;
  req.input_ids = {kPrompt, {8, 9, 10}};
  req.params.max_length = 30;
  req.max_new_tokens = 6;
  const Streamed s = RunStreamed(model, req);
  ASSERT_EQ(s.result.rows.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_LE(s.result.rows[r].generated_ids.size(), 6u);
    EXPECT_EQ(s.pieces.size() > r ? Concat(s.pieces[r]) : "", s.result.rows[r].text);
  }
  EXPECT_EQ(s.result.usage.prompt_tokens, kPrompt.size() + 3);
}

TEST(Generation, CancelFromAnotherThreadEndsTheRequestAndFreesTheKv) {
  auto model = LoadLlama();
  GenerateRequest req = IdsRequest(2000);
  std::atomic<int> n_pieces{0};
  std::thread canceller([&] {
    while (n_pieces.load() < 3) std::this_thread::sleep_for(std::chrono::microseconds(100));
    req.cancel.Cancel();
  });
  const GenerateResult r = Generate(model, req, [&](size_t, std::string_view) {
    ++n_pieces;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // leave time for the cancel
  });
  canceller.join();
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kCancelled);
  EXPECT_LT(r.rows[0].generated_ids.size(), 1000u);
  EXPECT_FALSE(r.rows[0].text.empty());
  EXPECT_FALSE(r.error.has_value());
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(Generation, CancelledBeforeTheStartGeneratesNothing) {
  auto model = LoadLlama();
  GenerateRequest req = IdsRequest(40);
  req.cancel.Cancel();
  const GenerateResult r = Generate(model, req);
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(r.rows[0].generated_ids.empty());
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(Generation, KvBudgetRefusalMidGenerationKeepsThePartialText) {
  ModelOptions mo;
  mo.kv_mode = KvMode::kDynamic;
  mo.kv_chunk_tokens = 16;
  auto probe = LoadLlama();
  // The prompt's 16-token chunk fits; growing to 32 is refused (a growth holds the old and the
  // new buffer at once).
  mo.kv_max_bytes = 32 * probe->info().kv_bytes_per_token;
  probe.reset();
  auto model = LoadLlama(mo);
  const Streamed s = RunStreamed(model, IdsRequest(200));
  const GenerateRow& row = s.result.rows[0];
  ASSERT_TRUE(s.result.error.has_value());
  EXPECT_EQ(s.result.error->code(), ErrorCode::ResourceExhausted);
  EXPECT_THAT(s.result.error->what(), HasSubstr("kv_cache.max_bytes"));
  EXPECT_EQ(row.finish_reason, FinishReason::kError);
  EXPECT_GT(row.generated_ids.size(), 0u);
  EXPECT_LE(kPrompt.size() + row.generated_ids.size(), 32u);
  EXPECT_FALSE(row.text.empty());
  EXPECT_EQ(s.pieces.empty() ? "" : Concat(s.pieces[0]), row.text);
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  EXPECT_GE(model->kv_stats().num_refusals, 1u);
}

TEST(Generation, BadRequestsThrowBeforeAnythingRuns) {
  auto model = LoadLlama();
  auto code_of = [&](const GenerateRequest& req) {
    try {
      Generate(model, req);
    } catch (const Error& e) {
      return e.code();
    }
    ADD_FAILURE() << "no error";
    return ErrorCode::Internal;
  };
  GenerateRequest none;
  EXPECT_EQ(code_of(none), ErrorCode::InvalidArgument);  // also: an empty prompt
  GenerateRequest two = IdsRequest(40);
  two.prompt = "Hello";
  EXPECT_EQ(code_of(two), ErrorCode::InvalidArgument);
  GenerateRequest long_prompt = IdsRequest(5);  // 5 prompt tokens, no room
  EXPECT_EQ(code_of(long_prompt), ErrorCode::InvalidArgument);
  GenerateRequest over = IdsRequest(4);
  EXPECT_EQ(code_of(over), ErrorCode::InvalidArgument);
  GenerateRequest neg = IdsRequest(40);
  neg.max_new_tokens = -1;
  EXPECT_EQ(code_of(neg), ErrorCode::InvalidArgument);
  GenerateRequest empty_stop = IdsRequest(40);
  empty_stop.stop = {""};
  EXPECT_EQ(code_of(empty_stop), ErrorCode::InvalidArgument);
  GenerateRequest bad_params = IdsRequest(40);
  bad_params.params.repetition_penalty = 0;
  EXPECT_EQ(code_of(bad_params), ErrorCode::InvalidArgument);
  GenerateRequest empty_row;
  empty_row.input_ids = {kPrompt, {}};
  EXPECT_EQ(code_of(empty_row), ErrorCode::InvalidArgument);
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(Generation, PromptAndMessagesGoThroughTheTokenizerAndTheChatTemplate) {
  auto model = LoadLlama();
  const Tokenizer& tok = *model->tokenizer();
  GenerateRequest by_text;
  by_text.prompt = "Hello world";
  by_text.params.max_length = 30;
  GenerateRequest by_ids;
  by_ids.input_ids = {tok.Encode("Hello world", true)};
  by_ids.params.max_length = 30;
  const GenerateResult a = Generate(model, by_text);
  const GenerateResult b = Generate(model, by_ids);
  EXPECT_EQ(a.rows[0].prompt_ids, b.rows[0].prompt_ids);
  EXPECT_EQ(a.rows[0].text, b.rows[0].text);

  GenerateRequest chat;
  chat.messages = {{"user", "Hello"}};
  chat.params.max_length = 60;
  const GenerateResult c = Generate(model, chat);
  const std::string rendered = model->chat_template().Render(chat.messages, true);
  EXPECT_EQ(c.rows[0].prompt_ids, tok.Encode(rendered, false));
}

// A folder like `src` with links to its files, minus `drop`.
fs::path LinkedCopy(const fs::path& src, const std::string& name,
                    const std::vector<std::string>& drop) {
  const fs::path dst = fs::temp_directory_path() / ("ebb-generation-test-" + name);
  fs::remove_all(dst);
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string f = e.path().filename().string();
    if (std::find(drop.begin(), drop.end(), f) == drop.end()) {
      fs::create_symlink(fs::absolute(e.path()), dst / f);
    }
  }
  return dst;
}

// Issue 24 item 6: InvalidArgument naming the fix (it was NotFound, a 404 over HTTP).
TEST(Generation, MessagesWithoutAChatTemplateIsInvalidArgumentNamingTheFix) {
  const fs::path dir = LinkedCopy(kLlama, "no-template", {"tokenizer_config.json"});
  auto model = ebb::LoadModel(dir);
  GenerateRequest chat;
  chat.messages = {{"user", "Hello"}};
  try {
    Generate(model, chat);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("chat_template=FILE"));
  }
  fs::remove_all(dir);
}

TEST(Generation, NoTokenizerGivesIdsWithoutText) {
  const fs::path dir =
      LinkedCopy(kLlama, "no-tokenizer", {"tokenizer.json", "tokenizer_config.json"});
  auto model = ebb::LoadModel(dir);
  EXPECT_EQ(model->tokenizer(), nullptr);
  const Streamed s = RunStreamed(model, IdsRequest(20));
  EXPECT_FALSE(s.result.rows[0].generated_ids.empty());
  EXPECT_TRUE(s.result.rows[0].text.empty());
  EXPECT_TRUE(s.pieces.empty());
  GenerateRequest text;
  text.prompt = "Hello";
  EXPECT_THROW(Generate(model, text), Error);
  fs::remove_all(dir);
}

// --- Regression: `ebb generate stories260k --prompt "…a dog"` streamed "a dognamed"
// ----------------

const fs::path kStories = testing::SharedDir() / "models/stories260k";
const std::vector<int32_t> kDogIds = {1, 403, 407, 261, 378, 432, 261, 400, 428};

TEST(StreamDecoderDogNamedLostItsSpace, PrimedWithThePromptTheFirstPieceKeepsItsSpace) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  const auto tok = Tokenizer::FromFile(kStories);
  StreamDecoder d(*tok, /*skip_special_tokens=*/true);
  d.Prime(kDogIds);
  std::string out = d.Put(395);  // ▁named
  out += d.Put(392);
  out += d.Flush();
  std::vector<int32_t> all = kDogIds;
  all.push_back(395);
  all.push_back(392);
  EXPECT_EQ(out, tok->Decode(all, true).substr(tok->Decode(kDogIds, true).size()));
  EXPECT_TRUE(out.starts_with(" named")) << out;
}

TEST(StreamDecoderDogNamedLostItsSpace, GenerateStreamsTheSpace) {
  EBB_SKIP_UNLESS_EXISTS(kStories);
  auto model = ebb::LoadModel(kStories);
  GenerateRequest req;
  req.prompt = "Once upon a time, a dog";
  req.params.max_length = 30;
  const Streamed s = RunStreamed(model, req);
  EXPECT_EQ(s.result.rows[0].prompt_ids, kDogIds);
  EXPECT_EQ(s.result.rows[0].text, " named Max was very excited. He was very excited to");
  EXPECT_EQ(Concat(s.pieces.at(0)), s.result.rows[0].text);
  EXPECT_EQ(s.result.rows[0].finish_reason, FinishReason::kLength);
}

// ---- Pull form (Generation::Start / Next / Finish) -------------------------------------------

TEST(GenerationPull, PiecesGiveTheSameTokensTextAndFinishReasonsAsGenerate) {
  auto model = LoadLlama();
  GenerateRequest req;
  req.input_ids = {kPrompt, {8, 9, 10}};
  req.params.max_length = 30;
  req.max_new_tokens = 6;
  req.params.logprobs = true;
  const GenerateResult pushed = Generate(model, req);

  Generation g = Generation::Start(model, req);
  EXPECT_EQ(g.prompt_ids(1), (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(g.max_length(), 30);
  std::vector<std::string> text(2);
  std::vector<std::vector<int32_t>> ids(2);
  std::vector<std::optional<FinishReason>> why(2);
  while (std::optional<GenerationPiece> p = g.Next()) {
    ASSERT_LT(p->row, 2u);
    EXPECT_FALSE(why[p->row].has_value()) << "a piece after the row's last";
    text[p->row] += p->text;
    if (p->token >= 0) {
      ids[p->row].push_back(p->token);
      ASSERT_NE(p->logprobs, nullptr);
      EXPECT_EQ(p->logprobs->id, p->token);
    }
    why[p->row] = p->finish_reason;
  }
  EXPECT_TRUE(g.done());
  EXPECT_FALSE(g.Next().has_value()) << "nullopt again after the end";
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u) << "the KV is freed when the last row ends";
  const GenerateResult pulled = g.Finish();
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(ids[r], pushed.rows[r].generated_ids);
    EXPECT_EQ(text[r], pushed.rows[r].text);
    EXPECT_EQ(pulled.rows[r].text, pushed.rows[r].text);
    ASSERT_TRUE(why[r].has_value());
    EXPECT_EQ(*why[r], pushed.rows[r].finish_reason);
    EXPECT_EQ(pulled.rows[r].logprobs.size(), ids[r].size());
  }
  EXPECT_EQ(pulled.usage.completion_tokens, pushed.usage.completion_tokens);
  EXPECT_EQ(pulled.stats.generated_tokens, pushed.stats.generated_tokens);
  try {
    g.Finish();
    ADD_FAILURE() << "Finish twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
  }
  EXPECT_THROW(g.Next(), Error);
}

TEST(GenerationPull, StartRefusesARequestTheKvBudgetCannotHoldInBothKvModes) {
  auto probe = LoadLlama();
  const uint64_t per_token = probe->info().kv_bytes_per_token;
  probe.reset();
  for (const KvMode mode : {KvMode::kStatic, KvMode::kDynamic}) {
    SCOPED_TRACE(mode == KvMode::kStatic ? "static" : "dynamic");
    ModelOptions mo;
    mo.kv_mode = mode;
    mo.kv_chunk_tokens = 16;
    mo.kv_max_bytes = 2 * per_token;  // less than the prompt's 5 tokens
    auto model = LoadLlama(mo);
    try {
      Generation::Start(model, IdsRequest(40));
      ADD_FAILURE() << "started";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ResourceExhausted);
      EXPECT_THAT(e.what(), HasSubstr("kv_cache.max_bytes"));
    }
    EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
    EXPECT_EQ(model->num_live_generators(), 0);
  }
}

TEST(GenerationPull, FinishBeforeTheEndCancelsTheRestKeepsTheTextAndFreesTheKv) {
  auto model = LoadLlama();
  GenerateRequest req = IdsRequest(200);
  Generation g = Generation::Start(model, req);
  EXPECT_GT(model->kv_stats().in_use_bytes, 0u) << "Start reserved the KV";
  std::string text;
  for (int i = 0; i < 5; ++i) {
    std::optional<GenerationPiece> p = g.Next();
    ASSERT_TRUE(p.has_value());
    EXPECT_FALSE(p->finish_reason.has_value());
    text += p->text;
  }
  const GenerateResult r = g.Finish();
  EXPECT_EQ(r.rows[0].finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(r.rows[0].generated_ids.size(), 5u);
  EXPECT_EQ(r.rows[0].text, text);
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  // Destroyed unfinished: the KV goes too.
  {
    Generation h = Generation::Start(model, req);
    ASSERT_TRUE(h.Next().has_value());
    EXPECT_GT(model->kv_stats().in_use_bytes, 0u);
  }
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
  EXPECT_EQ(model->num_live_generators(), 0);
}

TEST(GenerationPull, AMovedFromGenerationIsDoneAndItsCallsFailCleanly) {
  auto model = LoadLlama();
  Generation g = Generation::Start(model, IdsRequest(40));
  Generation h = std::move(g);
  EXPECT_TRUE(g.done());  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(g.max_length(), 0);
  for (int call = 0; call < 3; ++call) {
    try {
      if (call == 0) g.Next();
      if (call == 1) g.Finish();
      if (call == 2) g.prompt_ids(0);
      ADD_FAILURE() << "call " << call << " on a moved-from Generation did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::FailedPrecondition);
      EXPECT_THAT(e.what(), HasSubstr("moved from"));
    }
  }
  EXPECT_TRUE(h.Next().has_value()) << "the one it was moved to still generates";
  EXPECT_EQ(h.Finish().rows[0].finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(model->kv_stats().in_use_bytes, 0u);
}

TEST(GenerationPull, CancelEndsEveryRowWithATokenlessPiece) {
  auto model = LoadLlama();
  GenerateRequest req = IdsRequest(200);
  Generation g = Generation::Start(model, req);
  ASSERT_TRUE(g.Next().has_value());
  req.cancel.Cancel();  // the Generation's copy shares the flag
  std::optional<GenerationPiece> p = g.Next();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->token, -1);
  EXPECT_EQ(p->finish_reason, FinishReason::kCancelled);
  EXPECT_FALSE(g.Next().has_value());
  EXPECT_EQ(g.Finish().rows[0].finish_reason, FinishReason::kCancelled);
}

TEST(GenerateRequestSet, TheLoopsKeysAreOptionTableRowsAndOtherKeysGoToTheParams) {
  GenerateRequest req;
  req.Set("max_new_tokens", "7");
  req.Set("stop", "\n\n");
  req.Set("stop", "END");
  req.Set("add_generation_prompt", "false");
  req.Set("temperature", "0.5");
  EXPECT_EQ(req.max_new_tokens, 7);
  EXPECT_EQ(req.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_FALSE(req.add_generation_prompt);
  EXPECT_EQ(req.params.temperature, 0.5f);
  for (const char* key : {"max_new_tokens", "stop", "add_generation_prompt"}) {
    const OptionSpec* spec = FindOption(key);
    ASSERT_NE(spec, nullptr) << key;
    EXPECT_TRUE(HasScope(*spec, OptionScope::kRequest)) << key;
  }
  auto message = [&](const char* key, const char* value) -> std::string {
    try {
      req.Set(key, value);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message("max_new_tokens", "-1"), HasSubstr("max_new_tokens"));
  EXPECT_THAT(message("max_new_tokens", "many"), HasSubstr("max_new_tokens"));
  EXPECT_THAT(message("stop", ""), HasSubstr("non-empty"));
  EXPECT_THAT(message("add_generation_prompt", "maybe"), HasSubstr("add_generation_prompt"));
  EXPECT_THAT(message("max_new_tokenz", "1"), HasSubstr("max_new_tokens"));  // did you mean
  EXPECT_EQ(req.max_new_tokens, 7) << "a refused value changes nothing";
  // The Generator's own setter names where the loop's keys go.
  GeneratorParams p;
  try {
    p.Set("max_new_tokens", "3");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("GenerateRequest::Set"));
  }
}

}  // namespace
}  // namespace ebb
