// `ebb generate MODEL_DIR (--prompt TEXT | --prompt-file PATH|- | --input-ids 1,2,3[;4,5,6] |
//  --input-ids-file PATH|- | --messages FILE.json) [...] [--json]`: a thin surface over
// ebb::Generate (ebb/generation.h).
//
// Output: a batch of one with a tokenizer streams the prompt, then the generated text as it
// becomes final, then a newline (stats on stderr). A batch, or a model folder without a
// tokenizer, prints one "[row] ids" line per row. --json prints one JSON object.
// What it keeps when a request ends early: the text generated so far is printed, then
//   - a decoding error (e.g. the KV budget): a newline and "error: …" on stderr, exit 1
//     (--json: the object, with an "error" member);
//   - SIGINT / SIGTERM: the generation stops at the next step, exit 130 / 143;
//   - tokens the tokenizer cannot decode show as U+FFFD, with a warning on stderr.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

#include "cli/commands.h"
#include "cli/input_files.h"
#include "cli/load_progress.h"
#include "cli/options_flags.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "platform/process.h"
#include "runtime/stats_json.h"

namespace ebb::cli {
namespace {

struct GenerateArgs {
  std::string dir;
  std::string prompt;
  std::string prompt_file;
  std::string input_ids;
  std::string input_ids_file;
  std::string messages_file;
  int32_t max_length = 0;
  int32_t max_new_tokens = 0;
  std::vector<std::string> stop;
  // Request keys of the option table, as typed; only those given are set, so that the model's
  // genai_config.json `search` block stays the default (GeneratorParams::Set checks them).
  std::map<std::string, std::string> request;
  std::vector<std::string> params;  // --param KEY=V
  bool json = false;
  std::string chat_template;     // --chat-template FILE: the option chat_template
  std::string json_schema_file;  // --json-schema FILE: the request key json_schema
  std::string grammar_file;      // --grammar FILE: the request key grammar
  OptionFlags options;
  CLI::Option* prompt_opt = nullptr;  // to tell `--prompt ""` from no --prompt
};

// The signal handler's view of the running request: only lock-free atomics.
std::atomic<std::atomic<bool>*> g_cancel_flag{nullptr};
// The stop signal received: 0 none, else 1 + its platform::ProcessSignal.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void OnStopSignal(platform::ProcessSignal sig) {
  g_signal = 1 + static_cast<int>(sig);
  if (std::atomic<bool>* f = g_cancel_flag.load()) f->store(true, std::memory_order_relaxed);
}

// Routes SIGINT and SIGTERM to `token` while alive. A second signal of the same kind gets the
// default action, so a stuck process can still be interrupted (platform::ScopedStopSignals).
class StopSignals {
 public:
  explicit StopSignals(const CancelToken& token) : armed_(token), scope_(OnStopSignal) {}
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  // The handler's view, set before the handlers are installed and cleared after they are
  // restored (members are destroyed in reverse order).
  struct Armed {
    explicit Armed(const CancelToken& token) {
      g_signal = 0;
      g_cancel_flag = token.flag();
    }
    ~Armed() { g_cancel_flag = nullptr; }
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;
  };
  Armed armed_;
  platform::ScopedStopSignals scope_;
};

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Decode that does not give up on ids the tokenizer lacks: each shows as U+FFFD.
std::string DecodeLenient(const Tokenizer& tok, std::span<const int32_t> ids, int* n_unknown) {
  std::string out;
  size_t start = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    if (i < ids.size() && !tok.IdToToken(ids[i]).empty()) continue;
    out += tok.Decode(ids.subspan(start, i - start), /*skip_special_tokens=*/true);
    if (i < ids.size()) {
      out += kReplacementChar;
      if (n_unknown != nullptr) ++*n_unknown;
    }
    start = i + 1;
  }
  return out;
}

std::vector<ChatMessage> ReadMessages(const std::string& path) {
  const std::string text = ReadInputFile(path, "--messages");
  // One depth limit for every JSON document ebb reads (core/json_util.h).
  nlohmann::json j = internal::ParseJsonDocument(text, path);
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array() || j.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                path +
                    ": expected a non-empty JSON array of {\"role\", \"content\"} messages "
                    "(or {\"messages\": [...]})");
  }
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& m = j[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      throw Error(ErrorCode::InvalidArgument,
                  path + ": message " + std::to_string(i) +
                      " needs a string \"role\" and a string \"content\"");
    }
    out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return out;
}

int ExitCodeForSignal(platform::ProcessSignal sig) { return 128 + platform::SignalNumber(sig); }

void RunGenerate(const GenerateArgs& a) {
  const bool has_prompt = a.prompt_opt->count() > 0;
  const int n_inputs = int{has_prompt} + int{!a.prompt_file.empty()} + int{!a.input_ids.empty()} +
                       int{!a.input_ids_file.empty()} + int{!a.messages_file.empty()};
  if (n_inputs != 1) {
    throw Error(ErrorCode::InvalidArgument,
                "give exactly one of --prompt or --input-ids (or --prompt-file, "
                "--input-ids-file, --messages)");
  }
  GenerateRequest req;
  if (has_prompt) {
    req.prompt = a.prompt;
    if (req.prompt.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--prompt is empty; give some text, or start from BOS alone with "
                  "--input-ids <bos id>");
    }
  } else if (!a.prompt_file.empty()) {
    req.prompt = ReadInputFile(a.prompt_file, "--prompt-file");
    if (req.prompt.empty()) {
      throw Error(ErrorCode::InvalidArgument, "--prompt-file " + a.prompt_file + " is empty");
    }
  } else if (!a.input_ids.empty()) {
    req.input_ids = ParseIdRows(a.input_ids, "--input-ids");
  } else if (!a.input_ids_file.empty()) {
    req.input_ids =
        ParseIdRows(ReadInputFile(a.input_ids_file, "--input-ids-file"), "--input-ids-file");
  } else {
    req.messages = ReadMessages(a.messages_file);
  }
  req.max_new_tokens = a.max_new_tokens;
  req.stop = a.stop;
  req.params.max_length = a.max_length;
  for (const auto& [k, v] : a.request) req.Set(k, v);
  if (!a.json_schema_file.empty()) {
    req.Set("json_schema", ReadInputFile(a.json_schema_file, "--json-schema"));
  }
  if (!a.grammar_file.empty()) req.Set("grammar", ReadInputFile(a.grammar_file, "--grammar"));
  for (const auto& kv : a.params) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorCode::InvalidArgument, "--param '" + kv + "' must be written KEY=VALUE");
    }
    req.Set(kv.substr(0, eq), kv.substr(eq + 1));  // e.g. stop=S, max_new_tokens=N too
  }

  ModelOptions mo = a.options.ToModelOptions();
  if (!a.chat_template.empty()) mo.Set("chat_template", a.chat_template);
  const auto t_load = std::chrono::steady_clock::now();
  std::shared_ptr<Model> model;
  {
    LoadProgress progress(a.dir);
    model = ebb::LoadModel(a.dir, mo);
  }
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  const Tokenizer* tok = model->tokenizer();

  GenerateResult res;
  // From here on SIGINT/SIGTERM cancel the request instead of killing the process.
  std::optional<StopSignals> signals(std::in_place, req.cancel);
  const size_t n_rows = req.input_ids.empty() ? 1 : req.input_ids.size();
  const bool stream = !a.json && n_rows == 1 && tok != nullptr;
  const bool echo_prompt = stream && req.messages.empty();  // chat prints the reply alone
  if (echo_prompt) {
    // The prompt as the model will see it (Generate encodes it the same way).
    const std::vector<int32_t> ids =
        req.input_ids.empty() ? tok->Encode(req.prompt, true) : req.input_ids[0];
    std::cout << DecodeLenient(*tok, ids, nullptr) << std::flush;
  }
  TextCallback on_text;
  if (stream) on_text = [](size_t, std::string_view piece) { std::cout << piece << std::flush; };

  try {
    res = Generate(model, req, on_text);
  } catch (...) {
    if (echo_prompt) std::cout << std::endl;  // end the echoed prompt before the error
    throw;
  }
  signals.reset();
  const int sig = g_signal;
  const GeneratorStats& st = res.stats;
  const KvStats kv = model->kv_stats();
  int undecodable = 0;
  for (const auto& row : res.rows) undecodable += row.undecodable_tokens;

  if (a.json) {
    // The library's one value of the result (runtime/stats_json.h), laid out per row as this
    // command has always printed it.
    const bool want_logprobs = req.params.logprobs || req.params.top_logprobs > 0;
    const auto v = internal::GenerateResultJson(res, tok, want_logprobs);
    nlohmann::json j;
    j["sequences"] = nlohmann::json::array();
    j["finish_reason"] = nlohmann::json::array();
    for (size_t r = 0; r < res.rows.size(); ++r) {
      const GenerateRow& row = res.rows[r];
      const auto& vr = v["rows"][r];
      std::vector<int32_t> seq = row.prompt_ids;
      seq.insert(seq.end(), row.generated_ids.begin(), row.generated_ids.end());
      j["sequences"].push_back(seq);
      j["finish_reason"].push_back(nlohmann::json(vr["finish_reason"]));
      if (tok != nullptr) {
        // The prompt as text (for chat: the rendered template) + what was generated.
        j["text"].push_back(DecodeLenient(*tok, row.prompt_ids, &undecodable) + row.text);
        j["completion"].push_back(nlohmann::json(vr["text"]));
      }
    }
    if (want_logprobs) {
      // Per row, one entry per generated id: {id, token, logprob, top_logprobs: [...]}.
      j["logprobs"] = nlohmann::json::array();
      for (const auto& vr : v["rows"]) j["logprobs"].push_back(nlohmann::json(vr["logprobs"]));
    }
    j["usage"] = v["usage"];
    j["memory"] = internal::MemoryStatsJson(model->runtime().Stats());
    // The generation's GeneratorStats (named as in the struct), plus the load time, the
    // length the KV was sized for and the pool's KV now.
    nlohmann::ordered_json stats = {{"load_ms", load_ms}};
    for (const auto& [k, val] : v["stats"].items()) stats[k] = val;
    stats["max_length"] = v["max_length"];
    stats["kv"] = internal::KvStatsJson(kv);
    j["stats"] = stats;
    if (!v["error"].is_null()) j["error"] = v["error"];
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (!stream) {
    for (size_t r = 0; r < res.rows.size(); ++r) {
      std::cout << "[" << r << "]";
      for (int32_t t : res.rows[r].prompt_ids) std::cout << " " << t;
      for (int32_t t : res.rows[r].generated_ids) std::cout << " " << t;
      std::cout << "\n";
    }
  } else {
    std::cout << std::endl;  // flush before the lines on stderr
  }
  std::cout.flush();
  if (undecodable > 0) {
    std::fprintf(stderr,
                 "warning: %d token(s) are not in the tokenizer's vocabulary (%s); shown as "
                 "U+FFFD\n",
                 undecodable, tok->source_name().c_str());
  }
  if (!a.json) {
    std::fprintf(stderr,
                 "prompt %llu tokens, generated %llu; ttft %.1f ms, decode %.1f tok/s; kv %s "
                 "(peak %s)\n",
                 static_cast<unsigned long long>(st.prompt_tokens),
                 static_cast<unsigned long long>(st.generated_tokens), st.ttft_ms,
                 st.decode_tokens_per_s, internal::FormatBytes(st.kv_bytes).c_str(),
                 internal::FormatBytes(kv.peak_in_use_bytes).c_str());
  }
  if (res.error) throw *res.error;  // main prints "error: …", exit 1
  const bool cancelled = std::any_of(res.rows.begin(), res.rows.end(), [](const auto& row) {
    return row.finish_reason == FinishReason::kCancelled;
  });
  if (cancelled) {
    const platform::ProcessSignal s = sig != 0 ? static_cast<platform::ProcessSignal>(sig - 1)
                                               : platform::ProcessSignal::kInterrupt;
    std::fprintf(stderr, "cancelled by %s\n",
                 s == platform::ProcessSignal::kTerminate ? "SIGTERM" : "SIGINT");
    throw ExitStatus{ExitCodeForSignal(s)};
  }
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand(
      "generate",
      "Generate text from a prompt, chat messages or token ids.\n"
      "A batch of one with a tokenizer streams the prompt and the text; otherwise one\n"
      "'[row] ids' line per row (--json: one object with sequences, text, completion,\n"
      "finish_reason per row (stop|length|cancelled|error), usage, stats, memory).\n"
      "A decoding error (e.g. kv_cache.max_bytes) prints the text so far, then the error\n"
      "(exit 1); SIGINT/SIGTERM stop at the next step and print the text so far (exit\n"
      "130/143). Docs: docs/generation.md");
  cmd->add_option("MODEL_DIR", a->dir, "onnxruntime-genai model folder")
      ->required()
      ->check(ModelDir());
  a->prompt_opt = cmd->add_option("--prompt", a->prompt,
                                  "Prompt text (encoded with the model's tokenizer.json)");
  cmd->add_option("--prompt-file", a->prompt_file,
                  "Read the prompt text from a file ('-': stdin), for prompts of any size");
  cmd->add_option("--input-ids", a->input_ids,
                  "Token ids, one row per ';'-separated group: 1,2,3;4,5");
  cmd->add_option("--input-ids-file", a->input_ids_file,
                  "Read token ids from a file ('-': stdin): rows separated by ';' or newlines");
  cmd->add_option("--messages", a->messages_file,
                  "Chat: a JSON file ('-': stdin) of [{\"role\", \"content\"}, …], rendered with "
                  "the model's chat template (or --chat-template's)");
  cmd->add_option("--chat-template", a->chat_template,
                  "Render --messages with this Jinja chat template file (the option "
                  "chat_template; for a model folder without one, or to replace it)");
  // Bounded by int32 (CLI11's NonNegativeNumber prints its range as a 309-digit number).
  cmd->add_option("--max-length", a->max_length, "Total tokens per row (0: model default)")
      ->check(CLI::Range(0, INT32_MAX));
  cmd->add_option("--max-new-tokens", a->max_new_tokens,
                  "Generated tokens per row (0: until --max-length)")
      ->check(CLI::Range(0, INT32_MAX));
  cmd->add_option("--stop", a->stop,
                  "Stop a row when its text contains S (not printed); repeatable")
      ->allow_extra_args(false);
  // Each flag sets one request key (ebb options; the same names as GenerateRequest::Set, the
  // SDKs and HTTP). Unset flags leave the model's genai_config.json `search` defaults.
  auto request_flag = [&](const char* flag, const char* key, const char* help) {
    cmd->add_option_function<std::string>(
        flag, [a, key](const std::string& v) { a->request[key] = v; }, help);
  };
  cmd->add_flag_function(
      "--do-sample", [a](int64_t) { a->request["do_sample"] = "true"; },
      "Sample instead of greedy decoding (default: the config's search.do_sample, else greedy)");
  request_flag("--top-k", "top_k", "Top-k sampling (0: off)");
  request_flag("--top-p", "top_p", "Nucleus sampling, 0 to 1 (1: off)");
  request_flag("--temperature", "temperature", "Sampling temperature, 0 to 100");
  request_flag("--repetition-penalty", "repetition_penalty", "1: off");
  request_flag("--presence-penalty", "presence_penalty",
               "OpenAI presence penalty, -2 to 2, on tokens already generated (0: off)");
  request_flag("--frequency-penalty", "frequency_penalty",
               "OpenAI frequency penalty, -2 to 2, per time a token was generated (0: off)");
  cmd->add_option_function<std::vector<std::string>>(
      "--logit-bias",
      [a](const std::vector<std::string>& v) {
        std::string joined;
        for (const auto& s : v) joined += (joined.empty() ? "" : ",") + s;
        a->request["logit_bias"] = joined;
      },
      "ID=BIAS added to a token's logit, bias -100 (ban) to 100 (force); repeatable or "
      "comma-separated");
  cmd->add_flag_function(
      "--logprobs", [a](int64_t) { a->request["logprobs"] = "true"; },
      "With --json: each generated token's log-probability (\"logprobs\" per row)");
  request_flag("--top-logprobs", "top_logprobs",
               "With --json: also the N (0 to 20) most likely tokens at each step");
  request_flag("--seed", "seed", "RNG seed for sampling");
  request_flag("--kv-cache", "kv_cache.mode", "KV mode: static|dynamic");
  request_flag("--prefill-chunk-size", "prefill_chunk_size",
               "Tokens per prefill Run; 0 = the whole prompt (default: the model's, 256)");
  cmd->add_option("--json-schema", a->json_schema_file,
                  "Constrain the output to JSON that the JSON Schema in FILE accepts ('-': stdin; "
                  "docs/structured_output.md)");
  request_flag("--regex", "regex", "Constrain the output to text the regular expression matches");
  cmd->add_option("--grammar", a->grammar_file,
                  "Constrain the output to the GBNF grammar in FILE (llama.cpp's format)");
  cmd->add_option("--param", a->params,
                  "Any request key of `ebb options`, KEY=V (repeatable), e.g. temperature=0.7");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  AddOptionFlags(*cmd, a->options);
  cmd->add_option("--ep", a->options.ep,
                  "Execution provider: cpu, cuda, dml, ... (default: genai_config.json's list); "
                  "cpu runs on CPU whatever the config names");
  cmd->callback([a] { RunGenerate(*a); });
}

}  // namespace ebb::cli
