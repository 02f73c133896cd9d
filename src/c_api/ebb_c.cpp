// The C ABI (include/ebb/ebb.h) over the public C++ API. Every entry point catches everything:
// no exception crosses the boundary. A surface: it uses only include/ebb/.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ebb/ebb.h"
#include "ebb/error.h"
#include "ebb/generation.h"
#include "ebb/generator.h"
#include "ebb/json.h"
#include "ebb/model.h"
#include "ebb/options.h"
#include "ebb/runtime.h"
#include "ebb/stats.h"
#include "ebb/tokenizer.h"
#include "ebb/version.h"

struct ebb_error {
  ebb_error_code code;
  std::string message;
};
struct ebb_runtime_options {
  ebb::RuntimeOptions options;
};
struct ebb_runtime {
  std::unique_ptr<ebb::Runtime> runtime;
};
struct ebb_model_options {
  ebb::ModelOptions options;
};
struct ebb_model {
  std::shared_ptr<ebb::Model> model;
};
struct ebb_generator_params {
  ebb::GeneratorParams params;
};
struct ebb_generator {
  std::unique_ptr<ebb::Generator> generator;
};
struct ebb_request {
  ebb::GenerateRequest request;
};
struct ebb_result {
  ebb::GenerateResult result;
  ebb_error error{EBB_OK, {}};  // what ended an "error" result
};
struct ebb_generation {
  std::optional<ebb::Generation> generation;  // empty only while being started
  std::string piece;                          // the last piece handed out (borrowed by the caller)
  bool finished = false;
};

namespace {

// Returned when even the error object cannot be allocated; ebb_error_free ignores it.
ebb_error g_out_of_memory{EBB_RESOURCE_EXHAUSTED, {}};

ebb_error* MakeError(ebb_error_code code, const char* message) noexcept {
  try {
    return new ebb_error{code, message};
  } catch (...) {
    return &g_out_of_memory;
  }
}

ebb_error_code ToC(ebb::ErrorCode code) {
  return static_cast<ebb_error_code>(static_cast<int>(code) + 1);
}

// Runs `f`, translating any exception into an error object.
template <typename F>
ebb_error* Guard(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const ebb::Error& e) {
    return MakeError(ToC(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return MakeError(EBB_RESOURCE_EXHAUSTED, "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return MakeError(EBB_INTERNAL, e.what());
  } catch (...) {
    return MakeError(EBB_INTERNAL, "unknown exception");
  }
}

ebb_error* NullArg(const char* what) {
  return MakeError(EBB_INVALID_ARGUMENT, (std::string(what) + " is NULL").c_str());
}
#define EBB_CHECK_ARG(p) \
  if ((p) == nullptr) return NullArg(#p)

char* CopyString(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace

extern "C" {

EBB_API const char* ebb_version(void) { return EBB_VERSION; }
EBB_API int ebb_c_abi_version(void) { return EBB_C_ABI_VERSION; }

EBB_API ebb_error_code ebb_error_get_code(const ebb_error* error) {
  return error == nullptr ? EBB_OK : error->code;
}
EBB_API const char* ebb_error_get_message(const ebb_error* error) {
  if (error == nullptr) return "";
  if (error == &g_out_of_memory) return "out of memory";
  return error->message.c_str();
}
EBB_API const char* ebb_error_code_name(ebb_error_code code) {
  switch (code) {
    case EBB_OK:
      return "ok";
    case EBB_INVALID_ARGUMENT:
      return "invalid_argument";
    case EBB_NOT_FOUND:
      return "not_found";
    case EBB_RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case EBB_FAILED_PRECONDITION:
      return "failed_precondition";
    case EBB_CANCELLED:
      return "cancelled";
    case EBB_DEADLINE_EXCEEDED:
      return "deadline_exceeded";
    case EBB_UNAVAILABLE:
      return "unavailable";
    case EBB_INTERNAL:
      return "internal";
  }
  return "unknown";
}
EBB_API void ebb_error_free(ebb_error* error) {
  if (error != &g_out_of_memory) delete error;
}
EBB_API void ebb_string_free(char* str) { std::free(str); }

// ---- Runtime ------------------------------------------------------------------------------

EBB_API ebb_error* ebb_runtime_options_create(ebb_runtime_options** out) {
  EBB_CHECK_ARG(out);
  return Guard([&] { *out = new ebb_runtime_options(); });
}
EBB_API ebb_error* ebb_runtime_options_set(ebb_runtime_options* options, const char* key,
                                           const char* value) {
  EBB_CHECK_ARG(options);
  EBB_CHECK_ARG(key);
  EBB_CHECK_ARG(value);
  return Guard([&] { options->options.Set(key, value); });
}
EBB_API void ebb_runtime_options_free(ebb_runtime_options* options) { delete options; }

EBB_API ebb_error* ebb_runtime_create(const ebb_runtime_options* options, ebb_runtime** out) {
  EBB_CHECK_ARG(out);
  return Guard([&] {
    auto rt = std::make_unique<ebb_runtime>();
    rt->runtime =
        std::make_unique<ebb::Runtime>(options ? options->options : ebb::RuntimeOptions{});
    *out = rt.release();
  });
}
EBB_API void ebb_runtime_free(ebb_runtime* runtime) {
  try {
    delete runtime;
  } catch (...) {  // a destructor that throws: nothing to report it to
  }
}

EBB_API ebb_error* ebb_model_options_create(ebb_model_options** out) {
  EBB_CHECK_ARG(out);
  return Guard([&] { *out = new ebb_model_options(); });
}
EBB_API ebb_error* ebb_model_options_set(ebb_model_options* options, const char* key,
                                         const char* value) {
  EBB_CHECK_ARG(options);
  EBB_CHECK_ARG(key);
  EBB_CHECK_ARG(value);
  return Guard([&] { options->options.Set(key, value); });
}
EBB_API void ebb_model_options_free(ebb_model_options* options) { delete options; }

EBB_API ebb_error* ebb_runtime_load(ebb_runtime* runtime, const char* id, const char* path,
                                    const ebb_model_options* options, ebb_model** out) {
  EBB_CHECK_ARG(runtime);
  EBB_CHECK_ARG(id);
  EBB_CHECK_ARG(path);
  EBB_CHECK_ARG(out);
  return Guard([&] {
    auto m = std::make_unique<ebb_model>();
    m->model = runtime->runtime->Load(id, path, options ? options->options : ebb::ModelOptions{});
    *out = m.release();
  });
}
EBB_API ebb_error* ebb_runtime_get(ebb_runtime* runtime, const char* id, ebb_model** out) {
  EBB_CHECK_ARG(runtime);
  EBB_CHECK_ARG(id);
  EBB_CHECK_ARG(out);
  return Guard([&] {
    auto m = std::make_unique<ebb_model>();
    m->model = runtime->runtime->Get(id);
    *out = m.release();
  });
}
EBB_API ebb_error* ebb_runtime_unload(ebb_runtime* runtime, const char* id, int force) {
  EBB_CHECK_ARG(runtime);
  EBB_CHECK_ARG(id);
  return Guard([&] { runtime->runtime->Unload(id, force != 0); });
}
EBB_API ebb_error* ebb_runtime_list_json(const ebb_runtime* runtime, char** out_json) {
  EBB_CHECK_ARG(runtime);
  EBB_CHECK_ARG(out_json);
  return Guard([&] { *out_json = CopyString(ebb::ToJson(runtime->runtime->List())); });
}
EBB_API ebb_error* ebb_runtime_stats_json(const ebb_runtime* runtime, char** out_json) {
  EBB_CHECK_ARG(runtime);
  EBB_CHECK_ARG(out_json);
  return Guard([&] { *out_json = CopyString(ebb::ToJson(runtime->runtime->Stats())); });
}
EBB_API ebb_error* ebb_runtime_set_memory_limit(ebb_runtime* runtime, uint64_t bytes) {
  EBB_CHECK_ARG(runtime);
  return Guard([&] { runtime->runtime->SetMemoryLimit(bytes); });
}

// ---- Model --------------------------------------------------------------------------------

EBB_API void ebb_model_free(ebb_model* model) {
  try {
    delete model;
  } catch (...) {
  }
}
EBB_API const char* ebb_model_id(const ebb_model* model) {
  return model == nullptr ? "" : model->model->id().c_str();
}
EBB_API ebb_error* ebb_model_info_json(const ebb_model* model, char** out_json) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_json);
  return Guard([&] { *out_json = CopyString(ebb::InfoJson(*model->model)); });
}

namespace {
const ebb::Tokenizer& TokenizerOf(const ebb_model* model) {
  const ebb::Tokenizer* t = model->model->tokenizer();
  if (t == nullptr) {
    throw ebb::Error(ebb::ErrorCode::NotFound,
                     "model '" + model->model->id() + "' has no tokenizer.json");
  }
  return *t;
}
}  // namespace

EBB_API ebb_error* ebb_model_encode(const ebb_model* model, const char* text,
                                    int add_special_tokens, int32_t** out_ids, size_t* out_count) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(text);
  EBB_CHECK_ARG(out_ids);
  EBB_CHECK_ARG(out_count);
  return Guard([&] {
    std::vector<int32_t> ids = TokenizerOf(model).Encode(text, add_special_tokens != 0);
    auto* buf = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (ids.size() + 1)));
    if (buf == nullptr) throw std::bad_alloc();
    if (!ids.empty()) std::memcpy(buf, ids.data(), sizeof(int32_t) * ids.size());
    *out_ids = buf;
    *out_count = ids.size();
  });
}
EBB_API ebb_error* ebb_model_decode(const ebb_model* model, const int32_t* ids, size_t count,
                                    int skip_special_tokens, char** out_text) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_text);
  if (ids == nullptr && count > 0) return NullArg("ids");
  return Guard([&] {
    *out_text = CopyString(
        TokenizerOf(model).Decode(std::span<const int32_t>(ids, count), skip_special_tokens != 0));
  });
}
EBB_API void ebb_ids_free(int32_t* ids) { std::free(ids); }

EBB_API ebb_error* ebb_model_shrink_arena(ebb_model* model) {
  EBB_CHECK_ARG(model);
  return Guard([&] { model->model->runtime().ShrinkArena(); });
}
EBB_API ebb_error* ebb_model_shrink_after_next_run(ebb_model* model) {
  EBB_CHECK_ARG(model);
  return Guard([&] { model->model->runtime().ShrinkAfterNextRun(); });
}
EBB_API ebb_error* ebb_model_shrink_every(ebb_model* model, uint32_t n) {
  EBB_CHECK_ARG(model);
  return Guard([&] { model->model->runtime().ShrinkEvery(n); });
}
EBB_API ebb_error* ebb_model_shrink_above(ebb_model* model, uint64_t rss_bytes) {
  EBB_CHECK_ARG(model);
  return Guard([&] { model->model->runtime().ShrinkAbove(rss_bytes); });
}
EBB_API ebb_error* ebb_model_release_weights(ebb_model* model, char** out_json) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_json);
  return Guard(
      [&] { *out_json = CopyString(ebb::ToJson(model->model->runtime().ReleaseWeights())); });
}
EBB_API ebb_error* ebb_model_pin_prefix(ebb_model* model, const int32_t* ids, size_t n,
                                        char** out_json) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_json);
  if (ids == nullptr && n > 0) return NullArg("ids");
  return Guard([&] {
    *out_json = CopyString(
        ebb::ToJson(model->model->runtime().PinPrefix(std::span<const int32_t>(ids, n))));
  });
}
EBB_API ebb_error* ebb_model_unpin_prefix(ebb_model* model, const int32_t* ids, size_t n,
                                          char** out_json) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_json);
  if (ids == nullptr && n > 0) return NullArg("ids");
  return Guard([&] {
    *out_json = CopyString(
        ebb::ToJson(model->model->runtime().UnpinPrefix(std::span<const int32_t>(ids, n))));
  });
}
EBB_API ebb_error* ebb_model_drop_prefix_cache(ebb_model* model, uint64_t* freed_bytes) {
  EBB_CHECK_ARG(model);
  return Guard([&] {
    const uint64_t freed = model->model->runtime().DropPrefixCache();
    if (freed_bytes != nullptr) *freed_bytes = freed;
  });
}
EBB_API ebb_error* ebb_model_set_run_option(ebb_model* model, const char* key, const char* value) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(key);
  EBB_CHECK_ARG(value);
  return Guard([&] { model->model->runtime().SetRunOption(key, value); });
}
EBB_API ebb_error* ebb_model_clear_run_option(ebb_model* model, const char* key) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(key);
  return Guard([&] { model->model->runtime().ClearRunOption(key); });
}
EBB_API ebb_error* ebb_model_run_options_json(const ebb_model* model, char** out_json) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_json);
  return Guard([&] {
    nlohmann::json j = model->model->runtime().Options();
    *out_json = CopyString(j.dump());
  });
}
EBB_API ebb_error* ebb_model_stats_json(const ebb_model* model, char** out_json) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out_json);
  return Guard([&] { *out_json = CopyString(ebb::ToJson(model->model->runtime().Stats())); });
}

// ---- Generator ----------------------------------------------------------------------------

EBB_API ebb_error* ebb_generator_params_create(ebb_generator_params** out) {
  EBB_CHECK_ARG(out);
  return Guard([&] { *out = new ebb_generator_params(); });
}
EBB_API ebb_error* ebb_generator_params_set(ebb_generator_params* params, const char* key,
                                            const char* value) {
  EBB_CHECK_ARG(params);
  EBB_CHECK_ARG(key);
  EBB_CHECK_ARG(value);
  return Guard([&] { params->params.Set(key, value); });
}
EBB_API void ebb_generator_params_free(ebb_generator_params* params) { delete params; }

EBB_API ebb_error* ebb_generator_create(ebb_model* model, const ebb_generator_params* params,
                                        ebb_generator** out) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(out);
  return Guard([&] {
    auto g = std::make_unique<ebb_generator>();
    g->generator = std::make_unique<ebb::Generator>(
        model->model, params ? params->params : ebb::GeneratorParams{});
    *out = g.release();
  });
}
EBB_API void ebb_generator_free(ebb_generator* generator) {
  try {
    delete generator;
  } catch (...) {
  }
}
EBB_API ebb_error* ebb_generator_append_tokens(ebb_generator* generator, const int32_t* ids,
                                               size_t count) {
  EBB_CHECK_ARG(generator);
  if (ids == nullptr && count > 0) return NullArg("ids");
  return Guard([&] { generator->generator->AppendTokens(std::span<const int32_t>(ids, count)); });
}
EBB_API ebb_error* ebb_generator_generate_next_token(ebb_generator* generator) {
  EBB_CHECK_ARG(generator);
  return Guard([&] { generator->generator->GenerateNextToken(); });
}
EBB_API int ebb_generator_is_done(const ebb_generator* generator) {
  return generator == nullptr || generator->generator->done() ? 1 : 0;
}
EBB_API ebb_error* ebb_generator_get_sequence(const ebb_generator* generator,
                                              const int32_t** out_ids, size_t* out_count) {
  EBB_CHECK_ARG(generator);
  EBB_CHECK_ARG(out_ids);
  EBB_CHECK_ARG(out_count);
  return Guard([&] {
    std::span<const int32_t> s = generator->generator->sequence(0);
    *out_ids = s.data();
    *out_count = s.size();
  });
}
EBB_API ebb_error* ebb_generator_get_logits(const ebb_generator* generator,
                                            const float** out_logits, size_t* out_count) {
  EBB_CHECK_ARG(generator);
  EBB_CHECK_ARG(out_logits);
  EBB_CHECK_ARG(out_count);
  return Guard([&] {
    std::span<const float> s = generator->generator->GetLogits();
    *out_logits = s.data();
    *out_count = s.size();
  });
}
EBB_API ebb_error* ebb_generator_rewind_to(ebb_generator* generator, size_t length) {
  EBB_CHECK_ARG(generator);
  return Guard([&] { generator->generator->RewindTo(length); });
}

// ---- Request ------------------------------------------------------------------------------

EBB_API ebb_error* ebb_request_create(ebb_request** out) {
  EBB_CHECK_ARG(out);
  return Guard([&] { *out = new ebb_request(); });
}
EBB_API void ebb_request_free(ebb_request* request) { delete request; }
EBB_API ebb_error* ebb_request_set_prompt(ebb_request* request, const char* prompt) {
  EBB_CHECK_ARG(request);
  EBB_CHECK_ARG(prompt);
  return Guard([&] { request->request.prompt = prompt; });
}
EBB_API ebb_error* ebb_request_add_message(ebb_request* request, const char* role,
                                           const char* content) {
  EBB_CHECK_ARG(request);
  EBB_CHECK_ARG(role);
  EBB_CHECK_ARG(content);
  return Guard([&] { request->request.messages.push_back({role, content}); });
}
EBB_API ebb_error* ebb_request_set_input_ids(ebb_request* request, const int32_t* ids,
                                             size_t count) {
  EBB_CHECK_ARG(request);
  if (ids == nullptr && count > 0) return NullArg("ids");
  return Guard([&] { request->request.input_ids = {std::vector<int32_t>(ids, ids + count)}; });
}
EBB_API ebb_error* ebb_request_set_option(ebb_request* request, const char* key,
                                          const char* value) {
  EBB_CHECK_ARG(request);
  EBB_CHECK_ARG(key);
  EBB_CHECK_ARG(value);
  return Guard([&] {
    request->request.Set(key, value);  // the loop's keys and GeneratorParams' alike
  });
}
EBB_API void ebb_request_cancel(ebb_request* request) {
  if (request != nullptr) request->request.cancel.Cancel();
}

namespace {

// The C result of a finished generation: the error that ended it copied out for
// ebb_result_get_error.
std::unique_ptr<ebb_result> MakeResult(ebb::GenerateResult r) {
  auto res = std::make_unique<ebb_result>();
  res->result = std::move(r);
  if (res->result.error) {
    res->error.code = ToC(res->result.error->code());
    res->error.message = res->result.error->what();
  }
  return res;
}
}  // namespace

EBB_API ebb_error* ebb_generate(ebb_model* model, const ebb_request* request,
                                ebb_text_callback callback, void* user_data, ebb_result** out) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(request);
  EBB_CHECK_ARG(out);
  return Guard([&] {
    ebb::TextCallback on_text;
    std::string piece_buf;
    if (callback != nullptr) {
      on_text = [&](size_t row, std::string_view piece) {
        if (row != 0) return;
        piece_buf.assign(piece);
        if (callback(user_data, piece_buf.c_str(), piece_buf.size()) != 0) {
          request->request.cancel.Cancel();
        }
      };
    }
    *out = MakeResult(ebb::Generate(model->model, request->request, on_text)).release();
  });
}
EBB_API ebb_error* ebb_generation_start(ebb_model* model, const ebb_request* request,
                                        ebb_generation** out) {
  EBB_CHECK_ARG(model);
  EBB_CHECK_ARG(request);
  EBB_CHECK_ARG(out);
  return Guard([&] {
    auto g = std::make_unique<ebb_generation>();
    g->generation.emplace(ebb::Generation::Start(model->model, request->request));
    *out = g.release();
  });
}
EBB_API ebb_error* ebb_generation_next(ebb_generation* generation, const char** out_piece,
                                       size_t* out_len, int* out_done) {
  EBB_CHECK_ARG(generation);
  EBB_CHECK_ARG(out_piece);
  EBB_CHECK_ARG(out_len);
  EBB_CHECK_ARG(out_done);
  return Guard([&] {
    if (generation->finished) {
      throw ebb::Error(ebb::ErrorCode::FailedPrecondition,
                       "ebb_generation_next after ebb_generation_finish");
    }
    generation->piece.clear();
    while (std::optional<ebb::GenerationPiece> p = generation->generation->Next()) {
      if (p->row != 0 || p->text.empty()) continue;
      generation->piece = std::move(p->text);
      *out_piece = generation->piece.c_str();
      *out_len = generation->piece.size();
      *out_done = 0;
      return;
    }
    *out_piece = generation->piece.c_str();
    *out_len = 0;
    *out_done = 1;
  });
}
EBB_API ebb_error* ebb_generation_finish(ebb_generation* generation, ebb_result** out) {
  EBB_CHECK_ARG(generation);
  EBB_CHECK_ARG(out);
  return Guard([&] {
    if (generation->finished) {
      throw ebb::Error(ebb::ErrorCode::FailedPrecondition, "ebb_generation_finish called twice");
    }
    generation->finished = true;
    *out = MakeResult(generation->generation->Finish()).release();
  });
}
EBB_API void ebb_generation_free(ebb_generation* generation) { delete generation; }

EBB_API void ebb_result_free(ebb_result* result) { delete result; }
EBB_API const char* ebb_result_get_text(const ebb_result* result) {
  if (result == nullptr || result->result.rows.empty()) return "";
  return result->result.rows[0].text.c_str();
}
EBB_API void ebb_result_get_ids(const ebb_result* result, const int32_t** out_ids,
                                size_t* out_count) {
  if (out_ids == nullptr || out_count == nullptr) return;
  *out_ids = nullptr;
  *out_count = 0;
  if (result == nullptr || result->result.rows.empty()) return;
  *out_ids = result->result.rows[0].generated_ids.data();
  *out_count = result->result.rows[0].generated_ids.size();
}
EBB_API const char* ebb_result_get_finish_reason(const ebb_result* result) {
  if (result == nullptr || result->result.rows.empty()) return "error";
  return ebb::FinishReasonName(result->result.rows[0].finish_reason).data();
}
EBB_API uint64_t ebb_result_get_prompt_tokens(const ebb_result* result) {
  return result == nullptr ? 0 : result->result.usage.prompt_tokens;
}
EBB_API uint64_t ebb_result_get_completion_tokens(const ebb_result* result) {
  return result == nullptr ? 0 : result->result.usage.completion_tokens;
}
EBB_API uint64_t ebb_result_get_cached_tokens(const ebb_result* result) {
  return result == nullptr ? 0 : result->result.usage.cached_tokens;
}
EBB_API const ebb_error* ebb_result_get_error(const ebb_result* result) {
  if (result == nullptr || result->error.code == EBB_OK) return nullptr;
  return &result->error;
}
EBB_API ebb_error* ebb_result_get_logprobs_json(const ebb_result* result, char** out_json) {
  EBB_CHECK_ARG(result);
  EBB_CHECK_ARG(out_json);
  return Guard([&] {
    nlohmann::json a = nlohmann::json::array();
    if (!result->result.rows.empty()) {
      for (const ebb::TokenLogprobs& lp : result->result.rows[0].logprobs) {
        nlohmann::json top = nlohmann::json::array();
        for (const ebb::TokenLogprob& t : lp.top)
          top.push_back({{"id", t.id}, {"logprob", t.logprob}});
        a.push_back({{"id", lp.id}, {"logprob", lp.logprob}, {"top_logprobs", std::move(top)}});
      }
    }
    *out_json = CopyString(a.dump());
  });
}

}  // extern "C"
