#include "bench/bench_workload.h"

#include "platform/heap.h"

namespace ebb::bench {

RequestTiming TokenClock::Finish(int32_t prompt_tokens) const {
  using Sec = std::chrono::duration<double>;
  RequestTiming t;
  t.prompt_tokens = prompt_tokens;
  t.generated_tokens = n_;
  if (n_ == 0) return t;
  t.ttft_s = Sec(first_ - start_).count();
  t.e2e_s = Sec(last_ - start_).count();
  const double decode_s = Sec(last_ - first_).count();
  t.tps = (n_ > 1 && decode_s > 0) ? (n_ - 1) / decode_s : 0;
  return t;
}

void Workload::Shrink() { platform::ReturnFreeHeap(); }

}  // namespace ebb::bench
