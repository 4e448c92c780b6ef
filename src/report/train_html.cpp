#include "report/train_html.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "report/render.hpp"

namespace cmax::report {
namespace {

using nlohmann::json;

constexpr const char* kColours[] = {"#2f6fde", "#2e8b57", "#8e44ad",
                                    "#d4a017", "#16a2b8", "#6c757d"};
constexpr size_t kMostRanks = 64;  // bars drawn; the rest are said

std::optional<double> Number(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string Text(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool IsKey(const std::string& key, std::string_view name) {
  return key == name || (key.starts_with("phase.") && key.ends_with(std::string(".") += name));
}

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // step, tokens/s per GPU
  std::vector<bool> warmup;
  std::optional<double> steady;  // the median of the steady steps
};

// What a log could hold (the parser's own bounds): a store edited by hand may hold more, which
// the axis arithmetic would turn into infinities.
constexpr double kMostTokensPerS = 1e8;
constexpr double kMostStep = 9007199254740992.0;  // 2^53: every step a double holds exactly

std::vector<Series> ReadThroughput(const json& doc) {
  std::vector<Series> out;
  if (!doc.is_object() || !doc.contains("files") || !doc["files"].is_array()) return out;
  for (const json& f : doc["files"]) {
    if (!f.is_object() || !f.contains("steps") || !f["steps"].is_array()) continue;
    Series s{.label = Text(f, "file"), .steady = Number(f, "tokens_per_s_per_gpu")};
    std::vector<double> warmup;
    if (f.contains("warmup_steps") && f["warmup_steps"].is_array()) {
      for (const json& w : f["warmup_steps"]) {
        if (w.is_number()) warmup.push_back(w.get<double>());
      }
    }
    for (const json& step : f["steps"]) {
      if (!step.is_object()) continue;
      const auto n = Number(step, "step");
      const auto tps = Number(step, "tps");
      if (!n || !tps || *tps < 0 || *tps > kMostTokensPerS || std::abs(*n) > kMostStep) continue;
      s.points.emplace_back(*n, *tps);
      s.warmup.push_back(std::ranges::find(warmup, *n) != warmup.end());
    }
    if (s.steady && (*s.steady < 0 || *s.steady > kMostTokensPerS)) s.steady.reset();
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  return out;
}

std::string ThroughputChart(const std::vector<Series>& series, int index) {
  double lo = INFINITY;
  double hi = -INFINITY;
  double top = 0;
  for (const Series& s : series) {
    for (const auto& [step, tps] : s.points) {
      lo = std::min(lo, step);
      hi = std::max(hi, step);
      top = std::max(top, tps);
    }
    if (s.steady) top = std::max(top, *s.steady);  // its line on the chart, not above it
  }
  if (top <= 0) top = 1;
  // A round top for the axis: 1, 2 or 5 times a power of ten, over four gridlines.
  const double unit = std::pow(10, std::floor(std::log10(top / 4)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (4 * m * unit >= top) {
      top = 4 * m * unit;
      break;
    }
  }
  const double span = std::max(1.0, hi - lo);
  constexpr int kLeft = 64, kWidth = 560, kHeight = 200, kTop = 28, kBottom = 40;
  const auto x = [&](double step) { return kLeft + (step - lo) / span * kWidth; };
  const auto y = [&](double v) { return kTop + kHeight - v / top * kHeight; };
  std::string svg = fmt::format(
      "<svg id=\"chart-train-throughput-{0}\" role=\"img\" aria-label=\"tokens per second per "
      "GPU by training step\" width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" "
      "font-size=\"12\" font-family=\"system-ui,sans-serif\">\n",
      index, kLeft + kWidth + 30, kTop + kHeight + kBottom);
  svg += SvgValueGrid(kLeft, kLeft + kWidth, top, y);
  for (int i = 0; i <= 4; ++i) {
    const double step = lo + span * i / 4;
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#4a5468\">{:.0f}</text>\n",
        x(step), kTop + kHeight + 16, step);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#1d2330\">step</text>\n"
      "<text x=\"{}\" y=\"{}\" fill=\"#1d2330\">tokens/s per GPU</text>\n",
      kLeft + kWidth / 2, kTop + kHeight + 34, kLeft - 6, kTop - 14);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const char* colour = kColours[i % std::size(kColours)];
    std::string path;
    for (const auto& [step, tps] : s.points) {
      path += fmt::format("{}{:.1f} {:.1f} ", path.empty() ? "M" : "L", x(step), y(tps));
    }
    svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\"><title>{}</title></path>\n",
                       path, colour, HtmlEscape(s.label));
    for (size_t p = 0; p < s.points.size(); ++p) {
      const auto& [step, tps] = s.points[p];
      svg += fmt::format(
          "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" stroke=\"{}\">"
          "<title>step {:.0f}: {:.0f} tokens/s/GPU{}</title></circle>\n",
          s.warmup[p] ? "warmup" : "steady", x(step), y(tps), s.warmup[p] ? "#fff" : colour, colour,
          step, tps, s.warmup[p] ? " (warm-up)" : "");
    }
    if (s.steady) {
      svg += fmt::format(
          "<line class=\"median\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" "
          "stroke=\"{3}\" stroke-dasharray=\"6 4\"><title>steady median {4:.0f} tokens/s/GPU"
          "</title></line>\n",
          kLeft, y(*s.steady), kLeft + kWidth, colour, *s.steady);
    }
  }
  svg += "</svg>\n<ul class=\"legend\">";
  for (size_t i = 0; i < series.size(); ++i) {
    svg += fmt::format("<li><span style=\"color:{}\">&#9644;</span> {}{}</li>",
                       kColours[i % std::size(kColours)], HtmlEscape(series[i].label),
                       series[i].steady
                           ? fmt::format(": {:.0f} tokens/s/GPU in steady state", *series[i].steady)
                           : std::string());
  }
  return svg + "</ul>\n";
}

struct Bar {
  std::string label;
  double compute = 0;
  double exposed = 0;
  double idle = 0;
};

std::string BreakdownChart(const json& doc, int index) {
  std::vector<Bar> bars;
  if (!doc.is_object() || !doc.contains("ranks") || !doc["ranks"].is_array()) return {};
  for (const json& r : doc["ranks"]) {
    if (!r.is_object()) continue;
    const auto rank = Number(r, "rank");
    const auto compute = Number(r, "compute_pct");
    const auto exposed = Number(r, "exposed_communication_pct");
    const auto idle = Number(r, "idle_pct");
    if (!rank || !compute || !exposed || !idle) continue;
    bars.push_back({fmt::format("rank {:.0f}", *rank), std::clamp(*compute, 0.0, 100.0),
                    std::clamp(*exposed, 0.0, 100.0), std::clamp(*idle, 0.0, 100.0)});
  }
  if (bars.empty()) return {};
  const size_t shown = std::min(bars.size(), kMostRanks);
  constexpr int kLeft = 70, kWidth = 520, kBar = 14, kGap = 4, kTop = 8;
  const int height = kTop + static_cast<int>(shown) * (kBar + kGap) + 30;
  std::string svg = fmt::format(
      "<svg id=\"chart-train-breakdown-{0}\" role=\"img\" aria-label=\"per rank, the share of "
      "GPU time in compute, exposed communication and idle\" width=\"{1}\" height=\"{2}\" "
      "viewBox=\"0 0 {1} {2}\" font-size=\"12\" font-family=\"system-ui,sans-serif\">\n",
      index, kLeft + kWidth + 20, height);
  const auto w = [&](double pct) { return pct / 100 * kWidth; };
  for (size_t i = 0; i < shown; ++i) {
    const Bar& b = bars[i];
    const int y = kTop + static_cast<int>(i) * (kBar + kGap);
    const double other = std::max(0.0, 100 - b.compute - b.exposed - b.idle);
    double at = kLeft;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#4a5468\">{}</text>\n",
                       kLeft - 6, y + kBar - 3, HtmlEscape(b.label));
    for (const auto& [pct, colour, what] :
         {std::tuple{b.compute, "#2e8b57", "compute"},
          {b.exposed, "#c9302c", "exposed communication"},
          {other, "#b8c2d6", "other (memory copies, communication under compute ...)"},
          {b.idle, "#e6e9f0", "idle"}}) {
      if (pct <= 0) continue;
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: "
          "{:.1f}% {}</title></rect>\n",
          at, y, w(pct), kBar, colour, HtmlEscape(b.label), pct, what);
      at += w(pct);
    }
  }
  svg +=
      "</svg>\n<ul class=\"legend\"><li><span style=\"color:#2e8b57\">&#9644;</span> compute"
      "</li><li><span style=\"color:#c9302c\">&#9644;</span> exposed communication</li>"
      "<li><span style=\"color:#b8c2d6\">&#9644;</span> other busy time</li>"
      "<li><span style=\"color:#e6e9f0\">&#9644;</span> idle</li></ul>\n";
  if (shown < bars.size()) {
    svg += fmt::format(
        "<p><small>The first {} of {} ranks; the JSON report has every one."
        "</small></p>\n",
        shown, bars.size());
  }
  return svg;
}

}  // namespace

std::string RenderTrainHtml(const RunRecord& record) {
  std::string body;
  int throughput = 0;
  int breakdown = 0;
  for (const EvidenceItem& e : record.evidence) {
    const bool logs = IsKey(e.key, "train.analysis");
    const bool trace = IsKey(e.key, "train.trace");
    if (!logs && !trace) continue;
    const json doc = json::parse(e.value_json, nullptr, false);
    if (logs) {
      const std::vector<Series> series = ReadThroughput(doc);
      if (series.empty()) continue;
      body += fmt::format("<h3>Throughput{}</h3>\n",
                          e.key == "train.analysis" ? "" : " (" + HtmlEscape(e.key) + ")");
      body += ThroughputChart(series, ++throughput);
    } else {
      const std::string chart = BreakdownChart(doc, breakdown + 1);
      if (chart.empty()) continue;
      ++breakdown;
      body += fmt::format("<h3>Where the GPU's time goes{}</h3>\n<p>{}</p>\n",
                          e.key == "train.trace" ? "" : " (" + HtmlEscape(e.key) + ")",
                          HtmlEscape(Text(doc, "verdict")));
      body += chart;
    }
  }
  if (body.empty()) return {};
  return "<section>\n<h2>Training</h2>\n<p><small>Tokens per second per GPU at each logged "
         "step (hollow: warm-up; dashed: the steady median), and from the profiler's traces "
         "each rank's GPU time: compute, communication no compute hides, other busy time, idle."
         "</small></p>\n" +
         body + "</section>\n";
}

}  // namespace cmax::report
