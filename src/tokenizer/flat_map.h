// Open-addressing hash tables for the tokenizer's hot paths (vocabulary and merge lookups):
// no allocation per lookup, string_view keys, linear probing. Built once at load time, then
// read-only (concurrent reads are safe).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::tok {

inline uint64_t HashBytes(std::string_view s) {
  // 64-bit multiply-mix over 8-byte words; good enough distribution for vocabulary keys.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = 0x243F6A8885A308D3ULL ^ (s.size() * kMul);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * kMul;
  h ^= h >> 32;
  return h;
}

// string -> int32 id. Keys are copied into an internal arena.
class StringIdMap {
 public:
  void Reserve(size_t n) { Rehash(Capacity(n)); }

  // Inserts or overwrites.
  void Insert(std::string_view key, int32_t id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Rehash(Capacity(size_ * 2 + 16));
    uint64_t h = HashBytes(key);
    size_t i = h & mask_;
    while (slots_[i].id != kEmpty) {
      if (slots_[i].hash == static_cast<uint32_t>(h) && KeyAt(slots_[i]) == key) {
        slots_[i].id = id;
        return;
      }
      i = (i + 1) & mask_;
    }
    Slot& s = slots_[i];
    s.offset = static_cast<uint32_t>(arena_.size());
    s.len = static_cast<uint32_t>(key.size());
    s.hash = static_cast<uint32_t>(h);
    s.id = id;
    arena_.append(key);
    ++size_;
  }

  // Returns the id or -1.
  int32_t Find(std::string_view key) const {
    if (size_ == 0) return -1;
    uint64_t h = HashBytes(key);
    size_t i = h & mask_;
    while (slots_[i].id != kEmpty) {
      const Slot& s = slots_[i];
      if (s.hash == static_cast<uint32_t>(h) && s.len == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        return s.id;
      }
      i = (i + 1) & mask_;
    }
    return -1;
  }

  size_t size() const { return size_; }

  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_)
      if (s.id != kEmpty) f(KeyAt(s), s.id);
  }

 private:
  static constexpr int32_t kEmpty = INT32_MIN;
  struct Slot {
    uint32_t offset = 0;
    uint32_t len = 0;
    uint32_t hash = 0;
    int32_t id = kEmpty;
  };
  static size_t Capacity(size_t n) {
    size_t c = 16;
    while (c * 3 < n * 4) c <<= 1;
    return c;
  }
  std::string_view KeyAt(const Slot& s) const {
    return std::string_view(arena_.data() + s.offset, s.len);
  }
  void Rehash(size_t cap) {
    if (cap <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (s.id == kEmpty) continue;
      size_t i = HashBytes(KeyAt(s)) & mask_;
      while (slots_[i].id != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// (left id, right id) -> (rank, merged id), for BPE merges.
class PairMap {
 public:
  struct Value {
    uint32_t rank;
    int32_t id;
  };

  void Reserve(size_t n) {
    size_t c = 16;
    while (c < n * 2) c <<= 1;
    if (c > keys_.size()) Rehash(c);
  }

  void Insert(int32_t a, int32_t b, Value v) {
    if ((size_ + 1) * 2 > keys_.size()) Rehash(keys_.empty() ? 64 : keys_.size() * 2);
    uint64_t k = Key(a, b);
    size_t i = Hash(k) & mask_;
    while (keys_[i] != kEmpty) {
      if (keys_[i] == k) {
        values_[i] = v;
        return;
      }
      i = (i + 1) & mask_;
    }
    keys_[i] = k;
    values_[i] = v;
    ++size_;
  }

  // Returns nullptr when the pair has no merge.
  const Value* Find(int32_t a, int32_t b) const {
    if (size_ == 0) return nullptr;
    uint64_t k = Key(a, b);
    size_t i = Hash(k) & mask_;
    while (true) {
      uint64_t cur = keys_[i];
      if (cur == k) return &values_[i];
      if (cur == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ULL;
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t Hash(uint64_t k) {
    k *= 0x9E3779B97F4A7C15ULL;
    return k ^ (k >> 31);
  }
  void Rehash(size_t cap) {
    std::vector<uint64_t> ok = std::move(keys_);
    std::vector<Value> ov = std::move(values_);
    keys_.assign(cap, kEmpty);
    values_.assign(cap, Value{0, 0});
    mask_ = cap - 1;
    size_ = 0;
    for (size_t j = 0; j < ok.size(); ++j) {
      if (ok[j] == kEmpty) continue;
      size_t i = Hash(ok[j]) & mask_;
      while (keys_[i] != kEmpty) i = (i + 1) & mask_;
      keys_[i] = ok[j];
      values_[i] = ov[j];
      ++size_;
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<Value> values_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace ebb::tok
