// The option flags every model-loading command shares, so that the CLI spells options the same
// way as the SDKs: --session-option K=V, --provider-option EP.K=V, --run-option K=V,
// --option KEY=V (ebb's keys, e.g. kv_cache.mode=dynamic).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ebb/options.h"

namespace ebb::cli {

struct OptionFlags {
  std::vector<std::string> session;
  std::vector<std::string> provider;
  std::vector<std::string> run;
  std::vector<std::string> ebb;
  std::string ep;  // --ep NAME: the option execution_provider
  // Throws ebb::Error(InvalidArgument) naming the flag for a malformed K=V.
  ModelOptions ToModelOptions() const;
  // The flags as full option keys ("session_options.K", "provider_options.EP.K",
  // "run_options.K", ebb's keys, "execution_provider"), in that order; not yet checked.
  std::vector<std::pair<std::string, std::string>> ToOptionList() const;
};

// Adds the four flags and a help footer that lists every key of the option table by scope.
void AddOptionFlags(CLI::App& cmd, OptionFlags& flags);

// The keys of the option table grouped by scope, for help texts.
std::string OptionKeysHelp();
// "K=V" -> {K, V} (V may contain '='); throws ebb::Error(InvalidArgument) naming `flag` when
// there is no '=' or K is empty.
std::pair<std::string, std::string> SplitKeyValue(const std::string& s, const char* flag);

}  // namespace ebb::cli
