// The Kubernetes adapter against a stand-in API server (tests/support/fake_kube_api.hpp) over
// real HTTP through libcurl: the exact requests for cordon, taint, condition, eviction and
// uncordon; operator cordons left alone; PodDisruptionBudgets respected; conflicts, an API
// server that is away, rotated tokens, paged lists; validation Jobs; spares; and the whole
// controller loop on it.
#include "remediate/kubernetes.hpp"

#include <algorithm>
#include <gtest/gtest.h>

#include "remediate/controller.hpp"
#include "remediate/journal.hpp"
#include "support/conditions.hpp"
#include "support/fake_kube_api.hpp"
#include "support/fake_process_runner.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};  // 2027-01-15T08:00:00Z

class KubernetesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), "token-1\n", 0600));
    connection_.server = api_.Url();
    connection_.token_file = dir_.File("token");
    options_.api.sleep = [this](Duration d) { sleeps_.push_back(d); };
    api_.AddNode("gpu1", json::object(),
                 json::array({{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}}}));
    api_.AddNode("gpu2");
  }
  KubernetesScheduler Make() {
    return KubernetesScheduler(http_, fs_, clock_, connection_, options_);
  }
  // "METHOD target" of every request the API server got, in order.
  std::vector<std::string> Calls() {
    std::vector<std::string> out;
    for (const auto& r : api_.Http().Requests()) out.push_back(r.method + " " + r.target);
    return out;
  }
  json Body(size_t i) { return json::parse(api_.Http().Requests().at(i).body); }
  std::string Header(size_t i, const std::string& name) {
    return api_.Http().Requests().at(i).headers.at(name);
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::CurlHttpClient http_;
  ManualClock clock_{kT0};
  testing::FakeKubeApi api_;
  KubeConnection connection_;
  KubernetesOptions options_;
  std::vector<Duration> sleeps_;
};

TEST_F(KubernetesTest, DrainCordonsTaintsAnnotatesAndSetsTheCondition) {
  auto k = Make();
  auto r = k.Drain("gpu1", "cmax: Xid 79 on 0000:17:00");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "cordoned and tainted cmax.dev/quarantine:NoSchedule");
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes/gpu1", "PATCH /api/v1/nodes/gpu1",
                                               "PATCH /api/v1/nodes/gpu1/status"}));
  EXPECT_EQ(Header(1, "content-type"), "application/merge-patch+json");
  EXPECT_EQ(Header(1, "authorization"), "Bearer token-1");
  // The patch keeps the taint that was there, adds ours, and carries the version it read.
  EXPECT_EQ(Body(1), json::parse(R"({
    "metadata": {"resourceVersion": "101",
                 "annotations": {"cmax.dev/reason": "cmax: Xid 79 on 0000:17:00",
                                 "cmax.dev/since": "2027-01-15T08:00:00Z"}},
    "spec": {"unschedulable": true,
             "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                        {"key": "cmax.dev/quarantine", "value": "true", "effect": "NoSchedule"}]}
  })"));
  EXPECT_EQ(Header(2, "content-type"), "application/strategic-merge-patch+json");
  EXPECT_EQ(Body(2), json::parse(R"({"status": {"conditions": [{
    "type": "CmaxQuarantined", "status": "True", "reason": "FaultQuarantined",
    "message": "cmax: Xid 79 on 0000:17:00",
    "lastHeartbeatTime": "2027-01-15T08:00:00Z", "lastTransitionTime": "2027-01-15T08:00:00Z"}]}})"));
  const json node = api_.Node("gpu1");
  EXPECT_TRUE(node["spec"]["unschedulable"].get<bool>());
  EXPECT_EQ(node["status"]["conditions"].size(), 2U);  // the kubelet's Ready stays

  // Again: nothing changes, one read.
  api_.Http().ClearRequests();
  r = k.Drain("gpu1", "cmax: Xid 79 on 0000:17:00");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "already drained by cmax");
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes/gpu1"}));

  // A new reason replaces ours but keeps when it was first taken out.
  clock_.Advance(5min);
  r = k.Drain("gpu1", "cmax: validation failed");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "drain reason updated");
  EXPECT_EQ(api_.Node("gpu1")["metadata"]["annotations"]["cmax.dev/since"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(api_.Node("gpu1")["spec"]["taints"].size(), 2U);
}

TEST_F(KubernetesTest, NoExecuteWhenAsked) {
  options_.taint_effect = "NoExecute";
  auto k = Make();
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 48"));
  EXPECT_EQ(api_.Node("gpu2")["spec"]["taints"][0]["effect"], "NoExecute");
}

TEST_F(KubernetesTest, ResumeUndoesExactlyWhatDrainDid) {
  auto k = Make();
  ASSERT_TRUE(k.Drain("gpu1", "cmax: Xid 79"));
  api_.Http().ClearRequests();
  clock_.Advance(10min);
  auto r = k.Resume("gpu1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "uncordoned; taint cmax.dev/quarantine removed");
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes/gpu1", "PATCH /api/v1/nodes/gpu1",
                                               "PATCH /api/v1/nodes/gpu1/status"}));
  EXPECT_EQ(Body(1), json::parse(R"({
    "metadata": {"resourceVersion": "103",
                 "annotations": {"cmax.dev/reason": null, "cmax.dev/since": null}},
    "spec": {"unschedulable": null,
             "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}
  })"));
  EXPECT_EQ(Body(2)["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ(Body(2)["status"]["conditions"][0]["reason"], "Reintroduced");
  const json node = api_.Node("gpu1");
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
  EXPECT_TRUE(node["metadata"]["annotations"].empty());
  // And again: nothing to do, no condition written.
  api_.Http().ClearRequests();
  r = k.Resume("gpu1");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "not drained; nothing to resume");
  EXPECT_EQ(Calls().size(), 1U);
}

TEST_F(KubernetesTest, AnOperatorsCordonIsNeverUndone) {
  api_.AddNode("gpu3", json::object(), json::array(), /*unschedulable=*/true);
  auto k = Make();
  auto drained = k.Drain("gpu3", "cmax: Xid 79");
  ASSERT_TRUE(drained);
  EXPECT_EQ(*drained, "cordoned by someone else; left as it is");
  auto resumed = k.Resume("gpu3");
  ASSERT_FALSE(resumed);
  EXPECT_EQ(resumed.error().code, ErrorCode::kPermissionDenied);
  for (const std::string& call : Calls()) EXPECT_TRUE(call.starts_with("GET")) << call;
  EXPECT_TRUE(api_.Node("gpu3")["spec"]["unschedulable"].get<bool>());
  EXPECT_TRUE(api_.Node("gpu3")["metadata"]["annotations"].empty());
}

TEST_F(KubernetesTest, EvictsThroughTheEvictionApiAndRespectsBudgets) {
  api_.AddPod("team", "trainer-0", "gpu1", "StatefulSet");
  api_.AddPod("team", "server-x", "gpu1", "ReplicaSet");
  api_.AddPod("kube-system", "dcgm-exporter-1", "gpu1", "DaemonSet");
  api_.AddPod("kube-system", "static-gpu1", "gpu1", "Node", "Running",
              {{"kubernetes.io/config.mirror", "abc"}});
  api_.AddPod("team", "done-job", "gpu1", "Job", "Succeeded");
  api_.AddPod("team", "elsewhere", "gpu2", "ReplicaSet");
  api_.pdb_blocked = {"team/trainer-0"};
  auto k = Make();
  auto r = k.RequeueJobs("gpu1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);  // pending, asked again next step
  EXPECT_NE(r.error().message.find("team/trainer-0"), std::string::npos) << r.error().message;
  EXPECT_EQ(Calls(), (std::vector<std::string>{
                         "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu1&limit=500",
                         "POST /api/v1/namespaces/team/pods/server-x/eviction",
                         "POST /api/v1/namespaces/team/pods/trainer-0/eviction"}));
  EXPECT_EQ(Body(1), json::parse(R"({"apiVersion": "policy/v1", "kind": "Eviction",
    "metadata": {"name": "server-x", "namespace": "team"}})"));
  EXPECT_FALSE(api_.HasPod("team/server-x"));
  EXPECT_TRUE(api_.HasPod("team/trainer-0"));
  EXPECT_TRUE(api_.HasPod("kube-system/dcgm-exporter-1"));
  EXPECT_TRUE(api_.HasPod("team/elsewhere"));

  api_.pdb_blocked.clear();  // the budget allows it now
  r = k.RequeueJobs("gpu1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "evicted 1 pods (3 left: daemonset, mirror, finished or gone)");
  EXPECT_FALSE(api_.HasPod("team/trainer-0"));
}

// What a GPU reset waits for: the tenants' pods still on the node, those in their grace period
// included; a daemonset's, a mirror, a finished pod and another node's are not its work.
TEST_F(KubernetesTest, TheJobsOnANodeAreItsTenantsPodsTerminatingOnesIncluded) {
  api_.AddPod("team", "trainer-0", "gpu1", "StatefulSet");
  api_.AddPod("team", "leaving", "gpu1", "ReplicaSet");
  api_.MarkLeaving("team/leaving");
  api_.AddPod("kube-system", "dcgm-exporter-1", "gpu1", "DaemonSet");
  api_.AddPod("kube-system", "old-exporter", "gpu1", "DaemonSet");
  api_.MarkLeaving("kube-system/old-exporter");
  api_.AddPod("kube-system", "static-gpu1", "gpu1", "Node", "Running",
              {{"kubernetes.io/config.mirror", "abc"}});
  api_.AddPod("team", "done-job", "gpu1", "Job", "Succeeded");
  api_.AddPod("team", "elsewhere", "gpu2", "ReplicaSet");
  auto k = Make();
  auto jobs = k.JobsOn("gpu1");
  ASSERT_TRUE(jobs) << jobs.error().message;
  std::ranges::sort(*jobs);
  EXPECT_EQ(*jobs, (std::vector<std::string>{"team/leaving", "team/trainer-0"}));
  EXPECT_EQ(k.JobsOn("gpu3").value(), std::vector<std::string>{});
}

TEST_F(KubernetesTest, AConcurrentChangeIsReadAgainNeverOverwritten) {
  api_.conflicts_next = 1;
  auto k = Make();
  auto r = k.Drain("gpu2", "cmax: Xid 79");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes/gpu2", "PATCH /api/v1/nodes/gpu2",
                                               "GET /api/v1/nodes/gpu2", "PATCH /api/v1/nodes/gpu2",
                                               "PATCH /api/v1/nodes/gpu2/status"}));
  EXPECT_NE(Body(1)["metadata"]["resourceVersion"], Body(3)["metadata"]["resourceVersion"]);
  api_.conflicts_next = 10;
  r = k.Resume("gpu2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBusy);
}

TEST_F(KubernetesTest, AnApiServerThatIsAwayIsRetriedThenReportedPending) {
  api_.unavailable_next = 2;
  auto k = Make();
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 79"));
  EXPECT_EQ(sleeps_, (std::vector<Duration>{250ms, 500ms}));
  api_.unavailable_next = 100;
  sleeps_.clear();
  auto r = k.Resume("gpu2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(sleeps_.size(), 3U);
  EXPECT_NE(r.error().message.find("etcd is away"), std::string::npos) << r.error().message;
}

TEST_F(KubernetesTest, NoServerAtAllIsUnavailable) {
  connection_.server = "http://127.0.0.1:1";
  auto k = Make();
  auto r = k.Nodes();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

TEST_F(KubernetesTest, TheTokenIsReadAgainAndNeverShown) {
  auto k = Make();
  ASSERT_TRUE(k.Nodes());
  // The kubelet rotated the token; the server only takes the new one.
  api_.token = "token-2";
  auto refused = k.Nodes();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(refused.error().message.find("token-1"), std::string::npos);
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), "token-2", 0600));
  EXPECT_TRUE(k.Nodes());
  connection_.token_file = dir_.File("missing");
  auto k2 = Make();
  auto r = k2.Nodes();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kPermissionDenied);
}

// A token with a line break (in a kubeconfig, or inside a token file) would have added headers
// of its own to every request: "abc\r\nX-Injected: yes" reached the server as two headers.
// Nothing is sent, and the error does not show the token.
TEST_F(KubernetesTest, ATokenThatWouldAddHeadersIsNotSent) {
  for (const std::string& token :
       {std::string("abc\r\nX-Injected: yes"), std::string("abc def"), std::string("ab\x7f")}) {
    for (const bool in_file : {true, false}) {
      if (in_file) {
        ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), token + "\n", 0600));
        connection_.token_file = dir_.File("token");
      } else {
        connection_.token_file.clear();
        connection_.token = token;
      }
      auto k = Make();
      auto nodes = k.Nodes();
      ASSERT_FALSE(nodes);
      EXPECT_EQ(nodes.error().code, ErrorCode::kInvalidArgument);
      EXPECT_EQ(nodes.error().message.find("abc"), std::string::npos) << nodes.error().message;
    }
  }
  EXPECT_TRUE(api_.Http().Requests().empty()) << "a request was sent";
  // A line break at an end (a Secret made --from-file, a `token: |` block) is not the token's.
  connection_.token_file.clear();
  connection_.token = "token-1\n";
  EXPECT_TRUE(Make().Nodes());
  EXPECT_EQ(Header(0, "authorization"), "Bearer token-1");
}

TEST_F(KubernetesTest, AListWhoseContinueTokenNeverMovesIsAnError) {
  // A broken or hostile server would otherwise keep the list going for ever.
  options_.api.page_size = 1;
  api_.stuck_continue = "7";
  auto k = Make();
  auto nodes = k.Nodes();
  ASSERT_FALSE(nodes);
  EXPECT_NE(nodes.error().message.find("same continue token"), std::string::npos)
      << nodes.error().message;
}

TEST_F(KubernetesTest, ListsArePagedAndNodesSayWhatTheyAre) {
  options_.api.page_size = 2;
  api_.AddNode("gpu3", json::object(), json::array(), /*unschedulable=*/true);
  api_.AddNode("spare1", {{"cmax.dev/spare", "true"}},
               json::array({{{"key", "cmax.dev/spare"}, {"effect", "NoSchedule"}}}));
  auto k = Make();
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 48"));
  api_.Http().ClearRequests();
  auto nodes = k.Nodes();
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 4U);
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes?limit=2",
                                               "GET /api/v1/nodes?limit=2&continue=2"}));
  EXPECT_EQ((*nodes)[0].name, "gpu1");
  EXPECT_EQ((*nodes)[0].state, "ready");
  EXPECT_FALSE((*nodes)[0].drain);
  EXPECT_TRUE((*nodes)[1].drain);
  EXPECT_EQ((*nodes)[1].reason, "cmax: Xid 48");
  EXPECT_EQ((*nodes)[2].reason, "cordoned");
  EXPECT_FALSE(IsCmaxReason((*nodes)[2].reason));
  EXPECT_EQ((*nodes)[3].partitions, (std::vector<std::string>{"spare"}));
  EXPECT_EQ((*nodes)[1].conditions, (std::vector<std::string>{"CmaxQuarantined"}));
  EXPECT_EQ((*nodes)[1].taints, (std::vector<std::string>{"cmax.dev/quarantine:NoSchedule"}));
  EXPECT_TRUE((*nodes)[0].conditions.empty());
  auto take_outs = k.CmaxTakeOuts();
  ASSERT_TRUE(take_outs);
  ASSERT_EQ(take_outs->size(), 1U);
  EXPECT_EQ((*take_outs)[0].node, "gpu2");
  EXPECT_EQ((*take_outs)[0].at, kT0);
}

// Without --validation-gpus the Job asks for every GPU the node has: one that asked for none
// might be given none and pass without testing any.
TEST_F(KubernetesTest, ValidationAsksForAllTheNodesGpusByDefault) {
  api_.SetAllocatable("gpu2", "nvidia.com/gpu", "4");
  auto k = Make();
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 79"));
  const ValidationSpec spec{"nvidia-smi", 20min};
  api_.Http().ClearRequests();
  ASSERT_TRUE(k.StartValidation("gpu2", spec));
  EXPECT_EQ(Calls(), (std::vector<std::string>{"GET /api/v1/nodes/gpu2",
                                               "POST /apis/batch/v1/namespaces/cmax/jobs"}));
  EXPECT_EQ(
      Body(1)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
      4);
  ASSERT_TRUE(k.Drain("gpu1", "cmax: Xid 79"));  // none allocatable: nothing asked for
  api_.Http().ClearRequests();
  ASSERT_TRUE(k.StartValidation("gpu1", spec));
  EXPECT_FALSE(Body(1)["spec"]["template"]["spec"]["containers"][0].contains("resources"));
}

TEST_F(KubernetesTest, ValidationRunsAsAJobPinnedToTheCordonedNode) {
  options_.validation_gpus = 8;
  auto k = Make();
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 79"));
  api_.Http().ClearRequests();
  const ValidationSpec spec{"nvidia-smi && dcgmi diag -r 2", 20min};
  auto handle = k.StartValidation("gpu2", spec);
  ASSERT_TRUE(handle) << handle.error().message;
  EXPECT_EQ(*handle, "cmax/cmax-validate-gpu2");
  EXPECT_EQ(Calls(), (std::vector<std::string>{"POST /apis/batch/v1/namespaces/cmax/jobs"}));
  const json job = Body(0);
  EXPECT_EQ(job, ValidationJob("gpu2", "cmax-validate-gpu2", spec, options_));
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 1200);
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  const json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            "gpu2");
  EXPECT_EQ(pod["tolerations"].size(), 2U);
  EXPECT_EQ(pod["containers"][0]["command"][2], "nvidia-smi && dcgmi diag -r 2");
  EXPECT_EQ(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 8);

  // Started again after a restart: the same job.
  EXPECT_EQ(k.StartValidation("gpu2", spec).value_or(""), *handle);
  auto running = k.PollValidation("gpu2", *handle);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->state, ValidationState::kRunning);
  api_.FinishJob(*handle, false, "BackoffLimitExceeded", 3);
  auto failed = k.PollValidation("gpu2", *handle);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, ValidationState::kFailed);
  EXPECT_EQ(failed->detail, "exit 3; BackoffLimitExceeded: the job failed");

  api_.Http().ClearRequests();
  auto ended = k.EndValidation("gpu2", false, "cmax: validation failed: exit 3");
  ASSERT_TRUE(ended) << ended.error().message;
  EXPECT_EQ(
      Calls()[0],
      "DELETE /apis/batch/v1/namespaces/cmax/jobs/cmax-validate-gpu2?propagationPolicy=Background");
  EXPECT_TRUE(api_.Job(*handle).is_null());
  EXPECT_EQ(api_.Node("gpu2")["metadata"]["annotations"]["cmax.dev/reason"],
            "cmax: validation failed: exit 3");
  EXPECT_TRUE(api_.Node("gpu2")["spec"]["unschedulable"].get<bool>());
  // Ended again: nothing left to delete, still fine.
  EXPECT_TRUE(k.EndValidation("gpu2", true, ""));
  auto vanished = k.PollValidation("gpu2", *handle);
  ASSERT_TRUE(vanished);
  EXPECT_EQ(vanished->state, ValidationState::kFailed);
}

TEST_F(KubernetesTest, ValidationInAMissingNamespaceSaysHowToCreateIt) {
  options_.validation_namespace = "nope";
  auto k = Make();
  auto r = k.StartValidation("gpu2", {"true", 1min});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("namespace.yaml"), std::string::npos);
}

TEST_F(KubernetesTest, SparesWaitBehindATaint) {
  api_.AddNode("spare2", {{"cmax.dev/spare", "true"}},
               json::array({{{"key", "cmax.dev/spare"}, {"effect", "NoSchedule"}}}));
  api_.AddNode("spare1", {{"cmax.dev/spare", "true"}});  // in service already
  auto k = Make();
  auto picked = k.PickSpare();
  ASSERT_TRUE(picked) << picked.error().message;
  EXPECT_EQ(*picked, "spare2");
  auto in = k.SwapInSpare("spare2");
  ASSERT_TRUE(in);
  EXPECT_EQ(*in, "spare spare2 in service: taint cmax.dev/spare removed");
  EXPECT_TRUE(api_.Node("spare2")["spec"]["taints"].empty());
  EXPECT_EQ(k.SwapInSpare("spare2").value_or(""), "spare spare2 already in service");
  auto none = k.PickSpare();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(k.ReturnSpare("spare2"));
  EXPECT_EQ(api_.Node("spare2")["spec"]["taints"][0]["key"], "cmax.dev/spare");
  EXPECT_EQ(k.PickSpare().value_or(""), "spare2");
}

TEST_F(KubernetesTest, RebootIsRefusedAndBootIdIsRead) {
  auto k = Make();
  auto r = k.Reboot("gpu1", "cmax: Xid 79");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(k.BootTime("gpu1").value_or(""), "boot-gpu1-1");
  auto missing = k.BootTime("gpu9");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(KubernetesParts, JobNamesAreDnsLabels) {
  EXPECT_EQ(ValidationJobName("gpu-node-07"), "cmax-validate-gpu-node-07");
  EXPECT_EQ(ValidationJobName("Node_7.rack2"), "cmax-validate-node-7-rack2");
  const std::string long_name(100, 'a');
  const std::string name = ValidationJobName(long_name);
  EXPECT_EQ(name.size(), 63U);
  EXPECT_NE(name, ValidationJobName(long_name + "b"));
}

TEST(KubernetesParts, JobStates) {
  EXPECT_EQ(KubeJobState(json::object()).state, ValidationState::kRunning);
  EXPECT_EQ(KubeJobState({{"status", {{"active", 1}}}}).state, ValidationState::kRunning);
  EXPECT_EQ(KubeJobState({{"status", {{"succeeded", 1}}}}).state, ValidationState::kPassed);
  const auto deadline = KubeJobState(json::parse(
      R"({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}})"));
  EXPECT_EQ(deadline.state, ValidationState::kFailed);
  EXPECT_EQ(deadline.detail, "timed out (activeDeadlineSeconds)");
  // A condition that is not True does not count.
  EXPECT_EQ(
      KubeJobState(
          json::parse(R"({"status": {"conditions": [{"type": "Failed", "status": "False"}]}})"))
          .state,
      ValidationState::kRunning);
  // Odd shapes from a server do not throw.
  EXPECT_EQ(KubeJobState(json::parse(R"({"status": {"conditions": 7, "succeeded": "x"}})")).state,
            ValidationState::kRunning);
}

TEST(KubernetesParts, StatusMessages) {
  EXPECT_EQ(KubeStatusMessage({403, R"({"kind":"Status","message":"nodes is forbidden"})"}),
            "HTTP 403: nodes is forbidden");
  EXPECT_EQ(KubeStatusMessage({502, "<html>bad gateway</html>"}), "HTTP 502");
}

// The controller on the stand-in API server: a fault drains (cordon + taint + condition),
// evicts, validates in a Job, and when the Job completes, uncordons.
TEST_F(KubernetesTest, TheWholeLoopThroughTheController) {
  api_.AddPod("team", "trainer-0", "gpu2", "StatefulSet");
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store) << store.error().message;
  testing::FakeProcessRunner runner;
  ControllerConfig config;
  config.validation = {"true", 30min};
  config.breaker.max_fraction = 1.0;
  auto k = Make();
  ASSERT_TRUE(
      store->SaveConditions({testing::XidCondition("gpu2", 79, "reboot-node", clock_.Now())}, {}));

  Controller controller(*store, k, runner, clock_, config);
  auto step = controller.Step();
  ASSERT_TRUE(step) << step.error().message;
  Journal journal(store->Db());
  // Kubernetes cannot reboot: the node goes to repair, cordoned, its pods evicted.
  EXPECT_EQ(journal.Node("gpu2", clock_.Now()).value().record.state, NodeState::kRepair);
  EXPECT_TRUE(api_.Node("gpu2")["spec"]["unschedulable"].get<bool>());
  EXPECT_FALSE(api_.HasPod("team/trainer-0"));
  EXPECT_TRUE(api_.Job("cmax/cmax-validate-gpu2").is_null());

  // Repaired by hand (`cmax remediate repaired gpu2`): validation in a Job, then back in service.
  auto entry = journal.Node("gpu2", clock_.Now());
  ASSERT_TRUE(entry);
  Event repaired;
  repaired.kind = EventKind::kRepaired;
  const Decision d = Transition(entry->record, repaired, clock_.Now(), config.policy);
  ASSERT_TRUE(journal.Apply(*entry, repaired, d, clock_.Now(), false, {}));
  clock_.Advance(1min);
  step = controller.Step();
  ASSERT_TRUE(step) << step.error().message;
  EXPECT_EQ(journal.Node("gpu2", clock_.Now()).value().record.state, NodeState::kValidating);
  ASSERT_FALSE(api_.Job("cmax/cmax-validate-gpu2").is_null());
  EXPECT_TRUE(api_.Node("gpu2")["spec"]["unschedulable"].get<bool>());  // out of service throughout

  api_.FinishJob("cmax/cmax-validate-gpu2", true);
  clock_.Advance(1min);
  step = controller.Step();
  ASSERT_TRUE(step) << step.error().message;
  EXPECT_EQ(journal.Node("gpu2", clock_.Now()).value().record.state, NodeState::kReintroduced);
  const json node = api_.Node("gpu2");
  EXPECT_FALSE(node["spec"].contains("unschedulable"));
  EXPECT_TRUE(node["spec"]["taints"].empty());
  EXPECT_TRUE(api_.Job("cmax/cmax-validate-gpu2").is_null());
  EXPECT_TRUE(journal.OpenActions().value().empty());
}

}  // namespace
}  // namespace cmax::remediate
