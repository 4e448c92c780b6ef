// The report as Markdown (GitHub's dialect, with tables): the HTML page's content for a wiki, a
// pull request or a ticket. Markdown renders inline HTML and its own syntax, so every string
// from outside is escaped for both: a hostile value stays text.
#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/strings.hpp"
#include "report/rating_view.hpp"
#include "report/render.hpp"

namespace cmax::report {

std::string MarkdownEscape(std::string_view text) {
  const std::string clean = SanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (const char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\n':
      case '\r':
      case '\t': out += ' '; break;  // a table cell is one line
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':  // with ] escaped, no ( ) or ! can make a link or an image
      case ']':
      case '#':  // a heading, at the start of a list item's text
      case '|':
      case '~':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string Percent(double share) {
  return fmt::format("{:.0f}%", 100 * share);
}

std::string Usd(const std::optional<double>& v) {
  return v ? fmt::format("${:.2f}", *v) : std::string("—");
}

std::string RunList(const std::vector<int64_t>& runs) {
  std::string out;
  for (const int64_t id : runs) out += (out.empty() ? "#" : ", #") + std::to_string(id);
  return out;
}

}  // namespace

std::string RenderRatingMarkdown(const RatingView& view) {
  std::string out = fmt::format("## Rating: {}\n\n", MarkdownEscape(view.tier));
  if (!view.provider.empty()) out += fmt::format("- Provider: {}\n", MarkdownEscape(view.provider));
  out += view.score ? fmt::format("- Score: {:.1f} of 100 (band: {})\n", *view.score,
                                  MarkdownEscape(view.band.empty() ? "none" : view.band))
                    : std::string("- Score: none (no item had evidence)\n");
  out += fmt::format("- Confidence: {} of the rubric's weight had evidence\n",
                     Percent(view.confidence));
  if (!view.runs.empty()) out += fmt::format("- Runs rated: {}\n", RunList(view.runs));
  out += fmt::format("- Rubric: {} (sha256 {})\n", MarkdownEscape(view.rubric),
                     MarkdownEscape(view.rubric_sha256));
  for (const std::string& g : view.gates_failed) {
    out += fmt::format("- **Gate failed:** {}\n", MarkdownEscape(g));
  }
  for (const std::string& g : view.gates_unverified) {
    out += fmt::format("- Gate not verified (no evidence; the tier is provisional): {}\n",
                       MarkdownEscape(g));
  }
  for (const std::string& note : view.notes) out += fmt::format("- {}\n", MarkdownEscape(note));
  out += "\n| Category | Score | Evidence there | Weight |\n|---|---:|---:|---:|\n";
  for (const RatedCategory& c : view.categories) {
    out +=
        fmt::format("| {} | {} | {} | {:g} |\n", MarkdownEscape(c.title.empty() ? c.id : c.title),
                    !c.applies ? "N/A"
                    : c.score  ? fmt::format("{:.0f}", *c.score)
                               : "no evidence",
                    c.applies ? Percent(c.confidence) : "—", c.weight);
  }
  for (const RatedCategory& c : view.categories) {
    out += fmt::format(
        "\n### {}\n\n| Item | Weight | Score | Evidence there | Scored on |\n"
        "|---|---:|---:|---:|---|\n",
        MarkdownEscape(c.title.empty() ? c.id : c.title));
    for (const RatedItem& item : view.items) {
      if (item.category != c.id) continue;
      std::string scored = MarkdownEscape(item.evidence);
      if (!item.runs.empty()) scored += fmt::format(" (run {})", RunList(item.runs));
      if (!item.gate_cap.empty()) {
        scored += fmt::format("; gate: failing it caps the tier at {} ({})",
                              MarkdownEscape(item.gate_cap), MarkdownEscape(item.gate_why));
      }
      out += fmt::format("| {} ({}) | {:g} | {} | {} | {} |\n", MarkdownEscape(item.title),
                         MarkdownEscape(item.id), item.weight,
                         !item.applies ? "N/A"
                         : item.score  ? fmt::format("{:.0f}", 100 * *item.score)
                                       : "—",
                         item.applies ? Percent(item.coverage) : "—", scored);
    }
  }
  out += "\n### Cost of failures\n\n";
  if (!view.has_goodput) {
    out += MarkdownEscape(view.goodput_missing.empty() ? "The rubric asks for no goodput figure."
                                                       : view.goodput_missing) +
           "\n";
    return out;
  }
  out += fmt::format(
      "Goodput expense over the contract, by the published formulas, for {:.2f} expected "
      "failures.\n\n| Strategy | Goodput expense | Price per useful GPU-hour |\n|---|---:|---:|\n"
      "| Cold spare | {} | {} |\n| Hot spare | {} | {} |\n| Fault tolerant | {} | {} |\n\n"
      "| Input | Value | Source |\n|---|---:|---|\n",
      view.goodput_failures, Usd(view.expense_cold_usd), Usd(view.useful_hour_cold_usd),
      Usd(view.expense_hot_usd), Usd(view.useful_hour_hot_usd), Usd(view.expense_tolerant_usd),
      Usd(view.useful_hour_tolerant_usd));
  for (const GoodputRow& input : view.goodput_inputs) {
    out += fmt::format("| {} | {:g} {} | {} |\n", MarkdownEscape(input.name), input.value,
                       MarkdownEscape(input.unit), MarkdownEscape(input.source));
  }
  return out;
}

std::string RenderMarkdown(const RunRecord& record) {
  const RunInfo& run = record.run;
  std::string out = fmt::format("# cmax {} #{} ({})\n\n", MarkdownEscape(run.command), run.id,
                                RunStateName(run.state));
  out += fmt::format("- Host: {}\n- Target: {}\n- Started: {}\n", MarkdownEscape(run.host),
                     MarkdownEscape(run.target), FormatIso8601(run.started_at));
  if (run.ended_at) {
    out += fmt::format("- Ended: {} (took {})\n", FormatIso8601(*run.ended_at),
                       FormatDuration(*run.ended_at - run.started_at));
  }
  if (run.exit_code) out += fmt::format("- Exit code: {}\n", *run.exit_code);
  out += fmt::format("- cmax version: {}\n", MarkdownEscape(run.cmax_version));
  const StatusCounts c = CountStatuses(record.findings);
  out += fmt::format("- Findings: {} PASS, {} WARN, {} FAIL, {} SKIP, {} ATTEST, {} UNKNOWN\n\n",
                     c.pass, c.warn, c.fail, c.skip, c.attest, c.unknown);
  if (const std::optional<RatingView> rating = ReadRating(record)) {
    out += RenderRatingMarkdown(*rating) + "\n";
  }
  out += "## Findings\n\n";
  if (record.findings.empty()) out += "No findings were recorded.\n";
  std::vector<std::string_view> categories;
  for (const Finding& f : record.findings) {
    const std::string_view category = FindingCategory(f.check_id);
    if (std::find(categories.begin(), categories.end(), category) == categories.end()) {
      categories.push_back(category);
    }
  }
  for (const std::string_view category : categories) {
    out += fmt::format(
        "### {}\n\n| Status | Check | Result | Observed | Expected | Remediation |\n"
        "|---|---|---|---|---|---|\n",
        MarkdownEscape(category));
    for (const Finding& f : record.findings) {
      if (FindingCategory(f.check_id) != category) continue;
      std::string remediation = MarkdownEscape(f.remediation);
      for (const std::string& link : f.links) {
        remediation += (remediation.empty() ? "" : " ") + MarkdownEscape(link);
      }
      out += fmt::format("| {} {} | {} | {} | {} | {} | {} |\n", StatusName(f.status),
                         SeverityName(f.severity), MarkdownEscape(f.check_id),
                         MarkdownEscape(f.message),
                         f.observed == f.message ? std::string() : MarkdownEscape(f.observed),
                         MarkdownEscape(f.expected), remediation);
    }
    out += "\n";
  }
  if (!record.metrics.empty()) {
    out += "## Metrics\n\n| Name | Labels | Value | Unit |\n|---|---|---:|---|\n";
    for (const Metric& m : record.metrics) {
      std::string labels;
      for (const auto& [key, value] : m.labels) {
        if (!labels.empty()) labels += ", ";
        labels += MarkdownEscape(key) + "=" + MarkdownEscape(value);
      }
      out += fmt::format("| {} | {} | {:g} | {} |\n", MarkdownEscape(m.name), labels, m.value,
                         MarkdownEscape(m.unit));
    }
    out += "\n";
  }
  out += fmt::format("Generated by cmax {} from the store.\n", MarkdownEscape(run.cmax_version));
  return out;
}

}  // namespace cmax::report
