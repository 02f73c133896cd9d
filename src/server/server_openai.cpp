// The OpenAI-compatible routes of Server: /v1/chat/completions, /v1/completions,
// /v1/embeddings, /v1/models.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <span>

#include "core/log.h"
#include "ebb/embedding.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/tokenizer.h"
#include "server/admission.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/request_log.h"
#include "server/routes.h"
#include "server/server.h"
#include "server/tool_calling.h"

namespace ebb::server {
namespace {

using Json = nlohmann::ordered_json;

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Base64(const void* data, size_t n) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = p[i] << 16;
    if (i + 1 < n) v |= p[i + 1] << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool HasOption(const std::vector<std::pair<std::string, std::string>>& options,
               std::string_view key) {
  for (const auto& [k, v] : options) {
    if (k == key) return true;
  }
  return false;
}

// The request as ebb::Generate takes it, with the prompt encoded and checked against the
// model's context. Throws ApiException (400 context_length_exceeded, bad options).
GenerateRequest BuildGenerateRequest(const CompletionRequest& r, const Model& model,
                                     ToolPlan* tools) {
  GenerateRequest g;
  if (UsesTools(r)) {
    *tools = PrepareTools(r, model, g);  // the prompt (with the tools) and the constraint
  } else {
    if (r.chat) {
      g.messages = r.messages;
    } else {
      g.prompt = r.prompt;
    }
    g.input_ids = EncodeInput(model, g);
    g.messages.clear();
    g.prompt.clear();
  }
  const size_t n = g.input_ids[0].size();
  const int32_t context = model.info().context_length;
  if (context > 0 && n >= static_cast<size_t>(context)) {
    throw ApiException(
        ApiError{400, "invalid_request_error",
                 "this model's maximum context length is " + std::to_string(context) +
                     " tokens, but the " + (r.chat ? "messages" : "prompt") + " resulted in " +
                     std::to_string(n) + " tokens, which leaves no room to generate; shorten the " +
                     (r.chat ? "messages" : "prompt"),
                 r.chat ? "messages" : "prompt", "context_length_exceeded", 0});
  }
  for (const auto& [k, v] : r.options) {
    try {
      g.Set(k, v);
    } catch (const Error& e) {
      ThrowBadField("options." + k, e.what());
    }
  }
  if (r.max_tokens) {
    g.max_new_tokens = *r.max_tokens;
    // An explicit options.max_length wins (as in the SDK, where both bound the request).
    if (!HasOption(r.options, "max_length")) {
      const int64_t want = static_cast<int64_t>(n) + *r.max_tokens;
      g.params.max_length =
          static_cast<int32_t>(context > 0 ? std::min<int64_t>(want, context) : want);
    }
  }
  // OpenAI's sampling fields: temperature 0 is greedy; any other temperature samples.
  if (r.temperature) {
    g.params.temperature = *r.temperature;
    g.params.do_sample = *r.temperature > 0;
  }
  if (r.top_p) {
    g.params.top_p = *r.top_p;
    if (*r.top_p < 1 && !r.temperature) g.params.do_sample = true;
  }
  if (r.seed) g.params.seed = *r.seed;
  if (r.cache_prompt) g.params.cache_prompt = *r.cache_prompt;
  if (r.presence_penalty) g.params.presence_penalty = *r.presence_penalty;
  if (r.frequency_penalty) g.params.frequency_penalty = *r.frequency_penalty;
  if (r.logit_bias) g.params.logit_bias = *r.logit_bias;
  if (!r.json_schema.empty()) {
    if (tools != nullptr && tools->parse) {
      ThrowBadField("response_format",
                    "'response_format' and 'tools' both constrain the reply: send one of them (or "
                    "tool_choice \"none\")");
    }
    g.params.json_schema = r.json_schema;
  }
  if (r.logprobs) {
    g.params.logprobs = true;
    g.params.top_logprobs = r.top_logprobs;
  }
  // Token ids beyond the model's logits would otherwise fail when the generator is created,
  // without the field's name.
  const int32_t vocab = model.info().vocab_size;
  for (const auto& [id, bias] : g.params.logit_bias) {
    if (id >= vocab) {
      const std::string param = r.logit_bias ? "logit_bias" : "options.logit_bias";
      ThrowBadField(param, "'" + param + "' token id " + std::to_string(id) +
                               " is not in the vocabulary of model '" + r.model +
                               "': its vocab_size is " + std::to_string(vocab) + " (ids 0 to " +
                               std::to_string(vocab - 1) + ")");
    }
  }
  g.stop = r.stop;
  return g;
}

// The text a token adds after `prev` (the token before it): Decode([prev, id]) minus
// Decode([prev]), so that a SentencePiece token keeps its leading space; Decode([id]) when that
// is not a prefix. Special tokens show as their text. Ids the tokenizer lacks give U+FFFD.
std::string TokenPiece(const Tokenizer* tok, int32_t prev, int32_t id) {
  if (tok == nullptr) return "";
  try {
    if (prev >= 0 && !tok->IdToToken(prev).empty()) {
      const int32_t pair[2] = {prev, id};
      const std::string both = tok->Decode(pair);
      const std::string before = tok->Decode(std::span<const int32_t>(pair, 1));
      if (both.compare(0, before.size(), before) == 0) return both.substr(before.size());
    }
    return tok->Decode(std::span<const int32_t>(&id, 1));
  } catch (const Error&) {
    return "\xEF\xBF\xBD";
  }
}

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (const unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Formats the logprobs of generated tokens in OpenAI's shapes: chat's logprobs.content[] and
// the completions' {tokens, token_logprobs, top_logprobs, text_offset}. EOS tokens are left out
// (they are not text). Used whole for a response and token by token for a stream.
class LogprobsFormatter {
 public:
  LogprobsFormatter(const Model& model, bool chat, int32_t last_prompt_id)
      : tok_(model.tokenizer()),
        eos_(model.info().eos_token_ids),
        chat_(chat),
        prev_(last_prompt_id) {}

  // Adds one generated token.
  void Add(int32_t id, const TokenLogprobs& lp) {
    if (std::find(eos_.begin(), eos_.end(), id) != eos_.end()) return;
    const std::string text = TokenPiece(tok_, prev_, id);
    if (chat_) {
      Json top = Json::array();
      for (const TokenLogprob& t : lp.top) {
        const std::string alt = TokenPiece(tok_, prev_, t.id);
        top.push_back({{"token", alt}, {"logprob", t.logprob}, {"bytes", Bytes(alt)}});
      }
      content_.push_back({{"token", text},
                          {"logprob", lp.logprob},
                          {"bytes", Bytes(text)},
                          {"top_logprobs", std::move(top)}});
    } else {
      Json top = Json::object();
      for (const TokenLogprob& t : lp.top) top[TokenPiece(tok_, prev_, t.id)] = t.logprob;
      if (!top.contains(text)) top[text] = lp.logprob;  // OpenAI: the sampled token is always in
      tokens_.push_back(text);
      token_logprobs_.push_back(lp.logprob);
      top_.push_back(std::move(top));
      text_offset_.push_back(offset_);
      offset_ += CodePoints(text);
    }
    prev_ = id;
  }

  bool empty() const { return chat_ ? content_.empty() : tokens_.empty(); }

  // The logprobs object of what was added since the last Take (then cleared).
  Json Take() {
    Json out;
    if (chat_) {
      out = {{"content", std::move(content_)}, {"refusal", nullptr}};
      content_ = Json::array();
    } else {
      out = {{"tokens", std::move(tokens_)},
             {"token_logprobs", std::move(token_logprobs_)},
             {"top_logprobs", std::move(top_)},
             {"text_offset", std::move(text_offset_)}};
      tokens_ = token_logprobs_ = top_ = text_offset_ = Json::array();
    }
    return out;
  }

 private:
  const Tokenizer* tok_;  // null: no tokenizer (tokens show as "")
  std::vector<int32_t> eos_;
  bool chat_;
  int32_t prev_;
  size_t offset_ = 0;  // code points of the completion's tokens so far
  Json content_ = Json::array();
  Json tokens_ = Json::array(), token_logprobs_ = Json::array(), top_ = Json::array(),
       text_offset_ = Json::array();
};

// OpenAI's usage, with prompt_tokens_details.cached_tokens: the prompt tokens taken from the
// model's prefix cache (not prefilled; 0 with the cache off or cache_prompt false).
Json UsageJson(const GenerateUsage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// OpenAI's finish_reason ("stop", "length"); cancelled and errored requests never reach it.
std::string FinishName(FinishReason f) { return std::string(FinishReasonName(f)); }

}  // namespace

void Server::RegisterOpenAiRoutes() {
  auto model_json = [](const ManagedModel& m) {
    return Json{{"id", m.id},         {"object", "model"},
                {"created", 0},       {"owned_by", "ebb"},
                {"loaded", m.loaded}, {"is_encoder", m.summary ? m.summary->is_encoder : false}};
  };
  // The same handlers under /v1 and under KServe's /openai/v1 (routes.h).
  for (const std::string prefix : kOpenAiPrefixes) {
    Handle("POST", prefix + "/chat/completions",
           [this](const httplib::Request& req, httplib::Response& res) {
             ChatOrCompletion(req, res, true);
           });
    Handle("POST", prefix + "/completions",
           [this](const httplib::Request& req, httplib::Response& res) {
             ChatOrCompletion(req, res, false);
           });
    Handle("POST", prefix + "/embeddings",
           [this](const httplib::Request& req, httplib::Response& res) { Embeddings(req, res); });
    Handle("GET", prefix + "/models",
           [this, model_json](const httplib::Request&, httplib::Response& res) {
             Guard(res, [&] {
               Json data = Json::array();
               for (const auto& m : manager_->List()) data.push_back(model_json(m));
               res.set_content(Dump(Json{{"object", "list"}, {"data", data}}), "application/json");
             });
           });
    Handle("GET", prefix + "/models/{id}",
           [this, model_json](const httplib::Request& req, httplib::Response& res) {
             Guard(res, [&] {
               try {
                 res.set_content(Dump(model_json(manager_->Get(req.matches[1]))),
                                 "application/json");
               } catch (const Error& e) {
                 throw ApiException(ModelError(e));
               }
             });
           });
  }
}

ModelManager::Lease Server::AcquireModel(const std::string& id,
                                         std::optional<KeepAlive> keep_alive) {
  try {
    return manager_->Acquire(id, keep_alive);
  } catch (const Error& e) {
    throw ApiException(ModelError(e));
  }
}

void Server::ChatOrCompletion(const httplib::Request& req, httplib::Response& res, bool chat) {
  Guard(res, [&] {
    const CompletionRequest r = ParseCompletionRequest(req.body, chat);
    auto ticket = std::make_shared<Admission::Ticket>(admission_->Enter());
    auto lease = std::make_shared<ModelManager::Lease>(AcquireModel(r.model, r.keep_alive));
    const std::shared_ptr<Model>& model = lease->model();
    if (model->info().is_encoder) {
      ThrowBadField(
          "model", "model '" + r.model + "' is an embedding model; use POST /v1/embeddings with it",
          "wrong_model_kind", ErrorCode::FailedPrecondition);
    }
    if (chat && !model->has_chat_template()) {
      throw ApiException(ApiError{
          400, "invalid_request_error",
          "model '" + r.model +
              "' has no chat template (its folder has no chat_template.jinja, "
              "tokenizer_config.json \"chat_template\" or chat_template.json), so its messages "
              "cannot be rendered: give it one with the models file's \"chat_template\" (a "
              "Jinja file), the load request's \"chat_template\" (POST /v1/models/" +
              r.model + "/load with the template's text; ebb model load " + r.model +
              " --chat-template FILE), or ebb serve --option chat_template=FILE; or send a raw "
              "prompt to /v1/completions",
          "messages", "no_chat_template", 0});
    }
    auto tools = std::make_shared<ToolPlan>();
    auto g = std::make_shared<GenerateRequest>(BuildGenerateRequest(r, *model, tools.get()));
    const std::string id = (chat ? "chatcmpl-" : "cmpl-") + res.get_header_value("X-Request-Id");
    const int64_t created = NowSeconds();
    const std::string object = chat ? "chat.completion" : "text_completion";

    if (!r.stream) {
      // Each piece of text is progress for the readiness check (admission.h).
      const GenerateResult out =
          Generate(model, *g, [&ticket](size_t, std::string_view) { ticket->Progress(); });
      NoteGeneration(r.model, out);
      metrics_->OnCachedTokens(r.model, out.usage.cached_tokens);
      if (out.error) {
        const GenerateRow& failed = out.rows.at(0);
        if (failed.generated_ids.empty()) throw *out.error;
        // Failed after N tokens: the error's status and body, with what was generated kept
        // under "partial" (docs/http_api.md "Errors"), as the streamed form delivers the text
        // and then the error.
        const ApiError err = FromError(*out.error);
        Json body = Json::parse(err.ToJson());
        body["partial"] = {
            {"text", failed.text}, {"finish_reason", "error"}, {"usage", UsageJson(out.usage)}};
        res.status = err.status;
        if (err.retry_after_s > 0) res.set_header("Retry-After", std::to_string(err.retry_after_s));
        res.set_content(Dump(body), "application/json");
        return;
      }
      const GenerateRow& row = out.rows.at(0);
      Json logprobs = nullptr;
      if (g->params.logprobs || g->params.top_logprobs > 0) {
        LogprobsFormatter f(*model, chat, row.prompt_ids.empty() ? -1 : row.prompt_ids.back());
        for (size_t i = 0; i < row.logprobs.size() && i < row.generated_ids.size(); ++i) {
          f.Add(row.generated_ids[i], row.logprobs[i]);
        }
        logprobs = f.Take();
      }
      Json choice;
      if (chat) {
        std::string finish = FinishName(row.finish_reason);
        Json message = ToolMessage(*tools, *model->tokenizer(), model->info().eos_token_ids, row,
                                   static_cast<uint64_t>(created), finish);
        choice = {{"index", 0},
                  {"message", std::move(message)},
                  {"logprobs", std::move(logprobs)},
                  {"finish_reason", finish}};
      } else {
        choice = {{"index", 0},
                  {"text", row.text},
                  {"logprobs", std::move(logprobs)},
                  {"finish_reason", FinishName(row.finish_reason)}};
      }
      Json body = {{"id", id},
                   {"object", object},
                   {"created", created},
                   {"model", r.model},
                   {"system_fingerprint", nullptr},
                   {"choices", Json::array({choice})},
                   {"usage", UsageJson(out.usage)}};
      res.set_content(Dump(body), "application/json");
      return;
    }

    // Streamed: a streamed response commits to status 200 with its first byte, so the
    // generation starts here, before any: a request that cannot start (its KV over a budget,
    // a prompt over max_length) gets its own status, as a non-streamed one does, in both KV
    // modes (the KV is reserved and the prompt run by Start). Then server-sent events, one
    // chunk per piece of text, pulled in the content provider on this connection's thread; a
    // failed write means the client is gone, which ends the generation (its KV is freed when
    // the Generation is destroyed, also when httplib drops the provider unrun).
    auto generation = std::make_shared<Generation>(Generation::Start(model, *g));
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    const bool include_usage = r.include_usage;
    const std::string model_name = r.model;
    // With tools the text is read for calls: content goes out as the parser releases it, the
    // calls as delta.tool_calls once each is complete.
    auto tool_stream = tools->parse ? std::make_shared<ToolStream>(*tools, *model->tokenizer(),
                                                                   model->info().eos_token_ids,
                                                                   static_cast<uint64_t>(created))
                                    : nullptr;
    auto formatter = g->params.logprobs || g->params.top_logprobs > 0
                         ? std::make_shared<LogprobsFormatter>(*model, chat, g->input_ids[0].back())
                         : nullptr;
    res.set_chunked_content_provider(
        "text/event-stream",
        [ticket, lease, g, generation, id, created, chat, include_usage, model_name, formatter,
         tool_stream, metrics = metrics_](size_t /*offset*/, httplib::DataSink& sink) {
          const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
          // A chunk carries the logprobs of the tokens whose text it releases (held text, e.g. a
          // possible stop string, carries them to a later chunk; the last chunk takes the rest).
          auto chunk = [&](Json choice_delta, const Json& finish) {
            Json logprobs = nullptr;
            if (formatter && (!formatter->empty() || !finish.is_null())) {
              logprobs = formatter->Take();
            }
            Json choice;
            if (chat) {
              choice = {{"index", 0},
                        {"delta", std::move(choice_delta)},
                        {"logprobs", std::move(logprobs)},
                        {"finish_reason", finish}};
            } else {
              choice = {{"index", 0},
                        {"text", choice_delta.value("content", "")},
                        {"logprobs", std::move(logprobs)},
                        {"finish_reason", finish}};
            }
            Json c = {{"id", id},
                      {"object", chunk_object},
                      {"created", created},
                      {"model", model_name},
                      {"system_fingerprint", nullptr},
                      {"choices", Json::array({choice})}};
            if (include_usage) c["usage"] = nullptr;
            return c;
          };
          auto send = [&](const Json& j) {
            const std::string line = "data: " + Dump(j) + "\n\n";
            if (!sink.write(line.data(), line.size())) g->cancel.Cancel();
          };
          if (chat) send(chunk(Json{{"role", "assistant"}, {"content", ""}}, nullptr));
          GenerateResult out;
          try {
            while (!g->cancel.cancelled()) {
              std::optional<GenerationPiece> p = generation->Next();
              if (!p) break;
              if (formatter && p->logprobs != nullptr) formatter->Add(p->token, *p->logprobs);
              if (tool_stream) p->text = tool_stream->Feed(p->token);
              if (p->text.empty()) continue;
              ticket->Progress();  // before the write, which may block on a slow client
              send(chunk(Json{{"content", std::move(p->text)}}, nullptr));
            }
            out = generation->Finish();  // a client gone: its rows end "cancelled"
          } catch (...) {
            NoteGeneration(model_name, out);
            metrics->OnCachedTokens(model_name, out.usage.cached_tokens);
            const ApiError e = FromCurrentException();
            NoteStreamError(e.status, e.code.value_or(""));
            send(Json::parse(e.ToJson()));
            lease->Reset();  // before [DONE]: see below
            static const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
          }
          NoteGeneration(model_name, out);
          metrics->OnCachedTokens(model_name, out.usage.cached_tokens);
          if (g->cancel.cancelled()) {
            NoteOutcome("cancelled");
            EBB_LOG_INFO("{}: the client went away; generation cancelled", id);
            sink.done();
            return false;
          }
          if (out.error) {
            const ApiError e = FromError(*out.error);
            NoteStreamError(e.status, e.code.value_or(""));
            send(Json::parse(e.ToJson()));
          } else {
            std::string finish = FinishName(out.rows.at(0).finish_reason);
            if (tool_stream) {
              auto [rest, calls] = tool_stream->Finish();
              if (!rest.empty()) send(chunk(Json{{"content", std::move(rest)}}, nullptr));
              if (!calls.empty()) {
                send(chunk(Json{{"tool_calls", std::move(calls)}}, nullptr));
                finish = "tool_calls";
              }
            }
            send(chunk(Json::object(), finish));
            if (include_usage) {
              Json u = {{"id", id},
                        {"object", chunk_object},
                        {"created", created},
                        {"model", model_name},
                        {"system_fingerprint", nullptr},
                        {"choices", Json::array()},
                        {"usage", UsageJson(out.usage)}};
              send(u);
            }
          }
          // The request is over: end the lease before [DONE], so that a client that reads it
          // and then unloads the model finds no running request (httplib destroys this
          // provider, and the lease in it, only after the response is written).
          lease->Reset();
          static const std::string done = "data: [DONE]\n\n";
          sink.write(done.data(), done.size());
          sink.done();
          return true;
        });
  });
}

void Server::Embeddings(const httplib::Request& req, httplib::Response& res) {
  Guard(res, [&] {
    const EmbeddingsRequest r = ParseEmbeddingsRequest(req.body);
    auto ticket = admission_->Enter();
    auto lease = AcquireModel(r.model, r.keep_alive);
    if (!lease->info().is_encoder) {
      ThrowBadField("model",
                    "model '" + r.model +
                        "' generates text; /v1/embeddings needs an embedding (encoder) "
                        "model",
                    "wrong_model_kind", ErrorCode::FailedPrecondition);
    }
    EmbedRequest e;
    e.texts = r.texts;
    e.input_ids = r.token_ids;
    for (const auto& [k, v] : r.options) {
      try {
        e.Set(k, v);
      } catch (const Error& err) {
        ThrowBadField("options." + k, err.what());
      }
    }
    if (r.dimensions) e.options.dimensions = *r.dimensions;
    EmbedResult out;
    try {
      out = Embed(lease.model(), e);
    } catch (const Error& err) {
      ApiError a = FromError(err);
      if (err.code() == ErrorCode::InvalidArgument) {
        const std::string msg = err.what();
        a.param = msg.find("dimensions") != std::string::npos ? "dimensions" : "input";
      }
      throw ApiException(a);
    }
    NoteEmbedding(r.model, out.usage.prompt_tokens);
    Json data = Json::array();
    for (size_t i = 0; i < out.embeddings.size(); ++i) {
      const auto& v = out.embeddings[i];
      Json item = {{"object", "embedding"}, {"index", i}};
      if (r.base64) {
        item["embedding"] = Base64(v.data(), v.size() * sizeof(float));
      } else {
        item["embedding"] = v;
      }
      data.push_back(std::move(item));
    }
    Json body = {
        {"object", "list"},
        {"data", data},
        {"model", r.model},
        {"usage",
         {{"prompt_tokens", out.usage.prompt_tokens}, {"total_tokens", out.usage.total_tokens}}}};
    res.set_content(Dump(body), "application/json");
  });
}

}  // namespace ebb::server
