// The rubric as data: the built-in one parses and covers the ten categories; every way a rubric
// can be wrong is refused with an error that names the item.
#include "rate/rubric.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

namespace cmax::rate {
namespace {

using nlohmann::json;

json Minimal() {
  return json::parse(R"({
    "schema": "cmax.rubric/v1", "name": "t",
    "tiers": [{"name": "Gold", "min": 80}, {"name": "Bronze", "min": 50}],
    "below": "Underperforming",
    "untestable": {"name": "Untestable", "below_confidence": 0.4},
    "categories": [{"id": "security", "title": "Security", "weight": 1}],
    "items": [{"id": "security.versions", "category": "security", "title": "Versions",
               "weight": 1, "from": {"audit_profile": "versions"}, "score": {"kind": "audit"}}]
  })");
}

TEST(Rubric, TheBuiltinOneHasTheTenCategoriesAndAGate) {
  const Rubric& rubric = Rubric::Builtin();
  ASSERT_EQ(rubric.Categories().size(), 10U);
  for (const char* id : {"security", "lifecycle", "orchestration", "storage", "networking",
                         "reliability", "monitoring", "pricing", "partnerships", "availability"}) {
    EXPECT_TRUE(std::ranges::any_of(rubric.Categories(), [&](const auto& c) { return c.id == id; }))
        << id;
  }
  const auto gate = std::ranges::find(rubric.Items(), "security.soc2-iso27001", &RubricItem::id);
  ASSERT_NE(gate, rubric.Items().end());
  EXPECT_EQ(gate->gate_cap, "Underperforming");
  EXPECT_EQ(rubric.Tiers().front().first, "Platinum");
  EXPECT_EQ(rubric.Rank("Platinum"), 0);
  EXPECT_LT(rubric.Rank("Participation Ribbon"), rubric.Rank("Underperforming"));
  EXPECT_LT(rubric.Rank("Underperforming"), rubric.Rank("Untestable"));
  EXPECT_EQ(rubric.Sha256().size(), 64U);
  const auto versions =
      std::ranges::find(rubric.Items(), "security.minimum-versions", &RubricItem::id);
  ASSERT_NE(versions, rubric.Items().end());
  EXPECT_EQ(versions->source.audit_checks.size(), 10U);  // the versions profile's checks
  EXPECT_TRUE(Rubric::Parse(Minimal().dump()));
}

TEST(Rubric, EveryMistakeIsRefusedNamingWhere) {
  struct Case {
    const char* what;
    std::function<void(json&)> change;
    const char* error_has;
  };
  const std::vector<Case> cases = {
      {"not json", [](json& r) { r = "x"; }, "not a JSON object"},
      {"schema", [](json& r) { r["schema"] = "cmax.rubric/v2"; }, "schema"},
      {"unknown key", [](json& r) { r["weights"] = 1; }, "unknown key \"weights\""},
      {"stale days", [](json& r) { r["stale_after_days"] = 0; }, "stale_after_days"},
      {"stale text", [](json& r) { r["stale_after_days"] = "90d"; }, "stale_after_days"},
      {"item key", [](json& r) { r["items"][0]["weigth"] = 1; },
       "item security.versions: unknown key"},
      {"no category", [](json& r) { r["items"][0]["category"] = "vibes"; },
       "item security.versions: no category \"vibes\""},
      {"unknown profile",
       [](json& r) {
         r["items"][0]["from"] = {{"audit_profile", "colour"}};
       },
       "no audit profile \"colour\""},
      {"unknown check",
       [](json& r) {
         r["items"][0]["from"] = {{"audit_checks", {"versions.nvidia-driver", "x.y"}}};
       },
       "no audit check \"x.y\""},
      {"unknown metric",
       [](json& r) {
         r["items"][0]["from"] = {{"metric", "reliability.vibes"}};
         r["items"][0]["score"] = {{"kind", "bands"}, {"better", "lower"}, {"bands", {{1, 1}}}};
       },
       "no cmax phase records the metric \"reliability.vibes\""},
      {"unknown bound",
       [](json& r) {
         r["items"][0]["from"] = {{"metric", "reliability.detect"}, {"at_least", "vibes"}};
         r["items"][0]["score"] = {{"kind", "bands"}, {"better", "lower"}, {"bands", {{1, 1}}}};
       },
       "no cmax phase records the metric \"vibes\""},
      {"bound without a metric",
       [](json& r) {
         r["items"][0]["from"] = {{"attestation", "security.soc2_or_iso27001"},
                                  {"at_least", "reliability.watched"}};
         r["items"][0]["score"] = {{"kind", "pass_fail"}};
       },
       "\"at_least\" goes with a metric"},
      {"unknown fact",
       [](json& r) {
         r["items"][0]["from"] = {{"attestation", "security.vibes"}};
         r["items"][0]["score"] = {{"kind", "pass_fail"}};
       },
       "derives no attestation fact \"security.vibes\""},
      {"bands in another unit",
       [](json& r) {
         r["items"][0]["from"] = {{"metric", "endpoint.ttft_p99"}};
         r["items"][0]["score"] = {
             {"kind", "bands"}, {"better", "lower"}, {"bands", {{1, 1}}}, {"unit", "s"}};
       },
       "endpoint.ttft_p99 is recorded in ms, so its bands need \"unit\": \"ms\""},
      {"bands without a unit",
       [](json& r) {
         r["items"][0]["from"] = {{"metric", "endpoint.error_ratio"}};
         r["items"][0]["score"] = {{"kind", "bands"}, {"better", "lower"}, {"bands", {{1, 1}}}};
       },
       "endpoint.error_ratio is recorded in ratio"},
      {"two sources", [](json& r) { r["items"][0]["from"]["metric"] = "reliability.detect"; },
       "exactly one of"},
      {"pass_fail on audit",
       [](json& r) {
         r["items"][0]["score"] = {{"kind", "pass_fail"}};
       },
       "pass_fail score reads a yes/no attestation fact"},
      {"bands out of order",
       [](json& r) {
         r["items"][0]["from"] = {{"metric", "reliability.detect"}};
         r["items"][0]["score"] = {
             {"kind", "bands"}, {"better", "lower"}, {"bands", {{600, 0.5}, {120, 1}}}};
       },
       "band limits must run from the best to the worst"},
      {"band score past 1",
       [](json& r) {
         r["items"][0]["from"] = {{"metric", "reliability.detect"}};
         r["items"][0]["score"] = {{"kind", "bands"}, {"better", "lower"}, {"bands", {{1, 2}}}};
       },
       "score from 0 to 1"},
      {"gate to nowhere",
       [](json& r) {
         r["items"][0]["gate"] = {{"cap", "Tin"}, {"why", "x"}};
       },
       "caps at no tier \"Tin\""},
      {"tiers upside down", [](json& r) { r["tiers"][1]["min"] = 90; }, "minimums must fall"},
      {"category without items",
       [](json& r) {
         r["categories"].push_back({{"id", "storage"}, {"title", "S"}, {"weight", 1}});
       },
       "category storage has no item"},
      {"item twice", [](json& r) { r["items"].push_back(r["items"][0]); }, "listed twice"},
      {"negative weight", [](json& r) { r["items"][0]["weight"] = -1; },
       "\"weight\" must be a number"},
      {"goodput key",
       [](json& r) {
         r["goodput"] = {{"gpus", 8}};
       },
       "goodput: unknown key \"gpus\""},
      {"goodput mtbf",
       [](json& r) {
         r["goodput"] = {{"mtbf_gpu_hours", 0}};
       },
       "must be above 0"},
      {"goodput mtbf too small to price",
       [](json& r) {
         r["goodput"] = {{"job_gpus", 8}, {"contract_hours", 730}, {"mtbf_gpu_hours", 1e-300}};
       },
       "mtbf_gpu_hours must be at least 1"},
      {"half a GPU",
       [](json& r) {
         r["goodput"] = {{"job_gpus", 0.5}, {"contract_hours", 730}, {"mtbf_gpu_hours", 100}};
       },
       "whole GPUs"},
      {"every item of a category weighs 0", [](json& r) { r["items"][0]["weight"] = 0; },
       "every item of it weighs 0"},
      {"every category weighs 0", [](json& r) { r["categories"][0]["weight"] = 0; },
       "every category weighs 0"},
      {"a name with a terminal escape", [](json& r) { r["name"] = "t\x1b[31m"; },
       "\"name\" holds a line break, a control character"},
      {"a title over two lines", [](json& r) { r["items"][0]["title"] = "a\nb"; },
       "\"title\" holds a line break"},
  };
  for (const Case& c : cases) {
    json rubric = Minimal();
    c.change(rubric);
    const auto parsed = Rubric::Parse(rubric.dump());
    ASSERT_FALSE(parsed) << c.what;
    EXPECT_NE(parsed.error().message.find(c.error_has), std::string::npos)
        << c.what << ": " << parsed.error().message;
  }
}

}  // namespace
}  // namespace cmax::rate
