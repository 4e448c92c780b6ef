// The rubric: how evidence becomes a rating, as data (data/rubric/default.json, schema
// cmax.rubric/v1). Categories with weights, items that each read one kind of evidence (audit
// findings, a metric of a stored run, a fact of the provider's attestation) and score it from 0
// to 1, gates that cap the tier when their item fails, and the tier bands. Parsing is strict:
// an unknown key, an item of no category, an audit check or profile the catalogue does not
// have, a metric no cmax phase records or an attestation fact cmax does not derive is an error
// that names the item.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "rate/sla.hpp"

namespace cmax::rate {

struct RubricCategory {
  std::string id;  // security, lifecycle, orchestration, ...
  std::string title;
  double weight = 0;
};

// Where an item's evidence comes from: exactly one of these is set.
struct ItemSource {
  std::vector<std::string> audit_checks;  // the audit's checks (a profile's, or named)
  std::string audit_profile;              // as given, for the report
  std::string metric;                     // a metric of a stored run ("reliability.detect")
  std::string aggregate = "max";          // of its values: max, min or mean
  // A metric that bounds `metric` from below where it is missing: a step watched for W seconds
  // and never detected took at least W ("reliability.watched"). Matched by labels.
  std::string at_least;
  std::string attestation;  // a fact of the attestation ("security.soc2_or_iso27001")
};

// How an item scores. kAudit: PASS 1, WARN 0.5, FAIL 0 over the checks that apply (N/A left
// out; UNKNOWN and ATTEST are evidence missing). kPassFail: a yes/no fact, yes 1. kBands: a
// number against limits, the first band it is within giving the score.
struct ItemScoring {
  enum class Kind { kAudit, kPassFail, kBands };
  Kind kind = Kind::kAudit;
  bool lower_is_better = true;                   // kBands
  std::vector<std::pair<double, double>> bands;  // (limit, score), in the order they are tried
  double otherwise = 0;                          // kBands: past every limit
  std::string unit;                              // for the report ("s", "days", "USD/GB")
};

struct RubricItem {
  std::string id;
  std::string category;
  std::string title;
  double weight = 0;
  ItemSource source;
  ItemScoring scoring;
  // A gate: the item failing (score 0 on evidence) caps the tier at `gate_cap`.
  std::optional<std::string> gate_cap;
  std::string gate_why;
};

// What the goodput expense assumes where nothing was measured (rate/goodput.hpp): the job, the
// contract, the recovery, and detection and repair times used until a reliability run measures
// them.
struct GoodputAssumptions {
  double job_gpus = 1024;
  double contract_hours = 730;
  double checkpoint_interval_h = 1;
  double job_init_h = 0.2;
  double failover_h = 0.05;
  double blast_radius_gpus = 8;
  double mtbf_gpu_hours = 25000;
  double detect_h = 1;
  double repair_h = 1;
};

class Rubric {
 public:
  static Result<Rubric> Parse(std::string_view json);
  static const Rubric& Builtin();

  const std::string& Name() const { return name_; }
  const std::string& Sha256() const { return sha256_; }
  const std::vector<RubricCategory>& Categories() const { return categories_; }
  const std::vector<RubricItem>& Items() const { return items_; }
  // Best first: (name, minimum score out of 100).
  const std::vector<std::pair<std::string, double>>& Tiers() const { return tiers_; }
  const std::string& Below() const { return below_; }  // under the last band
  const std::string& Untestable() const { return untestable_; }
  double UntestableBelowConfidence() const { return untestable_below_; }
  // Evidence from a run older than this many days is flagged as stale; 0: never.
  double StaleAfterDays() const { return stale_after_days_; }
  // None: the rubric estimates no goodput expense.
  const std::optional<GoodputAssumptions>& Goodput() const { return goodput_; }
  // The SLA templates an attestation may name (`sla: {template: gold}`); the SLA risk uses the
  // goodput block's MTBF, fleet size and detection and repair times.
  const std::vector<SlaTerms>& SlaTemplates() const { return sla_templates_; }
  // Where a tier name ranks: 0 the best; the band below the last, then Untestable, last.
  int Rank(std::string_view tier) const;
  // The best tier whose minimum `score` (0 to 100) reaches, else the band below the last.
  const std::string& BandOf(double score) const;
  // This rubric with every band in seconds multiplied by `factor`, and its name saying so: a
  // lab that scales its pass bars down is rated on bands scaled the same way.
  Rubric WithTimesScaled(double factor) const;
  // 1, or the product of the factors it was scaled by: a lab's measured times over this are
  // times at the real scale, where the goodput's and the SLA's hours are.
  double TimeScale() const { return time_scale_; }

 private:
  std::string name_;
  std::string sha256_;
  std::vector<RubricCategory> categories_;
  std::vector<RubricItem> items_;
  std::vector<std::pair<std::string, double>> tiers_;
  std::string below_;
  std::string untestable_;
  double untestable_below_ = 0;
  double stale_after_days_ = 0;
  double time_scale_ = 1;
  std::optional<GoodputAssumptions> goodput_;
  std::vector<SlaTerms> sla_templates_;
};

// The metrics cmax's phases record that a rubric may score, and the attestation facts cmax
// derives (attestation.hpp).
struct KnownMetric {
  std::string name;
  std::string unit;  // what a metric item's bands must be in
};
const std::vector<KnownMetric>& KnownMetrics();
const KnownMetric* FindKnownMetric(std::string_view name);  // nullptr when cmax records no such

}  // namespace cmax::rate
