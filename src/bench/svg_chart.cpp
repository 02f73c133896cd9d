#include "bench/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>

#include "core/strings.h"

namespace ebb::bench {
namespace {

constexpr int kPanelW = 380, kPanelH = 250;                    // plot area of one panel
constexpr int kLeft = 70, kTop = 60, kGapX = 100, kGapY = 90;  // margins and gaps
constexpr int kCols = 3, kRows = 2;
constexpr int kLegendH = 30;
// Colour-blind-friendly palette (Okabe-Ito).
constexpr const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                   "#E69F00", "#56B4E9", "#000000", "#F0E442"};

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// Tick label: as few digits as the step needs.
std::string TickLabel(double v, double step) {
  char buf[32];
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

double NiceStep(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

struct Series {
  std::string name;
  const char* color;
  double width;  // earlier runs are drawn wider, so identical lines stay visible as nested
  std::vector<std::pair<double, double>> points;  // (iteration, value)
};

using Getter = std::function<std::optional<double>(const IterationRecord&)>;

struct Panel {
  std::string title, unit;
  Getter get;
  std::string empty_note;  // shown when no run has a value
  Getter get_dashed = {};  // optional second line per run, dashed (e.g. the peak)
  bool bytes = false;      // values are bytes: shown in KiB, MiB or GiB, whichever fits
};

void DrawPanel(std::ostringstream& o, int x0, int y0, const Panel& p,
               const std::vector<RunResult>& runs, int32_t warmup) {
  std::vector<Series> series, dashed;
  double xmax = 1, ymin = 1e300, ymax = -1e300;
  for (size_t r = 0; r < runs.size(); ++r) {
    const double width = 2.0 + 1.6 * static_cast<double>(runs.size() - 1 - r);
    Series s{runs[r].name, kColors[r % std::size(kColors)], width, {}};
    Series d = s;
    for (const auto& it : runs[r].iterations) {
      xmax = std::max(xmax, static_cast<double>(it.index));
      for (auto [getter, out] : {std::pair{&p.get, &s}, std::pair{&p.get_dashed, &d}}) {
        if (!*getter) continue;
        if (auto v = (*getter)(it)) {
          out->points.emplace_back(it.index, *v);
          ymin = std::min(ymin, *v);
          ymax = std::max(ymax, *v);
        }
      }
    }
    series.push_back(std::move(s));
    dashed.push_back(std::move(d));
  }
  o << "<g class=\"panel\" data-title=\"" << Esc(p.title) << "\">\n";
  o << "<text x=\"" << x0 + kPanelW / 2 << "\" y=\"" << y0 - 12
    << "\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" << Esc(p.title)
    << "</text>\n";
  o << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << kPanelW << "\" height=\""
    << kPanelH << "\" fill=\"#fff\" stroke=\"#888\"/>\n";
  const bool empty = ymin > ymax;
  std::string unit = p.unit;
  if (p.bytes && !empty) {
    const double top = std::max(std::abs(ymin), std::abs(ymax));
    double div = 1;
    unit = "bytes";
    for (const char* u : {"KiB", "MiB", "GiB", "TiB"}) {
      if (top < div * 1024) break;
      div *= 1024;
      unit = u;
    }
    for (auto* group : {&series, &dashed}) {
      for (auto& ser : *group) {
        for (auto& pt : ser.points) pt.second /= div;
      }
    }
    ymin /= div;
    ymax /= div;
  }
  if (empty) {
    o << "<text x=\"" << x0 + kPanelW / 2 << "\" y=\"" << y0 + kPanelH / 2
      << "\" text-anchor=\"middle\" font-size=\"13\" fill=\"#777\">" << Esc(p.empty_note)
      << "</text>\n</g>\n";
    return;
  }
  // y range: the data's, padded; a flat line gets a band of +-5% (or +-1) around it.
  double pad = (ymax - ymin) * 0.08;
  if (pad == 0) pad = std::max(std::abs(ymax) * 0.05, 1.0);
  double lo = ymin - pad, hi = ymax + pad;
  if (ymin >= 0 && lo < 0) lo = 0;
  const double ystep = NiceStep(hi - lo, 5);
  lo = std::floor(lo / ystep) * ystep;
  hi = std::ceil(hi / ystep) * ystep;
  const double xlo = 0, xhi = std::max(1.0, xmax);
  auto X = [&](double x) { return x0 + (x - xlo) / (xhi - xlo) * kPanelW; };
  auto Y = [&](double y) { return y0 + kPanelH - (y - lo) / (hi - lo) * kPanelH; };
  // Warm-up band.
  if (warmup > 0) {
    const double wx = X(std::min<double>(warmup - 0.5, xhi));
    o << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << Fmt(wx - x0) << "\" height=\""
      << kPanelH << "\" fill=\"#eee\"/>\n";
    o << "<text x=\"" << x0 + 4 << "\" y=\"" << y0 + 14
      << "\" font-size=\"11\" fill=\"#999\">warm-up</text>\n";
  }
  // Grid and ticks.
  for (double y = lo; y <= hi + ystep / 2; y += ystep) {
    o << "<line x1=\"" << x0 << "\" x2=\"" << x0 + kPanelW << "\" y1=\"" << Fmt(Y(y)) << "\" y2=\""
      << Fmt(Y(y)) << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << x0 - 6 << "\" y=\"" << Fmt(Y(y) + 4)
      << "\" text-anchor=\"end\" font-size=\"11\">" << TickLabel(y, ystep) << "</text>\n";
  }
  const double xstep = std::max(1.0, NiceStep(xhi - xlo, 6));
  for (double x = 0; x <= xhi + 1e-9; x += xstep) {
    o << "<line x1=\"" << Fmt(X(x)) << "\" x2=\"" << Fmt(X(x)) << "\" y1=\"" << y0 + kPanelH
      << "\" y2=\"" << y0 + kPanelH + 4 << "\" stroke=\"#888\"/>\n";
    o << "<text x=\"" << Fmt(X(x)) << "\" y=\"" << y0 + kPanelH + 17
      << "\" text-anchor=\"middle\" font-size=\"11\">" << TickLabel(x, xstep) << "</text>\n";
  }
  o << "<text x=\"" << x0 + kPanelW / 2 << "\" y=\"" << y0 + kPanelH + 34
    << "\" text-anchor=\"middle\" font-size=\"12\">iteration</text>\n";
  o << "<text transform=\"translate(" << x0 - 50 << "," << y0 + kPanelH / 2
    << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << Esc(unit) << "</text>\n";
  for (const auto& s : dashed) {
    if (s.points.empty()) continue;
    o << "<polyline class=\"series-dashed\" data-run=\"" << Esc(s.name)
      << "\" fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"" << s.width * 0.75
      << "\" stroke-dasharray=\"5,4\" points=\"";
    for (const auto& [x, y] : s.points) o << Fmt(X(x)) << "," << Fmt(Y(y)) << " ";
    o << "\"/>\n";
  }
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    o << "<polyline class=\"series\" data-run=\"" << Esc(s.name) << "\" fill=\"none\" stroke=\""
      << s.color << "\" stroke-opacity=\"0.85\" stroke-width=\"" << s.width << "\" points=\"";
    for (const auto& [x, y] : s.points) o << Fmt(X(x)) << "," << Fmt(Y(y)) << " ";
    o << "\"/>\n";
    if (s.points.size() <= 80) {
      for (const auto& [x, y] : s.points) {
        o << "<circle cx=\"" << Fmt(X(x)) << "\" cy=\"" << Fmt(Y(y)) << "\" r=\"2.5\" fill=\""
          << s.color << "\"/>\n";
      }
    }
  }
  o << "</g>\n";
}

std::optional<double> Bytes(const std::optional<uint64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

}  // namespace

std::string RenderSvgChart(const std::vector<RunResult>& runs, const BenchOptions& options) {
  const int width = kLeft + kCols * kPanelW + (kCols - 1) * kGapX + 40;
  const int legend_rows = static_cast<int>(runs.size());
  const int top = kTop + 30 + legend_rows * kLegendH / 1;
  const int height = top + kRows * kPanelH + (kRows - 1) * kGapY + 60;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n";
  const std::string title =
      "ebb bench: " + options.model_dir.filename().string() + ", " +
      std::to_string(options.iterations) + " iterations (+" + std::to_string(options.warmup) +
      " warm-up" +
      (options.process_warmup > 0
           ? "; " + std::to_string(options.process_warmup) + " process warm-up"
           : std::string()) +
      "), " +
      (options.scenario == "rag" ? std::string("prompts 64-2048 tokens")
       : options.scenario == "rag-prefix"
           ? std::to_string(options.prefix_tokens) + "-token prefix + " +
                 std::to_string(options.question_tokens) + "-token questions"
       : options.prompt_file.empty() ? std::to_string(options.prompt_tokens) + " prompt tokens"
                                     : std::string("prompt file")) +
      ", " + std::to_string(options.gen_tokens) + " generated, batch " +
      std::to_string(options.batch);
  // A long title (run options) gets a smaller font so that it fits the width.
  o << "<text x=\"" << kLeft << "\" y=\"30\" font-size=\"" << (title.size() > 90 ? 15 : 18)
    << "\" font-weight=\"bold\">" << Esc(title) << "</text>\n";
  // Legend: one row per run, with its RSS slope.
  o << "<g class=\"legend\">\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const int y = kTop + static_cast<int>(r) * kLegendH;
    const auto& s = runs[r].summary;
    const double slope = s.rss_slope.slope;
    const std::string& name = runs[r].name;
    const std::string& scenario = runs[r].scenario;
    const bool says_scenario =
        name.size() >= scenario.size() &&
        name.compare(name.size() - scenario.size(), scenario.size(), scenario) == 0;
    const std::string text =
        name + (says_scenario ? "" : " (" + scenario + ")") + ": TTFT p50 " +
        Fmt(s.ttft_s.p50 * 1e3) + " ms, TPS p50 " + Fmt(s.tps.p50) + ", peak RSS " +
        internal::FormatBytes(s.peak_rss_bytes) + ", RSS slope " + (slope < 0 ? "-" : "+") +
        internal::FormatBytes(static_cast<uint64_t>(std::abs(slope))) + "/iter \xC2\xB1 " +
        internal::FormatBytes(static_cast<uint64_t>(s.rss_slope.slope_stderr));
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + 30 << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"" << kColors[r % std::size(kColors)] << "\" stroke-width=\"4\"/>\n";
    o << "<text x=\"" << kLeft + 40 << "\" y=\"" << y + 5 << "\" font-size=\"14\">" << Esc(text)
      << "</text>\n";
  }
  o << "</g>\n";

  Getter none;
  const std::vector<Panel> panels{
      {"RSS after iteration (dashed: peak in it)", "",
       [](const IterationRecord& it) { return Bytes(it.after.rss_bytes); }, "no data",
       [](const IterationRecord& it) { return Bytes(it.peak_rss_bytes); }, true},
      {"Anonymous memory after iteration", "",
       [](const IterationRecord& it) { return Bytes(it.after.anon_bytes); }, "no data", none, true},
      {"KV at last token (dashed: reserved after)", "",
       [](const IterationRecord& it) { return Bytes(it.last_token.kv.in_use_bytes); }, "no data",
       [](const IterationRecord& it) { return Bytes(it.after.kv.reserved_bytes); }, true},
      {"ORT arena total (dashed: in use) after", "",
       [](const IterationRecord& it) { return Bytes(it.after.arena.total_allocated_bytes); },
       "no arena figures (arena off, or nothing allocated yet)",
       [](const IterationRecord& it) { return Bytes(it.after.arena.in_use_bytes); }, true},
      {"Time to first token", "ms",
       [](const IterationRecord& it) -> std::optional<double> { return it.timing.ttft_s * 1e3; },
       "no data"},
      {"Decode rate (2nd and later tokens)", "tokens/s",
       [](const IterationRecord& it) -> std::optional<double> { return it.timing.tps; }, "no data"},
  };
  for (size_t i = 0; i < panels.size(); ++i) {
    const int col = static_cast<int>(i) % kCols, row = static_cast<int>(i) / kCols;
    DrawPanel(o, kLeft + col * (kPanelW + kGapX), top + row * (kPanelH + kGapY), panels[i], runs,
              options.warmup);
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace ebb::bench
