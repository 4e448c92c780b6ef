#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "report/active_html.hpp"
#include "report/nccl_html.hpp"
#include "report/rating_view.hpp"
#include "report/render.hpp"
#include "report/train_html.hpp"

namespace cmax::report {
namespace {

// One page, no scripts, no fetches: the policy forbids everything but inline styles, so even
// a string that escaped escaping could not load or run anything.
constexpr std::string_view kHead = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
)";

constexpr std::string_view kStyle = R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d2330;background:#fff}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d8dce6;padding-bottom:.25rem}h3{font-size:1rem;margin:1.25rem 0 .5rem;text-transform:uppercase;letter-spacing:.05em;color:#4a5468}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.75rem 0}dl.meta dt{color:#4a5468}dl.meta dd{margin:0}
table{border-collapse:collapse;width:100%;font-size:.9rem}table.findings{table-layout:fixed}table.findings td{overflow-wrap:anywhere}th,td{text-align:left;vertical-align:top;padding:.35rem .5rem;border-bottom:1px solid #e6e9f0}th{background:#f4f6fa}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}pre{margin:0;white-space:pre-wrap;word-break:break-all}
.badge,.status{display:inline-block;border-radius:.25rem;padding:.1rem .45rem;font-weight:600;font-size:.8rem}
.badges .badge{margin-right:.4rem}
.PASS{background:#e3f5e8;color:#17663a}.WARN{background:#fff4d6;color:#8a5a00}.FAIL{background:#fde4e4;color:#a01c1c}.SKIP{background:#eef0f4;color:#6b7385}.ATTEST{background:#e2f1f8;color:#1f5f7a}.UNKNOWN{background:#f3e3f7;color:#6a1b7a}
.state-ok{color:#17663a}.state-checks-failed,.state-error{color:#a01c1c}.state-interrupted,.state-running{color:#8a5a00}
footer{margin-top:2rem;color:#6b7385;font-size:.8rem}
details.passed{margin:.4rem 0 1rem}details.passed summary{cursor:pointer;color:#4a5468}
.card{display:grid;grid-template-columns:11rem 1fr;gap:.5rem 1.5rem;align-items:start;border:1px solid #d8dce6;border-radius:.5rem;padding:1rem;margin:1rem 0}
.card svg{grid-column:1/-1;max-width:100%;height:auto}.card dl.meta{margin-top:0}.card ul{margin:.25rem 0 .5rem 1.25rem;padding:0}
.tier{font-size:1.35rem;font-weight:700;text-align:center;border-radius:.5rem;padding:1.4rem .5rem;background:#eef0f4;color:#1d2330}
.tier-platinum{background:#e5e4f2;color:#34306b}.tier-gold{background:#fbefc6;color:#7a5600}.tier-silver{background:#e9edf2;color:#3f4b5b}.tier-bronze{background:#f6dfcd;color:#7a3f12}.tier-participation-ribbon{background:#e2f1f8;color:#1f5f7a}.tier-underperforming{background:#fde4e4;color:#a01c1c}.tier-untestable{background:#f3e3f7;color:#6a1b7a}
.meter{display:inline-block;vertical-align:middle;width:8rem;height:.6rem;background:#eef0f4;border-radius:.3rem;overflow:hidden}.meter span{display:block;height:100%;background:#2f6fde}
.gates.failed{color:#a01c1c;margin:.5rem 0 0}.gates.unverified{color:#8a5a00;margin:.5rem 0 0}.note{color:#4a5468;margin:.25rem 0}
table.items{table-layout:fixed}table.items td{overflow-wrap:anywhere}tr.missing td{color:#6b7385}small.gate{color:#a01c1c}
@media print{body{margin:0;max-width:none}section,.card,tr{break-inside:avoid}h2,h3{break-after:avoid}a{color:inherit}}
</style>
</head>
)";

// Links come from checks and catalogues, but a hostile one must not become javascript: or
// data:, so only web addresses are clickable.
std::string RenderLink(const std::string& link) {
  const bool web = link.rfind("https://", 0) == 0 || link.rfind("http://", 0) == 0;
  if (!web) return "<code>" + HtmlEscape(link) + "</code>";
  return fmt::format("<a href=\"{0}\" rel=\"noreferrer\">{0}</a>", HtmlEscape(link));
}

std::string MetaRow(std::string_view label, const std::string& value) {
  return fmt::format("<dt>{}</dt><dd>{}</dd>\n", label, HtmlEscape(value));
}

// A reliability run's steps, from its metrics (seconds after the injection).
struct StepTimes {
  std::string step;
  std::string node;
  std::map<std::string, double> at;  // "detect", "out_of_service", "replaced", ... -> seconds
};

std::vector<StepTimes> ReliabilitySteps(const std::vector<Metric>& metrics) {
  std::vector<StepTimes> steps;
  constexpr std::string_view kPrefix = "reliability.";
  for (const Metric& m : metrics) {
    // A store is a file anyone may edit: a time no watch could have taken is left out (a
    // duration beyond nanoseconds' range is undefined, and infinity spans no axis).
    if (!m.name.starts_with(kPrefix) || !m.labels.contains("step") || !std::isfinite(m.value) ||
        std::abs(m.value) > 1e9) {
      continue;
    }
    const std::string& step = m.labels.at("step");
    auto it = std::find_if(steps.begin(), steps.end(),
                           [&](const StepTimes& t) { return t.step == step; });
    if (it == steps.end()) {
      steps.push_back({step, m.labels.contains("node") ? m.labels.at("node") : "", {}});
      it = steps.end() - 1;
    }
    it->at[m.name.substr(kPrefix.size())] = m.value;
  }
  return steps;
}

// One row per step on a shared time axis from the injection: the watch (grey), the time out of
// service (red, until back in service or the end of the watch), the first sign of detection
// (black tick), the spare in service (blue diamond). Inline SVG: nothing to fetch or run.
std::string RenderTimeline(const std::vector<StepTimes>& steps) {
  double span = 0;
  for (const StepTimes& s : steps) {
    for (const auto& [name, v] : s.at) span = std::max(span, v);
  }
  if (span <= 0) span = 1;
  constexpr int kLeft = 190, kWidth = 640, kRow = 34, kTop = 26;
  const int height = kTop + kRow * static_cast<int>(steps.size()) + 10;
  const auto x = [&](double seconds) { return kLeft + seconds / span * kWidth; };
  std::string svg = fmt::format(
      "<svg id=\"chart-timeline\" role=\"img\" "
      "aria-label=\"timeline of each step after its injection\" "
      "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-size=\"12\" "
      "font-family=\"system-ui,sans-serif\">\n",
      kLeft + kWidth + 40, height, kLeft + kWidth + 40, height);
  for (int i = 0; i <= 4; ++i) {  // the axis: 0, a quarter, ... the whole span
    const double t = span * i / 4;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e6e9f0\"/>"
        "<text x=\"{0:.1f}\" y=\"14\" text-anchor=\"middle\" fill=\"#4a5468\">{3}</text>\n",
        x(t), kTop - 6, height - 6, HtmlEscape(FormatDuration(SecondsAsDuration(t))));
  }
  int row = 0;
  for (const StepTimes& s : steps) {
    const double y = kTop + kRow * row++ + kRow / 2.0;
    const auto get = [&s](const char* key) -> std::optional<double> {
      const auto it = s.at.find(key);
      return it == s.at.end() ? std::nullopt : std::optional<double>(it->second);
    };
    svg += fmt::format(
        "<text x=\"0\" y=\"{:.1f}\" fill=\"#1d2330\">{} <tspan fill=\"#6b7385\">{}"
        "</tspan></text>\n",
        y + 4, HtmlEscape(s.step), HtmlEscape(s.node));
    const double watched = get("watched").value_or(span);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#c9ced9\" stroke-width=\"2\"/>\n",
        x(0), y, x(watched), y);
    if (auto out = get("out_of_service")) {
      const double until = get("back_in_service").value_or(watched);
      svg += fmt::format(
          "<rect class=\"out\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
          "height=\"10\" fill=\"#d9534f\"><title>out of service from {}</title>"
          "</rect>\n",
          x(*out), y - 5, std::max(1.0, x(until) - x(*out)),
          HtmlEscape(FormatDuration(SecondsAsDuration(*out))));
    }
    if (auto detect = get("detect")) {
      svg += fmt::format(
          "<line class=\"detect\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
          "y2=\"{2:.1f}\" stroke=\"#1d2330\" stroke-width=\"2\"/>\n",
          x(*detect), y - 9, y + 9);
    }
    if (auto spare = get("replaced")) {
      svg += fmt::format(
          "<path class=\"spare\" d=\"M{0:.1f} {1:.1f} l5 5 l-5 5 l-5 -5 z\" "
          "fill=\"#2f6fde\"/>\n",
          x(*spare), y - 5);
    }
  }
  svg += "</svg>\n";
  return svg;
}

// An endpoint sweep's levels, from its metrics labelled by concurrency.
struct SweepPoint {
  double concurrency = 0;
  std::map<std::string, double> value;  // "output_throughput", "ttft_p50", ...
};

std::vector<SweepPoint> SweepPoints(const std::vector<Metric>& metrics) {
  std::map<double, SweepPoint> by_level;
  constexpr std::string_view kPrefix = "endpoint.";
  for (const Metric& m : metrics) {
    if (!m.name.starts_with(kPrefix) || !m.labels.contains("concurrency")) continue;
    char* end = nullptr;
    const std::string& text = m.labels.at("concurrency");
    const double level = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(level) || !std::isfinite(m.value)) continue;
    by_level[level].concurrency = level;
    by_level[level].value[m.name.substr(kPrefix.size())] = m.value;
  }
  std::vector<SweepPoint> points;
  for (auto& [level, point] : by_level) {
    if (point.value.contains("output_throughput")) points.push_back(std::move(point));
  }
  return points;
}

// Latency against output throughput, one point per concurrency level joined in order: where
// the curve turns up is where the endpoint saturates. Inline SVG, nothing to fetch or run.
std::string RenderSweep(const std::vector<SweepPoint>& points, const std::string& latency,
                        const std::string& label) {
  double max_x = 0;
  double max_y = 0;
  for (const SweepPoint& p : points) {
    max_x = std::max(max_x, p.value.at("output_throughput"));
    if (p.value.contains(latency)) max_y = std::max(max_y, p.value.at(latency));
  }
  if (max_x <= 0) max_x = 1;
  if (max_y <= 0) max_y = 1;
  constexpr int kLeft = 60, kWidth = 520, kHeight = 220, kTop = 16, kBottom = 40;
  const auto x = [&](double v) { return kLeft + v / max_x * kWidth; };
  const auto y = [&](double v) { return kTop + kHeight - v / max_y * kHeight; };
  std::string svg = fmt::format(
      "<svg id=\"chart-sweep-{3}\" role=\"img\" "
      "aria-label=\"{0} against output throughput by concurrency\" "
      "width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" font-size=\"12\" "
      "font-family=\"system-ui,sans-serif\">\n",
      HtmlEscape(label), kLeft + kWidth + 30, kTop + kHeight + kBottom, HtmlEscape(latency));
  for (int i = 0; i <= 4; ++i) {
    const double vx = max_x / 4 * i;  // not max * i: that overflows near the largest double
    const double vy = max_y / 4 * i;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e6e9f0\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#4a5468\">{4:.0f}</text>\n",
        x(vx), kTop, kTop + kHeight, kTop + kHeight + 16, vx);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e6e9f0\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"#4a5468\">{5:.3g}</text>\n",
        kLeft, y(vy), kLeft + kWidth, kLeft - 6, y(vy) + 4, vy);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#1d2330\">output tokens/s"
      "</text>\n<text x=\"{}\" y=\"{}\" fill=\"#1d2330\">{} (ms)</text>\n",
      kLeft + kWidth / 2, kTop + kHeight + 34, kLeft + 4, kTop + 10, HtmlEscape(label));
  std::string path;
  for (const SweepPoint& p : points) {
    if (!p.value.contains(latency)) continue;
    const double px = x(p.value.at("output_throughput"));
    const double py = y(p.value.at(latency));
    path += fmt::format("{}{:.1f} {:.1f} ", path.empty() ? "M" : "L", px, py);
    svg += fmt::format(
        "<circle class=\"level\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#2f6fde\">"
        "<title>concurrency {:.0f}: {:.1f} tok/s, {:.2f} ms</title></circle>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#4a5468\">{:.0f}</text>\n",
        px, py, p.concurrency, p.value.at("output_throughput"), p.value.at(latency), px + 6, py - 6,
        p.concurrency);
  }
  if (!path.empty()) {
    svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#2f6fde\"/>\n", path);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace

std::string RenderHtml(const RunRecord& record) {
  const RunInfo& run = record.run;
  std::string out(kHead);
  out += fmt::format("<title>cmax {} #{} · {}</title>\n", HtmlEscape(run.command), run.id,
                     HtmlEscape(run.host));
  out += kStyle;
  out += "<body>\n<header>\n";
  out += fmt::format("<h1>cmax {} #{} <span class=\"state-{}\">{}</span></h1>\n",
                     HtmlEscape(run.command), run.id, RunStateName(run.state),
                     RunStateName(run.state));
  out += "<dl class=\"meta\">\n";
  out += MetaRow("Host", run.host);
  out += MetaRow("Target", run.target);
  out += MetaRow("Started", FormatIso8601(run.started_at));
  if (run.ended_at) {
    out += MetaRow("Ended", FormatIso8601(*run.ended_at));
    out += MetaRow("Duration", FormatDuration(*run.ended_at - run.started_at));
  }
  if (run.exit_code) out += MetaRow("Exit code", std::to_string(*run.exit_code));
  out += MetaRow("cmax version", run.cmax_version);
  out += "</dl>\n";

  const StatusCounts c = CountStatuses(record.findings);
  out += "<p class=\"badges\">";
  const std::pair<CheckStatus, int> badges[] = {
      {CheckStatus::kPass, c.pass},     {CheckStatus::kWarn, c.warn},
      {CheckStatus::kFail, c.fail},     {CheckStatus::kSkip, c.skip},
      {CheckStatus::kAttest, c.attest}, {CheckStatus::kUnknown, c.unknown}};
  for (const auto& [status, count] : badges) {
    if (status == CheckStatus::kUnknown && count == 0) continue;  // rare: shown when there
    out += fmt::format("<span class=\"badge {0}\">{1} {0}</span>", StatusName(status), count);
  }
  out += "</p>\n</header>\n";

  // Each finding's row is the anchor the rating's items link to: the first one of its check.
  std::set<std::string> anchored;
  for (const Finding& f : record.findings) anchored.insert(f.check_id);
  if (const std::optional<RatingView> rating = ReadRating(record)) {
    out += RenderRatingHtml(*rating, [&anchored](std::string_view check) {
      return anchored.contains(std::string(check));
    });
  }

  if (const std::vector<StepTimes> steps = ReliabilitySteps(record.metrics); !steps.empty()) {
    out +=
        "<section>\n<h2>Timeline</h2>\n<p><small>From each injection: watched (grey), out "
        "of service (red), first sign of detection (black tick), spare in service (blue)."
        "</small></p>\n";
    out += RenderTimeline(steps);
    out += "</section>\n";
  }

  if (const std::vector<SweepPoint> points = SweepPoints(record.metrics); points.size() >= 2) {
    out +=
        "<section>\n<h2>Concurrency sweep</h2>\n<p><small>Latency (p50) against output "
        "throughput; each point is a concurrency level.</small></p>\n";
    out += RenderSweep(points, "ttft_p50", "TTFT p50");
    out += RenderSweep(points, "tpot_p50", "TPOT p50");
    out += "</section>\n";
  }

  out += RenderNcclHtml(record);
  out += RenderTrainHtml(record);
  out += RenderActiveFleetHtml(record);

  out += "<section>\n<h2>Findings</h2>\n";
  if (record.findings.empty()) out += "<p>No findings were recorded.</p>\n";
  // Per category the problems first, in full; what passed folds away under them with its
  // result only (a pass has nothing to remediate), which keeps a fleet's page readable and
  // small: 10,000 findings are well under 2 MB (bench/report_bench.cpp).
  const auto anchor_of = [&anchored](const Finding& f) {
    return anchored.erase(f.check_id) > 0 ? " id=\"f-" + HtmlEscape(f.check_id) + "\""
                                          : std::string();
  };
  for (const auto& [category, group] : FindingsByCategory(record.findings)) {
    out += fmt::format("<h3>{}</h3>\n", HtmlEscape(category));
    int passed = 0;
    int problems = 0;
    for (const Finding* f : group) ++(f->status == CheckStatus::kPass ? passed : problems);
    if (problems > 0) {
      // Fixed column widths, so the tables of every category line up.
      out +=
          "<table class=\"findings\">\n"
          "<colgroup><col style=\"width:6rem\"><col style=\"width:12rem\"><col>"
          "<col style=\"width:10rem\"><col style=\"width:8rem\"><col style=\"width:13rem\">"
          "</colgroup>\n"
          "<thead><tr><th>Status</th><th>Check</th><th>Result</th><th>Observed</th>"
          "<th>Expected</th><th>Remediation</th></tr></thead>\n<tbody>\n";
      for (const Finding* finding : group) {
        const Finding& f = *finding;
        if (f.status == CheckStatus::kPass) continue;
        std::string remediation = HtmlEscape(f.remediation);
        for (const std::string& link : f.links) remediation += "<br>" + RenderLink(link);
        out += fmt::format(
            "<tr{7}><td><span class=\"status {0}\">{0}</span><br><small>{1}</small></td>"
            "<td><code>{2}</code></td><td>{3}</td><td>{4}</td><td>{5}</td><td>{6}</td></tr>\n",
            StatusName(f.status), SeverityName(f.severity), HtmlEscape(f.check_id),
            HtmlEscape(f.message),
            // An inventory finding often says in its message what it observed: once is enough.
            f.observed == f.message ? std::string() : HtmlEscape(f.observed),
            HtmlEscape(f.expected), remediation, anchor_of(f));
      }
      out += "</tbody>\n</table>\n";
    }
    if (passed > 0) {
      out += fmt::format(
          "<details class=\"passed\"><summary><span class=\"status PASS\">PASS</span> {} "
          "passed</summary>\n<table class=\"findings passed\">\n<colgroup><col "
          "style=\"width:18rem\"><col><col style=\"width:18rem\"></colgroup>\n<tbody>\n",
          passed);
      for (const Finding* finding : group) {
        const Finding& f = *finding;
        if (f.status != CheckStatus::kPass) continue;
        out += fmt::format("<tr{}><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                           anchor_of(f), HtmlEscape(f.check_id), HtmlEscape(f.message),
                           f.observed == f.message ? std::string() : HtmlEscape(f.observed));
      }
      out += "</tbody>\n</table>\n</details>\n";
    }
  }
  out += "</section>\n";

  if (!record.metrics.empty()) {
    out += "<section>\n<h2>Metrics</h2>\n<table>\n";
    out += "<thead><tr><th>Name</th><th>Labels</th><th>Value</th><th>Unit</th></tr></thead>\n";
    out += "<tbody>\n";
    for (const Metric& m : record.metrics) {
      std::string labels;
      for (const auto& [key, value] : m.labels) {
        if (!labels.empty()) labels += ", ";
        labels += HtmlEscape(key) + "=" + HtmlEscape(value);
      }
      out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{:g}</td><td>{}</td></tr>\n",
                         HtmlEscape(m.name), labels, m.value, HtmlEscape(m.unit));
    }
    out += "</tbody>\n</table>\n</section>\n";
  }

  if (!record.evidence.empty()) {
    out += "<section>\n<h2>Evidence</h2>\n";
    out += fmt::format("<details><summary>{} items collected</summary>\n<table>\n",
                       record.evidence.size());
    out += "<thead><tr><th>Key</th><th>Value</th></tr></thead>\n<tbody>\n";
    for (const EvidenceItem& item : record.evidence) {
      out += fmt::format("<tr><td><code>{}</code></td><td><pre>{}</pre></td></tr>\n",
                         HtmlEscape(item.key), HtmlEscape(item.value_json));
    }
    out += "</tbody>\n</table>\n</details>\n</section>\n";
  }
  out += fmt::format(
      "<footer>Generated by cmax {} from the store; this page needs no network.</footer>\n",
      HtmlEscape(run.cmax_version));
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace cmax::report
