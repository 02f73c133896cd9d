// Small statistics helpers for `ebb bench`: mean, sample standard deviation, percentiles and a
// least-squares line with the standard error of its slope. Pure functions on plain vectors; no
// state, thread-safe. Empty inputs give 0 (never NaN), so reports stay valid JSON.
#pragma once

#include <cstddef>
#include <span>

namespace ebb::bench {

double Mean(std::span<const double> xs);
// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
double Stddev(std::span<const double> xs);
// Percentile `p` in [0, 100] with linear interpolation between closest ranks (the "linear"
// method of NumPy's percentile): p50 of {1,2,3,4} is 2.5.
double Percentile(std::span<const double> xs, double p);

struct Summary {
  size_t n = 0;
  double mean = 0, stddev = 0, p50 = 0, p90 = 0, min = 0, max = 0;
};
Summary Summarize(std::span<const double> xs);

// Ordinary least squares y = intercept + slope * x.
struct LinearFit {
  size_t n = 0;
  double slope = 0;  // units of y per unit of x
  double intercept = 0;
  double slope_stderr = 0;  // standard error of the slope; 0 when n < 3 or x is constant
};
// `xs` and `ys` have the same length (the shorter one bounds the fit).
LinearFit FitLine(std::span<const double> xs, std::span<const double> ys);

}  // namespace ebb::bench
