#include "report/rating_view.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.hpp"

namespace cmax::report {
namespace {

using nlohmann::json;

const json* Field(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string Text(const json& object, std::string_view key) {
  const json* v = Field(object, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// Numbers only when finite: a NaN or an infinity has no place on a chart's axis.
std::optional<double> Number(const json& object, std::string_view key) {
  const json* v = Field(object, key);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

// A share from 0 to 1 (or a score from 0 to `top`), clamped: a tampered 1e9 must not draw a
// bar across the page.
std::optional<double> Bounded(const json& object, std::string_view key, double top) {
  const std::optional<double> v = Number(object, key);
  if (!v) return std::nullopt;
  return std::clamp(*v, 0.0, top);
}

bool Flag(const json& object, std::string_view key, bool fallback) {
  const json* v = Field(object, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

std::vector<std::string> Texts(const json& object, std::string_view key) {
  std::vector<std::string> out;
  const json* v = Field(object, key);
  if (!v || !v->is_array()) return out;
  for (const json& e : *v) {
    if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<int64_t> RunIds(const json& object) {
  std::vector<int64_t> out;
  const json* v = Field(object, "runs");
  if (!v || !v->is_array()) return out;
  for (const json& e : *v) {
    if (e.is_number_integer()) out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<GoodputRow> Inputs(const json& object) {
  std::vector<GoodputRow> out;
  const json* inputs = Field(object, "inputs");
  if (!inputs || !inputs->is_array()) return out;
  for (const json& input : *inputs) {
    out.push_back({.name = Text(input, "name"),
                   .value = Number(input, "value").value_or(0),
                   .unit = Text(input, "unit"),
                   .source = Text(input, "source")});
  }
  return out;
}

void ReadGoodput(const json& rating, RatingView& view) {
  view.goodput_missing = Text(rating, "goodput_missing");
  const json* goodput = Field(rating, "goodput");
  if (!goodput || !goodput->is_object()) return;
  view.has_goodput = true;
  view.goodput_inputs = Inputs(*goodput);
  view.goodput_formulas = Texts(*goodput, "formulas");
  view.goodput_failures = Number(*goodput, "failures").value_or(0);
  if (const json* expense = Field(*goodput, "expense_usd")) {
    view.expense_cold_usd = Number(*expense, "cold_spare");
    view.expense_hot_usd = Number(*expense, "hot_spare");
    view.expense_tolerant_usd = Number(*expense, "fault_tolerant");
  }
  if (const json* useful = Field(*goodput, "useful_gpu_hour_usd")) {
    view.useful_hour_cold_usd = Number(*useful, "cold_spare");
    view.useful_hour_hot_usd = Number(*useful, "hot_spare");
    view.useful_hour_tolerant_usd = Number(*useful, "fault_tolerant");
  }
}

void ReadSla(const json& rating, RatingView& view) {
  view.sla_missing = Text(rating, "sla_missing");
  const json* sla = Field(rating, "sla");
  if (!sla || !sla->is_object()) return;
  SlaRiskView out;
  if (const json* terms = Field(*sla, "terms")) {
    out.terms = Text(*terms, "name") + " " + Text(*terms, "unit");
    if (const auto uptime = Number(*terms, "uptime_pct")) {
      out.terms += fmt::format(", {:g}% monthly uptime", *uptime);
    }
    if (const json* credits = Field(*terms, "credits"); credits && credits->is_array()) {
      for (const json& band : *credits) {
        if (band.is_array() && band.size() == 2 && band[0].is_number() && band[1].is_number()) {
          out.credits.emplace_back(band[0].get<double>(), band[1].get<double>());
        }
      }
    }
  }
  out.inputs = Inputs(*sla);
  out.formulas = Texts(*sla, "formulas");
  out.units = Number(*sla, "units").value_or(0);
  out.unit_gpus = Number(*sla, "unit_gpus").value_or(0);
  out.outages_per_unit_month = Number(*sla, "outages_per_unit_month").value_or(0);
  out.outage_h = Number(*sla, "outage_h").value_or(0);
  out.breach_at = Number(*sla, "breach_at").value_or(0);
  out.breach_probability = Bounded(*sla, "breach_probability_month", 1).value_or(0);
  out.breaches_per_year = Number(*sla, "breaches_per_year").value_or(0);
  out.expected_credit_share = Bounded(*sla, "expected_credit_share", 1).value_or(0);
  out.credit_usd_per_year = Number(*sla, "credit_usd_per_year");
  out.contract_usd_per_year = Number(*sla, "contract_usd_per_year");
  out.delivery_late_days = Number(*sla, "delivery_late_days");
  view.sla = std::move(out);
}

}  // namespace

std::optional<RatingView> ReadRating(const RunRecord& record) {
  const EvidenceItem* found = nullptr;
  for (const EvidenceItem& item : record.evidence) {
    if (item.key == "rating") found = &item;  // the last one: a re-rating is appended
  }
  if (!found) return std::nullopt;
  const json rating = json::parse(found->value_json, nullptr, /*allow_exceptions=*/false);
  if (!rating.is_object() || Text(rating, "tier").empty()) return std::nullopt;
  RatingView view;
  view.tier = Text(rating, "tier");
  view.band = Text(rating, "band");
  view.score = Bounded(rating, "score", 100);
  view.confidence = Bounded(rating, "confidence", 1).value_or(0);
  if (const json* rubric = Field(rating, "rubric")) {
    view.rubric = Text(*rubric, "name");
    view.rubric_sha256 = Text(*rubric, "sha256");
  }
  view.provider = Text(rating, "provider");
  view.runs = RunIds(rating);
  view.gates_failed = Texts(rating, "gates_failed");
  view.gates_unverified = Texts(rating, "gates_unverified");
  view.notes = Texts(rating, "notes");
  if (const json* categories = Field(rating, "categories"); categories && categories->is_array()) {
    for (const json& c : *categories) {
      if (Text(c, "id").empty()) continue;
      view.categories.push_back({.id = Text(c, "id"),
                                 .title = Text(c, "title"),
                                 .weight = Number(c, "weight").value_or(0),
                                 .score = Bounded(c, "score", 100),
                                 .confidence = Bounded(c, "confidence", 1).value_or(0),
                                 .applies = Flag(c, "applies", true)});
    }
  }
  if (const json* items = Field(rating, "items"); items && items->is_array()) {
    for (const json& i : *items) {
      if (Text(i, "id").empty()) continue;
      RatedItem item{.id = Text(i, "id"),
                     .category = Text(i, "category"),
                     .title = Text(i, "title"),
                     .weight = Number(i, "weight").value_or(0),
                     .score = Bounded(i, "score", 1),
                     .coverage = Bounded(i, "coverage", 1).value_or(0),
                     .applies = Flag(i, "applies", true),
                     .evidence = Text(i, "evidence"),
                     .runs = RunIds(i)};
      if (const json* gate = Field(i, "gate")) {
        item.gate_cap = Text(*gate, "cap");
        item.gate_why = Text(*gate, "why");
      }
      view.items.push_back(std::move(item));
    }
  }
  ReadGoodput(rating, view);
  ReadSla(rating, view);
  if (const json* drains = Field(rating, "drains"); drains && drains->is_array()) {
    view.drains.emplace();
    for (const json& d : *drains) {
      if (Text(d, "cause").empty()) continue;
      view.drains->push_back({.cause = Text(d, "cause"),
                              .drains = Number(d, "drains").value_or(0),
                              .examples = Texts(d, "examples")});
    }
    if (const json* from = Field(rating, "drains_from"); from && from->is_object()) {
      std::vector<std::string> parts;
      if (const auto journal = Number(*from, "journal")) {
        parts.push_back(fmt::format("{:g} in the remediation journal", *journal));
      }
      parts.push_back(fmt::format("{:g} seen on the provider's scheduler during the rated runs",
                                  Number(*from, "seen").value_or(0)));
      view.drains_from = Join(parts, ", ");
    }
  }
  return view;
}

std::string SharePercent(double share) {
  return fmt::format("{:.0f}%", 100 * share);
}

std::string UsdOrDash(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f} USD", *v) : std::string("—");
}

std::string RunNumbers(const std::vector<int64_t>& runs) {
  std::string out;
  for (const int64_t id : runs) out += (out.empty() ? "#" : ", #") + std::to_string(id);
  return out;
}

std::string CreditBands(const SlaRiskView& sla) {
  std::string out;
  for (const auto& [below, credit] : sla.credits) {
    out += fmt::format("{}{:g}% under {:g}%", out.empty() ? "" : ", ", credit, below);
  }
  return out;
}

std::string TierClass(std::string_view tier) {
  std::string out;
  for (const char c : tier) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "none" : out;
}

}  // namespace cmax::report
