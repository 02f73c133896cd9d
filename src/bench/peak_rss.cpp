#include "bench/peak_rss.h"

#include <fstream>

namespace ebb::bench {

bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace ebb::bench
