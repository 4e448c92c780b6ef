// Scoring: a small rubric on hand-made runs, with every figure worked out by hand below; the
// newest run's reading wins; gates cap; missing evidence lowers confidence and never scores;
// items that do not apply leave the weights; too little evidence is Untestable. Then the
// built-in rubric on an audit of a broken host and a healthy one with an attestation.
#include "rate/rating.hpp"

#include <gtest/gtest.h>
#include <string>

namespace cmax::rate {
namespace {

using nlohmann::json;

const Rubric& Small() {
  static const Rubric kRubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "small",
    "tiers": [{"name": "Gold", "min": 80}, {"name": "Bronze", "min": 50}],
    "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0.5},
    "categories": [{"id": "security", "title": "Security", "weight": 2},
                   {"id": "reliability", "title": "Reliability", "weight": 1}],
    "items": [
      {"id": "sec.gate", "category": "security", "title": "SOC 2", "weight": 1,
       "from": {"attestation": "security.soc2_or_iso27001"}, "score": {"kind": "pass_fail"},
       "gate": {"cap": "Underperforming", "why": "no SOC 2"}},
      {"id": "sec.versions", "category": "security", "title": "Versions", "weight": 3,
       "from": {"audit_checks": ["versions.nvidia-driver", "versions.cuda-toolkit",
                                 "versions.runc", "versions.docker"]},
       "score": {"kind": "audit"}},
      {"id": "rel.detect", "category": "reliability", "title": "Detect", "weight": 1,
       "from": {"metric": "reliability.detect"},
       "score": {"kind": "bands", "better": "lower", "bands": [[120, 1], [600, 0.5]],
                 "otherwise": 0, "unit": "s"}}]
  })");
  return kRubric;
}

Finding Found(const char* id, CheckStatus status) {
  Finding f;
  f.check_id = id;
  f.status = status;
  return f;
}

struct Runs {
  RunRecord newer;
  RunRecord older;
  Runs() {
    newer.run.id = 2;
    newer.findings = {Found("versions.nvidia-driver", CheckStatus::kPass),
                      Found("versions.cuda-toolkit", CheckStatus::kFail)};
    older.run.id = 1;
    older.findings = {Found("versions.nvidia-driver", CheckStatus::kFail),  // the newer wins
                      Found("versions.runc", CheckStatus::kWarn),
                      Found("versions.docker", CheckStatus::kUnknown)};
    older.metrics = {{"reliability.detect", {{"step", "a"}}, 90, "s"},
                     {"reliability.detect", {{"step", "b"}}, 300, "s"}};
  }
};

Attestation Soc2(bool current) {
  Attestation a;
  a.provider = "P";
  a.source = "S";
  a.facts["security.soc2_or_iso27001"] = current;
  return a;
}

const ItemRating& Item(const Rating& r, std::string_view id) {
  return *std::ranges::find(r.items, id, &ItemRating::id);
}

TEST(Rating, WorkedExample) {
  const Runs runs;
  const Attestation attested = Soc2(true);
  const Rating r = RateEvidence(Small(), {{&runs.newer, &runs.older}, &attested});
  // sec.versions: PASS (newer run), FAIL, WARN over 3 applicable = 0.5; 1 UNKNOWN: coverage 3/4.
  const ItemRating& versions = Item(r, "sec.versions");
  EXPECT_DOUBLE_EQ(*versions.score, 0.5);
  EXPECT_DOUBLE_EQ(versions.coverage, 0.75);
  EXPECT_EQ(versions.runs, (std::vector<int64_t>{1, 2}));
  EXPECT_NE(versions.evidence.find("1 PASS, 1 WARN, 1 FAIL, 1 UNKNOWN"), std::string::npos)
      << versions.evidence;
  EXPECT_NE(versions.evidence.find("FAIL: versions.cuda-toolkit"), std::string::npos);
  // rel.detect: max 300 s, within 600: 0.5.
  EXPECT_DOUBLE_EQ(*Item(r, "rel.detect").score, 0.5);
  EXPECT_NE(Item(r, "rel.detect").evidence.find("max 300 s over 2 value(s)"), std::string::npos);
  // security: (1*1*1 + 3*0.75*0.5) / (1 + 3*0.75) = 2.125 / 3.25; confidence 3.25 / 4.
  EXPECT_NEAR(*r.categories[0].score, 100 * 2.125 / 3.25, 1e-9);
  EXPECT_DOUBLE_EQ(r.categories[0].confidence, 0.8125);
  EXPECT_DOUBLE_EQ(*r.categories[1].score, 50);
  // Overall: (2*0.8125*65.38 + 1*1*50) / (2*0.8125 + 1) = 156.25 / 2.625; confidence 2.625 / 3.
  EXPECT_NEAR(*r.score, 156.25 / 2.625, 1e-9);
  EXPECT_DOUBLE_EQ(r.confidence, 0.875);
  EXPECT_EQ(r.band, "Bronze");
  EXPECT_EQ(r.tier, "Bronze");
  EXPECT_TRUE(r.gates_failed.empty());
  EXPECT_TRUE(r.gates_unverified.empty());
  EXPECT_EQ(r.runs, (std::vector<int64_t>{2, 1}));
}

// Evidence older than the rubric's stale_after_days is flagged, run by run, in the notes and
// the JSON; the score is what the evidence says. Without a time to judge by, nothing is.
TEST(Rating, RunsPastTheRubricsAgeAreFlaggedStale) {
  Runs runs;
  const WallTime now = *ParseIso8601("2026-12-01T00:00:00Z");
  runs.newer.run.command = "audit";
  runs.newer.run.started_at = now - std::chrono::hours(24 * 10);
  runs.older.run.command = "reliability";
  runs.older.run.started_at = now - std::chrono::hours(24 * 120);
  const Attestation attested = Soc2(true);
  const Rubric& builtin = Rubric::Builtin();
  ASSERT_EQ(builtin.StaleAfterDays(), 90);
  const Rating r = RateEvidence(builtin, {{&runs.newer, &runs.older}, &attested, {}, now});
  EXPECT_EQ(r.stale_runs, (std::vector<int64_t>{1}));
  EXPECT_NE(std::ranges::find(r.notes,
                              "stale evidence: run 1 (reliability, 2026-08-03) is 120 "
                              "days old, past the rubric's 90"),
            r.notes.end())
      << nlohmann::json(r.notes);
  EXPECT_EQ(RatingJson(r)["stale_runs"], nlohmann::json({1}));
  const Rating fresh =
      RateEvidence(builtin, {{&runs.newer, &runs.older}, &attested, {}, runs.older.run.started_at});
  EXPECT_TRUE(fresh.stale_runs.empty());
  EXPECT_EQ(fresh.score, r.score);
  EXPECT_TRUE(RateEvidence(builtin, {{&runs.newer, &runs.older}, &attested}).stale_runs.empty());
  // A rubric without the key judges no run by its age.
  EXPECT_TRUE(
      RateEvidence(Small(), {{&runs.newer, &runs.older}, &attested, {}, now}).stale_runs.empty());
}

// A user's rubric may score an endpoint's latency against their own SLO: in ms, as it is
// recorded, and never scaled with a lab's reliability bars.
TEST(Rating, AUsersRubricScoresEndpointLatencyInItsOwnUnit) {
  const Rubric rubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "slo",
    "tiers": [{"name": "Gold", "min": 80}], "below": "Bronze",
    "untestable": {"name": "Untestable", "below_confidence": 0},
    "categories": [{"id": "availability", "title": "Availability", "weight": 1}],
    "items": [{"id": "slo.ttft", "category": "availability", "title": "TTFT p99", "weight": 1,
               "from": {"metric": "endpoint.ttft_p99", "aggregate": "max"},
               "score": {"kind": "bands", "better": "lower", "bands": [[500, 1], [2000, 0.5]],
                         "otherwise": 0, "unit": "ms"}}]
  })");
  RunRecord run;
  run.run.id = 3;
  run.metrics = {{"endpoint.ttft_p99", {{"concurrency", "8"}}, 420, "ms"},
                 {"endpoint.ttft_p99", {{"concurrency", "64"}}, 800, "ms"}};
  EXPECT_EQ(RateEvidence(rubric, {{&run}, nullptr}).items.at(0).score, 0.5);  // the worst, 800
  EXPECT_EQ(RateEvidence(rubric.WithTimesScaled(1.0 / 60), {{&run}, nullptr}).items.at(0).score,
            0.5);
}

// The built-in rubric's training items: the worst rank set's exposed communication (23.5%:
// within 35, 0.3) and the smallest share of a published figure (0.5 and 0.95: the 0.5, below
// 0.6, 0); a run without them leaves both evidence missing.
TEST(Rating, TheBuiltInRubricScoresATrainingJob) {
  RunRecord run;
  run.run.id = 4;
  run.metrics = {{"train.exposed_comm_pct", {{"phase", "moe"}}, 23.5, "%"},
                 {"train.exposed_comm_pct", {{"phase", "dense"}}, 4, "%"},
                 {"train.share_of_reference", {{"log", "a.log"}}, 0.5, "ratio"},
                 {"train.share_of_reference", {{"log", "b.log"}}, 0.95, "ratio"}};
  const Rating rated = RateEvidence(Rubric::Builtin(), {{&run}, nullptr});
  std::map<std::string, std::optional<double>> scores;
  for (const ItemRating& item : rated.items) scores[item.id] = item.score;
  EXPECT_EQ(scores.at("networking.training-exposed-comm"), 0.3);
  EXPECT_EQ(scores.at("networking.training-throughput"), 0.0);
  RunRecord none;
  const Rating empty = RateEvidence(Rubric::Builtin(), {{&none}, nullptr});
  for (const ItemRating& item : empty.items) {
    if (item.id.starts_with("networking.training")) {
      EXPECT_FALSE(item.score) << item.id;
    }
  }
}

// The built-in rubric's active-check items, from `cmax health schedule`'s fleet run: three of
// four nodes checked this week (0.75: at least 0.5, 0.3) and every checked node passed (1.0).
TEST(Rating, TheBuiltInRubricScoresTheFleetsActiveChecks) {
  RunRecord run;
  run.run.id = 9;
  run.metrics = {{"active.fleet_checked_share", {}, 0.75, "ratio"},
                 {"active.fleet_pass_share", {}, 1.0, "ratio"},
                 {"active.fleet_nodes", {}, 4, "nodes"}};
  const Rating rated = RateEvidence(Rubric::Builtin(), {{&run}, nullptr});
  EXPECT_EQ(Item(rated, "monitoring.active-checks-weekly").score, 0.3);
  EXPECT_EQ(Item(rated, "monitoring.active-checks-pass").score, 1.0);
  RunRecord none;
  const Rating empty = RateEvidence(Rubric::Builtin(), {{&none}, nullptr});
  EXPECT_FALSE(Item(empty, "monitoring.active-checks-weekly").score);
}

TEST(Rating, AFailedGateCapsTheTier) {
  const Runs runs;
  const Attestation lapsed = Soc2(false);
  const Rating r = RateEvidence(Small(), {{&runs.newer, &runs.older}, &lapsed});
  EXPECT_EQ(r.band, "Underperforming");  // the gate's own zero pulls the score too
  EXPECT_EQ(r.tier, "Underperforming");
  ASSERT_EQ(r.gates_failed.size(), 1U);
  EXPECT_NE(r.gates_failed[0].find("sec.gate: no SOC 2 (caps the tier at Underperforming)"),
            std::string::npos);
  // A perfect record besides does not lift it.
  RunRecord perfect;
  perfect.run.id = 3;
  for (const char* id :
       {"versions.nvidia-driver", "versions.cuda-toolkit", "versions.runc", "versions.docker"}) {
    perfect.findings.push_back(Found(id, CheckStatus::kPass));
  }
  perfect.metrics = {{"reliability.detect", {}, 30, "s"}};
  const Rating capped = RateEvidence(Small(), {{&perfect}, &lapsed});
  EXPECT_EQ(capped.band, "Gold");
  EXPECT_EQ(capped.tier, "Underperforming");
}

TEST(Rating, MissingEvidenceLowersConfidenceNeverTheScore) {
  const Runs runs;
  const Rating r = RateEvidence(Small(), {{&runs.newer, &runs.older}, nullptr});
  EXPECT_FALSE(Item(r, "sec.gate").score);
  EXPECT_EQ(Item(r, "sec.gate").coverage, 0);
  // security: 1.125 / 2.25 = 50 over what is known; confidence 2.25 / 4.
  EXPECT_DOUBLE_EQ(*r.categories[0].score, 50);
  EXPECT_DOUBLE_EQ(r.categories[0].confidence, 0.5625);
  EXPECT_DOUBLE_EQ(*r.score, 50);
  EXPECT_NEAR(r.confidence, 2.125 / 3, 1e-12);
  EXPECT_EQ(r.tier, "Bronze");
  ASSERT_EQ(r.gates_unverified.size(), 1U);
  EXPECT_NE(r.gates_unverified[0].find("no attestation given"), std::string::npos);
  EXPECT_NE(std::ranges::find(r.notes, "provisional: a gate could not be checked"), r.notes.end());

  // Nothing at all: no score, Untestable.
  const Rating none = RateEvidence(Small(), {});
  EXPECT_FALSE(none.score);
  EXPECT_EQ(none.confidence, 0);
  EXPECT_EQ(none.tier, "Untestable");
  EXPECT_EQ(none.band, "Underperforming");
}

TEST(Rating, ChecksThatDoNotApplyLeaveTheWeights) {
  RunRecord skipped;
  skipped.run.id = 5;
  for (const char* id :
       {"versions.nvidia-driver", "versions.cuda-toolkit", "versions.runc", "versions.docker"}) {
    skipped.findings.push_back(Found(id, CheckStatus::kSkip));
  }
  skipped.metrics = {{"reliability.detect", {}, 700, "s"}};
  const Attestation attested = Soc2(true);
  const Rating r = RateEvidence(Small(), {{&skipped}, &attested});
  EXPECT_FALSE(Item(r, "sec.versions").applies);
  EXPECT_FALSE(Item(r, "sec.versions").score);
  // security is the gate alone (1 of 1 applicable weight), reliability past every band: 0.
  EXPECT_DOUBLE_EQ(*r.categories[0].score, 100);
  EXPECT_DOUBLE_EQ(r.categories[0].confidence, 1);
  EXPECT_DOUBLE_EQ(*r.categories[1].score, 0);
  EXPECT_NEAR(*r.score, 200.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(r.confidence, 1);
}

// A later run that could not read a check, or to which it did not apply, does not hide an
// earlier FAIL; a check not run for want of --allow-side-effects is evidence missing, not N/A;
// the attestation answers the ATTEST checks it speaks to.
TEST(Rating, NewerRunsDoNotHideOlderFailuresAndSkipsAreNotAllAlike) {
  const Rubric rubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "checks",
    "tiers": [{"name": "Gold", "min": 80}], "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0},
    "categories": [{"id": "security", "title": "Security", "weight": 1}],
    "items": [{"id": "sec.checks", "category": "security", "title": "Checks", "weight": 1,
               "from": {"audit_checks": ["versions.cuda-toolkit", "versions.runc",
                                         "health.dcgm-diag", "isolation.nvlink-boundary",
                                         "networking.ib-sm-key"]},
               "score": {"kind": "audit"}}]
  })");
  RunRecord cluster;  // the cluster's audit
  cluster.run.id = 1;
  cluster.findings = {Found("versions.cuda-toolkit", CheckStatus::kFail),
                      Found("versions.runc", CheckStatus::kPass),
                      Found("health.dcgm-diag", CheckStatus::kSkip),
                      Found("isolation.nvlink-boundary", CheckStatus::kAttest),
                      Found("networking.ib-sm-key", CheckStatus::kAttest)};
  RunRecord login;  // a later run on a login node: no GPU, nothing read
  login.run.id = 2;
  login.findings = {Found("versions.cuda-toolkit", CheckStatus::kSkip),
                    Found("versions.runc", CheckStatus::kUnknown)};
  const Rating bare = RateEvidence(rubric, {{&login, &cluster}, nullptr});
  const ItemRating& item = Item(bare, "sec.checks");
  // cuda FAIL (run 1, not hidden), runc PASS (run 1); dcgm-diag, nvlink and sm-key missing.
  EXPECT_DOUBLE_EQ(*item.score, 0.5);
  EXPECT_DOUBLE_EQ(item.coverage, 2.0 / 5);
  EXPECT_NE(item.evidence.find("1 not run without --allow-side-effects"), std::string::npos)
      << item.evidence;
  EXPECT_NE(item.evidence.find("FAIL: versions.cuda-toolkit"), std::string::npos);
  // The attestation answers two ATTEST checks: NVLink domains exclusive (yes), SM key (no).
  Attestation attested;
  attested.source = "S";
  attested.facts["isolation.nvlink_domain_exclusive"] = true;
  attested.facts["isolation.ib_sm_key"] = false;
  const Rating answered = RateEvidence(rubric, {{&login, &cluster}, &attested});
  const ItemRating& with = Item(answered, "sec.checks");
  EXPECT_DOUBLE_EQ(*with.score, 2.0 / 4);  // runc and nvlink 1, cuda and sm-key 0
  EXPECT_DOUBLE_EQ(with.coverage, 4.0 / 5);
  EXPECT_NE(with.evidence.find("2 ATTEST answered by the attestation"), std::string::npos)
      << with.evidence;
  EXPECT_NE(with.evidence.find("networking.ib-sm-key (attested no)"), std::string::npos);
}

TEST(Rating, AGateIsMetOnlyInFullAndNoEvidenceIsUntestable) {
  const Rubric rubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "gate",
    "tiers": [{"name": "Gold", "min": 50}], "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0},
    "categories": [{"id": "security", "title": "Security", "weight": 1}],
    "items": [{"id": "sec.versions", "category": "security", "title": "V", "weight": 1,
               "from": {"audit_checks": ["versions.cuda-toolkit", "versions.runc"]},
               "score": {"kind": "audit"},
               "gate": {"cap": "Underperforming", "why": "versions below minimum"}}]
  })");
  RunRecord mixed;
  mixed.run.id = 1;
  mixed.findings = {Found("versions.cuda-toolkit", CheckStatus::kFail),
                    Found("versions.runc", CheckStatus::kPass)};
  const Rating r = RateEvidence(rubric, {{&mixed}, nullptr});
  EXPECT_EQ(r.band, "Gold");  // 50 of 100
  EXPECT_EQ(r.tier, "Underperforming");
  EXPECT_EQ(r.gates_failed.size(), 1U);
  // No evidence at all is Untestable even when the rubric asks for no confidence.
  EXPECT_EQ(RateEvidence(rubric, {}).tier, "Untestable");
}

TEST(Rating, RendersTextAndJson) {
  const Runs runs;
  const Attestation attested = Soc2(true);
  const Rating r = RateEvidence(Small(), {{&runs.newer, &runs.older}, &attested});
  const std::string text = RatingText(r, 1);
  EXPECT_TRUE(text.starts_with("Tier: Bronze\nScore: 59.5 of 100, confidence 88%; provider P\n"))
      << text;
  EXPECT_EQ(RatingLine(r, 12),
            "Tier: Bronze (score 59.5, confidence 88%; cmax rate 12 -v for each item)\n");
  Rating unscored = r;
  unscored.score.reset();
  EXPECT_EQ(RatingLine(unscored, 3),
            "Tier: Bronze (score none, confidence 88%; cmax rate 3 -v for each item)\n");
  EXPECT_NE(text.find("sec.versions"), std::string::npos);
  EXPECT_NE(text.find("FAIL: versions.cuda-toolkit"), std::string::npos);  // -v: the evidence
  const json doc = RatingJson(r);
  EXPECT_EQ(doc["schema"], "cmax.rating/v1");
  EXPECT_EQ(doc["tier"], "Bronze");
  EXPECT_EQ(doc["items"].size(), 3U);
  EXPECT_EQ(doc["items"][0]["gate"]["cap"], "Underperforming");
  EXPECT_EQ(doc["categories"][1]["score"], 50.0);
}

}  // namespace
}  // namespace cmax::rate

namespace cmax::rate {
namespace {

// A step watched and never detected: the watch is a lower bound on the time, which decides the
// score only when it lies past every band (then the provider scores `otherwise`, whatever the
// real time); a shorter watch is evidence missing, never a pass. A lab's rubric scales the bands.
TEST(Rating, AStepNeverDetectedScoresOnlyWhenTheWatchPassesEveryBand) {
  const Rubric rubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "watched",
    "tiers": [{"name": "Gold", "min": 80}], "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0},
    "categories": [{"id": "reliability", "title": "Reliability", "weight": 1}],
    "items": [
      {"id": "rel.detect", "category": "reliability", "title": "Detect", "weight": 1,
       "from": {"metric": "reliability.detect", "at_least": "reliability.watched"},
       "score": {"kind": "bands", "better": "lower", "bands": [[120, 1], [600, 0.5]],
                 "otherwise": 0, "unit": "s"}}]
  })");
  const auto item = [](const Rating& r) { return r.items.at(0); };
  RunRecord run;
  run.run.id = 5;
  // Step a detected at 30 s; step b watched 600 s (exactly the last limit) and never detected.
  run.metrics = {{"reliability.detect", {{"step", "a"}}, 30, "s"},
                 {"reliability.watched", {{"step", "a"}}, 31, "s"},
                 {"reliability.watched", {{"step", "b"}}, 600, "s"}};
  const ItemRating never = item(RateEvidence(rubric, {{&run}, nullptr}));
  ASSERT_TRUE(never.score);
  EXPECT_EQ(*never.score, 0) << "more than 600 s is past every band";
  EXPECT_EQ(never.coverage, 1);
  EXPECT_NE(never.evidence.find("1 not seen while watched (up to 600 s), past every band"),
            std::string::npos)
      << never.evidence;
  // Watched only 100 s: it may have been detected at 101 s, so the bound alone does not score.
  run.metrics[2].value = 100;
  const ItemRating short_watch = item(RateEvidence(rubric, {{&run}, nullptr}));
  ASSERT_TRUE(short_watch.score);
  EXPECT_EQ(*short_watch.score, 1) << "step a alone, at 30 s";
  EXPECT_EQ(short_watch.coverage, 0.5) << "step b is evidence missing";
  EXPECT_NE(short_watch.evidence.find("too short a watch to score"), std::string::npos);
  run.metrics.erase(run.metrics.begin());  // and with no step detected at all: no evidence
  const ItemRating none = item(RateEvidence(rubric, {{&run}, nullptr}));
  EXPECT_FALSE(none.score);
  EXPECT_NE(none.evidence.find("no run records reliability.detect; 2 not seen"), std::string::npos)
      << none.evidence;

  // A lab scales its bars down by 60, and the rubric's time bands with them: 100 s watched is
  // then past every band (2 s and 10 s).
  const Rubric lab = rubric.WithTimesScaled(1.0 / 60);
  EXPECT_NE(lab.Name().find("watched (every time band x0.01667, for a lab)"), std::string::npos)
      << lab.Name();
  EXPECT_DOUBLE_EQ(lab.Items()[0].scoring.bands[0].first, 2);
  EXPECT_DOUBLE_EQ(lab.Items()[0].scoring.bands[1].first, 10);
  const ItemRating scaled = item(RateEvidence(lab, {{&run}, nullptr}));
  ASSERT_TRUE(scaled.score);
  EXPECT_EQ(*scaled.score, 0);
  // Bands of other units stay as they are.
  const Rubric halved = Rubric::Builtin().WithTimesScaled(0.5);  // named: the loop reads it
  EXPECT_EQ(halved.Items().size(), Rubric::Builtin().Items().size());
  for (const RubricItem& i : halved.Items()) {
    if (i.id == "pricing.egress") {
      EXPECT_DOUBLE_EQ(i.scoring.bands[1].first, 0.02);
    }
    if (i.id == "reliability.time-to-detect") {
      EXPECT_DOUBLE_EQ(i.scoring.bands[0].first, 60);
    }
  }
}

}  // namespace
}  // namespace cmax::rate
