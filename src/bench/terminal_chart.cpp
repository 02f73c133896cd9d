#include "bench/terminal_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ebb::bench {

std::string RenderTerminalChart(const std::vector<RunResult>& runs, const std::string& markers,
                                int height) {
  height = std::max(3, height);
  size_t width = 0;
  double lo = 0;
  double hi = 0;
  bool any = false;
  for (const auto& r : runs) {
    width = std::max(width, r.iterations.size());
    for (const auto& it : r.iterations) {
      const double mib = static_cast<double>(it.after.rss_bytes) / (1024.0 * 1024.0);
      lo = any ? std::min(lo, mib) : mib;
      hi = any ? std::max(hi, mib) : mib;
      any = true;
    }
  }
  if (!any) return "";
  // At least 1 MiB of range, padded a little, so that a flat line sits inside the plot.
  const double pad = std::max(0.5, (hi - lo) * 0.05);
  lo = std::max(0.0, lo - pad);
  hi = hi + pad;
  std::vector<std::string> grid(static_cast<size_t>(height), std::string(width, ' '));
  for (size_t r = 0; r < runs.size(); ++r) {
    const char mark = r < markers.size() ? markers[r] : static_cast<char>('a' + r % 26);
    for (size_t i = 0; i < runs[r].iterations.size(); ++i) {
      const double mib =
          static_cast<double>(runs[r].iterations[i].after.rss_bytes) / (1024.0 * 1024.0);
      const int row = static_cast<int>(std::lround((hi - mib) / (hi - lo) * (height - 1)));
      char& cell = grid[static_cast<size_t>(std::clamp(row, 0, height - 1))][i];
      cell = (cell == ' ' || cell == mark) ? mark : '*';
    }
  }
  std::string out;
  char label[32];
  for (int row = 0; row < height; ++row) {
    const double v = hi - (hi - lo) * row / (height - 1);
    std::snprintf(label, sizeof label, "%7.1f |", v);
    out += label + grid[static_cast<size_t>(row)] + "\n";
  }
  out += "    MiB +" + std::string(width, '-') + "\n";
  std::string axis(width, ' ');
  for (size_t i = 0; i < width; ++i) {
    bool warm = false;
    for (const auto& r : runs) warm = warm || (i < r.iterations.size() && r.iterations[i].warmup);
    if (warm) axis[i] = 'w';
  }
  for (size_t i = 9; i < width; i += 10) {  // 1-based iteration numbers every 10
    const std::string n = std::to_string(i + 1);
    if (i + 1 >= n.size()) axis.replace(i + 1 - n.size(), n.size(), n);
  }
  out += "         " + axis + "  iteration (w: warm-up)\n";
  return out;
}

}  // namespace ebb::bench
