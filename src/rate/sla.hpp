// SLA risk: what a provider's SLA is likely to pay out, for a lender or an insurer pricing the
// contract, and how often it will be breached. Pure. The model, per SLA unit and month:
//
//   A unit is a node (HGX: 8 GPUs) or an NVL72 rack (18 trays of 4 GPUs, down when at least 3
//   trays are down at once: ClusterMAX 3.0's "NVL64+" rule).
//   Failures arrive as a Poisson process at 1/MTBF per GPU-hour; each keeps its GPUs out of
//   service for D hours (detection to back in service: measured where a reliability run did).
//   Node: outages per month N ~ Poisson(8 * 730 / MTBF), each D long.
//   Rack: a tray is down a share p = (4 / MTBF) * D of the time; an outage starts when one of
//   the 16 up trays fails while exactly 2 others are down, at a rate
//   16 * (4 / MTBF) * C(18,2) p^2 (1-p)^16 per hour, and lasts until the first of the three
//   comes back: D/3 on average (the two already down have a uniform share of D left). N is
//   Poisson with that rate over 730 h; each outage D/3 long.
//   A month's uptime is 1 - N * outage / 730. Below a credit band's uptime the unit's month is
//   credited that band's share (the lowest band reached wins); N reaches a band at
//   k = floor((1 - below) * 730 / outage) + 1 outages.
//   E[credit share] = sum over bands, best first, of (credit_i - credit_{i-1}) * P(N >= k_i).
//   Per contract-year: breaches = units * 12 * P(N >= k_sla); credit = units * 12 * unit-month
//   price * E[credit share], with units = fleet GPUs / GPUs per unit.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace cmax::rate {

struct SlaTerms {
  std::string name;  // the template's, or "attested" for terms written out
  enum class Unit { kNode, kRack };
  Unit unit = Unit::kNode;
  double uptime_pct = 99.9;  // monthly; below it the SLA is breached
  // (below_pct, credit_pct), best first: under `below_pct` uptime in a month, `credit_pct` of
  // the unit's month is credited. Thresholds fall and credits rise down the list.
  std::vector<std::pair<double, double>> credits;
};

std::string_view SlaUnitName(SlaTerms::Unit unit);
Result<SlaTerms::Unit> ParseSlaUnit(std::string_view text);

// Thresholds in (0, 100], falling; credits in [0, 100], rising; uptime_pct in (0, 100).
Result<void> ValidateSlaTerms(const SlaTerms& terms);

struct SlaRiskInputs {
  SlaTerms terms;
  double mtbf_gpu_hours = 25000;
  double outage_h = 1;  // D: from a failure to back in service
  double gpu_hour_usd = 0;
  double fleet_gpus = 1024;
};

struct SlaRisk {
  double unit_gpus = 0;
  double units = 0;
  double outages_per_unit_month = 0;  // the Poisson mean
  double outage_h = 0;                // each outage's length (D, or D/3 for a rack)
  int breach_at = 0;                  // outages in a month that breach the SLA
  double breach_probability = 0;      // per unit and month
  double breaches_per_year = 0;       // over the fleet
  double expected_credit_share = 0;   // of a unit's monthly bill
  double credit_usd_per_year = 0;
  double contract_usd_per_year = 0;
};

SlaRisk ComputeSlaRisk(const SlaRiskInputs& in);

// P(N >= k) for N ~ Poisson(mean).
double PoissonTail(double mean, int k);

}  // namespace cmax::rate
