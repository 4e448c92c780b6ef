// What moved between two ratings: a check fixed between two audits moves its item, its
// category and the tier, with the evidence before and after; the same evidence in another run
// moves nothing; another rubric is said.
#include "rate/compare.hpp"

#include <algorithm>
#include <gtest/gtest.h>

namespace cmax::rate {
namespace {

const Rubric& TwoItems() {
  static const Rubric kRubric = *Rubric::Parse(R"({
    "schema": "cmax.rubric/v1", "name": "two",
    "tiers": [{"name": "Gold", "min": 80}, {"name": "Bronze", "min": 50}],
    "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0.1},
    "categories": [{"id": "security", "title": "Security", "weight": 1},
                   {"id": "reliability", "title": "Reliability", "weight": 1}],
    "items": [
      {"id": "sec.versions", "category": "security", "title": "Versions", "weight": 1,
       "from": {"audit_checks": ["versions.cuda-toolkit", "versions.runc"]},
       "score": {"kind": "audit"}},
      {"id": "rel.detect", "category": "reliability", "title": "Detect", "weight": 1,
       "from": {"metric": "reliability.detect"},
       "score": {"kind": "bands", "better": "lower", "bands": [[120, 1]], "otherwise": 0,
                 "unit": "s"}}]
  })");
  return kRubric;
}

RunRecord StoredRun(int64_t id, CheckStatus cuda) {
  RunRecord record;
  record.run.id = id;
  Finding a;
  a.check_id = "versions.cuda-toolkit";
  a.status = cuda;
  Finding b;
  b.check_id = "versions.runc";
  b.status = CheckStatus::kPass;
  record.findings = {a, b};
  record.metrics = {{"reliability.detect", {}, 60, "s"}};
  return record;
}

TEST(Compare, AFixedCheckMovesItsItemCategoryAndTier) {
  const RunRecord before_run = StoredRun(1, CheckStatus::kFail);
  const RunRecord after_run = StoredRun(2, CheckStatus::kPass);
  const Rating before = RateEvidence(TwoItems(), {{&before_run}, nullptr});
  const Rating after = RateEvidence(TwoItems(), {{&after_run}, nullptr});
  const Comparison c = CompareRatings(before, after);
  EXPECT_EQ(c.tier_before, "Bronze");  // (50 + 100) / 2 = 75
  EXPECT_EQ(c.tier_after, "Gold");     // 100
  ASSERT_EQ(c.categories.size(), 1U);  // reliability did not move
  EXPECT_EQ(c.categories[0].id, "security");
  EXPECT_DOUBLE_EQ(*c.categories[0].before, 50);
  EXPECT_DOUBLE_EQ(*c.categories[0].after, 100);
  // rel.detect read 60 s in run 1 and in run 2: the same evidence, not a move.
  ASSERT_EQ(c.items.size(), 1U);
  EXPECT_EQ(c.items[0].id, "sec.versions");
  EXPECT_NE(c.items[0].evidence_before.find("FAIL: versions.cuda-toolkit"), std::string::npos);
  EXPECT_EQ(c.items[0].evidence_after.find("FAIL"), std::string::npos);
  const std::string text = ComparisonText(c);
  EXPECT_TRUE(text.starts_with("Tier: Bronze -> Gold\nScore: 75.0 -> 100.0")) << text;
  EXPECT_NE(text.find("sec.versions (security): 0.50 -> 1.00"), std::string::npos) << text;
  const auto doc = ComparisonJson(c);
  EXPECT_EQ(doc["schema"], "cmax.comparison/v1");
  EXPECT_EQ(doc["tier"]["after"], "Gold");
  EXPECT_EQ(doc["runs"]["before"], nlohmann::json::array({1}));
}

TEST(Compare, TheSameEvidenceMovesNothingAndAnotherRubricIsSaid) {
  const RunRecord one = StoredRun(1, CheckStatus::kPass);
  const RunRecord two = StoredRun(2, CheckStatus::kPass);
  const Rating a = RateEvidence(TwoItems(), {{&one}, nullptr});
  const Comparison same = CompareRatings(a, RateEvidence(TwoItems(), {{&two}, nullptr}));
  EXPECT_TRUE(same.items.empty());
  EXPECT_TRUE(same.categories.empty());
  EXPECT_TRUE(same.same_rubric);
  EXPECT_NE(ComparisonText(same).find("Tier: Gold (unchanged)"), std::string::npos);
  EXPECT_NE(ComparisonText(same).find("Nothing moved."), std::string::npos);
  // Only a metric moved: its name, labels and unit come from the store and reach a terminal
  // shown, not obeyed.
  Comparison metrics_only = same;
  metrics_only.metrics = {{.name = "x.lat\x1b[2J",
                           .labels = "node=n1\x1b]0;title\x07",
                           .unit = "ms\xC2\x9B",
                           .before = 1,
                           .after = 5}};
  const std::string shown = ComparisonText(metrics_only);
  EXPECT_NE(shown.find("x.lat"), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x07'), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xC2\x9B"), std::string::npos) << shown;
  // The built-in rubric has none of these items: they move to "not in this rubric".
  const Comparison other = CompareRatings(a, RateEvidence(Rubric::Builtin(), {{&two}, nullptr}));
  EXPECT_FALSE(other.same_rubric);
  EXPECT_NE(ComparisonText(other).find("the two ratings use different rubrics"), std::string::npos);
  EXPECT_TRUE(std::ranges::any_of(other.items, [](const ItemMove& m) {
    return m.id == "rel.detect" && m.evidence_after == "not in this rubric";
  }));
}

}  // namespace
}  // namespace cmax::rate

namespace cmax::rate {
namespace {

// Two training runs of different log files: matched by name (the only one on each side), the
// throughput's fall and the exposed time's rise named; a small move and a metric on one side
// only are not.
TEST(CompareMetricsTest, NamesWhatMovedInATrainingRun) {
  const std::vector<Metric> before = {
      {.name = "train.tokens_per_s_per_gpu",
       .labels = {{"log", "a.log"}},
       .value = 3500,
       .unit = "tokens/s"},
      {.name = "train.mfu_pct", .labels = {{"log", "a.log"}}, .value = 40, .unit = "%"},
      {.name = "train.exposed_comm_pct", .value = 5, .unit = "%"},
      {.name = "train.idle_pct", .value = 0, .unit = "%"},
  };
  const std::vector<Metric> after = {
      {.name = "train.tokens_per_s_per_gpu",
       .labels = {{"log", "b.log"}},
       .value = 1455,
       .unit = "tokens/s"},
      {.name = "train.mfu_pct", .labels = {{"log", "b.log"}}, .value = 39, .unit = "%"},
      {.name = "train.exposed_comm_pct", .value = 38, .unit = "%"},
      {.name = "train.idle_pct", .value = 2, .unit = "%"},
      {.name = "train.peak_memory_gib", .value = 70, .unit = "GiB"},
  };
  const std::vector<MetricMove> moved = CompareMetrics(before, after, 5);
  ASSERT_EQ(moved.size(), 3U);
  EXPECT_EQ(moved[0].name, "train.exposed_comm_pct");
  EXPECT_NEAR(*moved[0].change_pct, 660, 1e-9);
  EXPECT_EQ(moved[1].name, "train.idle_pct");
  EXPECT_FALSE(moved[1].change_pct);  // from 0
  EXPECT_EQ(moved[2].name, "train.tokens_per_s_per_gpu");
  EXPECT_EQ(moved[2].labels, "log=b.log");
  EXPECT_NEAR(*moved[2].change_pct, 100.0 * (1455 - 3500) / 3500, 1e-9);
  // Two of a name on one side: not matched by name alone.
  std::vector<Metric> two = after;
  two.push_back({.name = "train.tokens_per_s_per_gpu", .labels = {{"log", "c.log"}}, .value = 1});
  for (const MetricMove& m : CompareMetrics(before, two, 5)) {
    EXPECT_NE(m.name, "train.tokens_per_s_per_gpu");
  }
}

}  // namespace
}  // namespace cmax::rate
