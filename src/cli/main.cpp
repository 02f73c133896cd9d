// ebb — command-line entry point.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "ebb/error.h"
#include "ebb/log.h"
#include "ebb/version.h"

namespace {

void PrintVersion() {
  std::cout << "ebb " << ebb::Version() << "\n";
  std::cout << "onnxruntime " << ebb::OrtVersion() << "\n";
  std::cout << "execution providers:";
  for (const auto& p : ebb::AvailableProviders()) std::cout << " " << p;
  std::cout << "\n";
  // WebGPU's devices (Vulkan on Linux): which one `--ep webgpu` would run on, or why none.
  ebb::cli::PrintGpuAdapters(ebb::internal::ListGpuAdapters());
}

// Flushes stdout and reports a failed flush (a full disk, a closed pipe) as an error: output is
// complete when ebb exits 0.
int Finish(int rc) {
  std::cout.flush();
  if (std::fflush(stdout) != 0 || !std::cout) {
    std::cerr << "error: could not write the output (stdout)\n";
    return rc == 0 ? 1 : rc;
  }
  return rc;
}

int Main(int argc, char** argv) {
  CLI::App app{"ebb — a local LLM runtime whose memory ebbs back", "ebb"};
  app.require_subcommand(0, 1);
  bool version = false;
  std::string log_level;
  std::string log_format;
  app.add_flag("--version", version, "Print ebb's version, the loaded ONNX Runtime and its EPs");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off (default: warn)");
  app.add_option("--log-format", log_format,
                 "text|json: how stderr log lines are written (default: text; json: one object "
                 "per line, for log collectors)");
  // Global flags work after the subcommand too: `ebb generate DIR --log-level info`. Subcommands
  // inherit this when they are added, so it comes before the Register* calls.
  app.fallthrough();

  ebb::cli::RegisterInfoCommand(app);
  ebb::cli::RegisterGenerateCommand(app);
  ebb::cli::RegisterOptionsCommand(app);
  ebb::cli::RegisterEmbedCommand(app);
  ebb::cli::RegisterServeCommand(app);
  ebb::cli::RegisterServiceClientCommands(app);
  ebb::cli::RegisterServiceCommand(app);
#ifdef EBB_HAVE_TOKENIZE_CLI
  ebb::cli::RegisterTokenizeCommands(app);
#endif
#ifdef EBB_HAVE_CHAT_TEMPLATE_CLI
  ebb::cli::RegisterChatTemplateCommand(app);
#endif
#ifdef EBB_HAVE_BENCH_CLI
  ebb::cli::RegisterBenchCommand(app);
  ebb::cli::RegisterDemoCommand(app);
#endif

  app.parse_complete_callback([&] {
    if (!log_level.empty()) ebb::SetLogLevel(ebb::ParseLogLevel(log_level));
    if (!log_format.empty()) ebb::SetLogFormat(ebb::ParseLogFormat(log_format));
  });
  try {
    app.parse(argc, argv);
    if (version) {
      PrintVersion();
    } else if (app.get_subcommands().empty()) {
      std::cout << app.help();
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ebb::cli::ExitStatus& e) {
    return e.code;
  } catch (const ebb::Error& e) {
    std::cout.flush();  // what was generated before the error comes first
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "error: internal: " << e.what() << "\n";
    return 70;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Finish(Main(argc, argv)); }
