#include "report/nccl_html.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "report/render.hpp"

namespace cmax::report {
namespace {

using nlohmann::json;

struct Point {
  double size = 0;  // bytes
  double busbw = 0;
};

struct Curve {
  std::string label;  // "2 nodes, 16 ranks (FILE table 1)"
  std::vector<Point> points;
};

struct Mark {
  size_t series = 0;  // index into a chart's curves
  Point at;
  std::string kind;  // dip, cliff, kink
  std::string text;
};

struct Chart {
  std::vector<Curve> curves;
  std::vector<Mark> marks;
};

// What a stored figure may be, at most, to be drawn: nccl-tests' parser takes no bandwidth past
// 1e6 GB/s, and no message is a petabyte. A store written by something else is no exception.
constexpr double kMostGbs = 1e6;
constexpr double kMostBytes = 1e15;

std::optional<double> Number(const json& j, const char* key, double most = 1e15) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > most) return std::nullopt;
  return v;
}

std::string Text(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string SizeLabel(double bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T"};
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes >= 1024) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.0f}{}", bytes, kUnits[unit]);
}

// The analysis's curves grouped by collective, with the dips on them; empty on a bad shape.
std::map<std::string, Chart> ReadCharts(const RunRecord& record) {
  std::map<std::string, Chart> charts;
  const auto item = std::ranges::find_if(
      record.evidence, [](const EvidenceItem& e) { return e.key == "nccl.analysis"; });
  if (item == record.evidence.end()) return charts;
  const json doc = json::parse(item->value_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("curves") || !doc["curves"].is_array()) return charts;
  // Where each analysed curve went: its chart and series.
  std::vector<std::pair<std::string, size_t>> placed;
  for (const json& c : doc["curves"]) {
    placed.emplace_back("", 0);
    if (!c.is_object() || !c.contains("points") || !c["points"].is_array()) continue;
    std::string collective = Text(c, "collective");
    if (collective.empty()) collective = "unknown collective";
    Curve curve;
    const std::optional<double> nodes = Number(c, "nodes");
    const std::optional<double> ranks = Number(c, "ranks");
    curve.label = nodes ? fmt::format("{:.0f} node{}", *nodes, *nodes == 1 ? "" : "s")
                        : std::string("nodes unknown");
    if (ranks && *ranks > 0) curve.label += fmt::format(", {:.0f} ranks", *ranks);
    curve.label += " (" + Text(c, "origin") + ")";
    for (const json& p : c["points"]) {
      if (!p.is_object()) continue;
      const auto size = Number(p, "size_bytes", kMostBytes);
      const auto bw = Number(p, "busbw_gbs", kMostGbs);
      if (size && bw && *size > 0) curve.points.push_back({*size, *bw});
    }
    if (curve.points.empty()) continue;
    Chart& chart = charts[collective];
    placed.back() = {collective, chart.curves.size()};
    chart.curves.push_back(std::move(curve));
  }
  if (doc.contains("dips") && doc["dips"].is_array()) {
    for (const json& d : doc["dips"]) {
      if (!d.is_object()) continue;
      const auto index = Number(d, "curve");
      const auto size = Number(d, "at_size_bytes", kMostBytes);
      const auto bw = Number(d, "at_busbw_gbs", kMostGbs);
      const auto depth = Number(d, "depth_pct");
      if (!index || !size || !bw || *size <= 0 || *index >= static_cast<double>(placed.size())) {
        continue;
      }
      const auto& [collective, series] = placed[static_cast<size_t>(*index)];
      if (collective.empty()) continue;
      const std::string kind = Text(d, "kind");
      charts[collective].marks.push_back(
          {series,
           {*size, *bw},
           kind,
           fmt::format("{}: {:.2f} GB/s at {}, {:.0f}% below the best smaller size", kind, *bw,
                       SizeLabel(*size), depth.value_or(0))});
    }
  }
  return charts;
}

constexpr const char* kColours[] = {"#2f6fde", "#2e8b57", "#8e44ad",
                                    "#d4a017", "#16a2b8", "#6c757d"};

// An id that names a chart for tests and links: letters, digits, '_' and '-' only, and unique
// on the page ("all reduce" and "all-reduce" would share one: the second gets "-2").
std::string ChartId(const std::string& collective, std::set<std::string>& taken) {
  std::string id = collective;
  for (char& ch : id) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '_' && ch != '-') ch = '-';
  }
  std::string unique = id;
  for (int n = 2; !taken.insert(unique).second; ++n) unique = fmt::format("{}-{}", id, n);
  return unique;
}

std::string RenderChart(const std::string& collective, const std::string& id, const Chart& chart) {
  double min_size = 0;
  double max_size = 0;
  double max_bw = 0;
  for (const Curve& c : chart.curves) {
    for (const Point& p : c.points) {
      min_size = min_size == 0 ? p.size : std::min(min_size, p.size);
      max_size = std::max(max_size, p.size);
      max_bw = std::max(max_bw, p.busbw);
    }
  }
  if (max_bw <= 0) max_bw = 1;
  const double lo = std::log2(min_size);
  const double span = std::max(1.0, std::log2(max_size) - lo);
  constexpr int kLeft = 60, kWidth = 560, kHeight = 220, kTop = 16, kBottom = 40;
  const auto x = [&](double size) { return kLeft + (std::log2(size) - lo) / span * kWidth; };
  const auto y = [&](double v) { return kTop + kHeight - v / max_bw * kHeight; };
  std::string svg = fmt::format(
      "<svg id=\"chart-nccl-{0}\" class=\"nccl\" role=\"img\" "
      "aria-label=\"{3}: bus bandwidth against message size by node count\" width=\"{1}\" "
      "height=\"{2}\" viewBox=\"0 0 {1} {2}\" font-size=\"12\" "
      "font-family=\"system-ui,sans-serif\">\n",
      HtmlEscape(id), kLeft + kWidth + 30, kTop + kHeight + kBottom, HtmlEscape(collective));
  svg += SvgValueGrid(kLeft, kLeft + kWidth, max_bw, y);
  // A size label every few doublings, so that at most about eight show.
  const int step = std::max(1, static_cast<int>(std::ceil(span / 8)));
  for (int k = 0; k <= static_cast<int>(span); k += step) {
    const double size = std::exp2(lo + k);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e6e9f0\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#4a5468\">{4}</text>\n",
        x(size), kTop, kTop + kHeight, kTop + kHeight + 16, SizeLabel(size));
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#1d2330\">message size</text>\n"
      "<text x=\"{}\" y=\"{}\" fill=\"#1d2330\">busbw (GB/s)</text>\n",
      kLeft + kWidth / 2, kTop + kHeight + 34, kLeft + 4, kTop + 10);
  for (size_t s = 0; s < chart.curves.size(); ++s) {
    const Curve& c = chart.curves[s];
    const char* colour = kColours[s % std::size(kColours)];
    std::string path;
    for (const Point& p : c.points) {
      path += fmt::format("{}{:.1f} {:.1f} ", path.empty() ? "M" : "L", x(p.size), y(p.busbw));
    }
    svg += fmt::format(
        "<path class=\"curve\" d=\"{}\" fill=\"none\" stroke=\"{}\">"
        "<title>{}</title></path>\n",
        path, colour, HtmlEscape(c.label));
  }
  for (const Mark& m : chart.marks) {
    const bool kink = m.kind == "kink";
    svg += fmt::format(
        "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\"><title>{}</title></circle>\n",
        kink ? "kink" : "dip", x(m.at.size), y(m.at.busbw), kink ? "#6c757d" : "#c9302c",
        HtmlEscape(chart.curves[m.series].label + ": " + m.text));
  }
  svg += "</svg>\n<ul class=\"legend\">";
  for (size_t s = 0; s < chart.curves.size(); ++s) {
    svg += fmt::format("<li><span style=\"color:{}\">&#9644;</span> {}</li>",
                       kColours[s % std::size(kColours)], HtmlEscape(chart.curves[s].label));
  }
  svg += "</ul>\n";
  return svg;
}

}  // namespace

std::string RenderNcclHtml(const RunRecord& record) {
  const std::map<std::string, Chart> charts = ReadCharts(record);
  if (charts.empty()) return {};
  std::string out =
      "<section>\n<h2>NCCL bus bandwidth</h2>\n<p><small>Bus bandwidth against message size, "
      "one line per node count; red circles mark dips and cliffs, grey ones NCCL's "
      "algorithm or protocol switch points.</small></p>\n";
  std::set<std::string> ids;
  for (const auto& [collective, chart] : charts) {
    out += fmt::format("<h3>{}</h3>\n", HtmlEscape(collective));
    out += RenderChart(collective, ChartId(collective, ids), chart);
  }
  out += "</section>\n";
  return out;
}

}  // namespace cmax::report
