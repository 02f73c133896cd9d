// `ebb generate MODEL_DIR (--prompt TEXT | --input-ids 1,2,3[;4,5,6]) [...] [--json]`
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options_flags.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/generator.h"
#include "ebb/model.h"
#include "ebb/tokenizer.h"

namespace ebb::cli {
namespace {

struct GenerateArgs {
  std::string dir;
  std::string prompt;
  std::string input_ids;
  int32_t max_length = 0;
  bool do_sample = false;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float temperature = 1.0f;
  float repetition_penalty = 1.0f;
  uint64_t seed = 0;
  std::string kv_cache;
  int32_t prefill_chunk_size = -1;
  bool json = false;
  OptionFlags options;
};

void RunGenerate(const GenerateArgs& a) {
  if (a.prompt.empty() == a.input_ids.empty()) {
    throw Error(ErrorCode::InvalidArgument, "give exactly one of --prompt or --input-ids");
  }
  std::vector<std::vector<int32_t>> rows;
  // The tokenizer is optional for --input-ids (text is shown when there is one) and required
  // for --prompt.
  std::unique_ptr<Tokenizer> tokenizer;
  const std::filesystem::path tok_path = std::filesystem::path(a.dir) / "tokenizer.json";
  if (!a.prompt.empty() || std::filesystem::exists(tok_path)) {
    if (!std::filesystem::exists(tok_path)) {
      throw Error(ErrorCode::NotFound, tok_path.string() +
                                           " not found: --prompt needs the model's tokenizer; "
                                           "pass token ids with --input-ids 1,2,3 instead");
    }
    tokenizer = Tokenizer::FromFile(tok_path);
  }
  if (!a.prompt.empty()) {
    rows.push_back(tokenizer->Encode(a.prompt, /*add_special_tokens=*/true));
    if (rows.back().empty()) {
      throw Error(ErrorCode::InvalidArgument, "--prompt encodes to no tokens; give some text");
    }
  } else {
    for (const auto& group : internal::Split(a.input_ids, ';')) {
      rows.push_back(internal::ParseIntList(group, "--input-ids"));
    }
  }
  ModelOptions mo = a.options.ToModelOptions();
  const auto t_load = std::chrono::steady_clock::now();
  auto model = Model::Load(a.dir, mo);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();

  GeneratorParams gp;
  gp.max_length = a.max_length;
  gp.batch_size = static_cast<int32_t>(rows.size());
  gp.do_sample = a.do_sample;
  gp.top_k = a.top_k;
  gp.top_p = a.top_p;
  gp.temperature = a.temperature;
  gp.repetition_penalty = a.repetition_penalty;
  gp.seed = a.seed;
  if (!a.kv_cache.empty()) gp.kv_mode = ParseKvMode(a.kv_cache);
  if (a.prefill_chunk_size >= 0) gp.prefill_chunk_size = a.prefill_chunk_size;

  Generator gen(model, gp);
  gen.AppendTokens(rows);
  const bool stream = !a.json && rows.size() == 1;
  // Streaming: text as it becomes complete UTF-8 when there is a tokenizer, else token ids.
  std::unique_ptr<StreamDecoder> stream_text;
  if (stream && tokenizer) {
    stream_text = std::make_unique<StreamDecoder>(*tokenizer, /*skip_special_tokens=*/true);
    std::cout << tokenizer->Decode(gen.GetSequence(0), /*skip_special_tokens=*/true) << std::flush;
  } else if (stream) {
    for (int32_t t : gen.GetSequence(0)) std::cout << t << " ";
    std::cout << "|" << std::flush;
  }
  while (!gen.IsDone()) {
    gen.GenerateNextToken();
    if (stream_text) {
      std::cout << stream_text->Put(gen.GetNextTokens()[0]) << std::flush;
    } else if (stream) {
      std::cout << " " << gen.GetNextTokens()[0] << std::flush;
    }
  }
  if (stream_text) std::cout << stream_text->Flush();
  const GeneratorStats st = gen.Stats();
  const KvStats kv = model->kv_stats();
  if (a.json) {
    nlohmann::json j;
    j["sequences"] = nlohmann::json::array();
    for (size_t r = 0; r < rows.size(); ++r) {
      auto s = gen.GetSequence(r);
      j["sequences"].push_back(std::vector<int32_t>(s.begin(), s.end()));
      if (tokenizer) j["text"].push_back(tokenizer->Decode(s, /*skip_special_tokens=*/true));
    }
    j["memory"] = nlohmann::json::parse(ToJson(model->memory_stats()));
    j["stats"] = {{"load_ms", load_ms},
                  {"ttft_ms", st.ttft_ms},
                  {"decode_tokens_per_s", st.decode_tokens_per_s},
                  {"prompt_tokens", st.prompt_tokens},
                  {"generated_tokens", st.generated_tokens},
                  {"model_runs", st.model_runs},
                  {"max_length", gen.max_length()},
                  {"kv_bytes", st.kv_bytes},
                  {"kv",
                   {{"in_use_bytes", kv.in_use_bytes},
                    {"reserved_bytes", kv.reserved_bytes},
                    {"peak_in_use_bytes", kv.peak_in_use_bytes}}}};
    std::cout << j.dump() << "\n";
    return;
  }
  if (!stream) {
    for (size_t r = 0; r < rows.size(); ++r) {
      std::cout << "[" << r << "]";
      for (int32_t t : gen.GetSequence(r)) std::cout << " " << t;
      std::cout << "\n";
    }
  } else {
    std::cout << std::endl;  // flush before the stats line on stderr
  }
  std::fprintf(stderr,
               "prompt %llu tokens, generated %llu; ttft %.1f ms, decode %.1f tok/s; kv %s "
               "(peak %s)\n",
               static_cast<unsigned long long>(st.prompt_tokens),
               static_cast<unsigned long long>(st.generated_tokens), st.ttft_ms,
               st.decode_tokens_per_s, internal::FormatBytes(st.kv_bytes).c_str(),
               internal::FormatBytes(kv.peak_in_use_bytes).c_str());
}

}  // namespace

void RegisterGenerateCommand(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate tokens from a prompt");
  cmd->add_option("MODEL_DIR", a->dir, "onnxruntime-genai model folder")
      ->required()
      ->check(ModelDir());
  cmd->add_option("--prompt", a->prompt, "Prompt text (encoded with the model's tokenizer.json)");
  cmd->add_option("--input-ids", a->input_ids,
                  "Token ids, one row per ';'-separated group: 1,2,3;4,5");
  cmd->add_option("--max-length", a->max_length, "Total tokens per row (0: model default)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--do-sample", a->do_sample, "Sample instead of greedy decoding");
  cmd->add_option("--top-k", a->top_k, "Top-k sampling (0: off)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling (1: off)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--temperature", a->temperature, "Sampling temperature")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--repetition-penalty", a->repetition_penalty, "1: off");
  cmd->add_option("--seed", a->seed, "RNG seed for sampling");
  cmd->add_option("--kv-cache", a->kv_cache, "KV mode: static|dynamic")
      ->check(CLI::IsMember({"static", "dynamic"}));
  cmd->add_option("--prefill-chunk-size", a->prefill_chunk_size,
                  "Tokens per prefill Run; 0 = the whole prompt (default: the model's, 256)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", a->json, "Print one JSON object");
  AddOptionFlags(*cmd, a->options);
  cmd->add_option("--ep", a->options.ep,
                  "Execution provider: cpu, cuda, dml, ... (default: genai_config.json's list); "
                  "cpu runs on CPU whatever the config names");
  cmd->callback([a] { RunGenerate(*a); });
}

}  // namespace ebb::cli
