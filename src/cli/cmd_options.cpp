// `ebb options [--json | --markdown | --keys]`: the option table (ebb/options.h), the one
// vocabulary of every surface. Plain `ebb options` prints it as aligned columns (key, scope, type,
// unit, default) with the allowed values and meaning on an indented, wrapped line below each row.
// docs/options.md embeds the --markdown output (a test keeps them equal).
#include <algorithm>
#include <array>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

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

// "A=x|B=y" (OptionSpec::aliases) as "A=x, B=y": readable, and wrappable at the spaces.
std::string AliasText(std::string_view aliases) {
  std::string out;
  for (char c : aliases) out += c == '|' ? std::string(", ") : std::string(1, c);
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

// Appends `text` to `out` word by word, wrapped at `width` columns, every line indented by
// `indent` spaces.
void AppendWrapped(std::string& out, std::string_view text, size_t indent, size_t width) {
  size_t col = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (col == 0) {
      out.append(indent, ' ');
      col = indent;
    } else if (col + 1 + word.size() > width) {
      out += "\n";
      out.append(indent, ' ');
      col = indent;
    } else {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
  }
  if (col != 0) out += "\n";
}

}  // namespace

std::string OptionTableText(size_t width) {
  const char* headers[] = {"KEY", "SCOPE", "TYPE", "UNIT", "DEFAULT"};
  std::vector<std::array<std::string, 5>> rows;
  for (const auto& s : OptionTable()) {
    rows.push_back({std::string(s.key), Scopes(s), std::string(OptionTypeName(s.type)),
                    s.unit.empty() ? "-" : std::string(s.unit), std::string(s.default_value)});
  }
  std::array<size_t, 5> w{};
  for (size_t c = 0; c < 5; ++c) w[c] = std::string_view(headers[c]).size();
  for (const auto& r : rows) {
    for (size_t c = 0; c < 4; ++c) w[c] = std::max(w[c], r[c].size());
  }
  auto line = [&](const std::array<std::string, 5>& cells) {
    std::string l;
    for (size_t c = 0; c < 4; ++c) {
      l += cells[c];
      l.append(w[c] - cells[c].size() + 2, ' ');
    }
    l += cells[4];
    return l + "\n";
  };
  std::string out = line({headers[0], headers[1], headers[2], headers[3], headers[4]});
  size_t i = 0;
  for (const auto& s : OptionTable()) {
    out += line(rows[i++]);
    std::string more;
    if (!s.values.empty()) more = "values: " + std::string(s.values) + ". ";
    if (!s.aliases.empty()) more += "ONNX Runtime's spellings: " + AliasText(s.aliases) + ". ";
    more += s.doc;
    AppendWrapped(out, more, 4, width);
  }
  out += "\n";
  AppendWrapped(out,
                "Scopes: runtime = RuntimeOptions (process-wide), model = --option at load, "
                "session = --session-option, request = one generation (--param), run = "
                "--run-option. --markdown and --json print the same table; --keys the names "
                "only.",
                0, width);
  return out;
}

std::string OptionTableMarkdown() {
  std::string md =
      "| key | scope | type | unit | default | values | admin only | meaning |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : OptionTable()) {
    md += "| `" + std::string(s.key) + "` | " + Scopes(s) + " | " +
          std::string(OptionTypeName(s.type)) + " | " + Escape(s.unit) + " | " +
          Escape(s.default_value) + " | " + Escape(s.values) +
          (s.aliases.empty() ? "" : " (also ORT's " + AliasText(s.aliases) + ")") + " | " +
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
  auto keys_only = std::make_shared<bool>(false);
  cmd->add_flag("--keys", *keys_only,
                "Print only the key names, grouped by the flag that takes them");
  cmd->callback([as_json, as_md, keys_only] {
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
                     {"aliases", s.aliases},
                     {"admin_only", internal::IsAdminOnlyOption(s.key)},
                     {"doc", s.doc}});
      }
      std::cout << j.dump(2) << "\n";
      return;
    }
    if (*keys_only) {
      std::cout << OptionKeysHelp();
      return;
    }
    std::cout << OptionTableText(100);
  });
}

}  // namespace ebb::cli
