#include "core/hash.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "platform/file.h"

namespace ebb::internal {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t Read64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only (x86-64, aarch64), as ebb's targets are
  return v;
}
inline uint32_t Read32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = Rotl(acc, 31);
  return acc * kP1;
}
inline uint64_t Merge(uint64_t acc, uint64_t val) {
  acc ^= Round(0, val);
  return acc * kP1 + kP4;
}

}  // namespace

Hash64::Hash64(uint64_t seed) : seed_(seed) {
  v_[0] = seed + kP1 + kP2;
  v_[1] = seed + kP2;
  v_[2] = seed;
  v_[3] = seed - kP1;
}

void Hash64::Update(const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += len;
  if (buf_len_ + len < 32) {
    std::memcpy(buf_ + buf_len_, p, len);
    buf_len_ += len;
    return;
  }
  if (buf_len_ > 0) {
    const size_t fill = 32 - buf_len_;
    std::memcpy(buf_ + buf_len_, p, fill);
    for (int i = 0; i < 4; ++i) v_[i] = Round(v_[i], Read64(buf_ + 8 * i));
    p += fill;
    len -= fill;
    buf_len_ = 0;
  }
  uint64_t v0 = v_[0], v1 = v_[1], v2 = v_[2], v3 = v_[3];
  while (len >= 32) {
    v0 = Round(v0, Read64(p));
    v1 = Round(v1, Read64(p + 8));
    v2 = Round(v2, Read64(p + 16));
    v3 = Round(v3, Read64(p + 24));
    p += 32;
    len -= 32;
  }
  v_[0] = v0;
  v_[1] = v1;
  v_[2] = v2;
  v_[3] = v3;
  std::memcpy(buf_, p, len);
  buf_len_ = len;
}

uint64_t Hash64::Digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = Rotl(v_[0], 1) + Rotl(v_[1], 7) + Rotl(v_[2], 12) + Rotl(v_[3], 18);
    for (int i = 0; i < 4; ++i) h = Merge(h, v_[i]);
  } else {
    h = seed_ + kP5;
  }
  h += total_;
  const unsigned char* p = buf_;
  size_t len = buf_len_;
  while (len >= 8) {
    h ^= Round(0, Read64(p));
    h = Rotl(h, 27) * kP1 + kP4;
    p += 8;
    len -= 8;
  }
  if (len >= 4) {
    h ^= static_cast<uint64_t>(Read32(p)) * kP1;
    h = Rotl(h, 23) * kP2 + kP3;
    p += 4;
    len -= 4;
  }
  while (len > 0) {
    h ^= (*p) * kP5;
    h = Rotl(h, 11) * kP1;
    ++p;
    --len;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t HashBytes(const void* data, size_t len, uint64_t seed) {
  Hash64 h(seed);
  h.Update(data, len);
  return h.Digest();
}

bool HashFileRange(const std::filesystem::path& path, uint64_t offset, uint64_t len, Hash64& h,
                   int* err) {
  int open_err = 0;
  platform::File file = platform::File::Open(path, platform::OpenMode::kRead, &open_err);
  if (!file.is_open()) {
    if (err) *err = open_err;
    return false;
  }
  std::vector<unsigned char> buf;
  try {
    buf.resize(1 << 20);
  } catch (const std::bad_alloc&) {
    if (err) *err = ENOMEM;
    return false;
  }
  while (len > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(len, buf.size()));
    const platform::IoResult r = file.ReadAt(buf.data(), want, offset);
    if (r.err != 0) {
      if (err) *err = r.err;
      return false;
    }
    if (r.bytes == 0) break;  // end of file
    h.Update(buf.data(), static_cast<size_t>(r.bytes));
    offset += r.bytes;
    len -= r.bytes;
  }
  return true;
}

std::string Hex64(uint64_t v) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) {
    s[i] = kDigits[v & 15];
    v >>= 4;
  }
  return s;
}

}  // namespace ebb::internal
