#include "rate/rating.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "audit/catalogue.hpp"
#include "core/strings.hpp"

namespace cmax::rate {
namespace {

using nlohmann::json;

std::string Number(double value) {
  std::string text = fmt::format("{:.2f}", value);
  while (text.ends_with('0')) text.pop_back();
  if (text.ends_with('.')) text.pop_back();
  return text;
}

// The attestation's yes or no to a check the audit can only mark ATTEST; none when it does not
// speak to that check.
std::optional<bool> AttestedAnswer(const Attestation* attestation, std::string_view check) {
  static const std::pair<std::string_view, const char*> kAnswers[] = {
      {"isolation.nvlink-boundary", "isolation.nvlink_domain_exclusive"},
      {"isolation.pcie-passthrough", "isolation.pcie_isolation"},
      {"isolation.ufm-secured", "isolation.ufm_secured"},
      {"networking.ib-sm-key", "isolation.ib_sm_key"},
      {"networking.ib-sa-key", "isolation.ib_sa_key"}};
  if (attestation == nullptr) return std::nullopt;
  for (const auto& [id, fact] : kAnswers) {
    if (id != check) continue;
    const auto answer = attestation->facts.find(fact);
    if (answer == attestation->facts.end() || !answer->second.is_boolean()) return std::nullopt;
    return answer->second.get<bool>();
  }
  return std::nullopt;
}

// A check's finding from the newest run that decided it (PASS, WARN or FAIL); when none did, the
// newest run's, whatever it says. A later run that could not read a check (UNKNOWN, ATTEST), or
// to which it did not apply (a login node's run, N/A), does not hide an earlier FAIL.
std::pair<const Finding*, int64_t> NewestDecided(const RatingInputs& in, const std::string& check) {
  std::pair<const Finding*, int64_t> newest{nullptr, 0};
  for (const RunRecord* record : in.runs) {
    const auto it = std::ranges::find(record->findings, check, &Finding::check_id);
    if (it == record->findings.end()) continue;
    if (it->status == CheckStatus::kPass || it->status == CheckStatus::kWarn ||
        it->status == CheckStatus::kFail) {
      return {&*it, record->run.id};
    }
    if (newest.first == nullptr) newest = {&*it, record->run.id};
  }
  return newest;
}

// PASS 1, WARN 0.5, FAIL 0 over the checks that apply; UNKNOWN is evidence missing, and so is
// ATTEST unless the attestation answers it (yes 1, no 0), and so is N/A for want of a side effect
// the audit was not allowed (the check applies; it was not run).
void ScoreAudit(const RubricItem& item, const RatingInputs& in, ItemRating& out) {
  std::map<CheckStatus, int> counts;
  std::vector<std::string> failed;
  std::set<int64_t> runs;
  int applicable = 0;
  double points = 0;
  int missing = 0;
  int attested = 0;
  int not_run = 0;
  const audit::AuditCatalogue& catalogue = audit::AuditCatalogue::Builtin();
  for (const std::string& check : item.source.audit_checks) {
    const auto [found, run] = NewestDecided(in, check);
    if (found == nullptr) {
      ++missing;
      continue;
    }
    runs.insert(run);
    ++counts[found->status];
    switch (found->status) {
      case CheckStatus::kPass:
        ++applicable;
        points += 1;
        break;
      case CheckStatus::kWarn:
        ++applicable;
        points += 0.5;
        break;
      case CheckStatus::kFail:
        ++applicable;
        failed.push_back(check);
        break;
      case CheckStatus::kSkip: {
        const auto spec = std::ranges::find(catalogue.Checks(), check, &audit::CheckSpec::id);
        if (spec != catalogue.Checks().end() && !spec->side_effect.empty()) {
          ++missing;  // applies, but needs --allow-side-effects
          ++not_run;
        }
        break;  // otherwise does not apply here
      }
      case CheckStatus::kAttest: {
        const std::optional<bool> answer = AttestedAnswer(in.attestation, check);
        if (!answer) {
          ++missing;
          break;
        }
        ++applicable;
        ++attested;
        if (*answer) {
          points += 1;
        } else {
          failed.push_back(check + " (attested no)");
        }
        break;
      }
      case CheckStatus::kUnknown: ++missing; break;
    }
  }
  out.runs.assign(runs.begin(), runs.end());
  if (applicable + missing == 0) {
    // Every check was read and none applies to this target (N/A): the item does not apply.
    out.applies = false;
    out.evidence =
        fmt::format("none of its {} audit check(s) applies here", item.source.audit_checks.size());
    return;
  }
  if (applicable > 0) out.score = points / applicable;
  out.coverage = static_cast<double>(applicable) / (applicable + missing);
  std::vector<std::string> parts;
  for (const CheckStatus status :
       {CheckStatus::kPass, CheckStatus::kWarn, CheckStatus::kFail, CheckStatus::kAttest,
        CheckStatus::kUnknown, CheckStatus::kSkip}) {
    if (const int n = counts[status]; n > 0) {
      parts.push_back(fmt::format("{} {}", n, StatusName(status)));
    }
  }
  const int unread =
      missing - counts[CheckStatus::kUnknown] - (counts[CheckStatus::kAttest] - attested) - not_run;
  if (unread > 0) parts.push_back(fmt::format("{} not in any run", unread));
  if (attested > 0) parts.push_back(fmt::format("{} ATTEST answered by the attestation", attested));
  if (not_run > 0) parts.push_back(fmt::format("{} not run without --allow-side-effects", not_run));
  out.evidence = fmt::format(
      "{} audit check(s){}: {}", item.source.audit_checks.size(),
      item.source.audit_profile.empty() ? "" : " of profile " + item.source.audit_profile,
      Join(parts, ", "));
  if (!failed.empty()) {
    if (failed.size() > 4) {
      const size_t more = failed.size() - 4;
      failed.resize(4);
      failed.push_back(fmt::format("{} more", more));
    }
    out.evidence += "; FAIL: " + Join(failed, ", ");
  }
}

double Banded(const ItemScoring& scoring, double value) {
  for (const auto& [limit, score] : scoring.bands) {
    if (scoring.lower_is_better ? value <= limit : value >= limit) return score;
  }
  return scoring.otherwise;
}

// A metric's values in the newest run that records it, and that run; none when no run does.
// With `at_least`, each value of that metric whose labels `name` has no value for is a lower
// bound (a step watched for 30 s and never detected took more than 30 s).
struct MetricValues {
  std::vector<double> values;
  std::vector<double> bounds;
  int64_t run = 0;
};
std::optional<MetricValues> NewestValues(const RatingInputs& in, std::string_view name,
                                         std::string_view at_least = {}) {
  for (const RunRecord* record : in.runs) {
    MetricValues found{.run = record->run.id};
    std::vector<const std::map<std::string, std::string>*> measured;
    for (const Metric& metric : record->metrics) {
      if (metric.name == name && std::isfinite(metric.value)) {
        found.values.push_back(metric.value);
        measured.push_back(&metric.labels);
      }
    }
    for (const Metric& metric : record->metrics) {
      if (at_least.empty() || metric.name != at_least || !std::isfinite(metric.value)) continue;
      const bool has = std::ranges::any_of(
          measured, [&](const auto* labels) { return *labels == metric.labels; });
      if (!has) found.bounds.push_back(metric.value);
    }
    if (!found.values.empty() || !found.bounds.empty()) return found;
  }
  return std::nullopt;
}

// A lower bound scores only where it decides the score: past every band's limit (lower is
// better), the value is in no band whatever it is. A shorter watch says too little: a step not
// detected in 30 s may have been detected in 31 s or never, so it is evidence missing.
bool BoundDecides(const ItemScoring& scoring, double bound) {
  if (scoring.kind != ItemScoring::Kind::kBands || !scoring.lower_is_better) return false;
  return std::ranges::all_of(scoring.bands, [&](const auto& band) { return bound >= band.first; });
}

void ScoreMetric(const RubricItem& item, const RatingInputs& in, ItemRating& out) {
  auto newest = NewestValues(in, item.source.metric, item.source.at_least);
  std::string unseen;
  size_t undecided = 0;
  if (newest && !newest->bounds.empty()) {
    size_t decided = 0;
    for (double bound : newest->bounds) {
      if (!BoundDecides(item.scoring, bound)) continue;
      newest->values.push_back(std::nextafter(bound, HUGE_VAL));  // more than watched
      ++decided;
    }
    unseen = fmt::format("; {} not seen while watched (up to {} s){}", newest->bounds.size(),
                         Number(*std::ranges::max_element(newest->bounds)),
                         decided == newest->bounds.size() ? ", past every band"
                         : decided == 0                   ? ", too short a watch to score"
                                                          : ", some too short a watch to score");
    undecided = newest->bounds.size() - decided;
  }
  if (newest && !newest->values.empty()) {
    const std::vector<double>& values = newest->values;
    double value = 0;
    if (item.source.aggregate == "min") {
      value = *std::ranges::min_element(values);
    } else if (item.source.aggregate == "mean") {
      for (double v : values) value += v;
      value /= static_cast<double>(values.size());
    } else {
      value = *std::ranges::max_element(values);
    }
    out.score = Banded(item.scoring, value);
    // A step watched too briefly to score is evidence missing: the item's confidence says so.
    out.coverage =
        static_cast<double>(values.size()) / static_cast<double>(values.size() + undecided);
    out.runs = {newest->run};
    out.evidence =
        fmt::format("{} {}{} over {} value(s) of {} in run {}", item.source.aggregate,
                    Number(value), item.scoring.unit.empty() ? "" : " " + item.scoring.unit,
                    values.size(), item.source.metric, newest->run);
    out.evidence += unseen;
    return;
  }
  out.evidence = fmt::format("no run records {}{}", item.source.metric, unseen);
}

void ScoreAttestation(const RubricItem& item, const RatingInputs& in, ItemRating& out) {
  if (in.attestation == nullptr) {
    out.evidence = "no attestation given (--attestation FILE)";
    return;
  }
  const auto it = in.attestation->facts.find(item.source.attestation);
  if (it == in.attestation->facts.end()) {
    out.evidence = fmt::format("the attestation does not say ({})", item.source.attestation);
    return;
  }
  const std::string who = fmt::format("attested by {}, {}", in.attestation->source,
                                      FormatIso8601(in.attestation->date).substr(0, 10));
  if (item.scoring.kind == ItemScoring::Kind::kPassFail) {
    if (!it->second.is_boolean()) {
      out.evidence = fmt::format("{} is not yes or no", item.source.attestation);
      return;
    }
    out.score = it->second.get<bool>() ? 1.0 : 0.0;
    out.coverage = 1;
    out.evidence = fmt::format("{}: {} ({})", item.source.attestation,
                               it->second.get<bool>() ? "yes" : "no", who);
    return;
  }
  if (!it->second.is_number()) {
    out.evidence = fmt::format("{} is not a number", item.source.attestation);
    return;
  }
  const double value = it->second.get<double>();
  out.score = Banded(item.scoring, value);
  out.coverage = 1;
  out.evidence = fmt::format("{}: {}{} ({})", item.source.attestation, Number(value),
                             item.scoring.unit.empty() ? "" : " " + item.scoring.unit, who);
}

// The largest value of a metric in the newest run that records it, and that run.
std::optional<std::pair<double, int64_t>> NewestMax(const RatingInputs& in, std::string_view name) {
  const auto newest = NewestValues(in, name);
  if (!newest) return std::nullopt;
  return std::pair{*std::ranges::max_element(newest->values), newest->run};
}

// A measured time in hours at the real scale: a lab's times are at its scale (its bars divided
// by 60), and a contract's hours are not, so they are read back multiplied; the source says so.
struct MeasuredHours {
  double hours = 0;
  std::string source;
};
MeasuredHours RealHours(const Rubric& rubric, double seconds, std::string source) {
  const double scale = rubric.TimeScale();
  if (scale <= 0 || scale == 1) return {seconds / 3600, std::move(source)};
  return {seconds / scale / 3600,
          fmt::format("{} ({:.4g} s at the lab's scale, x{:.4g})", source, seconds, 1 / scale)};
}

// The published goodput formulas, as the rating prints them beside its inputs.
std::vector<std::string> GoodputFormulas() {
  return {"G_cold = [(t_id + t_chkpt/2) + t_init + t_repair] * j_size * failures * price",
          "G_hot  = {[(t_id + t_chkpt/2) + t_init] * j_size + t_repair * b_radius} * failures "
          "* price",
          "G_tol  = [(t_id + t_failover) * j_size + t_repair * b_radius] * failures * price",
          "failures = j_size * contract / MTBF",
          "useful GPU-hour price = price * j_size * contract / (j_size * contract - G / price)"};
}

// The SLA model for a unit (rate/sla.cpp), in the words of its inputs.
std::vector<std::string> SlaFormulas(SlaTerms::Unit unit) {
  std::vector<std::string> out;
  if (unit == SlaTerms::Unit::kNode) {
    out = {"outages per node-month N ~ Poisson(8 * 730 / MTBF), each D hours"};
  } else {
    out = {"tray down share p = (4 / MTBF) * D",
           "rack outages per month N ~ Poisson(16 * (4 / MTBF) * C(18,2) * p^2 * (1-p)^16 * 730), "
           "each D/3 hours (down at >= 3 of 18 trays)"};
  }
  out.insert(out.end(),
             {"a month falls under a band at k = floor((1 - below/100) * 730 / outage) + 1 outages",
              "breaches per contract-year = units * 12 * P(N >= k at the uptime)",
              "E[credit share] = sum over bands, best first, (credit_i - credit_i-1) * "
              "P(N >= k_i); credit = contract * E[credit share]"});
  return out;
}

void Goodput(const Rubric& rubric, const RatingInputs& in, Rating& rating) {
  if (!rubric.Goodput()) return;
  const GoodputAssumptions& a = *rubric.Goodput();
  const json* price = nullptr;
  if (in.attestation != nullptr) {
    const auto it = in.attestation->facts.find("pricing.gpu_hour_usd");
    if (it != in.attestation->facts.end() && it->second.is_number()) price = &it->second;
  }
  if (price == nullptr) {
    rating.goodput_missing = "no GPU-hour price attested (pricing.gpu_hour_usd)";
    return;
  }
  GoodputView view{.formulas = GoodputFormulas()};
  const std::string assumed = "assumed (rubric " + rubric.Name() + ")";
  const auto input = [&](const char* name, double value, const char* unit,
                         const std::string& source) {
    view.inputs.push_back({name, value, unit, source});
    return value;
  };
  double detect_h = a.detect_h;
  std::string detect_source = assumed;
  const auto detected = NewestMax(in, "reliability.detect");
  if (detected) {
    MeasuredHours m =
        RealHours(rubric, detected->first,
                  fmt::format("measured: reliability.detect, run {}", detected->second));
    detect_h = m.hours;
    detect_source = std::move(m.source);
  }
  double repair_h = a.repair_h;
  std::string repair_source = assumed;
  // Repair: from detection to capacity back in service, as measured.
  if (const auto back = NewestMax(in, "reliability.back_in_service"); back && detected) {
    MeasuredHours m =
        RealHours(rubric, std::max(0.0, back->first - detected->first),
                  fmt::format("measured: back in service less detected, run {}", back->second));
    repair_h = m.hours;
    repair_source = std::move(m.source);
  }
  GoodputInputs g;
  g.detect_h = input("t_id (detect)", detect_h, "h", detect_source);
  g.checkpoint_interval_h =
      input("t_chkpt (checkpoint interval)", a.checkpoint_interval_h, "h", assumed);
  g.job_init_h = input("t_init (job restart)", a.job_init_h, "h", assumed);
  g.repair_h = input("t_repair (repair or replace)", repair_h, "h", repair_source);
  g.failover_h = input("t_failover (fault-tolerant failover)", a.failover_h, "h", assumed);
  g.job_gpus = input("j_size (job GPUs)", a.job_gpus, "GPUs", assumed);
  g.blast_radius_gpus =
      input("b_radius (GPUs a failure takes)", a.blast_radius_gpus, "GPUs", assumed);
  input("contract", a.contract_hours, "h", assumed);
  input("MTBF", a.mtbf_gpu_hours, "GPU-h", assumed);
  g.gpu_hour_usd =
      input("price", price->get<double>(), "USD/GPU-h", "attested by " + in.attestation->source);
  g.failures = ExpectedFailures(a.job_gpus, a.contract_hours, a.mtbf_gpu_hours);
  view.failures = g.failures;
  view.expense = ComputeGoodputExpense(g);
  view.useful_hour_cold_usd = EffectivePricePerUsefulGpuHour(
      g.gpu_hour_usd, a.job_gpus, a.contract_hours, view.expense.cold_usd);
  view.useful_hour_hot_usd = EffectivePricePerUsefulGpuHour(g.gpu_hour_usd, a.job_gpus,
                                                            a.contract_hours, view.expense.hot_usd);
  view.useful_hour_tolerant_usd = EffectivePricePerUsefulGpuHour(
      g.gpu_hour_usd, a.job_gpus, a.contract_hours, view.expense.tolerant_usd);
  rating.goodput = std::move(view);
}

// The SLA risk over the rubric's fleet, from the attested terms (or the rubric's template they
// name), the rubric's MTBF, and the outage a failure causes: measured from injection to back in
// service where a reliability run did, else the rubric's detection plus repair.
void SlaRiskOf(const Rubric& rubric, const RatingInputs& in, Rating& rating) {
  if (!rubric.Goodput()) {
    rating.sla_missing = "the rubric has no goodput block (MTBF, fleet size)";
    return;
  }
  if (in.attestation == nullptr) {
    rating.sla_missing = "no attestation given (--attestation FILE) to say the SLA's terms";
    return;
  }
  const Attestation& attestation = *in.attestation;
  std::optional<SlaTerms> terms = attestation.sla_terms;
  if (!terms && !attestation.sla_template.empty()) {
    const auto& templates = rubric.SlaTemplates();
    const auto found = std::ranges::find(templates, attestation.sla_template, &SlaTerms::name);
    if (found == templates.end()) {
      rating.sla_missing =
          fmt::format("the rubric has no SLA template \"{}\"", attestation.sla_template);
      return;
    }
    terms = *found;
  }
  if (!terms) {
    rating.sla_missing =
        "the attestation gives no SLA terms (sla: template, or unit, uptime_pct "
        "and credits)";
    return;
  }
  const GoodputAssumptions& a = *rubric.Goodput();
  const std::string assumed = "assumed (rubric " + rubric.Name() + ")";
  SlaView view;
  view.terms = *terms;
  view.formulas = SlaFormulas(terms->unit);
  const auto input = [&](const char* name, double value, const char* unit,
                         const std::string& source) {
    view.inputs.push_back({name, value, unit, source});
    return value;
  };
  SlaRiskInputs risk{.terms = *terms};
  const std::string terms_source =
      terms->name == "attested" ? "attested by " + attestation.source
                                : fmt::format("template {} of rubric {}, named by {}", terms->name,
                                              rubric.Name(), attestation.source);
  input("uptime (monthly)", terms->uptime_pct, "%", terms_source);
  risk.mtbf_gpu_hours = input("MTBF", a.mtbf_gpu_hours, "GPU-h", assumed);
  if (const auto back = NewestMax(in, "reliability.back_in_service")) {
    const MeasuredHours m =
        RealHours(rubric, back->first,
                  fmt::format("measured: reliability.back_in_service, run {}", back->second));
    risk.outage_h = input("D (failure to back in service)", m.hours, "h", m.source);
  } else {
    risk.outage_h = input("D (failure to back in service)", a.detect_h + a.repair_h, "h",
                          assumed + ": detect_h + repair_h");
  }
  risk.fleet_gpus = input("fleet", a.job_gpus, "GPUs", assumed + ": job_gpus");
  const auto price = attestation.facts.find("pricing.gpu_hour_usd");
  if (price != attestation.facts.end() && price->second.is_number()) {
    view.priced = true;
    risk.gpu_hour_usd = input("price", price->second.get<double>(), "USD/GPU-h",
                              "attested by " + attestation.source);
  }
  view.risk = ComputeSlaRisk(risk);
  const auto late = attestation.facts.find("availability.delivery_late_days");
  if (late != attestation.facts.end() && late->second.is_number()) {
    view.delivery_late_days = late->second.get<double>();
  }
  rating.sla = std::move(view);
}

}  // namespace

Rating RateEvidence(const Rubric& rubric, const RatingInputs& in) {
  Rating rating;
  rating.rubric = rubric.Name();
  rating.rubric_sha256 = rubric.Sha256();
  for (const RunRecord* record : in.runs) rating.runs.push_back(record->run.id);
  if (in.attestation != nullptr) {
    rating.provider = in.attestation->provider;
    rating.attestation_sha256 = in.attestation->sha256;
    rating.notes = in.attestation->notes;
  }
  for (const RubricItem& item : rubric.Items()) {
    ItemRating out{.id = item.id,
                   .category = item.category,
                   .title = item.title,
                   .weight = item.weight,
                   .gate_cap = item.gate_cap,
                   .gate_why = item.gate_why};
    if (!item.source.audit_checks.empty()) {
      ScoreAudit(item, in, out);
    } else if (!item.source.metric.empty()) {
      ScoreMetric(item, in, out);
    } else {
      ScoreAttestation(item, in, out);
    }
    if (!out.score) out.coverage = 0;
    rating.items.push_back(std::move(out));
  }

  double known_weight = 0;
  double all_weight = 0;
  double points = 0;
  // Each category's items' weights and points, summed in one pass over the items (a scan of
  // every item for each category was quadratic in a rubric someone wrote).
  struct ItemSums {
    double known = 0;
    double all = 0;
    double points = 0;
  };
  std::map<std::string, ItemSums> sums;
  for (const ItemRating& item : rating.items) {
    if (!item.applies) continue;
    ItemSums& sum = sums[item.category];
    sum.all += item.weight;
    if (!item.score) continue;
    sum.known += item.weight * item.coverage;
    sum.points += item.weight * item.coverage * *item.score;
  }
  for (const RubricCategory& category : rubric.Categories()) {
    CategoryRating out{.id = category.id, .title = category.title, .weight = category.weight};
    const ItemSums sum = sums.contains(category.id) ? sums.at(category.id) : ItemSums{};
    const double item_known = sum.known;
    const double item_all = sum.all;
    const double item_points = sum.points;
    out.confidence = item_all > 0 ? item_known / item_all : 0;
    if (item_known > 0) out.score = 100 * item_points / item_known;
    if (item_all == 0) {
      out.applies = false;  // nothing in it applies to this target
      rating.categories.push_back(std::move(out));
      continue;
    }
    all_weight += category.weight;
    if (out.score) {
      known_weight += category.weight * out.confidence;
      points += category.weight * out.confidence * *out.score;
    }
    rating.categories.push_back(std::move(out));
  }
  rating.confidence = all_weight > 0 ? known_weight / all_weight : 0;
  if (known_weight > 0) rating.score = points / known_weight;

  rating.band = rating.score ? rubric.BandOf(*rating.score) : rubric.Below();
  rating.tier = rating.band;
  for (const ItemRating& item : rating.items) {
    if (!item.gate_cap || !item.applies) continue;
    if (!item.score) {
      rating.gates_unverified.push_back(fmt::format("{}: {}", item.id, item.evidence));
      continue;
    }
    if (*item.score >= 1) continue;  // a gate is met only in full
    rating.gates_failed.push_back(
        fmt::format("{}: {} (caps the tier at {})", item.id, item.gate_why, *item.gate_cap));
    if (rubric.Rank(*item.gate_cap) > rubric.Rank(rating.tier)) rating.tier = *item.gate_cap;
  }
  if (!rating.score || rating.confidence < rubric.UntestableBelowConfidence()) {
    rating.notes.push_back(
        fmt::format("{:.1f}% of the rubric's weight had evidence, under the {:.0f}% a rating needs",
                    100 * rating.confidence, 100 * rubric.UntestableBelowConfidence()));
    rating.tier = rubric.Untestable();
  } else if (!rating.gates_unverified.empty()) {
    rating.notes.push_back("provisional: a gate could not be checked");
  }
  if (in.now && rubric.StaleAfterDays() > 0) {
    for (const RunRecord* record : in.runs) {
      const double days =
          std::chrono::duration<double>(*in.now - record->run.started_at).count() / 86400;
      if (days <= rubric.StaleAfterDays()) continue;
      rating.stale_runs.push_back(record->run.id);
      rating.notes.push_back(
          fmt::format("stale evidence: run {} ({}, {}) is {:.0f} days old, past the rubric's {:g}",
                      record->run.id, SanitizeUtf8(record->run.command),
                      FormatIso8601(record->run.started_at).substr(0, 10), std::floor(days),
                      rubric.StaleAfterDays()));
    }
  }
  Goodput(rubric, in, rating);
  SlaRiskOf(rubric, in, rating);
  const std::vector<DrainRecord> seen = DrainsSeenInTimelines(in.runs);
  if (in.journal_drains || !seen.empty()) {
    const std::vector<DrainRecord> journal = in.journal_drains.value_or(std::vector<DrainRecord>{});
    rating.drains = SplitDrains(MergeDrains(journal, seen));
    if (in.journal_drains) rating.drains_journal = static_cast<int>(journal.size());
    rating.drains_seen = static_cast<int>(seen.size());
  }
  return rating;
}

std::optional<double> TimeScaleOf(const std::vector<const RunRecord*>& runs) {
  for (const RunRecord* run : runs) {
    for (const EvidenceItem& item : run->evidence) {
      if (item.key != kTimeScaleEvidence) continue;
      const json value = json::parse(item.value_json, nullptr, false);
      if (value.is_number() && value.get<double>() > 0 && value.get<double>() < 1) {
        return value.get<double>();
      }
    }
  }
  return std::nullopt;
}

namespace {

// Where the drains came from, in words.
std::string DrainSources(const Rating& r) {
  std::vector<std::string> parts;
  if (r.drains_journal)
    parts.push_back(fmt::format("the remediation journal: {}", *r.drains_journal));
  if (r.drains_seen > 0 || !r.drains_journal) {
    parts.push_back(fmt::format("seen on the scheduler in the rated runs: {}", r.drains_seen));
  }
  return Join(parts, "; ");
}

}  // namespace

std::string RatingLine(const Rating& rating, int64_t run_id) {
  return fmt::format("Tier: {} (score {}, confidence {:.0f}%; cmax rate {} -v for each item)\n",
                     rating.tier, rating.score ? fmt::format("{:.1f}", *rating.score) : "none",
                     100 * rating.confidence, run_id);
}

std::string RatingText(const Rating& r, int verbosity) {
  std::string out = fmt::format("Tier: {}", r.tier);
  if (r.tier != r.band) out += fmt::format(" (the score alone: {})", r.band);
  out += fmt::format("\nScore: {} of 100, confidence {:.0f}%{}\n",
                     r.score ? fmt::format("{:.1f}", *r.score) : "none", 100 * r.confidence,
                     r.provider.empty() ? "" : "; provider " + r.provider);
  out += fmt::format("Rubric: {} (sha256 {}); runs: {}\n", r.rubric, r.rubric_sha256.substr(0, 12),
                     r.runs.empty() ? "none"
                                    : Join(
                                          [&] {
                                            std::vector<std::string> ids;
                                            for (int64_t id : r.runs)
                                              ids.push_back(std::to_string(id));
                                            return ids;
                                          }(),
                                          ", "));
  for (const std::string& gate : r.gates_failed) out += "GATE FAILED  " + gate + "\n";
  for (const std::string& gate : r.gates_unverified) out += "GATE UNKNOWN " + gate + "\n";
  for (const std::string& note : r.notes) out += "NOTE  " + note + "\n";
  out += "\n";
  std::map<std::string, std::vector<const ItemRating*>> items_of;  // by category, in order
  for (const ItemRating& item : r.items) items_of[item.category].push_back(&item);
  for (const CategoryRating& c : r.categories) {
    out += c.applies ? fmt::format("{:<14} {:>6}  confidence {:>3.0f}%  (weight {})\n", c.id,
                                   c.score ? fmt::format("{:.1f}", *c.score) : "-",
                                   100 * c.confidence, Number(c.weight))
                     : fmt::format("{:<14} {:>6}  does not apply here\n", c.id, "n/a");
    const auto listed = items_of.find(c.id);
    if (listed == items_of.end()) continue;
    for (const ItemRating* each : listed->second) {
      const ItemRating& item = *each;
      out += fmt::format("  {:<34} {:>5}  {}\n", item.id,
                         item.score ? fmt::format("{:.2f}", *item.score) : "-",
                         verbosity > 0 || !item.score ? item.evidence : item.title);
    }
  }
  if (r.goodput) {
    const GoodputView& g = *r.goodput;
    const auto useful = [](const std::optional<double>& usd) {
      return usd ? fmt::format("{:.3f} USD per useful GPU-hour", *usd)
                 : std::string("failures eat the contract");
    };
    out += fmt::format(
        "\nGoodput expense over the contract ({:.1f} failures expected):\n"
        "  cold spare     {:>14.0f} USD  {}\n"
        "  hot spare      {:>14.0f} USD  {}\n"
        "  fault tolerant {:>14.0f} USD  {}\n",
        g.failures, g.expense.cold_usd, useful(g.useful_hour_cold_usd), g.expense.hot_usd,
        useful(g.useful_hour_hot_usd), g.expense.tolerant_usd, useful(g.useful_hour_tolerant_usd));
    if (verbosity > 0) {
      for (const std::string& formula : g.formulas) out += "  " + formula + "\n";
      for (const GoodputInputView& input : g.inputs) {
        out += fmt::format("  {:<38} {:>10} {:<10} {}\n", input.name, Number(input.value),
                           input.unit, input.source);
      }
    }
  } else if (!r.goodput_missing.empty()) {
    out += "\nGoodput expense: none (" + r.goodput_missing + ")\n";
  }
  if (r.sla) {
    const SlaView& v = *r.sla;
    const SlaRisk& k = v.risk;
    out += fmt::format(
        "\nSLA risk ({} {}, {}% monthly uptime, over {} units of {} GPUs):\n"
        "  outages per unit-month {:.4g}, each {:.2f} h; {} in a month breach it\n"
        "  breach probability per unit-month {:.4g}; breaches per contract-year {:.2f}\n"
        "  expected credit {:.4g}% of the bill{}\n",
        v.terms.name, SlaUnitName(v.terms.unit), Number(v.terms.uptime_pct), Number(k.units),
        Number(k.unit_gpus), k.outages_per_unit_month, k.outage_h, k.breach_at,
        k.breach_probability, k.breaches_per_year, 100 * k.expected_credit_share,
        v.priced ? fmt::format(": {:.0f} USD per contract-year of {:.0f}", k.credit_usd_per_year,
                               k.contract_usd_per_year)
                 : std::string(" (no price attested)"));
    if (v.delivery_late_days) {
      out += *v.delivery_late_days > 0
                 ? fmt::format("  delivery: {} days late\n", Number(*v.delivery_late_days))
                 : std::string("  delivery: on time\n");
    }
    if (verbosity > 0) {
      for (const std::string& formula : v.formulas) out += "  " + formula + "\n";
      for (const GoodputInputView& input : v.inputs) {
        out += fmt::format("  {:<38} {:>10} {:<10} {}\n", input.name, Number(input.value),
                           input.unit, input.source);
      }
    }
  } else if (!r.sla_missing.empty()) {
    out += "\nSLA risk: none (" + r.sla_missing + ")\n";
  }
  if (r.drains) {
    int total = 0;
    std::vector<std::string> parts;
    for (const DrainsOfCause& d : *r.drains) {
      total += d.drains;
      parts.push_back(fmt::format("{} {}", DrainCauseName(d.cause), d.drains));
    }
    out += fmt::format("\nDrains by cause ({}): {} in all: {}\n", DrainSources(r), total,
                       Join(parts, ", "));
    if (verbosity > 0) {
      for (const DrainsOfCause& d : *r.drains) {
        if (!d.examples.empty()) {
          out += fmt::format("  {:<12} e.g. {}\n", DrainCauseName(d.cause), Join(d.examples, "; "));
        }
      }
    }
  }
  // Names, notes and evidence come from stores and files: shown, never obeyed by a terminal.
  return SanitizeUtf8(out);
}

json RatingJson(const Rating& r) {
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json items = json::array();
  for (const ItemRating& item : r.items) {
    json entry = {{"id", item.id},
                  {"category", item.category},
                  {"title", item.title},
                  {"weight", item.weight},
                  {"score", optional(item.score)},
                  {"coverage", item.coverage},
                  {"evidence", item.evidence},
                  {"runs", item.runs},
                  {"applies", item.applies}};
    if (item.gate_cap) entry["gate"] = {{"cap", *item.gate_cap}, {"why", item.gate_why}};
    items.push_back(std::move(entry));
  }
  json categories = json::array();
  for (const CategoryRating& c : r.categories) {
    categories.push_back({{"id", c.id},
                          {"title", c.title},
                          {"weight", c.weight},
                          {"score", optional(c.score)},
                          {"confidence", c.confidence},
                          {"applies", c.applies}});
  }
  json goodput = nullptr;
  if (r.goodput) {
    json inputs = json::array();
    for (const GoodputInputView& input : r.goodput->inputs) {
      inputs.push_back({{"name", input.name},
                        {"value", input.value},
                        {"unit", input.unit},
                        {"source", input.source}});
    }
    goodput = {{"inputs", inputs},
               {"formulas", r.goodput->formulas},
               {"failures", r.goodput->failures},
               {"expense_usd",
                {{"cold_spare", r.goodput->expense.cold_usd},
                 {"hot_spare", r.goodput->expense.hot_usd},
                 {"fault_tolerant", r.goodput->expense.tolerant_usd}}},
               {"useful_gpu_hour_usd",
                {{"cold_spare", optional(r.goodput->useful_hour_cold_usd)},
                 {"hot_spare", optional(r.goodput->useful_hour_hot_usd)},
                 {"fault_tolerant", optional(r.goodput->useful_hour_tolerant_usd)}}}};
  }
  json sla = nullptr;
  if (r.sla) {
    const SlaView& v = *r.sla;
    const SlaRisk& k = v.risk;
    json credits = json::array();
    for (const auto& [below, credit] : v.terms.credits) credits.push_back({below, credit});
    json inputs = json::array();
    for (const GoodputInputView& input : v.inputs) {
      inputs.push_back({{"name", input.name},
                        {"value", input.value},
                        {"unit", input.unit},
                        {"source", input.source}});
    }
    sla = {{"terms",
            {{"name", v.terms.name},
             {"unit", SlaUnitName(v.terms.unit)},
             {"uptime_pct", v.terms.uptime_pct},
             {"credits", credits}}},
           {"inputs", inputs},
           {"formulas", v.formulas},
           {"unit_gpus", k.unit_gpus},
           {"units", k.units},
           {"outages_per_unit_month", k.outages_per_unit_month},
           {"outage_h", k.outage_h},
           {"breach_at", k.breach_at},
           {"breach_probability_month", k.breach_probability},
           {"breaches_per_year", k.breaches_per_year},
           {"expected_credit_share", k.expected_credit_share},
           {"credit_usd_per_year", v.priced ? json(k.credit_usd_per_year) : json(nullptr)},
           {"contract_usd_per_year", v.priced ? json(k.contract_usd_per_year) : json(nullptr)},
           {"delivery_late_days", optional(v.delivery_late_days)}};
  }
  json drains = nullptr;
  if (r.drains) {
    drains = json::array();
    for (const DrainsOfCause& d : *r.drains) {
      drains.push_back(
          {{"cause", DrainCauseName(d.cause)}, {"drains", d.drains}, {"examples", d.examples}});
    }
  }
  return {{"schema", "cmax.rating/v1"},
          {"drains", drains},
          {"drains_from",
           r.drains ? json{{"journal", r.drains_journal ? json(*r.drains_journal) : json(nullptr)},
                           {"seen", r.drains_seen}}
                    : json(nullptr)},
          {"sla", sla},
          {"sla_missing", r.sla_missing.empty() ? json(nullptr) : json(r.sla_missing)},
          {"goodput", goodput},
          {"goodput_missing", r.goodput_missing.empty() ? json(nullptr) : json(r.goodput_missing)},
          {"tier", r.tier},
          {"band", r.band},
          {"score", optional(r.score)},
          {"confidence", r.confidence},
          {"rubric", {{"name", r.rubric}, {"sha256", r.rubric_sha256}}},
          {"provider", r.provider.empty() ? json(nullptr) : json(r.provider)},
          {"attestation_sha256",
           r.attestation_sha256.empty() ? json(nullptr) : json(r.attestation_sha256)},
          {"runs", r.runs},
          {"gates_failed", r.gates_failed},
          {"gates_unverified", r.gates_unverified},
          {"notes", r.notes},
          {"stale_runs", r.stale_runs},
          {"categories", categories},
          {"items", items}};
}

}  // namespace cmax::rate
