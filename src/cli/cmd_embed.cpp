// `ebb embed MODEL (--text T ... | --jsonl FILE | --text-file FILE) [--json] [--option K=V]`:
// embeddings of texts, one vector per line, or an OpenAI-like JSON document.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/input_files.h"
#include "cli/load_progress.h"
#include "cli/options_flags.h"
#include "core/strings.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "ebb/runtime.h"

namespace ebb::cli {
namespace {

struct EmbedArgs {
  std::string model_dir;
  std::vector<std::string> texts;
  std::string jsonl;
  std::string text_file;
  bool json = false;
  OptionFlags flags;
};

// One text per line of a JSON Lines file: a JSON string, or an object with "text" (or "input").
std::vector<std::string> ReadJsonl(const std::string& path) {
  const std::string content = ReadInputFile(path, "--jsonl");
  std::vector<std::string> out;
  size_t line_no = 0;
  for (const auto& line : internal::Split(content, '\n')) {
    ++line_no;
    if (internal::Trim(line).empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorCode::InvalidArgument, "--jsonl " + path + ": line " +
                                                  std::to_string(line_no) + " is not JSON (" +
                                                  internal::OneLine(e.what()) + ")");
    }
    const nlohmann::json* t = &j;
    if (j.is_object()) {
      auto it = j.find("text");
      if (it == j.end()) it = j.find("input");
      t = it == j.end() ? nullptr : &*it;
    }
    if (t == nullptr || !t->is_string()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--jsonl " + path + ": line " + std::to_string(line_no) +
                      " must be a JSON string or an object with a \"text\" string");
    }
    out.push_back(t->get<std::string>());
  }
  return out;
}

void Run(const EmbedArgs& a) {
  EmbedRequest req;
  OptionFlags model_flags = a.flags;
  model_flags.ebb.clear();
  for (const auto& s : a.flags.ebb) {
    auto [k, v] = SplitKeyValue(s, "--option");
    if (k.starts_with("embed.")) {
      req.Set(k, v);
    } else {
      model_flags.ebb.push_back(s);
    }
  }
  const int sources = !a.texts.empty() + !a.jsonl.empty() + !a.text_file.empty();
  if (sources != 1) {
    throw Error(ErrorCode::InvalidArgument,
                "give the texts with exactly one of --text, --jsonl or --text-file");
  }
  if (!a.texts.empty()) {
    req.texts = a.texts;
  } else if (!a.jsonl.empty()) {
    req.texts = ReadJsonl(a.jsonl);
  } else {
    for (const auto& line : internal::Split(ReadInputFile(a.text_file, "--text-file"), '\n')) {
      if (!line.empty()) req.texts.push_back(std::string(line));
    }
  }
  if (req.texts.empty()) {
    throw Error(ErrorCode::InvalidArgument, "no texts to embed (the input file has none)");
  }
  std::shared_ptr<Model> model;
  {
    LoadProgress progress(a.model_dir);
    model = ebb::LoadModel(a.model_dir, model_flags.ToModelOptions());
  }
  const EmbedResult r = Embed(model, req);
  if (a.json) {
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < r.embeddings.size(); ++i) {
      data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", r.embeddings[i]}});
    }
    nlohmann::json doc = {
        {"object", "list"},
        {"data", data},
        {"model", model->info().path.filename().string()},
        {"usage",
         {{"prompt_tokens", r.usage.prompt_tokens}, {"total_tokens", r.usage.total_tokens}}},
        {"ebb",
         {{"pooling", PoolingName(r.pooling)},
          {"normalized", r.normalized},
          {"dimensions", r.dimensions},
          {"max_tokens", r.max_tokens},
          {"truncated", r.num_truncated},
          {"runs", r.num_runs}}}};
    std::cout << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  for (const auto& v : r.embeddings) {
    std::string line;
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%.7g", i ? " " : "", static_cast<double>(v[i]));
      line += buf;
    }
    std::cout << line << "\n";
  }
}

}  // namespace

void RegisterEmbedCommand(CLI::App& app) {
  auto args = std::make_shared<EmbedArgs>();
  auto* cmd = app.add_subcommand(
      "embed",
      "Embeddings of texts with an encoder model (docs/embeddings.md): one line of numbers per "
      "text, in input order, or --json");
  cmd->add_option("MODEL_DIR", args->model_dir,
                  "Encoder model folder (sentence-transformers export or genai_config.json)")
      ->required()
      ->check(ModelDir());
  cmd->add_option("--text", args->texts, "A text to embed (repeatable)");
  cmd->add_option("--jsonl", args->jsonl,
                  "JSON Lines file ('-' = stdin): one string, or {\"text\": ...}, per line");
  cmd->add_option("--text-file", args->text_file, "Text file ('-' = stdin): one text per line");
  cmd->add_flag("--json", args->json,
                "Print an OpenAI-like JSON document: data[{index, embedding}], usage");
  AddOptionFlags(*cmd, args->flags);
  cmd->footer(OptionKeysHelp() +
              "  --option also takes the embedding request keys embed.* (e.g. "
              "embed.pooling=cls, embed.dimensions=128).\n");
  cmd->callback([args] { Run(*args); });
}

}  // namespace ebb::cli
