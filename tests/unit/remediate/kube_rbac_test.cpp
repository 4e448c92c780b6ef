// deploy/kubernetes/rbac.yaml against what cmax really sends: every request the controller and
// the agent make in a full run against the stand-in API server is mapped to its RBAC (group,
// resource, verb, namespace), and must be allowed to that account; and every verb granted must
// be one that is used, so the manifests stay least-privilege as the code changes.
#include "support/kube_rbac.hpp"

#include <gtest/gtest.h>

#include "remediate/kube_conditions.hpp"
#include "remediate/kubernetes.hpp"
#include "support/conditions.hpp"
#include "support/fake_kube_api.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The attributes the API server authorises, for the shapes of path cmax sends.
TEST(KubeRbac, ARequestIsTheAccessTheApiServerChecks) {
  const auto access = [](const std::string& method, const std::string& target) {
    return testing::ToRbacAccess({.method = method, .target = target});
  };
  using A = testing::RbacAccess;
  EXPECT_EQ(access("GET", "/api/v1/nodes?limit=500"), (A{"", "nodes", "list", ""}));
  EXPECT_EQ(access("GET", "/api/v1/nodes/gpu1/proxy/configz"), (A{"", "nodes/proxy", "get", ""}));
  EXPECT_EQ(access("GET", "/api/v1/namespaces"), (A{"", "namespaces", "list", ""}));
  EXPECT_EQ(access("GET", "/api/v1/namespaces/cmax"), (A{"", "namespaces", "get", ""}));
  EXPECT_EQ(access("PATCH", "/api/v1/namespaces/cmax/status"),
            (A{"", "namespaces/status", "patch", ""}));
  EXPECT_EQ(access("GET", "/api/v1/namespaces/cmax/pods?labelSelector=a%3Db"),
            (A{"", "pods", "list", "cmax"}));
  EXPECT_EQ(access("GET", "/api/v1/namespaces/cmax/pods/p1/log?container=audit"),
            (A{"", "pods/log", "get", "cmax"}));
  EXPECT_EQ(access("DELETE", "/api/v1/namespaces/cmax/pods/p1"), (A{"", "pods", "delete", "cmax"}));
  EXPECT_EQ(access("POST", "/apis/batch/v1/namespaces/cmax/jobs"),
            (A{"batch", "jobs", "create", "cmax"}));
  EXPECT_EQ(access("GET", "/apis/apps/v1/daemonsets"), (A{"apps", "daemonsets", "list", ""}));
}

class KubeRbacTest : public ::testing::Test {
 protected:
  void SetUp() override {
    connection_.server = api_.Url();
    connection_.token = "token-1";
    api_.AddNode("gpu1");
    api_.AddNode("gpu2");
    api_.AddNode("spare1", {{"cmax.dev/spare", "true"}},
                 json::array({{{"key", "cmax.dev/spare"}, {"effect", "NoSchedule"}}}));
    api_.AddPod("team", "trainer-0", "gpu2");
  }
  void ExpectLeastPrivilege(const std::string& account) {
    testing::ExpectLeastPrivilege(api_.Http().Requests(), testing::GrantedBy("rbac.yaml", account),
                                  account);
  }
  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::CurlHttpClient http_;
  ManualClock clock_{WallTime(std::chrono::milliseconds(1'800'000'000'000))};
  testing::FakeKubeApi api_;
  KubeConnection connection_;
};

TEST_F(KubeRbacTest, TheControllerMayDoWhatItDoesAndNoMore) {
  KubernetesScheduler k(http_, fs_, clock_, connection_, {});
  ASSERT_TRUE(k.Nodes());
  ASSERT_TRUE(k.CmaxTakeOuts());
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 79"));
  ASSERT_TRUE(k.RequeueJobs("gpu2"));
  ASSERT_TRUE(k.BootTime("gpu2"));
  auto job = k.StartValidation("gpu2", {"true", 5min});
  ASSERT_TRUE(job);
  api_.FinishJob(*job, false, "BackoffLimitExceeded", 1);
  ASSERT_TRUE(k.PollValidation("gpu2", *job));
  ASSERT_TRUE(k.EndValidation("gpu2", true, ""));
  ASSERT_TRUE(k.Resume("gpu2"));
  auto spare = k.PickSpare();
  ASSERT_TRUE(spare);
  ASSERT_TRUE(k.SwapInSpare(*spare));
  ASSERT_TRUE(k.ReturnSpare(*spare));
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store);
  KubeApi api(http_, fs_, clock_, connection_, {});
  ASSERT_TRUE(ImportKubeConditions(api, *store));
  ExpectLeastPrivilege("cmax-controller");
}

TEST_F(KubeRbacTest, TheAgentMayOnlyWriteOntoNodes) {
  KubeApi api(http_, fs_, clock_, connection_, {});
  KubeConditionPublisher publisher(api);
  const NodeCondition c = testing::XidCondition("gpu2", 79, "reset-gpu", clock_.Now());
  ASSERT_TRUE(publisher.Publish("gpu2", {c}));
  ExpectLeastPrivilege("cmax-agent");
}

}  // namespace
}  // namespace cmax::remediate
