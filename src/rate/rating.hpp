// The rating: a rubric applied to stored runs and an attestation. Pure: the runs come in as
// records, so any stored run can be rated again without the cluster. Each item's score comes
// with the evidence that produced it and how much of its evidence there was; missing evidence
// lowers the confidence, never the score and never to a pass; a failed gate caps the tier.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/run_record.hpp"
#include "rate/attestation.hpp"
#include "rate/drains.hpp"
#include "rate/goodput.hpp"
#include "rate/rubric.hpp"
#include "rate/sla.hpp"

namespace cmax::rate {

struct RatingInputs {
  std::vector<const RunRecord*> runs;  // newest first: a check or metric is read from the newest
  const Attestation* attestation = nullptr;
  // The remediation journal's drains (their reasons), when the store has one to read: split by
  // cause in the rating. None: not read (a ranking of providers, whose journals are not theirs).
  std::optional<std::vector<DrainRecord>> journal_drains;
  // When the rating is made: runs older than the rubric's stale_after_days are flagged. None:
  // no run is judged by its age.
  std::optional<WallTime> now;
};

struct ItemRating {
  std::string id;
  std::string category;
  std::string title;
  double weight = 0;
  std::optional<double> score;  // 0 to 1; none without evidence
  double coverage = 0;          // the share of its evidence that was there, 0 to 1
  bool applies = true;          // false: none of its checks applies to the target (N/A)
  std::string evidence;         // what it was scored on, in words
  std::vector<int64_t> runs;    // the runs it read
  std::optional<std::string> gate_cap;
  std::string gate_why;
};

struct CategoryRating {
  std::string id;
  std::string title;
  double weight = 0;
  std::optional<double> score;  // 0 to 100, over the evidence there was
  double confidence = 0;        // the item weight with evidence over all item weight
  bool applies = true;          // false: none of its items applies to the target
};

// The goodput expense over the rubric's contract, with each input and where it came from
// (measured in a run, attested, or the rubric's assumption).
struct GoodputInputView {
  std::string name;
  double value = 0;
  std::string unit;
  std::string source;
};
struct GoodputView {
  std::vector<GoodputInputView> inputs;
  std::vector<std::string> formulas;  // how the figures follow from the inputs, one per line
  double failures = 0;
  GoodputExpense expense;
  std::optional<double> useful_hour_cold_usd;
  std::optional<double> useful_hour_hot_usd;
  std::optional<double> useful_hour_tolerant_usd;
};

// The SLA's risk for a lender or an insurer (rate/sla.hpp): the terms, the inputs with their
// sources, and what they make of a contract-year over the rubric's fleet.
struct SlaView {
  SlaTerms terms;
  std::vector<GoodputInputView> inputs;
  std::vector<std::string> formulas;  // the model for the terms' unit, one per line
  SlaRisk risk;
  bool priced = false;  // a GPU-hour price was attested: the credit and contract are in USD
  std::optional<double> delivery_late_days;
};

struct Rating {
  std::string rubric;
  std::string rubric_sha256;
  std::string provider;  // the attestation's, when there is one
  std::string attestation_sha256;
  std::vector<int64_t> runs;
  std::vector<ItemRating> items;
  std::vector<CategoryRating> categories;
  std::optional<double> score;                // 0 to 100
  double confidence = 0;                      // 0 to 1
  std::string band;                           // the tier the score alone reaches
  std::string tier;                           // after gates and confidence
  std::vector<std::string> gates_failed;      // "item: why (caps at TIER)"
  std::vector<std::string> gates_unverified;  // gates whose item had no evidence
  std::vector<std::string> notes;
  std::optional<GoodputView> goodput;
  std::string goodput_missing;  // why there is none, when the rubric asks for it
  std::optional<SlaView> sla;
  std::string sla_missing;                           // why there is none
  std::optional<std::vector<DrainsOfCause>> drains;  // by cause; none when not read
  std::vector<int64_t> stale_runs;    // rated runs older than the rubric's stale_after_days
  std::optional<int> drains_journal;  // of them, the journal's (none: the journal was not read)
  int drains_seen = 0;                // seen on the scheduler by the rated reliability runs
};

Rating RateEvidence(const Rubric& rubric, const RatingInputs& inputs);

// The `evaluation.time_scale` a lab's run records (its pass bars scaled down, in (0, 1)), from
// the newest run that has one; none for a run of a real provider.
std::optional<double> TimeScaleOf(const std::vector<const RunRecord*>& runs);
inline constexpr const char* kTimeScaleEvidence = "evaluation.time_scale";

std::string RatingText(const Rating& rating, int verbosity = 0);
// The one line `cmax run` ends with: the tier, the score and confidence, and where each item's
// reasons are (`cmax rate RUN -v`).
std::string RatingLine(const Rating& rating, int64_t run_id);
nlohmann::json RatingJson(const Rating& rating);  // schema cmax.rating/v1

}  // namespace cmax::rate
