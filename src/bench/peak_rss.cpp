#include "bench/peak_rss.h"

#include "platform/system_info.h"

namespace ebb::bench {

bool ResetPeakRss() { return platform::ResetPeakRss(); }

}  // namespace ebb::bench
