// Conditions handed from node agents to a central controller through Node objects: the
// encoding (round trip, order, cap, what a bad annotation does), the CmaxFault summary, and
// publishing and importing against the stand-in API server.
#include "remediate/kube_conditions.hpp"

#include <gtest/gtest.h>

#include "support/fake_kube_api.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};

NodeCondition Condition(const std::string& kind, int code, Severity severity,
                        bool recovered = false, const std::string& message = "") {
  NodeCondition c;
  c.node = "gpu2";
  c.key = kind + "/0000:17:00/" + std::to_string(code);
  c.component = "gpu";
  c.device = "0000:17:00";
  c.kind = kind;
  c.code = code;
  c.severity = severity;
  c.action = "reset-gpu";
  c.message = message;
  c.count = 2;
  c.first_seen = kT0;
  c.last_seen = kT0 + 5s;
  c.recovered = recovered;
  return c;
}

TEST(KubeConditions, RoundTripWorstFirstAndCapped) {
  const std::vector<NodeCondition> in = {
      Condition("soft_lockup", 0, Severity::kMedium),
      Condition("xid", 79, Severity::kCritical, false, "NVRM: Xid (PCI:0000:17:00): 79"),
      Condition("xid", 48, Severity::kCritical, /*recovered=*/true)};
  const std::string text = EncodeConditions(in);
  auto out = DecodeConditions("gpu2", text);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 3U);
  EXPECT_EQ((*out)[0].key, "xid/0000:17:00/79");
  EXPECT_EQ((*out)[1].kind, "soft_lockup");
  EXPECT_TRUE((*out)[2].recovered);
  const NodeCondition& c = (*out)[0];
  EXPECT_EQ(c.node, "gpu2");
  EXPECT_EQ(c.code, 79);
  EXPECT_EQ(c.severity, Severity::kCritical);
  EXPECT_EQ(c.action, "reset-gpu");
  EXPECT_EQ(c.message, "NVRM: Xid (PCI:0000:17:00): 79");
  EXPECT_EQ(c.count, 2U);
  EXPECT_EQ(c.first_seen, kT0);
  EXPECT_EQ(c.last_seen, kT0 + 5s);
  EXPECT_EQ(c.action_source, "kubernetes");
  // The Node's name wins over whatever the text was written for.
  EXPECT_EQ(DecodeConditions("gpu9", text).value()[0].node, "gpu9");
  EXPECT_EQ(DecodeConditions("gpu2", EncodeConditions(in, 1)).value().size(), 1U);
  NodeCondition long_message = Condition("xid", 13, Severity::kHigh, false, std::string(5000, 'x'));
  EXPECT_EQ(DecodeConditions("gpu2", EncodeConditions({long_message})).value()[0].message.size(),
            300U);
}

TEST(KubeConditions, ABadAnnotationIsRefusedNotGuessed) {
  EXPECT_FALSE(DecodeConditions("n", "not json"));
  EXPECT_FALSE(DecodeConditions("n", R"({"key": "x"})"));
  EXPECT_FALSE(DecodeConditions("n", R"([{"severity": "high"}])"));  // no key
  EXPECT_FALSE(DecodeConditions("n", R"([{"key": "k", "severity": "dire",
      "first_seen": "2027-01-15T08:00:00Z", "last_seen": "2027-01-15T08:00:00Z"}])"));
  EXPECT_FALSE(DecodeConditions("n", R"([{"key": "k", "severity": "high"}])"));  // no times
  EXPECT_TRUE(DecodeConditions("n", "[]").value().empty());
}

TEST(KubeConditions, TheSummaryNamesTheWorstUnrecoveredSeriousFault) {
  EXPECT_FALSE(SummarizeFaults({}).active);
  EXPECT_FALSE(SummarizeFaults({Condition("soft_lockup", 0, Severity::kMedium)}).active);
  EXPECT_FALSE(SummarizeFaults({Condition("xid", 79, Severity::kCritical, true)}).active);
  const FaultSummary s =
      SummarizeFaults({Condition("pcie_width", 0, Severity::kHigh, false, "x8 of x16"),
                       Condition("xid", 79, Severity::kCritical, false, "fallen off the bus")});
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.reason, "Xid79");
  EXPECT_EQ(s.message, "fallen off the bus (reset-gpu); 1 more");
  EXPECT_EQ(SummarizeFaults({Condition("soft_lockup", 0, Severity::kHigh)}).reason, "SoftLockup");
}

class KubeConditionsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    connection_.server = api_.Url();
    connection_.token = "token-1";
    api_.AddNode("gpu1");
    api_.AddNode("gpu2");
  }
  std::vector<std::string> Calls() {
    std::vector<std::string> out;
    for (const auto& r : api_.Http().Requests()) out.push_back(r.method + " " + r.target);
    return out;
  }
  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::CurlHttpClient http_;
  ManualClock clock_{kT0};
  testing::FakeKubeApi api_;
  KubeConnection connection_;
  KubeApi Api() { return KubeApi(http_, fs_, clock_, connection_, {}); }
};

TEST_F(KubeConditionsApiTest, PublishWritesOnlyWhatChanged) {
  KubeApi api = Api();
  KubeConditionPublisher publisher(api);
  // Nothing serious and no condition before: the annotation only.
  ASSERT_TRUE(publisher.Publish("gpu2", {Condition("soft_lockup", 0, Severity::kMedium)}));
  EXPECT_EQ(Calls(),
            (std::vector<std::string>{"GET /api/v1/nodes/gpu2", "PATCH /api/v1/nodes/gpu2"}));
  api_.Http().ClearRequests();
  auto again = publisher.Publish("gpu2", {Condition("soft_lockup", 0, Severity::kMedium)});
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, "unchanged");
  EXPECT_TRUE(Calls().empty());

  const std::vector<NodeCondition> faulty = {
      Condition("soft_lockup", 0, Severity::kMedium),
      Condition("xid", 79, Severity::kCritical, false, "fallen off the bus")};
  ASSERT_TRUE(publisher.Publish("gpu2", faulty));
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes/gpu2", "PATCH /api/v1/nodes/gpu2",
                                               "PATCH /api/v1/nodes/gpu2/status"}));
  const json node = api_.Node("gpu2");
  EXPECT_EQ(node["metadata"]["annotations"]["cmax.dev/conditions"], EncodeConditions(faulty));
  const json& fault = node["status"]["conditions"][1];
  EXPECT_EQ(fault["type"], "CmaxFault");
  EXPECT_EQ(fault["status"], "True");
  EXPECT_EQ(fault["reason"], "Xid79");
  EXPECT_TRUE(fault.contains("lastTransitionTime"));

  // A publisher started anew (an agent restart) finds its text already there.
  KubeConditionPublisher restarted(api);
  api_.Http().ClearRequests();
  auto r = restarted.Publish("gpu2", faulty);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "already published");
}

TEST_F(KubeConditionsApiTest, ImportReadsEveryNodeAndSkipsABadOne) {
  KubeApi api = Api();
  KubeConditionPublisher publisher(api);
  ASSERT_TRUE(publisher.Publish("gpu1", {Condition("xid", 48, Severity::kCritical)}));
  KubeConditionPublisher other(api);
  ASSERT_TRUE(other.Publish(
      "gpu2", {Condition("xid", 79, Severity::kCritical), Condition("xid", 13, Severity::kHigh)}));
  api_.AddNode("gpu3");  // someone wrote nonsense on it
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store) << store.error().message;
  {
    json patch;
    patch["metadata"]["annotations"]["cmax.dev/conditions"] = "{broken";
    KubeApi a = Api();
    ASSERT_TRUE(a.PatchNode("gpu3", [&](const json&, std::string&) { return patch; }));
  }
  auto n = ImportKubeConditions(api, *store);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 3);
  const auto gpu2 = store->LoadConditions("gpu2").value();
  ASSERT_EQ(gpu2.size(), 2U);
  EXPECT_EQ(gpu2[0].node, "gpu2");
  EXPECT_EQ(store->LoadConditions("gpu1").value().size(), 1U);
  EXPECT_TRUE(store->LoadConditions("gpu3").value().empty());
}

}  // namespace
}  // namespace cmax::remediate
