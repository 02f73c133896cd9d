// `ebb chat-template MODEL_DIR --messages FILE.json [--add-generation-prompt] [--template FILE]`:
// renders a model's chat template and prints the prompt to stdout (no newline added).
//
// FILE.json is either a JSON array of messages, or an object {"messages": [...], ...} whose
// other members (tools, documents, date_string, ...) become template variables.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/files.h"
#include "core/json_util.h"
#include "ebb/chat_template.h"
#include "ebb/error.h"

namespace ebb::cli {
namespace {

struct ChatTemplateArgs {
  std::string model_dir;
  std::string messages_file;
  std::string template_file;
  bool add_generation_prompt = false;
};

void RunChatTemplate(const ChatTemplateArgs& args) {
  // Bounded, regular files only, depth-checked before parsing: dump() below recurses.
  nlohmann::ordered_json input = internal::ParseJsonDocument<nlohmann::ordered_json>(
      internal::ReadRegularFile(args.messages_file, internal::kMaxConfigFileBytes, "messages file"),
      args.messages_file);
  nlohmann::ordered_json messages;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (input.is_array()) {
    messages = std::move(input);
  } else if (input.is_object() && input.contains("messages")) {
    messages = input["messages"];
    for (const auto& [key, value] : input.items()) {
      if (key != "messages") extra[key] = value;
    }
  } else {
    throw Error(ErrorCode::InvalidArgument,
                args.messages_file +
                    ": expected a JSON array of messages or an object with "
                    "\"messages\"");
  }
  auto tmpl = ChatTemplate::FromModelDir(args.model_dir, args.template_file);
  std::cout << tmpl->RenderJson(messages.dump(), args.add_generation_prompt, extra.dump());
  std::cout.flush();
}

}  // namespace

void RegisterChatTemplateCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat-template", "Render a model's chat template to a prompt");
  auto args = std::make_shared<ChatTemplateArgs>();
  cmd->add_option("MODEL_DIR", args->model_dir,
                  "Model folder (tokenizer_config.json / chat_template.jinja)")
      ->required()
      ->check(ModelDir());
  cmd->add_option("--messages", args->messages_file,
                  "JSON file: an array of messages, or {\"messages\": [...], \"tools\": ...}")
      ->required();
  cmd->add_flag("--add-generation-prompt", args->add_generation_prompt,
                "End with the assistant turn's header");
  cmd->add_option("--template,--chat-template", args->template_file,
                  "Use this .jinja file instead of the model's template (as run, chat and "
                  "generate take it)");
  cmd->callback([args] { RunChatTemplate(*args); });
}

}  // namespace ebb::cli
