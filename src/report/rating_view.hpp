// The rating as the report shows it: read back from a run's `rating` evidence (schema
// cmax.rating/v1, written by rate/ and `cmax run`), so the report needs nothing but the stored
// run, and a run rated long ago renders as it was rated. Reading is defensive: the store is a
// file anyone with access could have edited, so a field of the wrong type is skipped, never
// trusted, and a rating that is not a JSON object is no rating at all.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/run_record.hpp"

namespace cmax::report {

struct RatedItem {
  std::string id;
  std::string category;
  std::string title;
  double weight = 0;
  std::optional<double> score;  // 0 to 1
  double coverage = 0;          // 0 to 1
  bool applies = true;
  std::string evidence;
  std::vector<int64_t> runs;
  std::string gate_cap;  // empty: not a gate
  std::string gate_why;
};

struct RatedCategory {
  std::string id;
  std::string title;
  double weight = 0;
  std::optional<double> score;  // 0 to 100
  double confidence = 0;        // 0 to 1
  bool applies = true;
};

struct GoodputRow {
  std::string name;
  double value = 0;
  std::string unit;
  std::string source;
};

// The SLA's risk over a contract-year (rate/sla.hpp), as the rating stored it.
struct SlaRiskView {
  std::string terms;                               // "gold node, 99.9% monthly uptime"
  std::vector<std::pair<double, double>> credits;  // (below_pct, credit_pct)
  std::vector<GoodputRow> inputs;
  std::vector<std::string> formulas;
  double units = 0;
  double unit_gpus = 0;
  double outages_per_unit_month = 0;
  double outage_h = 0;
  double breach_at = 0;
  double breach_probability = 0;
  double breaches_per_year = 0;
  double expected_credit_share = 0;
  std::optional<double> credit_usd_per_year, contract_usd_per_year, delivery_late_days;
};

struct RatingView {
  std::string tier;
  std::string band;
  std::optional<double> score;  // 0 to 100
  double confidence = 0;        // 0 to 1
  std::string rubric;
  std::string rubric_sha256;
  std::string provider;
  std::vector<int64_t> runs;
  std::vector<std::string> gates_failed;
  std::vector<std::string> gates_unverified;
  std::vector<std::string> notes;
  std::vector<RatedCategory> categories;
  std::vector<RatedItem> items;
  // The goodput expense: its inputs, failures over the contract and the three strategies.
  bool has_goodput = false;
  std::vector<GoodputRow> goodput_inputs;
  std::vector<std::string> goodput_formulas;
  double goodput_failures = 0;
  std::optional<double> expense_cold_usd, expense_hot_usd, expense_tolerant_usd;
  std::optional<double> useful_hour_cold_usd, useful_hour_hot_usd, useful_hour_tolerant_usd;
  std::string goodput_missing;
  std::optional<SlaRiskView> sla;
  std::string sla_missing;
  struct Drains {
    std::string cause;
    double drains = 0;
    std::vector<std::string> examples;
  };
  std::optional<std::vector<Drains>> drains;  // by cause; none when the rating did not read them
  // Where they came from, in words ("2 in the remediation journal, 1 seen on the scheduler
  // during the rated runs"); empty for a rating stored before it said.
  std::string drains_from;
};

// The run's rating, when it has one that reads as an object with a tier.
std::optional<RatingView> ReadRating(const RunRecord& record);

// A tier's name as a CSS class suffix: "Participation Ribbon" -> "participation-ribbon".
std::string TierClass(std::string_view tier);

// The figures as both renderings print them (escape the result for the format).
std::string SharePercent(double share);                    // 0.62 -> "62%"
std::string UsdOrDash(const std::optional<double>& v);     // "374016.09 USD", or "—"
std::string RunNumbers(const std::vector<int64_t>& runs);  // "#14, #12"
std::string CreditBands(const SlaRiskView& sla);           // "10% under 99.9%, 25% under 99%"

// The rating's part of the HTML page: the summary card (tier, score, confidence, gates, the
// category chart `svg#chart-categories`), each category with its items, and the goodput table.
// An item's evidence links each check it names to that check's finding on the page
// (`#f-CHECK`) when `on_page` says the page has one.
std::string RenderRatingHtml(const RatingView& view,
                             const std::function<bool(std::string_view check)>& on_page);
// The same content as Markdown (GitHub's tables).
std::string RenderRatingMarkdown(const RatingView& view);

}  // namespace cmax::report
