#include "rate/sla.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cmax::rate {
namespace {

constexpr double kMonthHours = 730;
constexpr double kNodeGpus = 8;
constexpr double kTrayGpus = 4;
constexpr double kRackTrays = 18;

// The outages that take a month under `below_pct` uptime: the first count whose total strictly
// exceeds the allowance. Capped, so a zero-length outage (nothing to breach) stays finite.
int OutagesToFall(double below_pct, double outage_h) {
  if (outage_h <= 0) return std::numeric_limits<int>::max();
  const double allowed_h = (1 - below_pct / 100) * kMonthHours;
  // A month at exactly the threshold is not below it; 1 - 99.9/100 rounds low, so the ratio is
  // nudged up before it is floored (0.73 h of 0.73 h allowed is one outage, not a breach).
  const double k = std::floor(allowed_h / outage_h * (1 + 1e-9)) + 1;
  return k >= 1e6 ? std::numeric_limits<int>::max() : static_cast<int>(k);
}

}  // namespace

std::string_view SlaUnitName(SlaTerms::Unit unit) {
  return unit == SlaTerms::Unit::kRack ? "rack" : "node";
}

Result<SlaTerms::Unit> ParseSlaUnit(std::string_view text) {
  if (text == "node") return SlaTerms::Unit::kNode;
  if (text == "rack") return SlaTerms::Unit::kRack;
  return Fail(ErrorCode::kInvalidArgument,
              "unit \"{}\" is not node (HGX, 8 GPUs) or rack (NVL72, 18 trays)", text);
}

Result<void> ValidateSlaTerms(const SlaTerms& terms) {
  if (!(terms.uptime_pct > 0 && terms.uptime_pct < 100)) {
    return Fail(ErrorCode::kInvalidArgument, "uptime_pct {} is not between 0 and 100",
                terms.uptime_pct);
  }
  if (terms.credits.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "credits: at least one band (below_pct, credit_pct)");
  }
  double last_below = 100.0 + 1;
  double last_credit = -1;
  for (const auto& [below, credit] : terms.credits) {
    if (!(below > 0 && below <= 100) || !(credit >= 0 && credit <= 100)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "credits: below {} / credit {}: uptime in (0, 100], credit in [0, 100]", below,
                  credit);
    }
    if (below >= last_below || credit <= last_credit) {
      return Fail(ErrorCode::kInvalidArgument,
                  "credits: bands go from the highest uptime down, each crediting more "
                  "(below {} / credit {} is out of order)",
                  below, credit);
    }
    last_below = below;
    last_credit = credit;
  }
  return {};
}

double PoissonTail(double mean, int k) {
  if (k <= 0) return 1;
  if (mean <= 0 || k == std::numeric_limits<int>::max()) return 0;
  // Each term in logs, so a large mean does not underflow e^-mean.
  const auto term = [&](int n) {
    return std::exp(n * std::log(mean) - mean - std::lgamma(n + 1.0));
  };
  if (k > mean) {
    // Past the mean the terms fall: the tail summed upward keeps its own precision, where
    // 1 - P(N < k) would leave rounding noise for tails under 1e-16 (a rack's).
    double tail = 0;
    for (int n = k;; ++n) {
      const double t = term(n);
      tail += t;
      if (t <= tail * 1e-17 || n - k > 100000) break;
    }
    return std::clamp(tail, 0.0, 1.0);
  }
  double below = 0;
  for (int n = 0; n < k; ++n) below += term(n);
  return std::clamp(1 - below, 0.0, 1.0);
}

SlaRisk ComputeSlaRisk(const SlaRiskInputs& in) {
  SlaRisk out;
  const double rate = in.mtbf_gpu_hours > 0 ? 1 / in.mtbf_gpu_hours : 0;  // per GPU-hour
  if (in.terms.unit == SlaTerms::Unit::kNode) {
    out.unit_gpus = kNodeGpus;
    out.outages_per_unit_month = kNodeGpus * kMonthHours * rate;
    out.outage_h = in.outage_h;
  } else {
    out.unit_gpus = kTrayGpus * kRackTrays;
    const double tray_rate = kTrayGpus * rate;                       // failures per tray-hour
    const double p = std::clamp(tray_rate * in.outage_h, 0.0, 1.0);  // a tray's down share
    const double two_down = (kRackTrays * (kRackTrays - 1) / 2) * p * p * std::pow(1 - p, 16);
    out.outages_per_unit_month = (kRackTrays - 2) * tray_rate * two_down * kMonthHours;
    out.outage_h = in.outage_h / 3;
  }
  out.units = in.fleet_gpus / out.unit_gpus;
  out.breach_at = OutagesToFall(in.terms.uptime_pct, out.outage_h);
  out.breach_probability = PoissonTail(out.outages_per_unit_month, out.breach_at);
  out.breaches_per_year = out.units * 12 * out.breach_probability;
  double previous = 0;
  for (const auto& [below, credit] : in.terms.credits) {
    const double share = (credit - previous) / 100;
    out.expected_credit_share +=
        share * PoissonTail(out.outages_per_unit_month, OutagesToFall(below, out.outage_h));
    previous = credit;
  }
  const double unit_month_usd = out.unit_gpus * kMonthHours * in.gpu_hour_usd;
  out.contract_usd_per_year = out.units * 12 * unit_month_usd;
  out.credit_usd_per_year = out.contract_usd_per_year * out.expected_credit_share;
  return out;
}

}  // namespace cmax::rate
