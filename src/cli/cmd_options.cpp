// `ebb options [--json | --markdown]`: the option table (ebb/options.h), the one vocabulary of
// every surface. docs/options.md embeds the --markdown output (a test keeps them equal).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options_flags.h"
#include "core/admin_options.h"
#include "ebb/options.h"

namespace ebb::cli {
namespace {

std::string Scopes(const OptionSpec& s) {
  std::string out;
  for (unsigned bit = 1; bit <= 16; bit <<= 1) {
    if (s.scopes & bit) {
      out +=
          (out.empty() ? "" : ", ") + std::string(OptionScopeName(static_cast<OptionScope>(bit)));
    }
  }
  return out;
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\";
    out += c;
  }
  return out;
}

}  // namespace

std::string OptionTableMarkdown() {
  std::string md =
      "| key | scope | type | unit | default | values | admin only | meaning |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : OptionTable()) {
    md += "| `" + std::string(s.key) + "` | " + Scopes(s) + " | " +
          std::string(OptionTypeName(s.type)) + " | " + Escape(s.unit) + " | " +
          Escape(s.default_value) + " | " + Escape(s.values) + " | " +
          (internal::IsAdminOnlyOption(s.key) ? "yes" : "") + " | " + Escape(s.doc) + " |\n";
  }
  return md;
}

void RegisterOptionsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "options", "List every option key: scope, type, unit, default and meaning (docs/options.md)");
  auto as_json = std::make_shared<bool>(false);
  auto as_md = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "Print a JSON array");
  cmd->add_flag("--markdown", *as_md, "Print the Markdown table of docs/options.md");
  cmd->callback([as_json, as_md] {
    if (*as_md) {
      std::cout << OptionTableMarkdown();
      return;
    }
    if (*as_json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& s : OptionTable()) {
        j.push_back({{"key", s.key},
                     {"scope", Scopes(s)},
                     {"type", OptionTypeName(s.type)},
                     {"unit", s.unit},
                     {"default", s.default_value},
                     {"values", s.values},
                     {"admin_only", internal::IsAdminOnlyOption(s.key)},
                     {"doc", s.doc}});
      }
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << OptionKeysHelp();
  });
}

}  // namespace ebb::cli
