#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {

void AddedVocabulary::Trie::Insert(std::string_view key, int32_t token) {
  if (key.empty()) return;
  if (nodes.empty()) nodes.emplace_back();
  int32_t node = 0;
  for (unsigned char b : key) {
    const PairMap::Value* v = edges.Find(node, b);
    if (v != nullptr) {
      node = v->id;
      continue;
    }
    const auto child = static_cast<int32_t>(nodes.size());
    nodes.emplace_back();
    edges.Insert(node, b, PairMap::Value{0, child});
    node = child;
  }
  // Identical patterns: the first one wins (as in an Aho-Corasick automaton).
  if (nodes[node].token < 0) nodes[node].token = token;
  first_byte[static_cast<unsigned char>(key[0])] = true;
}

AddedVocabulary::AddedVocabulary(const JsonRef& j, const Model& model,
                                 const Normalizer* normalizer) {
  if (j.IsNull()) return;
  if (!j.IsArray()) j.Fail("expected an array");
  const Vocab& vocab = model.vocab();
  const auto model_size = static_cast<int64_t>(vocab.size());
  int64_t max_added = -1;
  for (size_t i = 0; i < j.Size(); ++i) {
    JsonRef t = j.Index(i);
    AddedToken tok;
    tok.content = t.At("content").String();
    tok.special = t.GetBool("special", false);
    tok.lstrip = t.GetBool("lstrip", false);
    tok.rstrip = t.GetBool("rstrip", false);
    tok.normalized = t.GetBool("normalized", !tok.special);
    tok.single_word = t.GetBool("single_word", false);
    if (tok.content.empty()) continue;
    if (FindInvalidUtf8(tok.content) != std::string::npos) t.At("content").Fail("invalid UTF-8");
    // Id as the reference assigns it: an existing added/vocabulary id, else the next free one.
    int32_t id = by_content_.Find(tok.content);
    if (id < 0) id = vocab.Find(tok.content);
    if (id < 0) {
      if (max_added < 0) {
        id = static_cast<int32_t>(model_size);
      } else {
        id = static_cast<int32_t>(max_added >= model_size || model_size == 0 ? max_added + 1
                                                                             : model_size);
      }
    }
    tok.id = id;
    max_added = std::max<int64_t>(max_added, id);
    max_id_ = std::max(max_id_, id);
    if (tok.special) special_contents_.Insert(tok.content, id);
    auto existing = by_id_.find(id);
    if (existing != by_id_.end()) {
      tokens_[existing->second] = tok;  // same id: the later definition wins
    } else {
      by_id_.emplace(id, tokens_.size());
      tokens_.push_back(tok);
    }
    by_content_.Insert(tok.content, id);
  }
  // Special tokens first, then the others, each in order (the reference's pattern order).
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < tokens_.size(); ++k) {
      const AddedToken& tok = tokens_[k];
      if (tok.special != (pass == 0)) continue;
      if (!tok.normalized) {
        raw_.Insert(tok.content, static_cast<int32_t>(k));
      } else {
        std::string content = tok.content;
        if (normalizer != nullptr) normalizer->Normalize(content);
        normalized_.Insert(content, static_cast<int32_t>(k));
      }
    }
  }
}

const AddedToken* AddedVocabulary::ById(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocabulary::FindMatches(std::string_view s, const Trie& trie,
                                  std::vector<Split>& out) const {
  if (trie.nodes.empty() || s.empty()) {
    out.push_back(Split{-1, 0, s.size()});
    return;
  }
  size_t start_offset = 0;
  size_t pos = 0;
  const size_t n = s.size();
  while (pos < n) {
    // Leftmost-longest match at or after pos.
    size_t mstart = n, mend = 0;
    int32_t mtoken = -1;
    for (size_t p = pos; p < n; ++p) {
      if (!trie.first_byte[static_cast<unsigned char>(s[p])]) continue;
      int32_t node = 0;
      for (size_t q = p; q < n; ++q) {
        const PairMap::Value* v = trie.edges.Find(node, static_cast<unsigned char>(s[q]));
        if (v == nullptr) break;
        node = v->id;
        if (trie.nodes[node].token >= 0) {
          mtoken = trie.nodes[node].token;
          mend = q + 1;
        }
      }
      if (mtoken >= 0) {
        mstart = p;
        break;
      }
    }
    if (mtoken < 0) break;
    pos = mend;  // the search resumes after the match itself (not after stripped spaces)
    const AddedToken& tok = tokens_[mtoken];
    size_t start = mstart, stop = mend;
    if (tok.single_word) {
      bool start_ok = true, stop_ok = true;
      if (start > 0) {
        size_t cs;
        start_ok = !IsRegexWordChar(PrevCodePoint(s, start, cs));
      }
      if (stop < n) {
        size_t i = stop;
        stop_ok = !IsRegexWordChar(NextCodePoint(s, i));
      }
      if (!start_ok || !stop_ok) continue;
    }
    if (tok.lstrip) {
      size_t newstart = start;
      while (newstart > 0) {
        size_t cs;
        if (!IsWhitespace(PrevCodePoint(s, newstart, cs))) break;
        newstart = cs;
      }
      start = std::max(newstart, start_offset);
    }
    if (tok.rstrip) {
      while (stop < n) {
        size_t i = stop;
        if (!IsWhitespace(NextCodePoint(s, i))) break;
        stop = i;
      }
    }
    if (start_offset < start) out.push_back(Split{-1, start_offset, start});
    out.push_back(Split{tok.id, start, stop});
    start_offset = stop;
  }
  if (start_offset != n) out.push_back(Split{-1, start_offset, n});
}

}  // namespace ebb::tok
