// The CLI's mirror of the SDK against the running service: `ebb ps`, `ebb model
// list|load|unload|stats|shrink|release-weights|pin-prefix|unpin-prefix|drop-prefix-cache|
// set-runtime-option|clear-runtime-option`, `ebb run` and
// `ebb chat` (docs/service.md). The flags and keys are the SDK's: --session-option,
// --provider-option, --run-option, --option, and the option table's names.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/input_files.h"
#include "cli/load_progress.h"
#include "cli/options_flags.h"
#include "cli/service_client.h"
#include "core/files.h"
#include "core/option_parse.h"
#include "core/strings.h"
#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/model.h"
#include "ebb/runtime.h"

namespace ebb::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Conn {
  std::string url;
  std::string api_key;
  bool json = false;
};

void AddConnFlags(CLI::App* cmd, Conn& c) {
  cmd->add_option("--url", c.url, "The service (default: $EBB_URL, else the running service)");
  cmd->add_option("--api-key", c.api_key, "API key (default: $EBB_API_KEY)");
  cmd->add_flag("--json", c.json, "Print the service's JSON");
}

std::string Mib(const Json& v) {
  if (!v.is_number() || v.get<double>() < 0) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v.get<double>() / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

// A size in the largest binary unit under it, one decimal, no space, for a column of two
// ("12.0M/64.0M", "32.0K/8.0M", "0B/64.0M").
std::string ShortSize(const Json& v) {
  if (!v.is_number() || v.get<double>() < 0) return "-";
  double x = v.get<double>();
  if (x < 1024) return std::to_string(static_cast<uint64_t>(x)) + "B";
  const char* unit = "K";
  for (const char* u : {"K", "M", "G", "T"}) {
    unit = u;
    x /= 1024.0;
    if (x < 1024) break;
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << x << unit;
  return s.str();
}

// The CACHE column: the prefix cache's bytes over prefix_cache.max_bytes ("-" when it is off and
// empty, for an encoder, or from a service without prefix cache figures).
std::string PrefixCacheCell(const Json& m) {
  if (!m.value("loaded", false) || m.value("is_encoder", false) || !m.contains("prefix_cache") ||
      !m["prefix_cache"].is_object()) {
    return "-";
  }
  const Json& c = m["prefix_cache"];
  const Json bytes = c.value("bytes", Json(0));
  const Json max = c.value("max_bytes", Json(0));
  if (max == 0) return bytes == 0 ? "-" : ShortSize(bytes) + "/off";
  return ShortSize(bytes) + "/" + ShortSize(max);
}

// A model's (or the runtime's) accelerator figures (ebb::DeviceMemory), or null when it has none
// (a model on the CPU, an older service).
const Json* DeviceOf(const Json& m) {
  if (!m.contains("device") || !m["device"].is_object()) return nullptr;
  const Json& d = m["device"];
  return d.value("available", false) ? &d : nullptr;
}

// `ebb ps`'s device cells: the device, its KV in use / peak, and what gpu_mem_limit counts / the
// limit ("-" for a model on the CPU).
std::vector<std::string> DeviceCells(const Json& m) {
  const Json* d = m.value("loaded", false) ? DeviceOf(m) : nullptr;
  if (d == nullptr) return {"-", "-", "-"};
  const Json kv = d->contains("kv") && (*d)["kv"].is_object() ? (*d)["kv"] : Json::object();
  const Json limit = d->value("limit_bytes", Json(0));
  const std::string used = ShortSize(d->value("used_bytes", Json(0)));
  return {d->value("device", std::string("?")),
          ShortSize(kv.value("in_use_bytes", Json(0))) + "/" +
              ShortSize(kv.value("peak_in_use_bytes", Json(0))),
          limit.is_number() && limit.get<double>() > 0 ? used + "/" + ShortSize(limit) : used};
}

// One line of a device's figures: "webgpu:0 (ADAPTER): KV in use X, peak Y; weights W, retained
// R, used U of L; ORT cache C, MODE; driver: process P, device D of T" (the unavailable parts
// left out).
std::string DeviceLine(const Json& d) {
  const auto known = [](const Json& v) { return v.is_number() && v.get<double>() >= 0; };
  std::ostringstream s;
  s << d.value("device", std::string("?"));
  const std::string adapter = d.value("adapter", std::string());
  if (!adapter.empty()) s << " (" << adapter << ")";
  const Json kv = d.contains("kv") && d["kv"].is_object() ? d["kv"] : Json::object();
  s << ": KV in use " << Mib(kv.value("in_use_bytes", Json(0))) << ", peak "
    << Mib(kv.value("peak_in_use_bytes", Json(0))) << "; weights "
    << Mib(d.value("weights_bytes", Json(0))) << ", retained "
    << Mib(d["kv"].value("retained_bytes", Json(0))) << ", used "
    << Mib(d.value("used_bytes", Json(0)));
  const Json limit = d.value("limit_bytes", Json(0));
  s << (known(limit) && limit.get<double>() > 0 ? " of " + Mib(limit) : " (no gpu_mem_limit)");
  const Json cache = d.value("ort_cache_bytes", Json(-1));
  const std::string mode = d.value("cache_mode", std::string());
  if (known(cache) || !mode.empty()) {
    s << "; ORT cache " << (known(cache) ? Mib(cache) : std::string("not countable"));
    if (!mode.empty()) s << ", " << mode;
  }
  const Json process = d.value("driver_process_bytes", Json(-1));
  const Json used = d.value("driver_used_bytes", Json(-1));
  const Json total = d.value("driver_total_bytes", Json(-1));
  if (known(process) || known(used) || known(total)) {
    s << "; driver: process " << Mib(process) << ", device " << Mib(used) << " of " << Mib(total);
  }
  return s.str();
}

std::string Until(const Json& m) {
  if (m.value("pinned", false)) return "pinned";
  if (m.value("running", 0) > 0) return "running";
  const Json& e = m["expires_at_unix_ms"];
  if (!e.is_number()) return m.value("loaded", false) ? "forever" : "-";
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t left = std::max<int64_t>(0, e.get<int64_t>() - now) / 1000;
  std::ostringstream s;
  if (left >= 60) s << left / 60 << "m";
  s << left % 60 << "s";
  return "in " + s.str();
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    w.resize(std::max(w.size(), r.size()));
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      std::cout << r[i];
      if (i + 1 < r.size()) std::cout << std::string(w[i] - r[i].size() + 3, ' ');
    }
    std::cout << "\n";
  }
}

void Ps(const Conn& c, bool all) {
  ServiceClient s(c.url, c.api_key);
  const Json rt = s.Runtime();
  if (c.json) {
    std::cout << rt.dump(2) << "\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"MODEL", "SIZE", "WEIGHTS", "RESIDENT",
                                                 "KV IN USE", "KV RESERVED", "CACHE", "ARENA",
                                                 "RUNNING", "UNTIL"}};
  // The device columns only when a listed model runs on one (its KV is there, not in KV IN USE).
  bool devices = false;
  for (const Json& m : rt["models"]) {
    if (m.value("loaded", false) && DeviceOf(m) != nullptr) devices = true;
  }
  if (devices) {
    for (const char* h : {"DEVICE", "DEVICE KV/PEAK", "DEVICE USED/LIMIT"}) rows[0].push_back(h);
  }
  for (const Json& m : rt["models"]) {
    if (!all && !m.value("loaded", false)) continue;
    const bool loaded = m.value("loaded", false);
    // The weights' state: anonymous (ORT's copies), file-backed (a cache entry's pages) or
    // released; resident: the file-backed pages in memory now (anonymous: the whole size).
    const Json w =
        loaded && m.contains("weights") && m["weights"].is_object() ? m["weights"] : Json::object();
    const std::string state = w.value("state", std::string("-"));
    const std::string resident = !w.contains("state") ? "-"
                                 : state == "anonymous"
                                     ? Mib(w.value("anon_bytes", Json(0)))
                                     : Mib(w.value("file_resident_bytes", Json(0)));
    // Per-model figures may be missing (an older service): "-" rather than a missing key read.
    const Json kv = m.contains("kv") && m["kv"].is_object() ? m["kv"] : Json::object();
    const Json arena =
        m.contains("cpu_arena") && m["cpu_arena"].is_object() ? m["cpu_arena"] : Json::object();
    rows.push_back({m["id"].get<std::string>(),
                    loaded ? Mib(m.value("weights_bytes", Json(0))) : "-", state, resident,
                    loaded ? Mib(kv.value("in_use_bytes", Json(0))) : "-",
                    loaded ? Mib(kv.value("reserved_bytes", Json(0))) : "-", PrefixCacheCell(m),
                    loaded && arena.value("available", false)
                        ? Mib(arena.value("total_allocated_bytes", Json(0)))
                        : "-",
                    std::to_string(m.value("running", 0)), Until(m)});
    if (devices) {
      for (std::string& cell : DeviceCells(m)) rows.back().push_back(std::move(cell));
    }
  }
  PrintTable(rows);
  const Json& mem = rt["stats"];  // Runtime::Stats(): memory.limit and what it counts
  std::cout << "process RSS " << Mib(mem["process"]["rss_bytes"]) << " · budget "
            << (mem["limit_bytes"].get<uint64_t>() > 0 ? Mib(mem["limit_bytes"]) : "none")
            << " · used " << Mib(mem["used_bytes"]) << " · " << rt["queue"]["running"]
            << " running, " << rt["queue"]["queued"] << " queued\n";
  // Runtime::Stats()'s device: the models' device figures summed, the first device's names.
  if (const Json* d = DeviceOf(mem)) std::cout << "device " << DeviceLine(*d) << "\n";
}

// One line of a model's prefix cache figures (PrefixCacheStats).
void PrintPrefixCache(const Json& c) {
  if (!c.is_object()) return;
  std::cout << "  prefix cache " << Mib(c.value("bytes", Json(0))) << " of "
            << (c.value("max_bytes", Json(0)) == 0 ? std::string("0 (off)")
                                                   : Mib(c.value("max_bytes", Json(0))))
            << ", pinned " << Mib(c.value("pinned_bytes", Json(0))) << ", "
            << c.value("blocks", Json(0)) << " blocks; hits " << c.value("hits", Json(0))
            << ", misses " << c.value("misses", Json(0)) << ", tokens reused "
            << c.value("tokens_reused", Json(0)) << "\n";
}

void PrintModel(const Conn& c, const Json& j) {
  if (c.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << j["id"].get<std::string>() << (j.value("loaded", false) ? " (loaded)" : "")
            << (j.value("pinned", false) ? " pinned" : "") << "\n";
  // A model's memory figures: under "stats" in the runtime document, at the top level in a
  // load's answer (the model entry of /v1/runtime).
  const Json& m = j.contains("stats") && j["stats"].is_object() ? j["stats"] : j;
  if (m.contains("weights_bytes")) {
    std::cout << "  weights   " << Mib(m["weights_bytes"]);
    if (m.contains("weights") && m["weights"].is_object()) {
      const Json& w = m["weights"];
      std::cout << ", " << w.value("state", std::string("?")) << " (file-backed "
                << Mib(w.value("file_backed_bytes", Json(0))) << ", resident "
                << Mib(w.value("file_resident_bytes", Json(0))) << ", anonymous "
                << Mib(w.value("anon_bytes", Json(0))) << ")";
    }
    std::cout << "\n";
  }
  if (j.contains("release") && j["release"].is_object()) {
    const Json& r = j["release"];
    if (r.value("released", false)) {
      std::cout << "  released  resident " << Mib(r.value("resident_before_bytes", Json(0)))
                << " -> " << Mib(r.value("resident_after_bytes", Json(0))) << "\n";
    } else {
      std::cout << "  not released: " << r.value("reason", std::string()) << "\n";
    }
  }
  if (m.contains("kv")) {
    std::cout << "  KV        in use " << Mib(m["kv"]["in_use_bytes"]) << ", reserved "
              << Mib(m["kv"]["reserved_bytes"]) << ", peak " << Mib(m["kv"]["peak_in_use_bytes"])
              << "\n";
  }
  if (const Json* d = DeviceOf(m)) std::cout << "  device    " << DeviceLine(*d) << "\n";
  if (m.contains("prefix_cache") && !j.value("is_encoder", false)) {
    PrintPrefixCache(m["prefix_cache"]);
  }
  if (m.contains("cpu_arena") && m["cpu_arena"].value("available", false)) {
    std::cout << "  arena     in use " << Mib(m["cpu_arena"]["in_use_bytes"]) << ", allocated "
              << Mib(m["cpu_arena"]["total_allocated_bytes"]) << "\n";
  }
  if (j.contains("stats")) {
    std::cout << "  shrinks   " << j["stats"]["num_shrinks"] << ", requests "
              << j["stats"]["num_requests"] << "\n";
  }
  if (j.contains("options") && !j["options"].empty()) {
    std::cout << "  options  ";
    for (const auto& [k, v] : j["options"].items()) {
      // One line per model: a long value (a chat template's text) is cut.
      std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      if (text.size() > 60) text = internal::OneLine(text.substr(0, 57)) + "...";
      std::cout << " " << k << "=" << text;
    }
    std::cout << "\n";
  }
  if (j.contains("runtime_options") && !j["runtime_options"].empty()) {
    std::cout << "  run options";
    for (const auto& [k, v] : j["runtime_options"].items()) {
      std::cout << " " << k << "=" << v.get<std::string>();
    }
    std::cout << "\n";
  }
  std::cout << "  until     " << Until(j) << "\n";
}

// A runtime key as PATCH /v1/models/{id}/runtime takes it: the shrink policies by their
// option-table names, anything else a run option (with or without "run_options.").
void AddRuntimeOption(Json& patch, const std::string& key, const std::optional<std::string>& v) {
  // Clearing goes through run_options (null): every key, a policy too, goes back to its
  // load-time value, as ModelControls::ClearRunOption and the SDKs do.
  if (v && key == "memory.shrink_every") {
    patch["shrink_every"] = internal::ParseInt(key, *v, 0, UINT32_MAX);
    return;
  }
  if (v && key == "memory.shrink_above") {
    patch["shrink_above"] = *v;
    return;
  }
  const std::string run = key.rfind("run_options.", 0) == 0 ? key.substr(12) : key;
  if (!patch.contains("run_options")) patch["run_options"] = Json::object();
  patch["run_options"][run] = v ? Json(*v) : Json(nullptr);
}

// The text of --chat-template FILE for a service, which does not read a client's files: read
// and parsed here, so that a template that does not parse is reported naming the file.
std::string ChatTemplateText(const std::string& file) {
  std::string text =
      internal::ReadRegularFile(file, internal::kMaxConfigFileBytes, "--chat-template");
  ChatTemplate::Parse(text, file);  // throws "<file>:<line>:<col>: ..." when it does not parse
  return text;
}

// The prefix of `ebb model pin-prefix` / `unpin-prefix`: exactly one of these flags.
struct PrefixFlags {
  std::string prompt;         // --prompt TEXT
  std::string file;           // --file F ("-": stdin), its text as the prompt
  std::string system;         // --system TEXT: one system message, rendered by the template
  std::string messages_file;  // --messages-file F: a JSON list of {role, content}
  std::string ids;            // --ids "1,2,3"
};

void AddPrefixFlags(CLI::App* cmd, PrefixFlags& f) {
  cmd->add_option("--prompt", f.prompt,
                  "The prefix as text, encoded as a /v1/completions prompt (with BOS)");
  cmd->add_option("--file", f.file, "Read the --prompt text from this file ('-': stdin)");
  cmd->add_option("--system", f.system,
                  "The prefix as one system message rendered with the model's chat template "
                  "(without the generation prompt): what chat requests with it start with");
  cmd->add_option("--messages-file", f.messages_file,
                  "The prefix as chat messages: a JSON list of {\"role\", \"content\"} "
                  "('-': stdin), rendered as --system is");
  cmd->add_option("--ids", f.ids, "The prefix as token ids (\"1,2,3\")");
}

// The body of POST/DELETE /v1/models/{id}/prefix. Throws InvalidArgument unless exactly one
// flag is given, or when the messages file is not a JSON list.
Json PrefixBody(const PrefixFlags& f) {
  const int given = !f.prompt.empty() + !f.file.empty() + !f.system.empty() +
                    !f.messages_file.empty() + !f.ids.empty();
  if (given != 1) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(given == 0 ? "no prefix given" : "more than one prefix given") +
                    ": give exactly one of --prompt TEXT, --file FILE, --system TEXT, "
                    "--messages-file FILE or --ids IDS");
  }
  if (!f.prompt.empty()) return Json{{"prompt", f.prompt}};
  if (!f.file.empty()) {
    std::string text = ReadInputFile(f.file, "--file");
    if (text.empty()) {
      throw Error(ErrorCode::InvalidArgument, "--file " + f.file + " is empty: nothing to pin");
    }
    return Json{{"prompt", std::move(text)}};
  }
  if (!f.system.empty()) {
    return Json{{"messages", Json::array({Json{{"role", "system"}, {"content", f.system}}})}};
  }
  if (!f.messages_file.empty()) {
    const std::string text = ReadInputFile(f.messages_file, "--messages-file");
    Json m;
    try {
      m = Json::parse(text);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::InvalidArgument,
                  "--messages-file " + f.messages_file +
                      " is not JSON: " + internal::OneLine(e.what()) +
                      "; give a list of {\"role\": ..., \"content\": ...} objects");
    }
    if (!m.is_array() || m.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--messages-file " + f.messages_file +
                      " must hold a non-empty JSON list of {\"role\": ..., \"content\": ...}");
    }
    return Json{{"messages", std::move(m)}};
  }
  const auto rows = ParseIdRows(f.ids, "--ids");
  if (rows.size() != 1) {
    throw Error(ErrorCode::InvalidArgument,
                "--ids takes one row of token ids (\"1,2,3\"), got " + std::to_string(rows.size()));
  }
  return Json{{"input_ids", rows[0]}};
}

// Interactive or one-shot chat: through the service when one is reachable (MODEL is its id),
// else in process (MODEL is a model folder).
struct ChatFlags {
  Conn conn;
  std::string model;
  std::string prompt;
  int max_tokens = 0;
  std::string temperature;
  std::string presence_penalty;
  std::string frequency_penalty;
  std::vector<std::string> logit_bias;  // ID=BIAS, each may hold several, comma-separated
  std::string system;
  std::string chat_template;  // --chat-template FILE
  bool local = false;
};

// The request keys of --presence-penalty, --frequency-penalty and --logit-bias, checked as
// GeneratorParams::Set checks them (the same messages in process and through the service).
GeneratorParams ChatSamplingParams(const ChatFlags& f) {
  GeneratorParams p;
  if (!f.temperature.empty()) p.Set("temperature", f.temperature);
  if (!f.presence_penalty.empty()) p.Set("presence_penalty", f.presence_penalty);
  if (!f.frequency_penalty.empty()) p.Set("frequency_penalty", f.frequency_penalty);
  std::string bias;
  for (const auto& b : f.logit_bias) bias += (bias.empty() ? "" : ",") + b;
  if (!bias.empty()) p.Set("logit_bias", bias);
  return p;
}

std::string Reply(ServiceClient* svc, const std::shared_ptr<Model>& local, const ChatFlags& f,
                  const std::vector<ChatMessage>& messages) {
  std::string text;
  if (svc != nullptr) {
    Json body = {{"model", f.model}, {"stream", true}, {"messages", Json::array()}};
    for (const auto& m : messages)
      body["messages"].push_back({{"role", m.role}, {"content", m.content}});
    if (f.max_tokens > 0) body["max_tokens"] = f.max_tokens;
    if (!f.temperature.empty()) {
      body["temperature"] = internal::ParseFloat("--temperature", f.temperature, 0, 2);
    }
    const GeneratorParams p = ChatSamplingParams(f);
    if (!f.presence_penalty.empty()) body["presence_penalty"] = p.presence_penalty;
    if (!f.frequency_penalty.empty()) body["frequency_penalty"] = p.frequency_penalty;
    if (!p.logit_bias.empty()) {
      body["logit_bias"] = Json::object();
      for (const auto& [id, b] : p.logit_bias) body["logit_bias"][std::to_string(id)] = b;
    }
    svc->Stream("/v1/chat/completions", body, [&](const Json& chunk) {
      if (chunk["choices"].empty()) return;
      const Json& d = chunk["choices"][0]["delta"];
      if (d.contains("content") && d["content"].is_string()) {
        const std::string piece = d["content"].get<std::string>();
        text += piece;
        std::cout << piece << std::flush;
      }
    });
  } else {
    GenerateRequest req;
    req.messages = messages;
    if (f.max_tokens > 0) req.max_new_tokens = f.max_tokens;
    req.params = ChatSamplingParams(f);
    const GenerateResult r = Generate(
        local, req, [&](size_t, std::string_view piece) { std::cout << piece << std::flush; });
    if (r.error) throw *r.error;
    text = r.rows[0].text;
  }
  std::cout << "\n";
  return text;
}

void Chat(ChatFlags& f, bool interactive) {
  std::unique_ptr<ServiceClient> svc;
  std::shared_ptr<Model> local;
  if (!f.local && (!f.conn.url.empty() || DiscoverServiceUrl())) {
    svc = std::make_unique<ServiceClient>(f.conn.url, f.conn.api_key);
    if (!f.chat_template.empty()) {
      // The service loads the model with the template's text (the load route's
      // "chat_template"); a model already loaded with other options is refused (409).
      try {
        svc->Call("POST", "/v1/models/" + f.model + "/load",
                  Json{{"chat_template", ChatTemplateText(f.chat_template)}});
      } catch (const Error& e) {
        if (e.code() != ErrorCode::FailedPrecondition) throw;
        throw Error(e.code(), std::string(e.what()) + "; that is, the service has '" + f.model +
                                  "' loaded without this chat template: `ebb model unload " +
                                  f.model + "`, then run again");
      }
    }
  } else {
    std::error_code ec;
    if (!std::filesystem::is_directory(f.model, ec)) {
      throw Error(ErrorCode::NotFound,
                  "no ebb service is running and '" + f.model +
                      "' is not a model folder; start the service (`ebb service start`) or give "
                      "a folder to run in process");
    }
    ModelOptions mo;
    if (!f.chat_template.empty()) mo.Set("chat_template", f.chat_template);
    LoadProgress progress(f.model);
    local = ebb::LoadModel(f.model, mo);
  }
  std::vector<ChatMessage> messages;
  if (!f.system.empty()) messages.push_back({"system", f.system});
  if (!interactive) {
    messages.push_back({"user", f.prompt});
    Reply(svc.get(), local, f, messages);
    return;
  }
  std::string line;
  for (;;) {
    std::cout << ">>> " << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line == "/bye" || line == "/exit") break;
    if (internal::Trim(line).empty()) continue;
    messages.push_back({"user", line});
    messages.push_back({"assistant", Reply(svc.get(), local, f, messages)});
  }
  std::cout << "\n";
}

}  // namespace

void RegisterServiceClientCommands(CLI::App& app) {
  // ebb ps
  {
    auto c = std::make_shared<Conn>();
    auto all = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand(
        "ps",
        "Models loaded by the running service: size, KV, arena, running requests, "
        "keep-alive");
    AddConnFlags(cmd, *c);
    cmd->add_flag("--all", *all, "Also models the service knows but has not loaded");
    cmd->callback([c, all] { Ps(*c, *all); });
  }
  // ebb model ...
  CLI::App* model = app.add_subcommand("model",
                                       "Manage the running service's models (the SDK's "
                                       "calls, the same option names)");
  model->require_subcommand(1);
  {
    auto c = std::make_shared<Conn>();
    CLI::App* cmd = model->add_subcommand("list", "Every model the service knows, loaded or not");
    AddConnFlags(cmd, *c);
    cmd->callback([c] {
      ServiceClient s(c->url, c->api_key);
      const Json rt = s.Runtime(/*figures=*/false);
      if (c->json) {
        std::cout << rt["models"].dump(2) << "\n";
        return;
      }
      std::vector<std::vector<std::string>> rows = {{"MODEL", "LOADED", "PATH"}};
      for (const Json& m : rt["models"]) {
        rows.push_back({m["id"].get<std::string>(), m.value("loaded", false) ? "yes" : "no",
                        m.value("path", "")});
      }
      PrintTable(rows);
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto flags = std::make_shared<OptionFlags>();
    auto keep_alive = std::make_shared<std::string>();
    auto pin = std::make_shared<bool>(false);
    auto chat_template = std::make_shared<std::string>();
    CLI::App* cmd = model->add_subcommand("load", "Load a model now, with options");
    cmd->add_option("ID", *id, "Model id")->required();
    AddConnFlags(cmd, *c);
    cmd->add_option("--keep-alive", *keep_alive, "Keep-alive after its last request (e.g. 10m)");
    cmd->add_flag("--pin", *pin, "Never evict or expire it");
    cmd->add_option("--chat-template", *chat_template,
                    "A Jinja chat template file for its messages (sent as the load's "
                    "\"chat_template\" text)");
    AddOptionFlags(*cmd, *flags);
    cmd->callback([c, id, flags, keep_alive, pin, chat_template] {
      Json body = {{"session_options", Json::object()},
                   {"provider_options", Json::object()},
                   {"run_options", Json::object()},
                   {"options", Json::object()}};
      for (const auto& [k, v] : flags->ToOptionList()) {
        if (k.rfind("session_options.", 0) == 0) {
          body["session_options"][k.substr(16)] = v;
        } else if (k.rfind("run_options.", 0) == 0) {
          body["run_options"][k.substr(12)] = v;
        } else if (k.rfind("provider_options.", 0) == 0) {
          const std::string rest = k.substr(17);
          const auto dot = rest.find('.');
          if (dot == std::string::npos) {
            throw Error(ErrorCode::InvalidArgument,
                        "--provider-option " + rest + " must be written EP.KEY=VALUE");
          }
          body["provider_options"][rest.substr(0, dot)][rest.substr(dot + 1)] = v;
        } else {
          body["options"][k] = v;
        }
      }
      if (!keep_alive->empty()) body["keep_alive"] = *keep_alive;
      if (*pin) body["pin"] = true;
      if (!chat_template->empty()) body["chat_template"] = ChatTemplateText(*chat_template);
      ServiceClient s(c->url, c->api_key);
      PrintModel(*c, s.Call("POST", "/v1/models/" + *id + "/load", body));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto force = std::make_shared<bool>(false);
    CLI::App* cmd = model->add_subcommand("unload", "Unload a model and free its memory");
    cmd->add_option("ID", *id, "Model id")->required();
    cmd->add_flag("--force", *force, "Wait for its running requests instead of refusing");
    AddConnFlags(cmd, *c);
    cmd->callback([c, id, force] {
      ServiceClient s(c->url, c->api_key);
      const Json j = s.Call("POST", "/v1/models/" + *id + "/unload", Json{{"force", *force}});
      if (c->json) {
        std::cout << j.dump(2) << "\n";
      } else {
        std::cout << "unloaded " << *id << "\n";
      }
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    CLI::App* cmd = model->add_subcommand("stats", "A loaded model's memory figures and options");
    cmd->add_option("ID", *id, "Model id")->required();
    AddConnFlags(cmd, *c);
    cmd->callback([c, id] {
      ServiceClient s(c->url, c->api_key);
      PrintModel(*c, s.Call("GET", "/v1/models/" + *id + "/runtime"));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    CLI::App* cmd = model->add_subcommand(
        "release-weights",
        "Hand back an idle model's resident weight pages (file-backed weights from the model "
        "cache); its next request reads them back");
    cmd->add_option("ID", *id, "Model id")->required();
    AddConnFlags(cmd, *c);
    cmd->callback([c, id] {
      ServiceClient s(c->url, c->api_key);
      PrintModel(*c,
                 s.Call("POST", "/v1/models/" + *id + "/runtime/release_weights", Json::object()));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto f = std::make_shared<PrefixFlags>();
    CLI::App* cmd = model->add_subcommand(
        "pin-prefix",
        "Keep a prefix (a system prompt every request starts with) in the model's prefix cache "
        "until unpin-prefix: prefilled now, never evicted; needs prefix_cache.max_bytes > 0 "
        "(set-runtime-option ID prefix_cache.max_bytes=64MiB)");
    cmd->add_option("ID", *id, "Model id")->required();
    AddPrefixFlags(cmd, *f);
    AddConnFlags(cmd, *c);
    cmd->callback([c, id, f] {
      const Json body = PrefixBody(*f);
      ServiceClient s(c->url, c->api_key);
      const Json j = s.Call("POST", "/v1/models/" + *id + "/prefix", body);
      if (c->json) {
        std::cout << j.dump(2) << "\n";
        return;
      }
      std::cout << "pinned " << j.value("pinned_tokens", Json(0)) << " of "
                << j.value("tokens", Json(0)) << " tokens of " << *id << " (whole blocks; "
                << Mib(j.value("pinned_bytes", Json(0))) << " pinned in all)\n";
      PrintPrefixCache(j.value("prefix_cache", Json()));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto f = std::make_shared<PrefixFlags>();
    CLI::App* cmd = model->add_subcommand(
        "unpin-prefix",
        "Unpin a prefix pinned with pin-prefix (the same flag and text): its blocks stay "
        "cached, and may be evicted again");
    cmd->add_option("ID", *id, "Model id")->required();
    AddPrefixFlags(cmd, *f);
    AddConnFlags(cmd, *c);
    cmd->callback([c, id, f] {
      const Json body = PrefixBody(*f);
      ServiceClient s(c->url, c->api_key);
      const Json j = s.Call("DELETE", "/v1/models/" + *id + "/prefix", body);
      if (c->json) {
        std::cout << j.dump(2) << "\n";
      } else if (j.value("pinned", false)) {
        std::cout << "unpinned a prefix of " << j.value("tokens", Json(0)) << " tokens of " << *id
                  << " (" << Mib(j.value("pinned_bytes", Json(0))) << " still pinned)\n";
        PrintPrefixCache(j.value("prefix_cache", Json()));
      }
      if (!j.value("pinned", false)) {
        throw Error(ErrorCode::NotFound,
                    "no pinned prefix of model '" + *id + "' is these " +
                        std::to_string(j.value("tokens", 0)) +
                        " tokens: unpin with exactly what was pinned (the same flag and text)");
      }
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    CLI::App* cmd = model->add_subcommand(
        "drop-prefix-cache",
        "Drop every unpinned block of a model's prefix cache now (pinned prefixes stay)");
    cmd->add_option("ID", *id, "Model id")->required();
    AddConnFlags(cmd, *c);
    cmd->callback([c, id] {
      ServiceClient s(c->url, c->api_key);
      const Json j = s.Call("POST", "/v1/models/" + *id + "/prefix/drop", Json::object());
      if (c->json) {
        std::cout << j.dump(2) << "\n";
        return;
      }
      std::cout << "dropped " << Mib(j.value("freed_bytes", Json(0))) << " ("
                << j.value("freed_bytes", Json(0)) << " bytes) of " << *id << "'s prefix cache\n";
      PrintPrefixCache(j.value("prefix_cache", Json()));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto after = std::make_shared<bool>(false);
    CLI::App* cmd = model->add_subcommand(
        "shrink", "Shrink a model's arena, KV pool and heap now (or once after its next request)");
    cmd->add_option("ID", *id, "Model id")->required();
    cmd->add_flag("--after-next-run", *after, "Once, at the end of the next request");
    AddConnFlags(cmd, *c);
    cmd->callback([c, id, after] {
      ServiceClient s(c->url, c->api_key);
      PrintModel(*c, s.Call("POST", "/v1/models/" + *id + "/runtime/shrink",
                            Json{{"when", *after ? "after_next_run" : "now"}}));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto kvs = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = model->add_subcommand(
        "set-runtime-option",
        "Set run options or shrink policies without a reload: K=V ... (memory.shrink_every, "
        "memory.shrink_above, prefix_cache.max_bytes, or an ORT run option such as "
        "memory.enable_memory_arena_shrinkage=cpu:0)");
    cmd->add_option("ID", *id, "Model id")->required();
    cmd->add_option("KV", *kvs, "KEY=VALUE")->required();
    AddConnFlags(cmd, *c);
    cmd->callback([c, id, kvs] {
      Json patch = Json::object();
      for (const auto& kv : *kvs) {
        auto [k, v] = SplitKeyValue(kv, "set-runtime-option");
        AddRuntimeOption(patch, k, v);
      }
      ServiceClient s(c->url, c->api_key);
      PrintModel(*c, s.Call("PATCH", "/v1/models/" + *id + "/runtime", patch));
    });
  }
  {
    auto c = std::make_shared<Conn>();
    auto id = std::make_shared<std::string>();
    auto keys = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = model->add_subcommand(
        "clear-runtime-option", "Clear run options: each goes back to its load-time value");
    cmd->add_option("ID", *id, "Model id")->required();
    cmd->add_option("KEY", *keys, "Keys")->required();
    AddConnFlags(cmd, *c);
    cmd->callback([c, id, keys] {
      Json patch = Json::object();
      for (const auto& k : *keys) AddRuntimeOption(patch, k, std::nullopt);
      ServiceClient s(c->url, c->api_key);
      PrintModel(*c, s.Call("PATCH", "/v1/models/" + *id + "/runtime", patch));
    });
  }
  // ebb run MODEL PROMPT / ebb chat MODEL
  for (const bool interactive : {false, true}) {
    auto f = std::make_shared<ChatFlags>();
    CLI::App* cmd = app.add_subcommand(
        interactive ? "chat" : "run",
        interactive ? "Chat with a model, streamed: through the running service (MODEL is its "
                      "id), else in process (MODEL is a folder). /bye ends"
                    : "One chat turn: PROMPT in, the streamed reply out (through the service "
                      "when one runs, else in process)");
    cmd->add_option("MODEL", f->model, "Model id (service) or folder (in process)")->required();
    if (!interactive) cmd->add_option("PROMPT", f->prompt, "The message")->required();
    cmd->add_option("--max-tokens", f->max_tokens, "Tokens per reply (default: the model's)");
    cmd->add_option("--temperature", f->temperature, "Sampling temperature (0: greedy)");
    cmd->add_option("--presence-penalty", f->presence_penalty,
                    "OpenAI presence penalty, -2 to 2 (0: off)");
    cmd->add_option("--frequency-penalty", f->frequency_penalty,
                    "OpenAI frequency penalty, -2 to 2 (0: off)");
    cmd->add_option("--logit-bias", f->logit_bias,
                    "ID=BIAS added to a token's logit, -100 (ban) to 100 (force); repeatable");
    cmd->add_option("--system", f->system, "A system message first");
    cmd->add_option("--chat-template", f->chat_template,
                    "Render the messages with this Jinja chat template file (the option "
                    "chat_template; for a model folder without one, or to replace it). Through "
                    "the service: the model is loaded with it");
    cmd->add_flag("--local", f->local, "Run in process even when a service runs");
    cmd->add_option("--url", f->conn.url, "The service (default: $EBB_URL, else the running one)");
    cmd->add_option("--api-key", f->conn.api_key, "API key (default: $EBB_API_KEY)");
    cmd->callback([f, interactive] { Chat(*f, interactive); });
  }
}

}  // namespace ebb::cli
