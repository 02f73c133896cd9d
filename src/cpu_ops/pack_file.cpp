// src/cpu_ops/pack_file.cpp — pack files (pack_file.h).
#include "pack_file.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "pack_ledger.h"
#include "platform/file.h"
#include "platform/vm.h"

namespace ebb_cpu_ops {
namespace {

constexpr uint64_t kPage = 4096;  // header size and section alignment (a multiple of 64)
constexpr char kMagic[8] = {'E', 'B', 'B', 'P', 'A', 'C', 'K', '1'};
constexpr size_t kMaxShape = 16;

// The header as it is on disk (little-endian, as every platform ebb builds for).
struct Header {
  char magic[8];
  uint64_t shape_count;
  int64_t shape[kMaxShape];
  uint64_t source_sample;
  uint64_t section_count;
  uint64_t section_bytes[kMaxShape];
};
static_assert(sizeof(Header) <= kPage);

uint64_t Fnv(uint64_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t RoundUp(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

bool Fill(Header& h, const PackKey& key, const std::vector<size_t>& section_bytes) {
  if (key.shape.size() > kMaxShape || section_bytes.size() > kMaxShape) return false;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.shape_count = key.shape.size();
  for (size_t i = 0; i < key.shape.size(); ++i) h.shape[i] = key.shape[i];
  h.source_sample = key.source_sample;
  h.section_count = section_bytes.size();
  for (size_t i = 0; i < section_bytes.size(); ++i) h.section_bytes[i] = section_bytes[i];
  return true;
}

}  // namespace

PackSettings ReadPackSettings(const OrtApi& api, const OrtKernelInfo* info) {
  PackSettings s;
  OrtKeyValuePairs* kv = nullptr;
  if (OrtStatus* st = api.KernelInfo_GetConfigEntries(info, &kv)) {
    api.ReleaseStatus(st);
    return s;  // no settings: pack into anonymous memory
  }
  auto get = [&](const char* key) {
    const char* v = api.GetKeyValue(kv, key);
    return v ? std::string(v) : std::string();
  };
  s.dir = get(kPackDirKey);
  s.write = get(kPackWriteKey) == "1";
  s.skip = get(kNoPackKey) == "1";
  s.ledger = get(kPackLedgerKey);
  api.ReleaseKeyValuePairs(kv);
  return s;
}

uint64_t SampleHash(const std::vector<std::pair<const void*, size_t>>& ranges, size_t edge) {
  uint64_t h = 14695981039346656037ull;
  for (const auto& [p, n] : ranges) {
    const auto* b = static_cast<const uint8_t*>(p);
    h = Fnv(h, reinterpret_cast<const uint8_t*>(&n), sizeof(n));
    if (n <= 2 * edge) {
      h = Fnv(h, b, n);
    } else {
      h = Fnv(h, b, edge);
      h = Fnv(h, b + n - edge, edge);
    }
  }
  return h;
}

std::string PackPath(const std::string& dir, const std::string& node_name) {
  const uint64_t h = Fnv(14695981039346656037ull,
                         reinterpret_cast<const uint8_t*>(node_name.data()), node_name.size());
  char hex[17];
  for (int i = 0; i < 16; ++i) hex[i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
  hex[16] = '\0';
  return dir + "/ebb-cpu-ops-" + hex + ".pack";
}

PackMapping::~PackMapping() {
  if (addr_) ebb::platform::Unmap(addr_, bytes_);
}

std::unique_ptr<PackMapping> OpenPack(const std::string& path, const PackKey& key,
                                      const std::vector<size_t>& section_bytes) {
  Header want;
  if (!Fill(want, key, section_bytes)) return nullptr;
  uint64_t total = kPage;
  for (size_t n : section_bytes) total += RoundUp(n);
  int err = 0;
  ebb::platform::File f = ebb::platform::File::Open(path, ebb::platform::OpenMode::kRead, &err);
  if (!f.is_open()) return nullptr;
  ebb::platform::FileInfo info;
  if (f.Stat(&info) != 0 || info.type != ebb::platform::FileType::kRegular || info.size != total) {
    return nullptr;
  }
  Header got;
  const auto r = f.ReadAt(&got, sizeof(got), 0);
  if (r.err != 0 || r.bytes != sizeof(got) || std::memcmp(&got, &want, sizeof(got)) != 0) {
    return nullptr;
  }
  const ebb::platform::MapResult m = ebb::platform::MapFileReadOnly(f, total);
  if (m.addr == nullptr) return nullptr;
  std::unique_ptr<PackMapping> p(new PackMapping());
  p->addr_ = m.addr;
  p->bytes_ = total;
  uint64_t at = kPage;
  for (size_t n : section_bytes) {
    p->sections_.push_back(static_cast<const uint8_t*>(m.addr) + at);
    at += RoundUp(n);
  }
  return p;
}

std::string WritePack(const std::string& path, const PackKey& key,
                      const std::vector<std::pair<const void*, size_t>>& sections) {
  std::vector<size_t> sizes;
  for (const auto& s : sections) sizes.push_back(s.second);
  Header h;
  if (!Fill(h, key, sizes)) return "too many shape numbers or sections";
  static std::atomic<uint64_t> counter{0};
  // Unique enough across processes (a clash fails the exclusive create, and the write is skipped).
  const std::string temp =
      path + ".tmp-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
      "-" + std::to_string(counter.fetch_add(1));
  int err = 0;
  ebb::platform::File f =
      ebb::platform::File::Open(temp, ebb::platform::OpenMode::kCreateNewPrivate, &err);
  if (!f.is_open()) return "cannot create " + temp + ": " + std::strerror(err);
  std::vector<uint8_t> page(kPage, 0);
  std::memcpy(page.data(), &h, sizeof(h));
  err = f.WriteAll(page.data(), page.size());
  for (const auto& [p, n] : sections) {
    if (err == 0) err = f.WriteAll(p, n);
    if (err == 0 && RoundUp(n) > n) {
      const std::vector<uint8_t> pad(RoundUp(n) - n, 0);
      err = f.WriteAll(pad.data(), pad.size());
    }
  }
  if (err == 0) err = f.Sync();
  const int close_err = f.Close();
  if (err == 0) err = close_err;
  if (err == 0) err = ebb::platform::Rename(temp, path);
  if (err != 0) {
    ebb::platform::RemoveFile(temp);
    return "cannot write " + path + ": " + std::strerror(err);
  }
  return "";
}

}  // namespace ebb_cpu_ops
