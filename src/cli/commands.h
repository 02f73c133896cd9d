// Registration of the `ebb` CLI's subcommands. Each Register* adds one or more subcommands to
// the app; their callbacks throw ebb::Error on failure, which main() prints as
// "error: <message>" with a non-zero exit status.
#pragma once

#include <CLI/CLI.hpp>

namespace ebb::cli {

// Thrown by a command that has printed what it has and wants the process to exit with `code`
// (e.g. 130 after SIGINT); main() returns it.
struct ExitStatus {
  int code = 1;
};

void RegisterInfoCommand(CLI::App& app);
void RegisterGenerateCommand(CLI::App& app);
#ifdef EBB_HAVE_TOKENIZE_CLI
void RegisterTokenizeCommands(CLI::App& app);
#endif
#ifdef EBB_HAVE_CHAT_TEMPLATE_CLI
void RegisterChatTemplateCommand(CLI::App& app);
#endif
#ifdef EBB_HAVE_BENCH_CLI
void RegisterBenchCommand(CLI::App& app);
#endif

}  // namespace ebb::cli
