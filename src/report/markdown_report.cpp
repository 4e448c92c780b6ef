// The report as Markdown (GitHub's dialect, with tables): the HTML page's content for a wiki, a
// pull request or a ticket. Markdown renders inline HTML and its own syntax, so every string
// from outside is escaped for both: a hostile value stays text.
#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/strings.hpp"
#include "report/active_html.hpp"
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
      case '$':  // GitHub reads $...$ as mathematics
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// Text that starts a line: escaped, and a leading list, quote, heading-underline or numbered
// list marker made literal, so a value cannot reshape the page around it.
std::string MarkdownParagraph(std::string_view text) {
  std::string out = MarkdownEscape(text);
  const size_t digits = out.find_first_not_of("0123456789");
  const bool numbered =
      digits > 0 && digits != std::string::npos && (out[digits] == '.' || out[digits] == ')');
  if (numbered) {
    out.insert(digits, "\\");  // "1\." is text; a backslash before the digit would not be
  } else if (!out.empty() && out.find_first_of("-+=") == 0) {
    out.insert(0, "\\");
  }
  return out;
}

// What a figure was computed from: the formulas (in a fence no backtick of theirs can close),
// then each input, its value and where it came from.
std::string InputsMarkdown(const std::vector<GoodputRow>& inputs,
                           const std::vector<std::string>& formulas) {
  std::string out;
  if (!formulas.empty()) {
    out += "```text\n";
    for (const std::string& text : formulas) {
      // One line each, no backtick to close the fence, and nothing a terminal obeys.
      std::string formula = AsOneLine(text);
      std::erase(formula, '`');
      out += formula + "\n";
    }
    out += "```\n\n";
  }
  out += "| Input | Value | Source |\n|---|---:|---|\n";
  for (const GoodputRow& input : inputs) {
    out += fmt::format("| {} | {:g} {} | {} |\n", MarkdownEscape(input.name), input.value,
                       MarkdownEscape(input.unit), MarkdownEscape(input.source));
  }
  return out;
}

std::string DrainsMarkdown(const RatingView& view) {
  if (!view.drains) return "";
  std::string out = "\n### Drains by cause\n\n";
  if (!view.drains_from.empty()) {
    out += MarkdownEscape(view.drains_from) + " (a drain in both counts once).\n\n";
  }
  out += "| Cause | Drains | For example |\n|---|---:|---|\n";
  for (const auto& d : *view.drains) {
    std::string examples;
    for (const std::string& e : d.examples) {
      examples += (examples.empty() ? "" : "; ") + MarkdownEscape(e);
    }
    out += fmt::format("| {} | {:g} | {} |\n", MarkdownEscape(d.cause), d.drains, examples);
  }
  return out;
}

std::string SlaMarkdown(const RatingView& view) {
  std::string out = "\n### SLA risk\n\n";
  if (!view.sla) {
    return out +
           MarkdownParagraph(view.sla_missing.empty() ? "The rating has no SLA risk."
                                                      : view.sla_missing) +
           "\n";
  }
  const SlaRiskView& sla = *view.sla;
  const std::string credits = CreditBands(sla);
  out += fmt::format(
      "Terms: {} (credits {}), over {:g} units of {:g} GPUs for a contract-year.\n\n"
      "| Figure | Value |\n|---|---|\n"
      "| Outages per unit-month | {:.4g}, each {:.2f} h |\n"
      "| Outages that breach a month | {:g} |\n"
      "| Breach probability per unit-month | {:.4g} |\n"
      "| Breaches per contract-year | {:.2f} |\n"
      "| Expected credit | {:.3g}% of the bill |\n"
      "| Credit per contract-year | {} |\n",
      MarkdownEscape(sla.terms), MarkdownEscape(credits), sla.units, sla.unit_gpus,
      sla.outages_per_unit_month, sla.outage_h, sla.breach_at, sla.breach_probability,
      sla.breaches_per_year, 100 * sla.expected_credit_share,
      sla.credit_usd_per_year
          ? UsdOrDash(sla.credit_usd_per_year) + " of " + UsdOrDash(sla.contract_usd_per_year)
          : std::string("no price attested"));
  if (sla.delivery_late_days) {
    out += fmt::format("| Delivery | {:g} days late |\n", *sla.delivery_late_days);
  }
  return out + "\n" + InputsMarkdown(sla.inputs, sla.formulas);
}

}  // namespace

std::string RenderRatingMarkdown(const RatingView& view) {
  std::string out = fmt::format("## Rating: {}\n\n", MarkdownEscape(view.tier));
  if (!view.provider.empty()) out += fmt::format("- Provider: {}\n", MarkdownEscape(view.provider));
  out += view.score ? fmt::format("- Score: {:.1f} of 100 (band: {})\n", *view.score,
                                  MarkdownEscape(view.band.empty() ? "none" : view.band))
                    : std::string("- Score: none (no item had evidence)\n");
  out += fmt::format("- Confidence: {} of the rubric's weight had evidence\n",
                     SharePercent(view.confidence));
  if (!view.runs.empty()) out += fmt::format("- Runs rated: {}\n", RunNumbers(view.runs));
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
                    c.applies ? SharePercent(c.confidence) : "—", c.weight);
  }
  for (const RatedCategory& c : view.categories) {
    out += fmt::format(
        "\n### {}\n\n| Item | Weight | Score | Evidence there | Scored on |\n"
        "|---|---:|---:|---:|---|\n",
        MarkdownEscape(c.title.empty() ? c.id : c.title));
    for (const RatedItem& item : view.items) {
      if (item.category != c.id) continue;
      std::string scored = MarkdownEscape(item.evidence);
      if (!item.runs.empty()) scored += fmt::format(" (run {})", RunNumbers(item.runs));
      if (!item.gate_cap.empty()) {
        scored += fmt::format("; gate: failing it caps the tier at {} ({})",
                              MarkdownEscape(item.gate_cap), MarkdownEscape(item.gate_why));
      }
      out += fmt::format("| {} ({}) | {:g} | {} | {} | {} |\n", MarkdownEscape(item.title),
                         MarkdownEscape(item.id), item.weight,
                         !item.applies ? "N/A"
                         : item.score  ? fmt::format("{:.0f}", 100 * *item.score)
                                       : "—",
                         item.applies ? SharePercent(item.coverage) : "—", scored);
    }
  }
  out += "\n### Cost of failures\n\n";
  if (!view.has_goodput) {
    out += MarkdownParagraph(view.goodput_missing.empty() ? "The rubric asks for no goodput figure."
                                                          : view.goodput_missing) +
           "\n";
    return out + SlaMarkdown(view) + DrainsMarkdown(view);
  }
  out += fmt::format(
      "Goodput expense over the contract, by the published formulas, for {:.2f} expected "
      "failures.\n\n| Strategy | Goodput expense | Price per useful GPU-hour |\n|---|---:|---:|\n"
      "| Cold spare | {} | {} |\n| Hot spare | {} | {} |\n| Fault tolerant | {} | {} |\n\n",
      view.goodput_failures, UsdOrDash(view.expense_cold_usd), UsdOrDash(view.useful_hour_cold_usd),
      UsdOrDash(view.expense_hot_usd), UsdOrDash(view.useful_hour_hot_usd),
      UsdOrDash(view.expense_tolerant_usd), UsdOrDash(view.useful_hour_tolerant_usd));
  return out + InputsMarkdown(view.goodput_inputs, view.goodput_formulas) + SlaMarkdown(view) +
         DrainsMarkdown(view);
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
  out += RenderActiveFleetMarkdown(record);
  out += "## Findings\n\n";
  if (record.findings.empty()) out += "No findings were recorded.\n";
  for (const auto& [category, group] : FindingsByCategory(record.findings)) {
    out += fmt::format(
        "### {}\n\n| Status | Check | Result | Observed | Expected | Remediation |\n"
        "|---|---|---|---|---|---|\n",
        MarkdownEscape(category));
    for (const Finding* finding : group) {
      const Finding& f = *finding;
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
