// `ebb tokenize PATH (--text T | --text-file PATH|- | --jsonl) [--no-special] [--json]` and
// `ebb detokenize PATH (--ids 1,2,3 | --ids-file PATH|-) [--skip-special] [--json]`.
//
// PATH is a model folder (with tokenizer.json) or a tokenizer.json file.
//   tokenize --text T     prints the ids separated by spaces (--json: {"ids": […], "tokens": […]})
//   tokenize --text-file  the same for the whole content of a file ('-': stdin), of any size
//   tokenize --jsonl      reads {"text": …} lines on stdin, writes {"ids": […]} lines
//   detokenize --ids …    prints the decoded text (--json: {"text": …})
// Errors are thrown as ebb::Error; main() prints "error: <message>" and exits non-zero.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/input_files.h"
#include "core/json_util.h"
#include "ebb/error.h"
#include "ebb/tokenizer.h"

namespace ebb::cli {
namespace {

std::vector<int32_t> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(cur, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != cur.size() || v < 0 || v > INT32_MAX) {
      throw Error(ErrorCode::InvalidArgument, "--ids: \"" + cur + "\" is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
    cur.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '[' || c == ']') {
      flush();
    } else {
      cur.push_back(c);
    }
  }
  flush();
  return ids;
}

}  // namespace

void RegisterTokenizeCommands(CLI::App& app) {
  {
    auto* cmd = app.add_subcommand("tokenize", "Encode text to token ids with a model's tokenizer");
    auto path = std::make_shared<std::string>();
    auto text = std::make_shared<std::string>();
    auto text_file = std::make_shared<std::string>();
    auto jsonl = std::make_shared<bool>(false);
    auto no_special = std::make_shared<bool>(false);
    auto as_json = std::make_shared<bool>(false);
    cmd->add_option("PATH", *path, "Model folder or tokenizer.json")
        ->required()
        ->check(ModelDir(/*or_file=*/true));
    auto* text_opt = cmd->add_option("--text", *text, "Text to encode");
    auto* jsonl_opt =
        cmd->add_flag("--jsonl", *jsonl, "Read {\"text\": …} lines on stdin, write {\"ids\": …}");
    auto* text_file_opt = cmd->add_option("--text-file", *text_file,
                                          "Encode the whole content of a file ('-': stdin)");
    text_opt->excludes(jsonl_opt);
    text_file_opt->excludes(jsonl_opt);
    text_file_opt->excludes(text_opt);
    cmd->add_flag("--no-special", *no_special, "Do not add the post-processor's special tokens");
    cmd->add_flag("--json", *as_json, "Print {\"ids\": […], \"tokens\": […]}");
    cmd->callback([=] {
      if (text_opt->count() == 0 && text_file_opt->count() == 0 && !*jsonl) {
        throw Error(ErrorCode::InvalidArgument,
                    "tokenize: give --text TEXT, --text-file PATH|- or --jsonl");
      }
      if (text_file_opt->count() > 0) *text = ReadInputFile(*text_file, "--text-file");
      const auto tokenizer = Tokenizer::FromFile(*path);
      const bool add_special = !*no_special;
      if (*jsonl) {
        std::string line;
        size_t line_no = 0;
        while (std::getline(std::cin, line)) {
          ++line_no;
          if (line.empty()) continue;
          const nlohmann::json in =
              internal::ParseJsonDocument(line, "stdin line " + std::to_string(line_no));
          if (!in.is_object() || !in.contains("text") || !in["text"].is_string()) {
            throw Error(ErrorCode::InvalidArgument,
                        "stdin line " + std::to_string(line_no) + ": expected {\"text\": \"…\"}");
          }
          nlohmann::json out;
          out["ids"] = tokenizer->Encode(in["text"].get<std::string>(), add_special);
          std::cout << out.dump() << "\n";
        }
        std::cout.flush();
        return;
      }
      const auto ids = tokenizer->Encode(*text, add_special);
      if (*as_json) {
        nlohmann::json out;
        out["ids"] = ids;
        std::vector<std::string> tokens;
        for (int32_t id : ids) tokens.push_back(tokenizer->IdToToken(id));
        out["tokens"] = tokens;
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return;
      }
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
    });
  }
  {
    auto* cmd = app.add_subcommand("detokenize", "Decode token ids to text");
    auto path = std::make_shared<std::string>();
    auto ids_text = std::make_shared<std::string>();
    auto skip_special = std::make_shared<bool>(false);
    auto as_json = std::make_shared<bool>(false);
    cmd->add_option("PATH", *path, "Model folder or tokenizer.json")
        ->required()
        ->check(ModelDir(/*or_file=*/true));
    auto ids_file = std::make_shared<std::string>();
    auto* ids_opt = cmd->add_option("--ids", *ids_text, "Token ids, e.g. 1,2,3");
    auto* ids_file_opt =
        cmd->add_option("--ids-file", *ids_file, "Read the token ids from a file ('-': stdin)");
    ids_opt->excludes(ids_file_opt);
    cmd->add_flag("--skip-special", *skip_special, "Drop special tokens");
    cmd->add_flag("--json", *as_json, "Print {\"text\": …}");
    cmd->callback([=] {
      if (ids_opt->count() == 0 && ids_file_opt->count() == 0) {
        throw Error(ErrorCode::InvalidArgument,
                    "detokenize: give --ids 1,2,3 or --ids-file PATH|-");
      }
      if (ids_file_opt->count() > 0) *ids_text = ReadInputFile(*ids_file, "--ids-file");
      const auto ids = ParseIds(*ids_text);
      const auto tokenizer = Tokenizer::FromFile(*path);
      const std::string text = tokenizer->Decode(ids, *skip_special);
      if (*as_json) {
        nlohmann::json out;
        out["text"] = text;
        std::cout << out.dump() << "\n";
      } else {
        std::cout << text << "\n";
      }
    });
  }
}

}  // namespace ebb::cli
