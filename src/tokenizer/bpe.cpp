#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstdio>

#include "ebb/error.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {
namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

struct MergeEntry {
  uint32_t rank;
  int32_t pos;
  int32_t new_id;
};

// Heap order: the top is the lowest rank, then the lowest position.
inline bool HeapLess(const MergeEntry& a, const MergeEntry& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

struct Scratch {
  std::vector<Symbol> symbols;
  std::vector<MergeEntry> heap;
  std::vector<int32_t> ids;
  std::string buf;
};

Scratch& ThreadScratch() {
  thread_local Scratch s;
  return s;
}

// True when `token` holds a character other than "▁" directly followed by "▁".
bool HasCharThenMetaspace(std::string_view token) {
  size_t pos = token.find(kMetaspace, 1);
  while (pos != std::string_view::npos) {
    if (!(pos >= 3 && token.substr(pos - 3, 3) == kMetaspace)) return true;
    pos = token.find(kMetaspace, pos + 3);
  }
  return false;
}

}  // namespace

Bpe::Bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
         BpeOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  const size_t prefix_len = options_.continuing_subword_prefix.size();
  merges_.Reserve(merges.size());
  bool merge_spans_cut = false;
  std::string merged;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const int32_t ia = vocab_.Find(a);
    const int32_t ib = vocab_.Find(b);
    if (ia < 0 || ib < 0) {
      throw Error(ErrorCode::InvalidArgument, "merge " + std::to_string(i) + ": token \"" +
                                                  (ia < 0 ? a : b) + "\" is not in the vocabulary");
    }
    merged = a;
    merged.append(b.size() >= prefix_len ? std::string_view(b).substr(prefix_len)
                                         : std::string_view());
    const int32_t im = vocab_.Find(merged);
    if (im < 0) {
      throw Error(ErrorCode::InvalidArgument, "merge " + std::to_string(i) + ": token \"" + merged +
                                                  "\" is not in the vocabulary");
    }
    merges_.Insert(ia, ib, PairMap::Value{static_cast<uint32_t>(i), im});
    if (!merge_spans_cut && HasCharThenMetaspace(merged)) merge_spans_cut = true;
  }
  if (options_.unk_token) unk_id_ = vocab_.Find(*options_.unk_token);
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = options_.byte_fallback ? vocab_.Find(name) : -1;
  }
  plain_chars_ = options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty();
  if (plain_chars_) {
    small_char_ids_.assign(0x800, -1);
    std::string ch;
    for (char32_t cp = 0; cp < 0x800; ++cp) {
      ch.clear();
      AppendUtf8(ch, cp);
      small_char_ids_[cp] = vocab_.Find(ch);
    }
  }
  cut_at_metaspace_ =
      plain_chars_ && !options_.ignore_merges && !merge_spans_cut && vocab_.Find(kMetaspace) >= 0;
}

int32_t Bpe::CharId(std::string_view ch, char32_t cp) const {
  if (cp < 0x800) return small_char_ids_[cp];
  return vocab_.Find(ch);
}

void Bpe::Tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    const int32_t id = vocab_.Find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (!cut_at_metaspace_) {
    TokenizeCached(word, out);
    return;
  }
  size_t start = 0;
  size_t pos = word.find(kMetaspace, 1);
  while (pos != std::string_view::npos) {
    if (!(pos >= 3 && word.substr(pos - 3, 3) == kMetaspace)) {
      TokenizeCached(word.substr(start, pos - start), out);
      start = pos;
    }
    pos = word.find(kMetaspace, pos + 3);
  }
  TokenizeCached(word.substr(start), out);
}

void Bpe::TokenizeCached(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxCachedBytes) {
    MergeWord(word, out);
    return;
  }
  const uint64_t h = HashBytes(word);
  CacheShard& shard = cache_[h % kCacheShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.map.find(word);
    if (it != shard.map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t mark = out.size();
  MergeWord(word, out);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() < kCacheCapacity / kCacheShards) {
    shard.map.emplace(std::string(word), std::vector<int32_t>(out.begin() + mark, out.end()));
  }
}

void Bpe::MergeWord(std::string_view word, std::vector<int32_t>& out) const {
  Scratch& sc = ThreadScratch();
  std::vector<Symbol>& syms = sc.symbols;
  syms.clear();
  auto add = [&syms](int32_t id) {
    const auto n = static_cast<int32_t>(syms.size());
    syms.push_back(Symbol{id, n - 1, n + 1, true});
  };

  bool unk_pending = false;
  size_t i = 0;
  while (i < word.size()) {
    const size_t begin = i;
    const char32_t cp = NextCodePoint(word, i);
    std::string_view ch = word.substr(begin, i - begin);
    int32_t id;
    if (plain_chars_) {
      id = CharId(ch, cp);
    } else {
      sc.buf.clear();
      if (begin != 0) sc.buf.append(options_.continuing_subword_prefix);
      sc.buf.append(ch);
      if (i == word.size()) sc.buf.append(options_.end_of_word_suffix);
      ch = sc.buf;
      id = vocab_.Find(ch);
    }
    if (id >= 0) {
      if (unk_pending) {
        add(unk_id_);
        unk_pending = false;
      }
      add(id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : ch) all = all && byte_ids_[b] >= 0;
      if (all) {
        // The reference does not flush a pending unk here; it is added after these bytes.
        for (unsigned char b : ch) add(byte_ids_[b]);
        continue;
      }
    }
    if (options_.unk_token) {
      if (unk_id_ < 0) {
        throw Error(ErrorCode::InvalidArgument,
                    "BPE unk_token \"" + *options_.unk_token + "\" is not in the vocabulary");
      }
      if (unk_pending && !options_.fuse_unk) add(unk_id_);
      unk_pending = true;
    }
    // No unk token: the reference drops the character silently; so does ebb.
  }
  if (unk_pending) add(unk_id_);
  if (syms.empty()) return;
  syms.back().next = -1;

  if (syms.size() > 1) {
    std::vector<MergeEntry>& heap = sc.heap;
    heap.clear();
    for (size_t k = 0; k + 1 < syms.size(); ++k) {
      if (const PairMap::Value* m = merges_.Find(syms[k].id, syms[k + 1].id)) {
        heap.push_back(MergeEntry{m->rank, static_cast<int32_t>(k), m->id});
      }
    }
    std::make_heap(heap.begin(), heap.end(), HeapLess);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), HeapLess);
      const MergeEntry top = heap.back();
      heap.pop_back();
      Symbol& cur = syms[top.pos];
      if (!cur.alive || cur.next < 0) continue;
      const int32_t next_pos = cur.next;
      const Symbol right = syms[next_pos];
      const PairMap::Value* m = merges_.Find(cur.id, right.id);
      if (m == nullptr || m->id != top.new_id) continue;
      cur.id = top.new_id;
      cur.next = right.next;
      syms[next_pos].alive = false;
      if (right.next >= 0) syms[right.next].prev = top.pos;
      if (cur.prev >= 0) {
        if (const PairMap::Value* pm = merges_.Find(syms[cur.prev].id, cur.id)) {
          heap.push_back(MergeEntry{pm->rank, cur.prev, pm->id});
          std::push_heap(heap.begin(), heap.end(), HeapLess);
        }
      }
      if (cur.next >= 0) {
        if (const PairMap::Value* nm = merges_.Find(cur.id, syms[cur.next].id)) {
          heap.push_back(MergeEntry{nm->rank, top.pos, nm->id});
          std::push_heap(heap.begin(), heap.end(), HeapLess);
        }
      }
    }
  }
  for (int32_t k = 0; k >= 0; k = syms[k].next) out.push_back(syms[k].id);
}

std::unique_ptr<Model> MakeBpe(const JsonRef& j) {
  if (auto d = j.Find("dropout")) {
    if (d->Number() != 0.0) d->Fail("BPE dropout is not supported (it makes encoding random)");
  }
  Vocab vocab = Vocab::FromJson(j.At("vocab"));
  std::vector<std::pair<std::string, std::string>> merges;
  if (auto mj = j.Find("merges")) {
    merges.reserve(mj->Size());
    for (size_t i = 0; i < mj->Size(); ++i) {
      JsonRef m = mj->Index(i);
      if (m.IsString()) {
        const std::string s = m.String();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos) m.Fail("expected \"left right\"");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (m.IsArray() && m.Size() == 2) {
        merges.emplace_back(m.Index(0).String(), m.Index(1).String());
      } else {
        m.Fail("expected \"left right\" or [left, right]");
      }
    }
  }
  BpeOptions o;
  if (auto u = j.Find("unk_token")) o.unk_token = u->String();
  o.continuing_subword_prefix = j.GetString("continuing_subword_prefix", "");
  o.end_of_word_suffix = j.GetString("end_of_word_suffix", "");
  o.fuse_unk = j.GetBool("fuse_unk", false);
  o.byte_fallback = j.GetBool("byte_fallback", false);
  o.ignore_merges = j.GetBool("ignore_merges", false);
  try {
    return std::make_unique<Bpe>(std::move(vocab), merges, std::move(o));
  } catch (const Error& e) {
    j.At("merges").Fail(e.what());
  }
}

}  // namespace ebb::tok
