#include "cli/options_flags.h"

#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/options.h"

namespace ebb::cli {

std::pair<std::string, std::string> SplitKeyValue(const std::string& s, const char* flag) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(
        ErrorCode::InvalidArgument,
        std::string(flag) + " '" + internal::EscapeForMessage(s) + "' must be written KEY=VALUE");
  }
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::vector<std::pair<std::string, std::string>> OptionFlags::ToOptionList() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : session) {
    auto [k, v] = SplitKeyValue(s, "--session-option");
    out.emplace_back("session_options." + k, v);
  }
  for (const auto& s : provider) {
    auto [k, v] = SplitKeyValue(s, "--provider-option");
    out.emplace_back("provider_options." + k, v);
  }
  for (const auto& s : run) {
    auto [k, v] = SplitKeyValue(s, "--run-option");
    out.emplace_back("run_options." + k, v);
  }
  for (const auto& s : ebb) out.push_back(SplitKeyValue(s, "--option"));
  if (!ep.empty()) out.emplace_back("execution_provider", ep);
  return out;
}

ModelOptions OptionFlags::ToModelOptions() const {
  ModelOptions o;
  for (const auto& [k, v] : ToOptionList()) o.Set(k, v);
  return o;
}

std::string OptionKeysHelp() {
  std::string out =
      "Option keys (the same names in C++, C, Python, HTTP; `ebb options` for types "
      "and defaults):\n";
  const struct {
    OptionScope scope;
    const char* how;
  } groups[] = {
      {OptionScope::kModel, "  --option KEY=V (model load)"},
      {OptionScope::kSession, "  --session-option KEY=V (ORT session, typed)"},
      {OptionScope::kRequest, "  request (generation) parameters"},
      {OptionScope::kRunOption, "  --run-option KEY=V (ORT run options ebb knows)"},
      {OptionScope::kRuntime, "  runtime (process-wide; arena keys also as session options)"}};
  for (const auto& g : groups) {
    out += std::string(g.how) + ":\n   ";
    size_t col = 3;
    for (const auto& s : OptionTable()) {
      if (!HasScope(s, g.scope)) continue;
      if (col + s.key.size() + 1 > 96) {
        out += "\n   ";
        col = 3;
      }
      // Appended, not " " + string: GCC 12's -Wrestrict misfires on that at -O2.
      out += ' ';
      out.append(s.key);
      col += s.key.size() + 1;
    }
    out += "\n";
  }
  out +=
      "  Other session keys go to ORT as session config entries (e.g. "
      "session.use_device_allocator_for_initializers); other run keys as run config entries.\n";
  return out;
}

void AddOptionFlags(CLI::App& cmd, OptionFlags& flags) {
  cmd.add_option("--session-option", flags.session, "ORT session option K=V (repeatable)");
  cmd.add_option("--provider-option", flags.provider,
                 "Execution provider option EP.K=V, e.g. cuda.gpu_mem_limit=2147483648 "
                 "(repeatable)");
  cmd.add_option("--run-option", flags.run, "ORT run option K=V (repeatable)");
  cmd.add_option("--option", flags.ebb, "ebb model option K=V, keys below (repeatable)");
  cmd.footer(OptionKeysHelp());
}

}  // namespace ebb::cli
