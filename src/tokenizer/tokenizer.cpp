// Tokenizer: loading tokenizer.json and running the encode/decode pipelines.
//
// Encode (as the reference): split out raw added tokens; normalize each remaining segment;
// split out normalized added tokens; pre-tokenize; run the model on each piece; truncate;
// post-process (special tokens); pad.
#include "ebb/tokenizer.h"

#include <algorithm>

#include "core/files.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "ebb/error.h"
#include "tokenizer/json_ref.h"
#include "tokenizer/piece_list.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace ebb {

using tok::AddedVocabulary;
using tok::JsonRef;

namespace {

struct EncodeScratch {
  std::vector<AddedVocabulary::Split> raw, norm;
  tok::PieceList pieces, scratch;
  std::string normalized;
};

nlohmann::json ParseJson(std::string_view text, const std::string& source) {
  internal::CheckJsonDepth(text, source);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::InvalidArgument,
                internal::EscapeForMessage(source, 1024) +
                    ": invalid JSON: " + internal::EscapeForMessage(e.what()));
  }
}

// padding.Fixed and pad_to_multiple_of bound: padding allocates that many ids per encoding.
constexpr int64_t kMaxPadTokens = int64_t{1} << 20;

// tokenizer_config.json token fields are a string or an AddedToken-like {"content": …}.
std::optional<std::string> ConfigToken(const nlohmann::json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

void Tokenizer::Impl::EncodeSegment(std::string_view segment, bool at_start,
                                    std::vector<int32_t>& ids) const {
  thread_local EncodeScratch sc;
  tok::PieceList& pieces = sc.pieces;
  pieces.Clear();
  pieces.Add(segment, at_start);
  if (pre_tokenizer) pre_tokenizer->Run(pieces, sc.scratch);
  for (size_t k = 0; k < pieces.size(); ++k) model->Tokenize(pieces.View(k), ids);
}

void Tokenizer::Impl::EncodeInto(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<AddedVocabulary::Split> raw;
  added.SplitRaw(text, raw);
  std::string normalized;
  std::vector<AddedVocabulary::Split> norm;
  for (const auto& r : raw) {
    if (r.id >= 0) {
      ids.push_back(r.id);
      continue;
    }
    if (r.end <= r.begin) continue;
    std::string_view gap = text.substr(r.begin, r.end - r.begin);
    const bool at_start = r.begin == 0;
    std::string_view seg = gap;
    if (normalizer) {
      normalized.assign(gap);
      normalizer->Normalize(normalized);
      seg = normalized;
    }
    if (seg.empty()) continue;
    if (!added.HasNormalized()) {
      EncodeSegment(seg, at_start, ids);
      continue;
    }
    norm.clear();
    added.SplitNormalized(seg, norm);
    for (const auto& n : norm) {
      if (n.id >= 0) {
        ids.push_back(n.id);
      } else if (n.end > n.begin) {
        EncodeSegment(seg.substr(n.begin, n.end - n.begin), at_start && n.begin == 0, ids);
      }
    }
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::FromFile(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = path / "tokenizer.json";
  if (!internal::FileExists(file, "tokenizer file")) {
    throw Error(ErrorCode::NotFound,
                "tokenizer file not found: " + internal::EscapeForMessage(file.string(), 1024));
  }
  const std::string json =
      internal::ReadRegularFile(file, internal::kMaxTokenizerFileBytes, "tokenizer.json");
  std::string config;
  const auto config_path = file.parent_path() / "tokenizer_config.json";
  if (internal::FileExists(config_path, "tokenizer_config.json")) {
    config = internal::ReadRegularFile(config_path, internal::kMaxConfigFileBytes,
                                       "tokenizer_config.json");
  }
  return FromJson(json, file.string(), config);
}

std::unique_ptr<Tokenizer> Tokenizer::FromJson(std::string_view json, std::string_view source_name,
                                               std::string_view config_json) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::string(source_name);
  const nlohmann::json doc = ParseJson(json, impl->source);
  JsonRef root(doc, "", impl->source);
  if (!root.IsObject()) root.Fail("expected a JSON object");

  if (auto n = root.Find("normalizer")) impl->normalizer = tok::MakeNormalizer(*n);
  if (auto p = root.Find("pre_tokenizer")) impl->pre_tokenizer = tok::MakePreTokenizer(*p);
  impl->model = tok::MakeModel(root.At("model"));
  if (auto d = root.Find("decoder")) {
    impl->decoder = tok::MakeDecoder(*d);
    impl->decoder_has_byte_fallback = impl->decoder->HasByteFallback();
  }
  if (auto p = root.Find("post_processor")) impl->post = tok::MakePostProcessor(*p);
  if (auto a = root.Find("added_tokens")) {
    impl->added = AddedVocabulary(*a, *impl->model, impl->normalizer.get());
  }
  if (auto t = root.Find("truncation")) {
    impl->truncate = true;
    const int64_t max_length = t->At("max_length").Int();
    if (max_length < 0) t->At("max_length").Fail("expected a non-negative integer");
    impl->trunc_max_length = static_cast<size_t>(max_length);
    const std::string dir = t->GetString("direction", "Right");
    if (dir != "Right" && dir != "Left") t->At("direction").Fail("expected Right or Left");
    impl->trunc_left = dir == "Left";
  }
  if (auto p = root.Find("padding")) {
    impl->pad = true;
    JsonRef strategy = p->At("strategy");
    if (strategy.IsString()) {
      if (strategy.String() != "BatchLongest") strategy.Fail("unsupported padding strategy");
    } else {
      const int64_t n = strategy.At("Fixed").Int();
      if (n < 0 || n > kMaxPadTokens) {
        strategy.At("Fixed").Fail("expected a length from 0 to " + std::to_string(kMaxPadTokens) +
                                  " tokens");
      }
      impl->pad_fixed = true;
      impl->pad_length = static_cast<size_t>(n);
    }
    const int64_t multiple = p->GetInt("pad_to_multiple_of", 0);
    if (multiple > kMaxPadTokens) {
      p->At("pad_to_multiple_of")
          .Fail("expected at most " + std::to_string(kMaxPadTokens) + " tokens");
    }
    impl->pad_multiple = static_cast<size_t>(std::max<int64_t>(0, multiple));
    impl->pad_id = static_cast<int32_t>(p->GetInt("pad_id", 0));
    const std::string dir = p->GetString("direction", "Right");
    if (dir != "Right" && dir != "Left") p->At("direction").Fail("expected Right or Left");
    impl->pad_left = dir == "Left";
  }

  std::unique_ptr<Tokenizer> t(new Tokenizer(std::move(impl)));
  if (!config_json.empty()) {
    const std::string config_source = "tokenizer_config.json";
    const nlohmann::json config = ParseJson(config_json, config_source);
    if (config.is_object()) {
      auto id_of = [&](const char* key) -> std::optional<int32_t> {
        auto name = ConfigToken(config, key);
        if (!name) return std::nullopt;
        const int32_t id = t->TokenToId(*name);
        return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
      };
      t->impl_->bos = id_of("bos_token");
      t->impl_->eos = id_of("eos_token");
      t->impl_->pad_token = id_of("pad_token");
      auto ct = config.find("chat_template");
      if (ct != config.end()) {
        if (ct->is_string()) {
          t->impl_->chat_template = ct->get<std::string>();
        } else if (ct->is_array()) {  // [{"name": "default", "template": …}, …]
          for (const auto& e : *ct) {
            if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
                e["template"].is_string()) {
              t->impl_->chat_template = e["template"].get<std::string>();
            }
          }
        }
      }
    }
  }
  return t;
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special_tokens) const {
  return impl_->Encode(text, add_special_tokens, /*truncate_and_pad=*/true);
}

std::vector<int32_t> Tokenizer::EncodeRaw(std::string_view text, bool add_special_tokens) const {
  return impl_->Encode(text, add_special_tokens, /*truncate_and_pad=*/false);
}

std::vector<int32_t> Tokenizer::Impl::Encode(std::string_view text, bool add_special_tokens,
                                             bool truncate_and_pad) const {
  const size_t bad = tok::FindInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    throw Error(
        ErrorCode::InvalidArgument,
        "text is not valid UTF-8 (first invalid byte at offset " + std::to_string(bad) + ")");
  }
  const Impl& im = *this;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  im.EncodeInto(text, ids);
  if (im.truncate && truncate_and_pad) {
    size_t max_len = im.trunc_max_length;
    const size_t added = add_special_tokens ? im.post.AddedCount() : 0;
    if (max_len >= added) {  // (the reference's unsigned subtraction wraps otherwise)
      max_len -= added;
      if (ids.size() > max_len) {
        if (im.trunc_left) {
          ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(max_len));
        } else {
          ids.resize(max_len);
        }
      }
    }
  }
  if (add_special_tokens) im.post.Apply(ids);
  if (im.pad && truncate_and_pad) {
    size_t target = im.pad_fixed ? im.pad_length : ids.size();
    if (im.pad_multiple > 0 && target % im.pad_multiple != 0) {
      target += im.pad_multiple - target % im.pad_multiple;
    }
    if (ids.size() < target) {
      const size_t n = target - ids.size();
      ids.insert(im.pad_left ? ids.begin() : ids.end(), n, im.pad_id);
    }
  }
  return ids;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& im = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    const auto content = im.TokenText(id);
    if (!content) {
      throw Error(ErrorCode::InvalidArgument,
                  "token id " + std::to_string(id) + " is not in the vocabulary of " + im.source);
    }
    if (skip_special_tokens && im.added.IsSpecialContent(*content)) continue;
    tokens.emplace_back(*content);
  }
  if (im.decoder) return im.decoder->Decode(tokens);
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out.push_back(' ');
    out += tokens[i];
  }
  return out;
}

int32_t Tokenizer::TokenToId(std::string_view token) const {
  const int32_t id = impl_->added.Find(token);
  return id >= 0 ? id : impl_->model->vocab().Find(token);
}

std::string Tokenizer::IdToToken(int32_t id) const {
  if (const tok::AddedToken* at = impl_->added.ById(id)) return at->content;
  return std::string(impl_->model->vocab().Token(id));
}

size_t Tokenizer::vocab_size() const {
  return std::max(impl_->model->vocab().IdLimit(), static_cast<size_t>(impl_->added.MaxId() + 1));
}

bool Tokenizer::IsSpecial(int32_t id) const {
  const tok::AddedToken* at = impl_->added.ById(id);
  return at != nullptr && at->special;
}

std::vector<int32_t> Tokenizer::SpecialIds() const {
  std::vector<int32_t> ids;
  for (const auto& t : impl_->added.tokens())
    if (t.special) ids.push_back(t.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad_token; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
const std::string& Tokenizer::source_name() const { return impl_->source; }

}  // namespace ebb
