// src/cpu_ops/pack_ledger.h — the bytes of repacked weights that one load's kernels hold in
// anonymous memory, so that the load charges them to memory.limit with the weights
// (model/model.cpp; docs/memory.md "What memory.limit counts").
//
// ebb's int4 matmul (int4_rows_op.cpp) repacks its weights at kernel creation. With a pack file
// (pack_file.h: a model-cache entry) they are clean file pages, which memory.limit does not
// charge (the model's weight files stand for its weights); without one (model_cache.dir=off, or the
// first load, which runs from the model file while the entry is built in the background) they are
// an anonymous copy beside ORT's initializers: about the size of the int4 weights again, which the
// weight files' size does not include.
//
// How: the load creates a PackLedger and names it in the session config entry kPackLedgerKey; each
// kernel of that session that packs into its own memory finds the ledger's count by that id, adds
// its bytes, and takes them back when it is destroyed (a session ORT refused frees its kernels).
// The load reads anon_bytes() once its session exists; a model-cache build's check session has a
// ledger of its own, and commits no entry when a kernel there packed into its own memory (its
// pack file not written). The registry is per copy of these sources: libebb_cpu_ops.so (a folder
// naming the library) has its own, which no load fills, so its kernels are not counted (a load
// sets the key only on sessions with libebb's built-in domain; a build's check sets it always,
// and finds nothing from the library's kernels).
//
// Thread-safety: the registry is guarded by a mutex; the counts are atomics, shared between the
// ledger and the kernels (shared_ptr), so a kernel may outlive its ledger.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace ebb_cpu_ops {

// Session config entry: the id of the PackLedger this session's kernels count into.
inline constexpr const char* kPackLedgerKey = "ebb.cpu_ops.pack_ledger";

using PackCount = std::shared_ptr<std::atomic<uint64_t>>;

class PackLedger {
 public:
  PackLedger();   // registered under a process-unique id
  ~PackLedger();  // unregistered; kernels keep their count
  PackLedger(const PackLedger&) = delete;
  PackLedger& operator=(const PackLedger&) = delete;

  // The value for kPackLedgerKey.
  const std::string& id() const { return id_; }
  // Bytes the kernels counted into this ledger hold in anonymous memory now.
  uint64_t anon_bytes() const { return count_->load(); }

  // The count registered under `id`, or null (no such ledger in this copy of the sources).
  static PackCount Find(const std::string& id);

 private:
  std::string id_;
  PackCount count_;
};

}  // namespace ebb_cpu_ops
