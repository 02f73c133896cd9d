// ebb::Model's public accessors (ebb/model.h) over ModelImpl (model/model_impl.h).
#include <mutex>
#include <string>

#include "core/strings.h"
#include "ebb/chat_template.h"
#include "ebb/error.h"
#include "ebb/model.h"
#include "model/model_impl.h"

namespace ebb {

Model::~Model() = default;

const std::string& Model::id() const { return internal::ImplOf(*this).id; }
const ModelInfo& Model::info() const { return internal::ImplOf(*this).info; }
const ModelOptions& Model::options() const { return internal::ImplOf(*this).options; }
int Model::num_live_generators() const { return internal::ImplOf(*this).live_generators(); }
// InfoJson: src/runtime/stats_json.cpp (the one builder of the document).
uint64_t Model::weights_bytes() const { return internal::ImplOf(*this).weights_bytes; }
WeightsState Model::weights_state() const { return internal::ImplOf(*this).WeightsState(); }

const Tokenizer* Model::tokenizer() const { return internal::ImplOf(*this).tokenizer_owned.get(); }

namespace {

// The template of `m` (the load option's, else the folder's, loaded on first use and kept), or
// null when there is none. Throws what a template that does not parse throws.
const ChatTemplate* FindChatTemplate(const internal::ModelImpl& model) {
  // const_cast: the template is loaded lazily, once, under its mutex; it is immutable after.
  auto& m = const_cast<internal::ModelImpl&>(model);
  std::lock_guard<std::mutex> lock(m.chat_template_mu);
  if (!m.chat_template_owned) {
    try {
      m.chat_template_owned = ChatTemplate::FromModelDir(m.config.dir);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::NotFound) return nullptr;  // none (a later call looks again)
      throw;
    }
  }
  return m.chat_template_owned.get();
}

}  // namespace

bool Model::has_chat_template() const {
  try {
    return FindChatTemplate(internal::ImplOf(*this)) != nullptr;
  } catch (const Error&) {
    return true;  // there is one; it does not parse (chat_template() says why)
  }
}

const ChatTemplate& Model::chat_template() const {
  const internal::ModelImpl& m = internal::ImplOf(*this);
  if (const ChatTemplate* t = FindChatTemplate(m)) return *t;
  throw Error(ErrorCode::InvalidArgument,
              "model '" + internal::EscapeForMessage(m.id, 128) + "' has no chat template (" +
                  internal::EscapeForMessage(m.config.dir.string(), 1024) +
                  " has no chat_template.jinja, tokenizer_config.json \"chat_template\" or "
                  "chat_template.json), so messages cannot be rendered: load it with the option "
                  "chat_template=FILE (a Jinja file, as tokenizer_config.json's; `ebb "
                  "run|chat|generate --chat-template FILE`, the models file's \"chat_template\"), "
                  "or send a plain prompt instead of messages");
}

KvStats Model::kv_stats() const { return internal::ImplOf(*this).kv_pool->Stats(); }

}  // namespace ebb
