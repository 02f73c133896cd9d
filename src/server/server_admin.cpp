// The memory routes of Server, named as the SDK names them: load/unload, a model's runtime
// (stats, run options, shrink policies, shrink now / after the next run), and the service-wide
// /v1/runtime.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/version.h"
#include "runtime/stats_json.h"
#include "server/admin_only.h"
#include "server/admission.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/models_file.h"
#include "server/openai_request.h"
#include "server/server.h"

namespace ebb::server {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The body as an object; an empty body is {}.
Json BodyObject(const httplib::Request& req) {
  if (req.body.empty()) return Json::object();
  Json j;
  try {
    j = internal::ParseJsonDocument<Json>(req.body, "the request body");
  } catch (const Error& e) {
    throw ApiException({400, "invalid_request_error", e.what(), std::nullopt, "invalid_json", 0});
  }
  if (!j.is_object()) ThrowBadField("body", "the request body must be a JSON object");
  return j;
}

Json OptionsJson(const OptionList& list) {
  Json j = Json::object();
  for (const auto& [k, v] : list) j[k] = v;
  return j;
}

Json ManagedJson(const ManagedModel& m) {
  Json j = {
      {"id", m.id},
      {"path", m.path.string()},
      {"loaded", m.loaded},
      {"pinned", m.pinned},
      {"running", m.running},
      {"expires_at_unix_ms", m.expires_at_unix_ms > 0 ? Json(m.expires_at_unix_ms) : Json(nullptr)},
      {"last_used_unix_ms", m.last_used_unix_ms},
      {"options", OptionsJson(m.options)}};
  if (m.summary) {
    // The runtime's figures, as ebb::ToJson(List()) names them (a named value: items() only
    // refers to it).
    const Json summary = internal::ModelSummaryJson(*m.summary);
    for (const auto& [k, v] : summary.items()) {
      if (!j.contains(k)) j[k] = v;
    }
  }
  return j;
}

// The loaded model `id`, or 404 naming how to load it.
std::shared_ptr<Model> LoadedModel(Runtime& runtime, const std::string& id) {
  if (!runtime.Contains(id)) {
    const std::string shown = internal::EscapeForMessage(id, 200);
    throw ApiException({404, "not_found_error",
                        "model '" + shown + "' is not loaded; load it with POST /v1/models/" +
                            shown + "/load (or send it a request)",
                        "model", "model_not_loaded", 0});
  }
  try {
    return runtime.Get(id);
  } catch (const Error& e) {
    throw ApiException({404, "not_found_error", e.what(), "model", "model_not_loaded", 0});
  }
}

// The model runtime document (GET /v1/models/{id}/runtime; docs/runtime.schema.json's
// model_runtime): the managed entry's fields, the model's MemoryStats once under "stats" (the
// summary's kv, device, cpu_arena, weights, weights_bytes and prefix_cache are left out: "stats"
// has them), its run options, what the service remembers, and what it is ("info", as the Python
// SDK's Model.info).
Json ModelRuntimeJson(const std::string& id, Model& model, const ManagedModel& managed) {
  Json run_options = Json::object();
  for (const auto& [k, v] : model.runtime().Options()) run_options[k] = v;
  Json j = ManagedJson(managed);
  for (const char* dup :
       {"kv", "device", "cpu_arena", "weights", "weights_bytes", "prefix_cache", "decode_batch"}) {
    j.erase(dup);
  }
  j["stats"] = internal::MemoryStatsJson(model.runtime().Stats());
  j["runtime_options"] = run_options;
  // Every Tier 2 key in force, with where it came from (load, runtime or default).
  Json in_force = Json::object();
  for (const auto& [k, o] : model.runtime().OptionsInForce()) {
    in_force[k] = {{"value", o.value}, {"source", o.source}, {"at_load", o.at_load}};
  }
  j["run_options_in_force"] = in_force;
  // What the service remembers for the id and applies to every later load of it.
  Json remembered_run = Json::object();
  for (const auto& [k, v] : managed.remembered.run_options) remembered_run[k] = v;
  j["remembered"] = {
      {"run_options", remembered_run},
      {"shrink_every",
       managed.remembered.shrink_every ? Json(*managed.remembered.shrink_every) : Json(nullptr)},
      {"shrink_above",
       managed.remembered.shrink_above ? Json(*managed.remembered.shrink_above) : Json(nullptr)}};
  j["info"] = internal::ModelInfoJson(model);
  j["id"] = id;
  return j;
}

// The tokens of a prefix body (POST/DELETE /v1/models/{id}/prefix) for `model`: the prompt as
// a /v1/completions prompt is encoded, the messages rendered without the generation prompt (what
// a chat request with more messages after them starts with), or the ids checked against the
// vocabulary. Throws ApiException 400 naming the field.
std::vector<int32_t> PrefixTokens(const PrefixRequest& p, const Model& model,
                                  const std::string& id) {
  if (!p.input_ids.empty()) {
    const int32_t vocab = model.info().vocab_size;
    for (size_t i = 0; i < p.input_ids.size(); ++i) {
      if (vocab > 0 && p.input_ids[i] >= vocab) {
        ThrowBadField("input_ids", "'input_ids[" + std::to_string(i) + "]' is " +
                                       std::to_string(p.input_ids[i]) +
                                       ", not in the vocabulary of model '" +
                                       internal::EscapeForMessage(id, 200) + "' (ids 0 to " +
                                       std::to_string(vocab - 1) + ")");
      }
    }
    return p.input_ids;
  }
  if (!p.messages.empty() && !model.has_chat_template()) {
    throw ApiException(ApiError{400, "invalid_request_error",
                                "model '" + internal::EscapeForMessage(id, 200) +
                                    "' has no chat template, so its messages cannot be "
                                    "rendered: pin the rendered text as \"prompt\" or its "
                                    "\"input_ids\", or load the model with a chat_template",
                                "messages", "no_chat_template", 0});
  }
  GenerateRequest g;
  g.prompt = p.prompt;
  g.messages = p.messages;
  g.add_generation_prompt = false;
  try {
    return EncodeInput(model, g).at(0);
  } catch (const Error& e) {
    ApiError a = FromError(e);
    a.param = p.messages.empty() ? "prompt" : "messages";
    throw ApiException(a);
  }
}

// What a prefix route answers: PrefixPinJson (or the freed bytes of a drop) and the model's
// prefix cache figures after it.
Json PrefixAnswer(Json j, Model& model) {
  j["prefix_cache"] = internal::PrefixCacheStatsJson(model.runtime().Stats().prefix_cache);
  return j;
}

Json UsageJson(const Metrics::Usage& u) {
  return {{"requests", u.requests},
          {"prompt_tokens", u.prompt_tokens},
          {"generated_tokens", u.generated_tokens},
          {"cached_tokens", u.cached_tokens}};
}

}  // namespace

void Server::RegisterAdminRoutes() {
  Handle("POST", "/v1/models/{id}/load",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             const Json body = BodyObject(req);
             const OptionList extra = OptionListFromJson(body);
             if (!IsAdmin(req)) {
               RefuseAdminOnlyOptions(extra);
               // The load's own prefix_cache.max_bytes, as a run option may not either.
               std::vector<std::pair<std::string, std::optional<std::string>>> budget;
               for (const auto& [k, v] : extra) {
                 if (k == "prefix_cache.max_bytes" || k == "run_options.prefix_cache.max_bytes") {
                   budget.emplace_back("prefix_cache.max_bytes", v);
                 }
               }
               RefuseRaisedRunOptions(budget, AdminPrefixBudgetOf(id));
             }
             std::optional<bool> pin;
             if (auto it = body.find("pin"); it != body.end() && !it->is_null()) {
               if (!it->is_boolean()) ThrowBadField("pin", "'pin' must be true or false");
               pin = it->get<bool>();
             }
             try {
               manager_->Load(id, extra, KeepAliveFromJson(body), pin);
             } catch (const Error& e) {
               ApiError a = FromError(e);
               if (e.code() == ErrorCode::NotFound) a.code = "model_not_found";
               throw ApiException(a);
             }
             res.set_content(Dump(ManagedJson(manager_->Get(id))), "application/json");
           });
         });
  Handle("POST", "/v1/models/{id}/unload",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             const Json body = BodyObject(req);
             bool force = false;
             if (auto it = body.find("force"); it != body.end() && !it->is_null()) {
               if (!it->is_boolean()) ThrowBadField("force", "'force' must be true or false");
               force = it->get<bool>();
             }
             manager_->Unload(id, force);
             res.set_content(Dump(Json{{"id", id}, {"unloaded", true}}), "application/json");
           });
         });
  Handle("GET", "/v1/models/{id}/runtime",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             auto model = LoadedModel(*runtime_, id);
             res.set_content(Dump(ModelRuntimeJson(id, *model, manager_->Get(id))),
                             "application/json");
           });
         });
  Handle("PATCH", "/v1/models/{id}/runtime",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             const Json body = BodyObject(req);
             auto model = LoadedModel(*runtime_, id);
             ModelControls& h = model->runtime();
             // Check everything first, then apply: a bad field changes nothing.
             std::vector<std::pair<std::string, std::optional<std::string>>> run;
             if (auto it = body.find("run_options"); it != body.end() && !it->is_null()) {
               if (!it->is_object()) {
                 ThrowBadField("run_options",
                               "'run_options' must be an object (null clears a key)");
               }
               for (const auto& [k, v] : it->items()) {
                 if (v.is_null()) {
                   run.emplace_back(k, std::nullopt);
                 } else {
                   run.emplace_back(k, JsonScalarText(v, "run_options." + k));
                 }
               }
             }
             std::optional<uint32_t> every;
             if (auto it = body.find("shrink_every"); it != body.end() && !it->is_null()) {
               if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
                 ThrowBadField("shrink_every",
                               "'shrink_every' must be a number of requests (0 = off)");
               }
               every = static_cast<uint32_t>(it->get<uint64_t>());
             }
             std::optional<uint64_t> above;
             if (auto it = body.find("shrink_above"); it != body.end() && !it->is_null()) {
               try {
                 above = ParseByteSize(JsonScalarText(*it, "shrink_above"), "shrink_above");
               } catch (const Error& e) {
                 ThrowBadField("shrink_above", e.what());
               }
             }
             if (!IsAdmin(req)) RefuseRaisedRunOptions(run, AdminPrefixBudgetOf(id));
             for (const auto& [k, v] : run) {
               if (v) {
                 try {
                   h.SetRunOption(k, *v);
                 } catch (const Error& e) {
                   ThrowBadField("run_options." + k, e.what());
                 }
               } else {
                 h.ClearRunOption(k);
               }
             }
             if (every) h.ShrinkEvery(*every);
             if (above) h.ShrinkAbove(*above);
             // Kept for the id: applied again when it is loaded after an unload, expiry or
             // eviction.
             try {
               manager_->RememberTier2(id, run, every, above);
             } catch (const Error&) {
               // Loaded outside the manager's ids (an SDK load): nothing to remember it under.
             }
             res.set_content(Dump(ModelRuntimeJson(id, *model, manager_->Get(id))),
                             "application/json");
           });
         });
  Handle("POST", "/v1/models/{id}/runtime/shrink",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             const Json body = BodyObject(req);
             std::string when = "now";
             if (auto it = body.find("when"); it != body.end() && !it->is_null()) {
               if (!it->is_string()) ThrowBadField("when", "'when' must be a string");
               when = it->get<std::string>();
             }
             if (when != "now" && when != "after_next_run") {
               ThrowBadField("when", "'when' must be \"now\" or \"after_next_run\"");
             }
             auto model = LoadedModel(*runtime_, id);
             if (when == "now") {
               model->runtime().ShrinkArena();
             } else {
               model->runtime().ShrinkAfterNextRun();
             }
             res.set_content(Dump(ModelRuntimeJson(id, *model, manager_->Get(id))),
                             "application/json");
           });
         });
  Handle("POST", "/v1/models/{id}/runtime/release_weights",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             BodyObject(req);  // a JSON object (or empty), like the other verbs
             auto model = LoadedModel(*runtime_, id);
             const WeightsRelease r = model->runtime().ReleaseWeights();
             Json j = ModelRuntimeJson(id, *model, manager_->Get(id));
             j["release"] = internal::WeightsReleaseJson(r);
             res.set_content(Dump(j), "application/json");
           });
         });
  // The prefix cache (docs/http_api.md "Prefix cache"): pin, unpin, drop the unpinned blocks.
  Handle("POST", "/v1/models/{id}/prefix",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             const PrefixRequest p = ParsePrefixRequest(req.body);
             auto model = LoadedModel(*runtime_, id);
             ModelControls& h = model->runtime();
             const std::string shown = internal::EscapeForMessage(id, 200);
             if (!model->info().is_encoder && h.Stats().prefix_cache.max_bytes == 0) {
               throw ApiException(ApiError{
                   409, "conflict_error",
                   "the prefix cache of model '" + shown +
                       "' is off (prefix_cache.max_bytes=0), so nothing can be pinned: turn it on "
                       "with PATCH /v1/models/" +
                       shown +
                       "/runtime {\"run_options\": {\"prefix_cache.max_bytes\": \"64MiB\"}} (ebb "
                       "model "
                       "set-runtime-option " +
                       shown +
                       " prefix_cache.max_bytes=64MiB), or load the model with the option "
                       "prefix_cache.max_bytes (ebb serve --option prefix_cache.max_bytes=64MiB); "
                       "then "
                       "pin",
                   std::nullopt, "prefix_cache_off", 0, ErrorCode::FailedPrecondition});
             }
             const std::vector<int32_t> tokens = PrefixTokens(p, *model, id);
             // Pinning prefills what the cache does not hold yet: compute, so it takes a slot like
             // a request (429 when the queue is full).
             const Admission::Ticket ticket = admission_->Enter();
             const PrefixPin pin = h.PinPrefix(tokens);
             res.set_content(Dump(PrefixAnswer(internal::PrefixPinJson(pin), *model)),
                             "application/json");
           });
         });
  Handle("DELETE", "/v1/models/{id}/prefix",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             const PrefixRequest p = ParsePrefixRequest(req.body);
             auto model = LoadedModel(*runtime_, id);
             const PrefixPin pin = model->runtime().UnpinPrefix(PrefixTokens(p, *model, id));
             res.set_content(Dump(PrefixAnswer(internal::PrefixPinJson(pin), *model)),
                             "application/json");
           });
         });
  Handle("POST", "/v1/models/{id}/prefix/drop",
         [this](const httplib::Request& req, httplib::Response& res) {
           Guard(res, [&] {
             const std::string id = req.matches[1];
             BodyObject(req);  // a JSON object (or empty), like the other verbs
             auto model = LoadedModel(*runtime_, id);
             const uint64_t freed = model->runtime().DropPrefixCache();
             res.set_content(Dump(PrefixAnswer(Json{{"freed_bytes", freed}}, *model)),
                             "application/json");
           });
         });
  Handle("GET", "/v1/runtime", [this](const httplib::Request&, httplib::Response& res) {
    Guard(res, [&] {
      const MemoryStats s = runtime_->Stats();
      // Cumulative counters per model, so that a client (the memory page) derives requests/s
      // and tokens/s from two samples.
      const auto usage = metrics_->usage();
      Metrics::Usage total;
      for (const auto& [id, u] : usage) {
        total.requests += u.requests;
        total.prompt_tokens += u.prompt_tokens;
        total.generated_tokens += u.generated_tokens;
        total.cached_tokens += u.cached_tokens;
      }
      Json models = Json::array();
      for (const auto& m : manager_->List()) {
        Json j = ManagedJson(m);
        const auto it = usage.find(m.id);
        const Metrics::Usage u = it == usage.end() ? Metrics::Usage{} : it->second;
        j["usage"] = UsageJson(u);
        if (m.loaded) {
          try {
            j["num_shrinks"] = runtime_->Get(m.id)->runtime().Stats().num_shrinks;
          } catch (const Error&) {
            // Unloaded between the list and now.
          }
        }
        models.push_back(std::move(j));
      }
      // One document (docs/runtime.schema.json): every memory figure once, under
      // "stats" (process, memory.limit as limit_bytes, what it counts as used_bytes, weights,
      // KV), the queue and the request counters, and the models.
      Json body = {
          {"version", Version()},
          {"onnxruntime", OrtVersion()},
          {"uptime_s",
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()},
          // Runtime::Stats(): what the SDKs' Runtime.stats() return.
          {"stats", internal::MemoryStatsJson(s)},
          {"queue",
           {{"running", admission_->running()},
            {"queued", admission_->queued()},
            {"parallel", admission_->parallel()},
            {"max_queue", admission_->max_queue()},
            {"rejected", admission_->rejected()}}},
          {"requests",
           {{"completed", metrics_->requests(RequestOutcome::kCompleted)},
            {"cancelled", metrics_->requests(RequestOutcome::kCancelled)},
            {"error", metrics_->requests(RequestOutcome::kError)}}},
          {"usage", UsageJson(total)},
          {"evictions", manager_->num_evictions()},
          {"expirations", manager_->num_expirations()},
          {"keep_alive", FormatKeepAlive(options_.models.keep_alive)},
          {"draining", admission_->draining()},
          {"models", models}};
      res.set_content(Dump(body), "application/json");
    });
  });
}

}  // namespace ebb::server
