#include "tokenizer/post_processor.h"

#include <string>

#include "tokenizer/model.h"

namespace ebb::tok {
namespace {

int32_t TokenId(const JsonRef& pair) {  // ["[SEP]", 102]
  if (!pair.IsArray() || pair.Size() != 2) pair.Fail("expected [token, id]");
  const int64_t id = pair.Index(1).Int();
  if (id < 0 || id > kMaxTokenId) {
    pair.Index(1).Fail("expected an id from 0 to " + std::to_string(kMaxTokenId));
  }
  return static_cast<int32_t>(id);
}

// Wraps `inner` (already composed) with this processor's tokens.
void Compose(PostProcessor& acc, const std::vector<int32_t>& prefix,
             const std::vector<int32_t>& suffix) {
  std::vector<int32_t> p = prefix;
  p.insert(p.end(), acc.prefix.begin(), acc.prefix.end());
  acc.prefix = std::move(p);
  acc.suffix.insert(acc.suffix.end(), suffix.begin(), suffix.end());
}

void Add(PostProcessor& acc, const JsonRef& j) {
  const std::string type = j.Type();
  if (type == "ByteLevel") return;  // offsets only
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    Compose(acc, {TokenId(j.At("cls"))}, {TokenId(j.At("sep"))});
    return;
  }
  if (type == "TemplateProcessing") {
    JsonRef single = j.At("single");
    JsonRef specials = j.At("special_tokens");
    std::vector<int32_t> prefix, suffix;
    int seen_a = 0;
    for (size_t i = 0; i < single.Size(); ++i) {
      JsonRef piece = single.Index(i);
      if (piece.IsString()) {  // "$A" / "$B" / "[CLS]" (builder shorthand, with :type_id)
        std::string s = piece.String();
        if (size_t colon = s.rfind(':'); colon != std::string::npos && colon > 0) {
          s = s.substr(0, colon);
        }
        if (s == "$A" || s == "$" || s == "$0") {
          ++seen_a;
          continue;
        }
        if (!s.empty() && s[0] == '$') piece.Fail("a single-sequence template cannot use " + s);
        auto st = specials.Find(s);
        if (!st) piece.Fail("special token \"" + s + "\" is missing from special_tokens");
        JsonRef ids = st->At("ids");
        for (size_t k = 0; k < ids.Size(); ++k) {
          (seen_a ? suffix : prefix).push_back(static_cast<int32_t>(ids.Index(k).Int()));
        }
        continue;
      }
      if (auto seq = piece.Find("Sequence")) {
        const std::string id = seq->At("id").String();
        if (id != "A") seq->At("id").Fail("a single-sequence template cannot use $" + id);
        ++seen_a;
        continue;
      }
      if (auto sp = piece.Find("SpecialToken")) {
        const std::string name = sp->At("id").String();
        auto st = specials.Find(name);
        if (!st) sp->At("id").Fail("special token \"" + name + "\" is missing from special_tokens");
        JsonRef ids = st->At("ids");
        for (size_t k = 0; k < ids.Size(); ++k) {
          const int64_t v = ids.Index(k).Int();
          if (v < 0 || v > kMaxTokenId) {
            ids.Index(k).Fail("expected an id from 0 to " + std::to_string(kMaxTokenId));
          }
          (seen_a ? suffix : prefix).push_back(static_cast<int32_t>(v));
        }
        continue;
      }
      piece.Fail("expected {\"Sequence\": …} or {\"SpecialToken\": …}");
    }
    if (seen_a != 1) single.Fail("the single-sequence template must use $A exactly once");
    Compose(acc, prefix, suffix);
    return;
  }
  if (type == "Sequence") {
    JsonRef list = j.At("processors");
    for (size_t i = 0; i < list.Size(); ++i) Add(acc, list.Index(i));
    return;
  }
  j.At("type").Fail("unsupported post-processor \"" + type + "\"");
}

}  // namespace

void PostProcessor::Apply(std::vector<int32_t>& ids) const {
  if (!prefix.empty()) ids.insert(ids.begin(), prefix.begin(), prefix.end());
  ids.insert(ids.end(), suffix.begin(), suffix.end());
}

PostProcessor MakePostProcessor(const JsonRef& j) {
  PostProcessor p;
  Add(p, j);
  return p;
}

}  // namespace ebb::tok
