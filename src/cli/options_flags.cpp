#include "cli/options_flags.h"

#include "core/strings.h"
#include "ebb/error.h"

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

ModelOptions OptionFlags::ToModelOptions() const {
  ModelOptions o;
  for (const auto& s : session) {
    auto [k, v] = SplitKeyValue(s, "--session-option");
    o.Set("session_options." + k, v);
  }
  for (const auto& s : provider) {
    auto [k, v] = SplitKeyValue(s, "--provider-option");
    o.Set("provider_options." + k, v);
  }
  for (const auto& s : run) {
    auto [k, v] = SplitKeyValue(s, "--run-option");
    o.Set("run_options." + k, v);
  }
  for (const auto& s : ebb) {
    auto [k, v] = SplitKeyValue(s, "--option");
    o.Set(k, v);
  }
  return o;
}

void AddOptionFlags(CLI::App& cmd, OptionFlags& flags) {
  cmd.add_option("--session-option", flags.session, "ORT session option K=V (repeatable)");
  cmd.add_option("--provider-option", flags.provider,
                 "Execution provider option EP.K=V, e.g. cuda.gpu_mem_limit=2GiB (repeatable)");
  cmd.add_option("--run-option", flags.run, "ORT run option K=V (repeatable)");
  cmd.add_option("--option", flags.ebb,
                 "ebb option K=V: kv_cache.mode, kv_cache.max_bytes, kv_cache.retain_bytes, "
                 "kv_cache.chunk_tokens, prefill_chunk_size (repeatable)");
}

}  // namespace ebb::cli
