// The Ollama API of Server (docs/http_api.md#ollama-api): /api/generate, /api/chat (NDJSON
// streams by default), /api/embed, /api/embeddings, /api/tags, /api/ps, /api/show,
// /api/version, and clear refusals of the model-registry routes. Same port, key, browser and
// admin rules as the OpenAI routes (the pre-routing checks run first); the same generation
// path (ebb::Generate, Generation), so greedy text equals /v1's.
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "core/log.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/json.h"
#include "ebb/model.h"
#include "ebb/runtime.h"
#include "ebb/version.h"
#include "server/admission.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/ollama_request.h"
#include "server/request_log.h"
#include "server/server.h"

namespace ebb::server {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// RFC 3339 in UTC with nanoseconds, as Ollama writes times.
std::string Rfc3339(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(ns.count() / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%09lldZ", static_cast<long long>(ns.count() % 1000000000));
  return std::string(buf, n) + frac;
}

std::string Now() { return Rfc3339(std::chrono::system_clock::now()); }

// Options ebb does not honour: logged once per name (per process), named in a header.
void NoteIgnored(httplib::Response& res, const std::vector<std::string>& ignored) {
  if (ignored.empty()) return;
  static std::mutex mu;
  static std::set<std::string> logged;
  std::string names;
  for (const auto& k : ignored) {
    names += (names.empty() ? "" : ",") + k;
    std::lock_guard<std::mutex> lock(mu);
    if (logged.insert(k).second) {
      EBB_LOG_INFO(
          "Ollama option '{}' is not honoured by ebb and is ignored "
          "(docs/http_api.md#ollama-api); named in X-Ebb-Ignored-Options",
          k);
    }
  }
  res.set_header("X-Ebb-Ignored-Options", names);
}

// What Ollama's done line carries after a generation.
Json DoneFields(const GenerateResult& out, Clock::time_point t0, Clock::duration load,
                Clock::time_point gen_start) {
  const auto end = Clock::now();
  const int64_t ttft_ns = static_cast<int64_t>(out.stats.ttft_ms * 1e6);
  const int64_t gen_ns = Nanos(end - gen_start);
  const GenerateRow& row = out.rows.at(0);
  return {{"done_reason", std::string(FinishReasonName(row.finish_reason))},
          {"total_duration", Nanos(end - t0)},
          {"load_duration", Nanos(load)},
          {"prompt_eval_count", out.usage.prompt_tokens},
          {"prompt_eval_duration", ttft_ns},
          {"eval_count", out.usage.completion_tokens},
          {"eval_duration", std::max<int64_t>(0, gen_ns - ttft_ns)}};
}

Json Details(const std::optional<ModelSummary>& s) {
  return {{"parent_model", ""},         {"format", "onnx"},
          {"family", s ? s->type : ""}, {"families", s ? Json::array({s->type}) : Json::array()},
          {"parameter_size", ""},       {"quantization_level", ""}};
}

// Bytes of a model folder's files (its weights, what `ollama list` shows as size).
uint64_t FolderBytes(const std::filesystem::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  return total;
}

// The memory ebb counts for a loaded model (what memory.limit charges): weights, and the KV in
// use on the host and the device. /api/ps's size.
uint64_t ModelBytes(const ModelSummary& s) {
  return s.weights_bytes + s.kv.in_use_bytes + s.device.kv.in_use_bytes;
}

}  // namespace

void Server::RegisterOllamaRoutes() {
  for (const bool chat : {false, true}) {
    Handle("POST", chat ? "/api/chat" : "/api/generate",
           [this, chat](const httplib::Request& req, httplib::Response& res) {
             OllamaGenerate(req, res, chat);
           });
  }
  for (const bool legacy : {false, true}) {
    Handle("POST", legacy ? "/api/embeddings" : "/api/embed",
           [this, legacy](const httplib::Request& req, httplib::Response& res) {
             OllamaEmbed(req, res, legacy);
           });
  }
  Handle("GET", "/api/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(Dump(Json{{"version", Version()}}), "application/json");
  });
  Handle("GET", "/api/tags", [this](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      Json models = Json::array();
      for (const ManagedModel& m : manager_->List()) {
        std::error_code ec;
        const auto mtime = std::filesystem::last_write_time(m.path, ec);
        const auto sys =
            ec ? std::chrono::system_clock::now() : std::chrono::file_clock::to_sys(mtime);
        models.push_back({{"name", m.id},
                          {"model", m.id},
                          {"modified_at", Rfc3339(sys)},
                          {"size", m.summary ? m.summary->weights_bytes : FolderBytes(m.path)},
                          {"digest", ""},
                          {"details", Details(m.summary)}});
      }
      res.set_content(Dump(Json{{"models", models}}), "application/json");
    });
  });
  Handle("GET", "/api/ps", [this](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      Json models = Json::array();
      for (const ManagedModel& m : manager_->List()) {
        if (!m.loaded || !m.summary) continue;
        const ModelSummary& s = *m.summary;
        // Kept loaded (pinned, running, or a negative keep-alive): far in the future, as Ollama
        // reports a model kept forever.
        const auto expires =
            m.expires_at_unix_ms > 0
                ? std::chrono::system_clock::time_point(
                      std::chrono::milliseconds(m.expires_at_unix_ms))
                : std::chrono::system_clock::now() + std::chrono::hours(24 * 365 * 290);
        // ebb's split of the same memory, under a key Ollama clients ignore.
        const Json split = Json::parse(ToJson(std::vector<ModelSummary>{s})).at(0);
        Json ebb = {{"weights_bytes", s.weights_bytes}};
        for (const char* k : {"weights", "kv", "prefix_cache", "cpu_arena", "device"}) {
          if (split.contains(k)) ebb[k] = split[k];
        }
        models.push_back({{"name", m.id},
                          {"model", m.id},
                          {"size", ModelBytes(s)},
                          {"digest", ""},
                          {"details", Details(m.summary)},
                          {"expires_at", Rfc3339(expires)},
                          {"size_vram", s.device.available ? s.device.used_bytes : 0},
                          {"ebb", ebb}});
      }
      res.set_content(Dump(Json{{"models", models}}), "application/json");
    });
  });
  Handle("POST", "/api/show", [this](const httplib::Request& req, httplib::Response& res) {
    Guard(res, [&] {
      const std::string id = ParseOllamaShow(req.body);
      ManagedModel m;
      try {
        m = manager_->Get(id);
      } catch (const Error& e) {
        throw ApiException(ModelError(e));
      }
      Json info = {{"general.architecture", m.summary ? m.summary->type : ""},
                   {"ebb.path", m.path.string()},
                   {"ebb.loaded", m.loaded}};
      Json caps = Json::array();
      if (m.loaded && runtime_->Contains(id)) {
        const auto model = runtime_->Get(id);
        const ModelInfo& mi = model->info();
        info["ebb.context_length"] = mi.context_length;
        info["ebb.vocab_size"] = mi.vocab_size;
        info["ebb.kernels"] = mi.kernels;
        caps.push_back(mi.is_encoder ? "embedding" : "completion");
      }
      Json opts = Json::object();
      for (const auto& [k, v] : m.options) opts[k] = v;
      info["ebb.options"] = opts;
      res.set_content(Dump(Json{{"modelfile", ""},
                                {"parameters", ""},
                                {"template", ""},
                                {"details", Details(m.summary)},
                                {"model_info", info},
                                {"capabilities", caps}}),
                      "application/json");
    });
  });
  // The registry routes: ebb serves the folders under --models-dir and downloads nothing.
  const auto registry = [this](const httplib::Request& req, httplib::Response& res) {
    SendError(res,
              ApiError{400, "invalid_request_error",
                       req.method + " " + req.path +
                           " is not supported: ebb serves the model folders under --models-dir (" +
                           options_.models.models_dir.string() +
                           ") and downloads, uploads, copies and deletes nothing; put an "
                           "onnxruntime-genai model folder there (its name is the model's name), "
                           "or list the models file's entries (--models-file)",
                       std::nullopt, "unsupported", 0});
  };
  for (const char* p : {"/api/pull", "/api/push", "/api/create", "/api/copy"}) {
    Handle("POST", p, registry);
  }
  Handle("DELETE", "/api/delete", registry);
  Handle("POST", "/api/blobs/{digest}", registry);
}

void Server::OllamaEmbed(const httplib::Request& req, httplib::Response& res, bool legacy) {
  Guard(res, [&] {
    const auto t0 = Clock::now();
    const OllamaEmbedRequest r = ParseOllamaEmbed(req.body, legacy);
    NoteIgnored(res, r.ignored);
    auto ticket = admission_->Enter();
    auto lease = AcquireModel(r.model, r.keep_alive);
    const auto load = Clock::now() - t0;
    if (!lease->info().is_encoder) {
      ThrowBadField("model",
                    "model '" + r.model + "' generates text; " +
                        (legacy ? "/api/embeddings" : "/api/embed") +
                        " needs an embedding (encoder) model",
                    "wrong_model_kind", ErrorCode::FailedPrecondition);
    }
    EmbedRequest e;
    e.texts = r.texts;
    e.options.truncate = r.truncate ? Truncate::kEnd : Truncate::kError;
    if (r.dimensions) e.options.dimensions = *r.dimensions;
    const EmbedResult out = Embed(lease.model(), e);
    NoteEmbedding(r.model, out.usage.prompt_tokens);
    if (legacy) {
      res.set_content(Dump(Json{{"embedding", out.embeddings.at(0)}}), "application/json");
      return;
    }
    res.set_content(Dump(Json{{"model", r.model},
                              {"embeddings", out.embeddings},
                              {"total_duration", Nanos(Clock::now() - t0)},
                              {"load_duration", Nanos(load)},
                              {"prompt_eval_count", out.usage.prompt_tokens}}),
                    "application/json");
  });
}

void Server::OllamaGenerate(const httplib::Request& req, httplib::Response& res, bool chat) {
  Guard(res, [&] {
    const auto t0 = Clock::now();
    const OllamaGenerateRequest r = ParseOllamaGenerate(req.body, chat);
    NoteIgnored(res, r.ignored);
    auto ticket = std::make_shared<Admission::Ticket>(admission_->Enter());
    auto lease = std::make_shared<ModelManager::Lease>(AcquireModel(r.model, r.keep_alive));
    const auto load = Clock::now() - t0;
    const std::shared_ptr<Model>& model = lease->model();
    if (model->info().is_encoder) {
      ThrowBadField("model",
                    "model '" + r.model + "' is an embedding model; use POST /api/embed with it",
                    "wrong_model_kind", ErrorCode::FailedPrecondition);
    }
    // Nothing to generate: Ollama's way of loading a model (and of unloading it, with
    // keep_alive 0). The lease's end applies the keep-alive.
    if ((chat && r.messages.empty()) || (!chat && r.prompt.empty())) {
      Json j = {{"model", r.model}, {"created_at", Now()}};
      if (chat) {
        j["message"] = {{"role", "assistant"}, {"content", ""}};
      } else {
        j["response"] = "";
      }
      j["done"] = true;
      j["done_reason"] = r.keep_alive && r.keep_alive->count() == 0 ? "unload" : "load";
      res.set_content(Dump(j), "application/json");
      return;
    }
    auto g = std::make_shared<GenerateRequest>();
    const bool templated = chat || (!r.raw && model->has_chat_template());
    if (chat) {
      g->messages = r.messages;
    } else if (templated) {
      if (!r.system.empty()) g->messages.push_back({"system", r.system});
      g->messages.push_back({"user", r.prompt});
    } else {
      // Without a template (raw, or a model that has none) a system message has no place: said,
      // not dropped.
      if (!r.system.empty()) {
        ThrowBadField("system",
                      r.raw ? "'system' is not used with raw: true (the prompt goes to the model "
                              "as it is); put the system text in the prompt"
                            : "model '" + r.model +
                                  "' has no chat template, so a system message cannot be placed; "
                                  "give it one, or send raw: true with the whole prompt",
                      r.raw ? "invalid_value" : "no_chat_template");
      }
      g->prompt = r.prompt;
    }
    if (chat && !model->has_chat_template()) {
      ThrowBadField("messages",
                    "model '" + r.model +
                        "' has no chat template, so its messages cannot be rendered: give it one "
                        "(docs/http_api.md), or use /api/generate with raw: true",
                    "no_chat_template");
    }
    for (const auto& [k, v] : r.options) {
      try {
        g->Set(k, v);
      } catch (const Error& e) {
        ThrowBadField("options", e.what());
      }
    }
    g->stop = r.stop;
    try {
      g->input_ids = EncodeInput(*model, *g);
    } catch (const Error& e) {
      ThrowBadField(chat ? "messages" : "prompt", e.what());
    }
    g->messages.clear();
    g->prompt.clear();
    const size_t n = g->input_ids.at(0).size();
    int32_t context = model->info().context_length;
    if (r.num_ctx && (context <= 0 || *r.num_ctx < context)) context = *r.num_ctx;
    if (context > 0 && n >= static_cast<size_t>(context)) {
      throw ApiException(ApiError{
          400, "invalid_request_error",
          "the " + std::string(chat ? "messages" : "prompt") + " resulted in " + std::to_string(n) +
              " tokens, and the context (" + (r.num_ctx ? "options.num_ctx" : "the model's") +
              ") is " + std::to_string(context) +
              " tokens, which leaves no room to generate; shorten it" +
              (r.num_ctx ? " or raise num_ctx" : ""),
          chat ? "messages" : "prompt", "context_length_exceeded", 0});
    }
    if (r.num_ctx && g->params.max_length == 0) g->params.max_length = context;
    const std::string model_name = r.model;

    if (!r.stream) {
      const auto gen_start = Clock::now();
      const GenerateResult out =
          Generate(model, *g, [&ticket](size_t, std::string_view) { ticket->Progress(); });
      NoteGeneration(model_name, out);
      metrics_->OnCachedTokens(model_name, out.usage.cached_tokens);
      if (out.error) throw *out.error;
      Json j = {{"model", model_name}, {"created_at", Now()}};
      if (chat) {
        j["message"] = {{"role", "assistant"}, {"content", out.rows.at(0).text}};
      } else {
        j["response"] = out.rows.at(0).text;
      }
      j["done"] = true;
      j.update(DoneFields(out, t0, load, gen_start));
      res.set_content(Dump(j), "application/json");
      return;
    }

    // Streamed (Ollama's default): NDJSON, one object per piece of text, then the done line.
    // As on /v1: the generation starts before the first byte (so a request that cannot start
    // gets its own status); a failed write means the client is gone, which cancels it and frees
    // its KV.
    const auto gen_start = Clock::now();
    auto generation = std::make_shared<Generation>(Generation::Start(model, *g));
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "application/x-ndjson", [ticket, lease, g, generation, chat, model_name, t0, load,
                                 gen_start, metrics = metrics_](size_t, httplib::DataSink& sink) {
          auto line = [&](const std::string& piece, bool done) {
            Json j = {{"model", model_name}, {"created_at", Now()}};
            if (chat) {
              j["message"] = {{"role", "assistant"}, {"content", piece}};
            } else {
              j["response"] = piece;
            }
            j["done"] = done;
            return j;
          };
          auto send = [&](const Json& j) {
            const std::string text = Dump(j) + "\n";
            if (!sink.write(text.data(), text.size())) g->cancel.Cancel();
          };
          GenerateResult out;
          try {
            while (!g->cancel.cancelled()) {
              std::optional<GenerationPiece> p = generation->Next();
              if (!p) break;
              if (p->text.empty()) continue;
              ticket->Progress();
              send(line(p->text, false));
            }
            out = generation->Finish();
          } catch (...) {
            NoteGeneration(model_name, out);
            const ApiError e = FromCurrentException();
            NoteStreamError(e.status, e.code.value_or(""));
            send(Json{{"error", e.message}});
            lease->Reset();
            sink.done();
            return true;
          }
          NoteGeneration(model_name, out);
          metrics->OnCachedTokens(model_name, out.usage.cached_tokens);
          if (g->cancel.cancelled()) {
            NoteOutcome("cancelled");
            sink.done();
            return false;
          }
          if (out.error) {
            const ApiError e = FromError(*out.error);
            NoteStreamError(e.status, e.code.value_or(""));
            send(Json{{"error", e.message}});
          } else {
            Json done = line("", true);
            done.update(DoneFields(out, t0, load, gen_start));
            // The lease ends before the done line: a client that reads it and then lists or
            // unloads finds no running request (keep_alive 0 has unloaded it by then or soon).
            lease->Reset();
            send(done);
          }
          lease->Reset();
          sink.done();
          return true;
        });
  });
}

}  // namespace ebb::server
