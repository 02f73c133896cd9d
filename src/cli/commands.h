// Registration of the `ebb` CLI's subcommands. Each Register* adds one or more subcommands to
// the app; their callbacks throw ebb::Error on failure, which main() prints as
// "error: <message>" with a non-zero exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <string>

#include "ebb/error.h"
#include "memory/gpu_adapters.h"
#include "model/gguf_check.h"

namespace ebb::cli {

// Checks a MODEL_DIR argument before the command runs, so that a wrong path is reported as such
// rather than as the first file the command misses. `or_file`: a file is accepted too (e.g.
// tokenizer.json). Throws ebb::Error(NotFound), which main() prints as "error: ...".
inline CLI::Validator ModelDir(bool or_file = false) {
  return CLI::Validator(
      [or_file](std::string& path) -> std::string {
        std::error_code ec;
        const auto st = std::filesystem::status(path, ec);
        if (!std::filesystem::exists(st)) {
          throw Error(ErrorCode::NotFound,
                      "no model folder at " + path + " (not found)" +
                          (or_file ? "; give a model folder or a tokenizer.json" : ""));
        }
        internal::RefuseGgufModel(path);  // a .gguf file or folder: what ebb runs instead
        if (!or_file && !std::filesystem::is_directory(st)) {
          throw Error(ErrorCode::NotFound,
                      path + " is not a folder; give the model folder (with genai_config.json)");
        }
        return "";
      },
      or_file ? "PATH" : "DIR");
}
// Thrown by a command that has printed what it has and wants the process to exit with `code`
// (e.g. 130 after SIGINT); main() returns it.
struct ExitStatus {
  int code = 1;
};

void RegisterInfoCommand(CLI::App& app);
void RegisterGenerateCommand(CLI::App& app);
void RegisterOptionsCommand(CLI::App& app);
void RegisterEmbedCommand(CLI::App& app);
void RegisterServeCommand(CLI::App& app);
// ps, model list|load|unload|stats|shrink|set-runtime-option|clear-runtime-option, run, chat.
void RegisterServiceClientCommands(CLI::App& app);
// `ebb service start|stop|restart|status` (docs/service.md).
void RegisterServiceCommand(CLI::App& app);
// The option table as docs/options.md shows it (`ebb options --markdown`).
std::string OptionTableMarkdown();
// The same table for a terminal: aligned columns (key, scope, type, unit, default), then the values
// and meaning of each key indented and wrapped at `width` columns.
std::string OptionTableText(size_t width);
#ifdef EBB_HAVE_TOKENIZE_CLI
void RegisterTokenizeCommands(CLI::App& app);
#endif
#ifdef EBB_HAVE_CHAT_TEMPLATE_CLI
void RegisterChatTemplateCommand(CLI::App& app);
#endif
#ifdef EBB_HAVE_BENCH_CLI
void RegisterBenchCommand(CLI::App& app);
// `ebb demo MODEL_DIR`: the memory story `make run` shows (cmd_demo.cpp).
void RegisterDemoCommand(CLI::App& app);
#endif

// The Vulkan devices ebb can see, WebGPU's marked (`ebb info --ep webgpu`, `ebb --version`).
void PrintGpuAdapters(const internal::GpuAdapterList& list);

}  // namespace ebb::cli
