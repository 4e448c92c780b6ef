// The rating on the HTML page: a card a reader takes in at a glance, then every item with the
// evidence it was scored on, so each number can be traced back to a check or a measurement.
#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <functional>
#include <tuple>

#include "report/rating_view.hpp"
#include "report/render.hpp"

namespace cmax::report {
namespace {

// The bar's colour says how good a score is, on the same cut-offs as the findings' badges.
std::string_view ScoreColour(double score) {
  if (score >= 80) return "#2e8b57";
  if (score >= 50) return "#d4a017";
  return "#c9302c";
}

// Check ids in an item's evidence ("FAIL: isolation.grafana, versions.runc") link to their
// findings further down the page; everything else is escaped text.
std::string LinkChecks(const std::string& text,
                       const std::function<bool(std::string_view)>& on_page) {
  std::string out;
  size_t i = 0;
  const auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  };
  while (i < text.size()) {
    if (!word_char(text[i])) {
      size_t j = i;
      while (j < text.size() && !word_char(text[j])) ++j;
      out += HtmlEscape(text.substr(i, j - i));
      i = j;
      continue;
    }
    size_t j = i;
    while (j < text.size() && word_char(text[j])) ++j;
    std::string word = text.substr(i, j - i);
    std::string tail;
    while (!word.empty() && word.back() == '.') {  // a sentence's full stop is not the id's
      tail += '.';
      word.pop_back();
    }
    if (word.find('.') != std::string::npos && on_page && on_page(word)) {
      out += fmt::format("<a href=\"#f-{0}\">{0}</a>", HtmlEscape(word));
    } else {
      out += HtmlEscape(word);
    }
    out += tail;
    i = j;
  }
  return out;
}

// One bar per category on a 0-100 axis. The bar's opacity follows the share of the category's
// weight that had evidence, so a high score on little evidence looks as thin as it is.
std::string CategoryChart(const RatingView& view) {
  constexpr int kLeft = 150, kWidth = 420, kRow = 26, kTop = 22, kRight = 190;
  const int rows = static_cast<int>(view.categories.size());
  const int height = kTop + kRow * std::max(rows, 1) + 8;
  const auto x = [](double score) { return kLeft + score / 100.0 * kWidth; };
  std::string svg = fmt::format(
      "<svg id=\"chart-categories\" role=\"img\" aria-label=\"score of each category, 0 to 100\" "
      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-size=\"12\" "
      "font-family=\"system-ui,sans-serif\">\n",
      kLeft + kWidth + kRight, height);
  for (int tick = 0; tick <= 100; tick += 25) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e6e9f0\"/>"
        "<text x=\"{0:.1f}\" y=\"14\" text-anchor=\"middle\" fill=\"#4a5468\">{3}</text>\n",
        x(tick), kTop - 4, height - 4, tick);
  }
  int row = 0;
  for (const RatedCategory& c : view.categories) {
    const double y = kTop + kRow * row++;
    const std::string name = HtmlEscape(c.title.empty() ? c.id : c.title);
    svg +=
        fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#1d2330\">{}</text>\n",
                    kLeft - 8, y + 16, name);
    if (!c.applies) {
      svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" fill=\"#6b7385\">does not apply</text>\n",
                         kLeft + 6, y + 16);
      continue;
    }
    if (!c.score) {
      svg += fmt::format(
          "<rect class=\"no-evidence\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"16\" "
          "fill=\"none\" stroke=\"#c9ced9\" stroke-dasharray=\"4 3\"/>"
          "<text x=\"{}\" y=\"{:.1f}\" fill=\"#6b7385\">no evidence</text>\n",
          kLeft, y + 4, kWidth, kLeft + 6, y + 16);
      continue;
    }
    svg += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\" "
        "fill-opacity=\"{:.2f}\"><title>{}: {:.1f} of 100 on {} of its weight's evidence</title>"
        "</rect>\n<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#1d2330\">{:.0f} <tspan "
        "fill=\"#6b7385\">· evidence {}</tspan></text>\n",
        kLeft, y + 4, std::max(1.0, x(*c.score) - kLeft), ScoreColour(*c.score),
        0.35 + 0.65 * c.confidence, name, *c.score, SharePercent(c.confidence), x(*c.score) + 6,
        y + 16, *c.score, SharePercent(c.confidence));
  }
  svg += "</svg>\n";
  return svg;
}

std::string Card(const RatingView& view) {
  std::string out = fmt::format(
      "<section id=\"rating\" class=\"card\">\n<div class=\"tier tier-{}\">{}</div>\n"
      "<div class=\"card-body\">\n<dl class=\"meta\">\n",
      TierClass(view.tier), HtmlEscape(view.tier));
  const auto row = [&out](std::string_view label, const std::string& html) {
    out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", label, html);
  };
  if (!view.provider.empty()) row("Provider", HtmlEscape(view.provider));
  row("Score", view.score ? fmt::format("{:.1f} of 100 (band: {})", *view.score,
                                        HtmlEscape(view.band.empty() ? "none" : view.band))
                          : std::string("none: no item had evidence"));
  row("Confidence",
      fmt::format("<span class=\"meter\"><span style=\"width:{:.0f}%\"></span></span> {} of the "
                  "rubric's weight had evidence",
                  100 * view.confidence, SharePercent(view.confidence)));
  if (!view.runs.empty()) row("Runs rated", RunNumbers(view.runs));
  row("Rubric", fmt::format("{} <small><code>{}</code></small>", HtmlEscape(view.rubric),
                            HtmlEscape(view.rubric_sha256.substr(
                                0, std::min<size_t>(12, view.rubric_sha256.size())))));
  out += "</dl>\n";
  if (!view.gates_failed.empty()) {
    out += "<p class=\"gates failed\"><strong>Gates failed</strong></p>\n<ul>\n";
    for (const std::string& g : view.gates_failed) out += "<li>" + HtmlEscape(g) + "</li>\n";
    out += "</ul>\n";
  }
  if (!view.gates_unverified.empty()) {
    out +=
        "<p class=\"gates unverified\"><strong>Gates not verified</strong> (no evidence; the "
        "tier is provisional)</p>\n<ul>\n";
    for (const std::string& g : view.gates_unverified) out += "<li>" + HtmlEscape(g) + "</li>\n";
    out += "</ul>\n";
  }
  for (const std::string& note : view.notes) {
    out += "<p class=\"note\">" + HtmlEscape(note) + "</p>\n";
  }
  out += "</div>\n";
  out += CategoryChart(view);
  out += "</section>\n";
  return out;
}

std::string Items(const RatingView& view, const std::function<bool(std::string_view)>& on_page) {
  std::string out = "<section id=\"rating-items\">\n<h2>Rating by category</h2>\n";
  for (const RatedCategory& c : view.categories) {
    const std::string score = !c.applies ? "does not apply"
                              : c.score
                                  ? fmt::format("{:.0f} of 100, evidence for {} of its weight",
                                                *c.score, SharePercent(c.confidence))
                                  : std::string("no evidence");
    out += fmt::format("<h3 id=\"cat-{}\">{} <small>{}</small></h3>\n", HtmlEscape(c.id),
                       HtmlEscape(c.title.empty() ? c.id : c.title), HtmlEscape(score));
    out +=
        "<table class=\"items\">\n<colgroup><col style=\"width:16rem\"><col style=\"width:4rem\">"
        "<col style=\"width:5rem\"><col style=\"width:6rem\"><col></colgroup>\n"
        "<thead><tr><th>Item</th><th>Weight</th><th>Score</th><th>Evidence there</th>"
        "<th>Scored on</th></tr></thead>\n<tbody>\n";
    for (const RatedItem& item : view.items) {
      if (item.category != c.id) continue;
      std::string scored = LinkChecks(item.evidence, on_page);
      if (!item.runs.empty()) {
        scored += fmt::format(" <small class=\"runs\">(run {})</small>", RunNumbers(item.runs));
      }
      if (!item.gate_cap.empty()) {
        scored += fmt::format(
            "<br><small class=\"gate\">gate: failing it caps the tier at {} ({})</small>",
            HtmlEscape(item.gate_cap), HtmlEscape(item.gate_why));
      }
      const std::string value = !item.applies ? "N/A"
                                : item.score  ? fmt::format("{:.0f}", 100 * *item.score)
                                              : std::string("—");
      out += fmt::format(
          "<tr class=\"{}\"><td>{}<br><code>{}</code></td><td>{:g}</td><td>{}</td><td>{}</td>"
          "<td>{}</td></tr>\n",
          item.score || !item.applies ? "scored" : "missing", HtmlEscape(item.title),
          HtmlEscape(item.id), item.weight, value, item.applies ? SharePercent(item.coverage) : "—",
          scored);
    }
    out += "</tbody>\n</table>\n";
  }
  out += "</section>\n";
  return out;
}

// What a figure was computed from: the formulas, then each input, its value and where it came
// from.
std::string InputsTable(std::string_view css_class, const std::vector<GoodputRow>& inputs,
                        const std::vector<std::string>& formulas) {
  std::string out;
  if (!formulas.empty()) {
    out += "<h3>Formulas</h3>\n<pre class=\"formulas\">";
    for (const std::string& formula : formulas) out += HtmlEscape(formula) + "\n";
    out += "</pre>\n";
  }
  out += fmt::format(
      "<h3>Inputs</h3>\n<table class=\"{}\">\n"
      "<thead><tr><th>Input</th><th>Value</th><th>Source</th></tr></thead>\n<tbody>\n",
      css_class);
  for (const GoodputRow& input : inputs) {
    out += fmt::format("<tr><td>{}</td><td>{:g} {}</td><td>{}</td></tr>\n", HtmlEscape(input.name),
                       input.value, HtmlEscape(input.unit), HtmlEscape(input.source));
  }
  return out + "</tbody>\n</table>\n";
}

std::string Goodput(const RatingView& view) {
  std::string out = "<section id=\"goodput\">\n<h2>Cost of failures</h2>\n";
  if (!view.has_goodput) {
    out += "<p>" +
           HtmlEscape(view.goodput_missing.empty() ? "The rubric asks for no goodput figure."
                                                   : view.goodput_missing) +
           "</p>\n</section>\n";
    return out;
  }
  out += fmt::format(
      "<p>Goodput expense over the contract, by the published formulas, for {:.2f} expected "
      "failures.</p>\n<table class=\"goodput\">\n<thead><tr><th>Strategy</th>"
      "<th>Goodput expense</th><th>Price per useful GPU-hour</th></tr></thead>\n<tbody>\n",
      view.goodput_failures);
  const std::tuple<std::string_view, std::optional<double>, std::optional<double>> rows[] = {
      {"Cold spare", view.expense_cold_usd, view.useful_hour_cold_usd},
      {"Hot spare", view.expense_hot_usd, view.useful_hour_hot_usd},
      {"Fault tolerant", view.expense_tolerant_usd, view.useful_hour_tolerant_usd}};
  for (const auto& [name, expense, hour] : rows) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", name, UsdOrDash(expense),
                       UsdOrDash(hour));
  }
  out += "</tbody>\n</table>\n" +
         InputsTable("goodput-inputs", view.goodput_inputs, view.goodput_formulas) + "</section>\n";
  return out;
}

std::string SlaRisk(const RatingView& view) {
  std::string out = "<section id=\"sla-risk\">\n<h2>SLA risk</h2>\n";
  if (!view.sla) {
    out += "<p>" +
           HtmlEscape(view.sla_missing.empty() ? "The rating has no SLA risk." : view.sla_missing) +
           "</p>\n</section>\n";
    return out;
  }
  const SlaRiskView& sla = *view.sla;
  const std::string credits = CreditBands(sla);
  out += fmt::format(
      "<p>Terms: {} (credits {}), over {:g} units of {:g} GPUs for a contract-year.</p>\n"
      "<table class=\"sla\">\n<tbody>\n",
      HtmlEscape(sla.terms), HtmlEscape(credits), sla.units, sla.unit_gpus);
  const auto row = [&out](std::string_view name, const std::string& value) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", name, value);
  };
  row("Outages per unit-month",
      fmt::format("{:.4g}, each {:.2f} h", sla.outages_per_unit_month, sla.outage_h));
  row("Outages that breach a month", fmt::format("{:g}", sla.breach_at));
  row("Breach probability per unit-month", fmt::format("{:.4g}", sla.breach_probability));
  row("Breaches per contract-year", fmt::format("{:.2f}", sla.breaches_per_year));
  row("Expected credit", fmt::format("{:.3g}% of the bill", 100 * sla.expected_credit_share));
  row("Credit per contract-year", sla.credit_usd_per_year
                                      ? fmt::format("{} of {}", UsdOrDash(sla.credit_usd_per_year),
                                                    UsdOrDash(sla.contract_usd_per_year))
                                      : std::string("no price attested"));
  if (sla.delivery_late_days) {
    row("Delivery", fmt::format("{:g} days late", *sla.delivery_late_days));
  }
  out +=
      "</tbody>\n</table>\n" + InputsTable("sla-inputs", sla.inputs, sla.formulas) + "</section>\n";
  return out;
}

std::string DrainsByCause(const RatingView& view) {
  if (!view.drains) return "";
  double total = 0;
  for (const auto& d : *view.drains) total += d.drains;
  const std::string from = view.drains_from.empty()
                               ? "carried out by the remediation controller"
                               : HtmlEscape(view.drains_from) + " (a drain in both counts once)";
  std::string out = fmt::format(
      "<section id=\"drains\">\n<h2>Drains by cause</h2>\n<p>{:g} drain(s) by the cause their "
      "reason names: {}.</p>\n<table "
      "class=\"drains\">\n<thead><tr><th>Cause</th><th>Drains</th><th>For example</th></tr>"
      "</thead>\n<tbody>\n",
      total, from);
  for (const auto& d : *view.drains) {
    std::string examples;
    for (const std::string& e : d.examples)
      examples += (examples.empty() ? "" : "<br>") + HtmlEscape(e);
    out += fmt::format("<tr><td>{}</td><td>{:g}</td><td>{}</td></tr>\n", HtmlEscape(d.cause),
                       d.drains, examples);
  }
  return out + "</tbody>\n</table>\n</section>\n";
}

}  // namespace

std::string RenderRatingHtml(const RatingView& view,
                             const std::function<bool(std::string_view)>& on_page) {
  return Card(view) + Items(view, on_page) + Goodput(view) + SlaRisk(view) + DrainsByCause(view);
}

}  // namespace cmax::report
