// XXH64 (Yann Collet's xxHash, 64-bit), written from its published specification: a fast,
// non-cryptographic checksum. ebb uses it to fingerprint model files and to check that a
// compiled-model cache reads back what was written (model/model_cache.h). It detects
// truncation, overwritten regions and bit rot; it is not a defence against a deliberate forger.
//
// Thread-safety: a Hash64 object is used by one thread at a time; HashFileRange is reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace ebb::internal {

// Streaming XXH64: Update() any number of times, then Digest() (which does not change the
// state, so more Update() calls may follow). Same result as hashing the concatenation at once.
class Hash64 {
 public:
  explicit Hash64(uint64_t seed = 0);
  void Update(const void* data, size_t len);
  void Update(const std::string& s) { Update(s.data(), s.size()); }
  uint64_t Digest() const;

 private:
  uint64_t v_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  unsigned char buf_[32];
  size_t buf_len_ = 0;
};

// XXH64 of `len` bytes of `data`.
uint64_t HashBytes(const void* data, size_t len, uint64_t seed = 0);

// Feeds bytes [offset, offset + len) of the file at `path` into `h`, reading with pread in
// 1 MiB blocks (the file is not mapped, so this adds nothing to RSS). A range past the end is
// cut at the end. Returns false when the file cannot be opened or read; `err` (may be null) then
// receives the errno (ENOMEM when the read buffer could not be allocated).
bool HashFileRange(const std::filesystem::path& path, uint64_t offset, uint64_t len, Hash64& h,
                   int* err = nullptr);

// 16 lowercase hex digits.
std::string Hex64(uint64_t v);

}  // namespace ebb::internal
