// src/cpu_ops/pack_ledger.cpp — see pack_ledger.h.
#include "pack_ledger.h"

#include <map>
#include <mutex>

namespace ebb_cpu_ops {
namespace {

std::mutex g_mu;
std::map<std::string, PackCount>& Registry() {            // guarded by g_mu
  static auto* r = new std::map<std::string, PackCount>;  // never destroyed: kernels may
  return *r;                                              // outlive static destruction order
}
uint64_t g_next = 0;  // guarded by g_mu

}  // namespace

PackLedger::PackLedger() : count_(std::make_shared<std::atomic<uint64_t>>(0)) {
  std::lock_guard<std::mutex> lock(g_mu);
  id_ = "ledger-" + std::to_string(++g_next);
  Registry().emplace(id_, count_);
}

PackLedger::~PackLedger() {
  std::lock_guard<std::mutex> lock(g_mu);
  Registry().erase(id_);
}

PackCount PackLedger::Find(const std::string& id) {
  if (id.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Registry().find(id);
  return it == Registry().end() ? nullptr : it->second;
}

}  // namespace ebb_cpu_ops
