#include "bench/stats_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ebb::bench {

double Mean(std::span<const double> xs) {
  if (xs.empty()) return 0;
  double s = 0;
  for (double x : xs) s += x;
  return s / static_cast<double>(xs.size());
}

double Stddev(std::span<const double> xs) {
  if (xs.size() < 2) return 0;
  const double m = Mean(xs);
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

double Percentile(std::span<const double> xs, double p) {
  if (xs.empty()) return 0;
  std::vector<double> v(xs.begin(), xs.end());
  std::sort(v.begin(), v.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

Summary Summarize(std::span<const double> xs) {
  Summary s;
  s.n = xs.size();
  if (xs.empty()) return s;
  s.mean = Mean(xs);
  s.stddev = Stddev(xs);
  s.p50 = Percentile(xs, 50);
  s.p90 = Percentile(xs, 90);
  const auto [mn, mx] = std::minmax_element(xs.begin(), xs.end());
  s.min = *mn;
  s.max = *mx;
  return s;
}

LinearFit FitLine(std::span<const double> xs, std::span<const double> ys) {
  LinearFit f;
  f.n = std::min(xs.size(), ys.size());
  if (f.n == 0) return f;
  const double n = static_cast<double>(f.n);
  const double mx = Mean(xs.first(f.n));
  const double my = Mean(ys.first(f.n));
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < f.n; ++i) {
    sxx += (xs[i] - mx) * (xs[i] - mx);
    sxy += (xs[i] - mx) * (ys[i] - my);
  }
  if (sxx == 0) {
    f.intercept = my;
    return f;
  }
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  if (f.n >= 3) {
    double sse = 0;
    for (size_t i = 0; i < f.n; ++i) {
      const double r = ys[i] - (f.intercept + f.slope * xs[i]);
      sse += r * r;
    }
    f.slope_stderr = std::sqrt(sse / (n - 2) / sxx);
  }
  return f;
}

}  // namespace ebb::bench
