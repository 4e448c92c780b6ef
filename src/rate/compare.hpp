// What moved between two ratings (two runs, or the same runs rated with another rubric or a
// newer attestation): the tier, the score and confidence, each category, and each item whose
// score or evidence changed, with the evidence before and after, so that a reader sees why.
// Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rate/rating.hpp"

namespace cmax::rate {

struct ItemMove {
  std::string id;
  std::string category;
  std::optional<double> before;  // score, 0 to 1; none without evidence
  std::optional<double> after;
  std::string evidence_before;
  std::string evidence_after;
};

struct CategoryMove {
  std::string id;
  std::optional<double> before;  // 0 to 100
  std::optional<double> after;
  double confidence_before = 0;
  double confidence_after = 0;
};

// A measurement found in both runs that moved by the threshold or more (a training run's
// tokens/s per GPU, its exposed communication; an endpoint's latency).
struct MetricMove {
  std::string name;
  std::string labels;  // "log=a.log, phase=x" (the after run's)
  std::string unit;
  double before = 0;
  double after = 0;
  std::optional<double> change_pct;  // none where before is 0
};

struct Comparison {
  std::string tier_before;
  std::string tier_after;
  std::optional<double> score_before;
  std::optional<double> score_after;
  double confidence_before = 0;
  double confidence_after = 0;
  std::vector<int64_t> runs_before;
  std::vector<int64_t> runs_after;
  std::vector<CategoryMove> categories;   // those whose score or confidence moved
  std::vector<ItemMove> items;            // those whose score or evidence moved
  std::vector<std::string> gates_before;  // failed gates
  std::vector<std::string> gates_after;
  bool same_rubric = true;  // false: the rubrics differ (their SHA-256), which is itself a change
  std::vector<MetricMove> metrics;  // CompareMetrics of the two runs' measurements
  double metric_threshold_pct = 5;
};

// Items and categories are matched by id; one only in `after` (a newer rubric) moves from none.
Comparison CompareRatings(const Rating& before, const Rating& after);

// The measurements that moved by `threshold_pct` or more (or from or to 0). A metric is matched
// by its name and labels; one whose labels differ (two training logs' file names) by its name
// where it is the only one of that name left on each side. Pure.
std::vector<MetricMove> CompareMetrics(const std::vector<Metric>& before,
                                       const std::vector<Metric>& after, double threshold_pct);

std::string ComparisonText(const Comparison& comparison);
nlohmann::json ComparisonJson(const Comparison& comparison);  // schema cmax.comparison/v1

}  // namespace cmax::rate
