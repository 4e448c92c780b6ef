// The audit pods' pure parts (audit/kube_pods.hpp): their names, their manifest (pinned, every
// taint tolerated, the host read-only, no token, no resources), where a pod stands from its
// status, and what the side-effect log says. The pods run end to end in audit_kube_test.
#include "audit/kube_pods.hpp"

#include <algorithm>
#include <cctype>
#include <gtest/gtest.h>
#include <set>

#include "audit/slurm_audit.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// Each audit's token is its own: 12 hex digits, new every time (48 random bits: a repeat among
// a thousand would be a broken source, once in 10^9 runs of this test by chance).
TEST(NewRunToken, TwelveHexDigitsNewEachTime) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string token = NewRunToken();
    ASSERT_EQ(token.size(), 12U) << token;
    EXPECT_TRUE(std::ranges::all_of(token, [](char c) {
      return std::isxdigit(c) != 0 && !std::isupper(c);
    })) << token;
    EXPECT_TRUE(seen.insert(token).second) << token << " twice";
  }
  // It fits a pod's name whole.
  EXPECT_TRUE(AuditPodName("gpu1", "0123456789ab").ends_with("-0123456789ab"));
}

TEST(AuditPodName, ADnsLabelNamedForTheNodeAndTheRun) {
  EXPECT_EQ(AuditPodName("gpu1", "18c2f3a0"), "cmax-audit-gpu1-18c2f3a0");
  EXPECT_EQ(AuditPodName("gpu-1", "ab"), "cmax-audit-gpu-1-ab");
  EXPECT_EQ(AuditPodName("gpu1", ""), "cmax-audit-gpu1");
  // A name changed to fit gets a hash of itself: two nodes never share a pod.
  const std::string changed = AuditPodName("GPU_Node.7", "ab");
  EXPECT_TRUE(changed.starts_with("cmax-audit-gpu-node-7-")) << changed;
  EXPECT_NE(AuditPodName("gpu.1", "ab"), AuditPodName("gpu-1", "ab"));
  EXPECT_NE(AuditPodName("Gpu1", "ab"), AuditPodName("gpu1", "ab"));
  const std::string long_a = AuditPodName(std::string(80, 'a') + "-1", "18c2f3a0");
  const std::string long_b = AuditPodName(std::string(80, 'a') + "-2", "18c2f3a0");
  EXPECT_LE(long_a.size(), 63U) << long_a;
  EXPECT_NE(long_a, long_b) << "long names that share a beginning stay apart";
  EXPECT_TRUE(long_a.ends_with("-18c2f3a0")) << long_a;
  for (const std::string& name :
       {long_a, changed, AuditPodName("x--", "-"), AuditPodName("-", "")}) {
    EXPECT_NE(name.back(), '-') << name;
    for (const char c : name) EXPECT_TRUE(std::islower(c) || std::isdigit(c) || c == '-') << name;
  }
}

TEST(AuditPodManifest, PinnedToItsNodeReadingTheHostReadOnly) {
  AuditOptions options;
  options.host_root = std::string(kPodHostRoot);
  options.profile = "hardware";
  const std::vector<std::string> args = NodeEvidenceArgs(options, 25);
  const json pod = AuditPodManifest("gpu7", "cmax-audit-gpu7-1", args,
                                    {.image = "registry.example/cmax:1",
                                     .pod_namespace = "ops",
                                     .budget_s = 90,
                                     .run_token = "1"});
  EXPECT_EQ(pod["metadata"]["namespace"], "ops");
  EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/name"], "cmax-audit");
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["nodeName"], "gpu7");
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["hostPID"], true);
  EXPECT_EQ(spec["hostNetwork"], true);
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  EXPECT_EQ(spec["tolerations"], json::parse(R"([{"operator":"Exists"}])"));
  EXPECT_EQ(spec["activeDeadlineSeconds"], 120);  // the budget, and time to be read
  EXPECT_EQ(spec["volumes"], json::parse(R"([{"name":"host","hostPath":{"path":"/"}}])"));
  const json& container = spec["containers"][0];
  EXPECT_EQ(container["image"], "registry.example/cmax:1");
  EXPECT_EQ(container["volumeMounts"],
            json::parse(R"([{"name":"host","mountPath":"/host","readOnly":true,
                             "recursiveReadOnly":"IfPossible"}])"));
  EXPECT_EQ(container["securityContext"]["privileged"], true);
  EXPECT_FALSE(container.contains("resources"));
  EXPECT_EQ(container["command"],
            json::parse(R"(["cmax","audit","--node-evidence","--node-timeout=25",
                            "--probe-timeout=5","--host-root=/host","hardware"])"));
  // The node's name from the API, for the frames; no GPU asked of the device plugin.
  bool node_name = false;
  for (const json& e : container["env"]) {
    if (e["name"] == "CMAX_NODE_NAME") {
      node_name = e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName";
    }
  }
  EXPECT_TRUE(node_name) << container["env"];
  EXPECT_EQ(pod.dump().find("nvidia.com/gpu"), std::string::npos);
}

TEST(AuditPodProgress, WhereAPodStandsFromItsStatus) {
  const struct {
    const char* status;
    PodState state;
    const char* detail;
  } cases[] = {
      {R"({})", PodState::kWaiting, "not yet placed"},
      {R"({"phase":"Pending"})", PodState::kWaiting, "Pending"},
      {R"({"phase":"Pending","containerStatuses":[{"state":{"waiting":{"reason":"ErrImagePull",
          "message":"not found"}}}]})",
       PodState::kWaiting, "Pending: ErrImagePull: not found"},
      {R"({"phase":"Running"})", PodState::kWaiting, "Running"},
      {R"({"phase":"Succeeded","containerStatuses":[{"state":{"terminated":{"exitCode":0,
          "reason":"Completed"}}}]})",
       PodState::kDone, "Succeeded: exit 0 (Completed)"},
      {R"({"phase":"Failed","containerStatuses":[{"state":{"terminated":{"exitCode":124}}}]})",
       PodState::kFailed, "Failed: exit 124"},
      {R"({"phase":"Failed","reason":"DeadlineExceeded","message":"Pod was active too long"})",
       PodState::kFailed, "Failed: DeadlineExceeded: Pod was active too long"},
      {R"({"phase":"Failed","containerStatuses":"garbage"})", PodState::kFailed, "Failed"},
      {R"({"phase":7})", PodState::kWaiting, "not yet placed"},
  };
  for (const auto& c : cases) {
    const PodProgress progress = AuditPodProgress({{"status", json::parse(c.status)}});
    EXPECT_EQ(progress.state, c.state) << c.status;
    EXPECT_EQ(progress.detail, c.detail) << c.status;
  }
}

TEST(DescribePodSideEffect, SaysWhatWasStartedAndHowToUndoWhatIsLeft) {
  const AuditPodOptions options{.image = "cmax:1", .pod_namespace = "cmax"};
  const PodSideEffect gone = DescribePodSideEffect(
      "gpu1", {.pod = "cmax/cmax-audit-gpu1-1", .deleted = "deleted"}, options);
  EXPECT_NE(gone.did.find("started pod cmax/cmax-audit-gpu1-1 on node gpu1 (image cmax:1"),
            std::string::npos)
      << gone.did;
  EXPECT_TRUE(gone.did.ends_with("; deleted it")) << gone.did;
  EXPECT_TRUE(gone.undo.starts_with("nothing left to undo")) << gone.undo;
  const PodSideEffect left = DescribePodSideEffect(
      "gpu1", {.pod = "cmax/cmax-audit-gpu1-1", .deleted = "connection refused"}, options);
  EXPECT_NE(left.did.find("could not be deleted: connection refused"), std::string::npos);
  EXPECT_EQ(left.undo, "kubectl -n cmax delete pod cmax-audit-gpu1-1");
}

}  // namespace
}  // namespace cmax::audit
