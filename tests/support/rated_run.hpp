// A small rubric for the report's tests and a helper that rates a run with it, keeping the
// rating as the run's `rating` evidence exactly as `cmax run` does: security scored from two
// audit checks, reliability from a metric, pricing from the attestation (so, without one, a
// category with no evidence), and a SOC 2 gate.
#pragma once

#include "rate/rating.hpp"

namespace cmax::testing {

inline const rate::Rubric& ReportRubric() {
  static const rate::Rubric kRubric = *rate::Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "report-test",
    "tiers": [{"name": "Gold", "min": 80}, {"name": "Bronze", "min": 50}],
    "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0.2},
    "categories": [{"id": "security", "title": "Security", "weight": 2},
                   {"id": "reliability", "title": "Reliability", "weight": 1},
                   {"id": "pricing", "title": "Pricing", "weight": 1}],
    "items": [
      {"id": "sec.versions", "category": "security", "title": "Versions", "weight": 3,
       "from": {"audit_checks": ["versions.nvidia-driver", "versions.cuda-toolkit"]},
       "score": {"kind": "audit"}},
      {"id": "sec.soc2", "category": "security", "title": "SOC 2", "weight": 1,
       "from": {"attestation": "security.soc2_or_iso27001"}, "score": {"kind": "pass_fail"},
       "gate": {"cap": "Underperforming", "why": "no SOC 2"}},
      {"id": "rel.detect", "category": "reliability", "title": "Time to detect", "weight": 1,
       "from": {"metric": "reliability.detect"},
       "score": {"kind": "bands", "better": "lower", "bands": [[120, 1], [600, 0.5]],
                 "otherwise": 0, "unit": "s"}},
      {"id": "price.gpu_hour", "category": "pricing", "title": "Price", "weight": 1,
       "from": {"attestation": "pricing.gpu_hour_usd"},
       "score": {"kind": "bands", "better": "lower", "bands": [[2.5, 1]], "otherwise": 0,
                 "unit": "USD"}}]
  })");
  return kRubric;
}

// Rates `run` alone, without an attestation, and appends the rating to its evidence.
inline void AddRating(RunRecord& run) {
  const rate::Rating rating = rate::RateEvidence(ReportRubric(), {{&run}, nullptr});
  run.evidence.push_back({"rating", rate::RatingJson(rating).dump()});
}

}  // namespace cmax::testing
