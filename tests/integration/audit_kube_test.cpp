// `cmax audit --kubernetes` through the real binary against the stand-in API server
// (tests/support/fake_kube_api.hpp): a GPU cluster as the GPU Operator leaves it, graded node
// by node; every request a GET; the token never shown; what the API refuses is UNKNOWN with
// the reason; an API server that does not answer makes every check UNKNOWN and the run is
// still recorded; no API server to ask, or no --yes off a terminal, is a usage error.
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>

#include "support/fake_kube_api.hpp"
#include "support/free_port.hpp"
#include "support/kube_rbac.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json DaemonSet(const std::string& ns, const std::string& name, const std::string& image) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", {{"spec", {{"containers", {{{"name", "main"}, {"image", image}}}}}}}}}}};
}

class AuditKubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("token"), "token-1", 0600));
    const json gfd = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                      {"nvidia.com/cuda.driver.major", "580"},
                      {"nvidia.com/cuda.driver.minor", "159"},
                      {"nvidia.com/cuda.driver.rev", "03"},
                      {"nvidia.com/gpu.clique", "domain-a.1"}};
    for (const char* node : {"gpu1", "gpu2"}) {
      api_.AddNode(node, gfd);
      api_.MergeIntoNode(node, {{"status",
                                 {{"capacity", {{"nvidia.com/gpu", "8"}}},
                                  {"nodeInfo",
                                   {{"kernelVersion", "6.8.0-60-generic"},
                                    {"osImage", "Ubuntu 24.04.2 LTS"},
                                    {"architecture", "amd64"}}}}}});
      api_.configz[node] = {{"kubeletconfig", {{"cpuManagerPolicy", "static"}}}};
      api_.AddPod("gpu-operator", std::string("dcgm-exporter-") + node, node, "DaemonSet",
                  "Running", json::object(), {{"app", "nvidia-dcgm-exporter"}},
                  "nvidia-dcgm-exporter");
    }
    api_.AddNode("control1", {{"node-role.kubernetes.io/control-plane", ""}});
    api_.configz["control1"] = {{"kubeletconfig", json::object()}};
    api_.AddObject("/apis/apps/v1/daemonsets",
                   DaemonSet("gpu-operator", "nvidia-container-toolkit-daemonset",
                             "nvcr.io/nvidia/k8s/container-toolkit:v1.19.1-ubuntu20.04"));
    api_.AddObject("/apis/apps/v1/daemonsets",
                   DaemonSet("gpu-operator", "nvidia-dcgm-exporter",
                             "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"));
    api_.AddObject("/apis/storage.k8s.io/v1/storageclasses",
                   {{"metadata",
                     {{"name", "local"},
                      {"annotations", {{"storageclass.kubernetes.io/is-default-class", "true"}}}}},
                    {"provisioner", "rancher.io/local-path"}});
    api_.AddObject("/apis/storage.k8s.io/v1/storageclasses",
                   {{"metadata", {{"name", "shared"}}}, {"provisioner", "nfs.csi.k8s.io"}});
    api_.AddObject("/apis/rbac.authorization.k8s.io/v1/clusterroles",
                   {{"metadata", {{"name", "cluster-admin"}}},
                    {"rules", {{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}}}}});
    api_.AddObject("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                   {{"metadata", {{"name", "cluster-admin"}}},
                    {"roleRef", {{"kind", "ClusterRole"}, {"name", "cluster-admin"}}},
                    {"subjects", {{{"kind", "Group"}, {"name", "system:masters"}}}}});
  }

  // No PersistentVolume yet (without this the stand-in answers 404 for the list).
  void EmptyVolumes() { api_.AddCollection("/api/v1/persistentvolumes"); }

  sys::ProcessResult Cmax(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    return testing::RunCmaxWithoutMachineKubeconfig(runner_, dir_.Path(), args, std::move(env));
  }
  std::vector<std::string> Audit(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "audit",    "--kubernetes",      "--yes",           "--json", "--kube-api",
        api_.Url(), "--kube-token-file", dir_.File("token")};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static std::map<std::string, json> ByCheck(const json& doc) {
    std::map<std::string, json> out;
    for (const json& f : doc["findings"]) out[f["check_id"]] = f;
    return out;
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  // Each request the stand-in API server received, as "METHOD PATH", in order: the audit's
  // read-only claim is checked on it.
  std::vector<std::string> Calls() {
    std::vector<std::string> out;
    for (const auto& r : api_.Http().Requests()) out.push_back(r.method + " " + r.Path());
    return out;
  }
  testing::FakeKubeApi api_;
};

TEST_F(AuditKubeTest, GradesTheGpuNodesFromTheApiWithGetsOnly) {
  // gpu1's exporter pod is ready, gpu2's not yet; a monitoring account reaches every kubelet.
  api_.MergeIntoPod("gpu-operator/dcgm-exporter-gpu1",
                    {{"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}});
  api_.AddObject(
      "/apis/rbac.authorization.k8s.io/v1/clusterroles",
      {{"metadata", {{"name", "prometheus"}}},
       {"rules", {{{"apiGroups", {""}}, {"resources", {"nodes/proxy"}}, {"verbs", {"get"}}}}}});
  api_.AddObject("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                 {{"metadata", {{"name", "prometheus"}}},
                  {"roleRef", {{"kind", "ClusterRole"}, {"name", "prometheus"}}},
                  {"subjects",
                   {{{"kind", "ServiceAccount"}, {"namespace", "monitoring"}, {"name", "prom"}}}}});
  api_.AddObject("/apis/kueue.x-k8s.io/v1alpha1/topologies", {{"metadata", {{"name", "default"}}}});
  EmptyVolumes();
  const auto r = Cmax(Audit({"-v"}));
  ASSERT_EQ(r.exit_code, 1) << r.stderr_text;  // the nodes/proxy FAIL
  const json doc = json::parse(r.stdout_text);
  EXPECT_EQ(doc["run"]["target"], "kubernetes/" + api_.Url().substr(7));
  const auto& coverage = doc["evidence"]["audit.coverage"];
  EXPECT_EQ(coverage["nodes"], 2) << coverage;  // the GPU nodes, not the control plane
  EXPECT_EQ(coverage["listed"], 3);
  EXPECT_EQ(coverage["kubelets_read"], 2);
  EXPECT_TRUE(doc["evidence"].contains("audit.node.gpu1"));
  EXPECT_FALSE(doc["evidence"].contains("audit.node.control1"));

  auto f = ByCheck(doc);
  EXPECT_EQ(f["isolation.kubernetes-nodes-proxy"]["status"], "FAIL");
  EXPECT_NE(f["isolation.kubernetes-nodes-proxy"]["message"].get<std::string>().find(
                "ServiceAccount monitoring/prom"),
            std::string::npos);
  for (const char* pass :
       {"versions.nvidia-driver", "versions.nvidia-container-toolkit", "versions.dcgm",
        "versions.dcgm-exporter", "orchestration.kubelet-cpu-manager",
        "storage.default-storageclass", "storage.rwx", "networking.topology-configured",
        "orchestration.worker-check"}) {
    EXPECT_EQ(f[pass]["status"], "PASS") << pass << ": " << f[pass]["message"];
  }
  // gpu2's exporter runs but is not ready: a WARN that names it.
  EXPECT_EQ(f["health.dcgm-exporter-running"]["status"], "WARN")
      << f["health.dcgm-exporter-running"];
  EXPECT_TRUE(f["health.dcgm-exporter-running"]["message"].get<std::string>().starts_with("gpu2: "))
      << f["health.dcgm-exporter-running"];
  EXPECT_EQ(f["software.perf-event-paranoid"]["status"], "UNKNOWN");
  EXPECT_NE(f["software.perf-event-paranoid"]["message"].get<std::string>().find("a pod"),
            std::string::npos);
  EXPECT_EQ(f["orchestration.slurm-accounting"]["status"], "SKIP");

  // Read-only: every request was a GET.
  const auto requests = Calls();
  ASSERT_FALSE(requests.empty());
  for (const std::string& request : requests) {
    EXPECT_TRUE(request.starts_with("GET ")) << request;
  }
  EXPECT_NE(std::ranges::find(requests, "GET /api/v1/nodes/gpu2/proxy/configz"), requests.end());
  // And each one allowed, in any namespace, by the ClusterRole of
  // deploy/kubernetes/audit-rbac.yaml: an audit through the API needs nothing more.
  const auto granted = testing::GrantedBy("audit-rbac.yaml", "cmax-auditors");
  for (const auto& request : api_.Http().Requests()) {
    const testing::RbacAccess a = testing::ToRbacAccess(request);
    EXPECT_TRUE(granted.contains({a.group, a.resource, a.verb, ""}))
        << "not granted cluster-wide: " << request.method << " " << request.target;
  }
  // The token goes only into the requests' headers.
  EXPECT_EQ(r.stdout_text.find("token-1"), std::string::npos);
  EXPECT_EQ(r.stderr_text.find("token-1"), std::string::npos);
  EXPECT_NE(r.stderr_text.find("2 node(s) audited through the API (3 listed, those with GPUs)"),
            std::string::npos)
      << r.stderr_text;

  // The stored run regraded from each node's evidence: the same grades.
  const auto review = Cmax({"audit", "review", "--regrade"});
  ASSERT_EQ(review.exit_code, 0) << review.stderr_text;
  EXPECT_NE(review.stdout_text.find("No check changed"), std::string::npos) << review.stdout_text;
}

TEST_F(AuditKubeTest, WhatTheApiRefusesIsUnknownWithTheReason) {
  api_.forbidden.insert("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings");
  api_.forbidden.insert("/api/v1/persistentvolumes");
  api_.forbidden.insert("/api/v1/nodes/gpu2/proxy/configz");
  api_.configz.erase("gpu1");  // its kubelet does not answer
  const auto r = Cmax(Audit({"--exit-zero"}));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  auto f = ByCheck(json::parse(r.stdout_text));
  EXPECT_EQ(f["isolation.kubernetes-nodes-proxy"]["status"], "UNKNOWN");
  EXPECT_NE(f["isolation.kubernetes-nodes-proxy"]["message"].get<std::string>().find("403"),
            std::string::npos)
      << f["isolation.kubernetes-nodes-proxy"];
  EXPECT_EQ(f["orchestration.kubelet-cpu-manager"]["status"], "UNKNOWN");
  // The class is found by its driver's name, so the refused volumes do not matter.
  EXPECT_EQ(f["storage.rwx"]["status"], "PASS") << f["storage.rwx"];
  EXPECT_NE(r.stderr_text.find("the API refused PersistentVolumes, ClusterRoleBindings"),
            std::string::npos)
      << r.stderr_text;
  // A kubelet is asked once, not retried: the API server has waited for it already.
  const auto requests = Calls();
  EXPECT_EQ(std::ranges::count(requests, "GET /api/v1/nodes/gpu1/proxy/configz"), 1);
}

TEST_F(AuditKubeTest, ASelectorPicksTheNodes) {
  EmptyVolumes();
  const auto r = Cmax(Audit({"--exit-zero", "-l", "node-role.kubernetes.io/control-plane"}));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const json doc = json::parse(r.stdout_text);
  EXPECT_EQ(doc["evidence"]["audit.coverage"]["nodes"], 1);
  auto f = ByCheck(doc);
  EXPECT_EQ(f["versions.nvidia-driver"]["status"], "SKIP");             // no GPU there
  EXPECT_EQ(f["orchestration.kubelet-cpu-manager"]["status"], "WARN");  // "none"
  const auto none = Cmax(Audit({"-l", "team=nobody"}));
  EXPECT_EQ(none.exit_code, 2) << none.stderr_text;
  EXPECT_NE(none.stderr_text.find("lists no node matching team=nobody"), std::string::npos)
      << none.stderr_text;
}

TEST_F(AuditKubeTest, AnApiServerThatDoesNotAnswerMakesEveryCheckUnknown) {
  const std::string nowhere = "http://127.0.0.1:" + std::to_string(testing::FreePort());
  const auto r = Cmax({"audit", "--kubernetes", "--yes", "--json", "--probe-timeout", "1",
                       "--kube-api", nowhere, "--kube-token-file", dir_.File("token")});
  ASSERT_EQ(r.exit_code, 3) << r.stderr_text;
  const json doc = json::parse(r.stdout_text);
  for (const json& f : doc["findings"]) {
    // ATTEST needs no evidence: only the provider can say.
    EXPECT_TRUE(f["status"] == "UNKNOWN" || f["status"] == "SKIP" || f["status"] == "ATTEST") << f;
    if (f["status"] == "UNKNOWN") {
      EXPECT_NE(f["message"].get<std::string>().find("did not answer"), std::string::npos) << f;
    }
  }
  EXPECT_NE(r.stderr_text.find("the Kubernetes API server did not answer"), std::string::npos)
      << r.stderr_text;
  const auto stored = Cmax({"db", "runs"});
  EXPECT_NE(stored.stdout_text.find("audit"), std::string::npos) << stored.stdout_text;
}

TEST_F(AuditKubeTest, UsageErrors) {
  // No API server to ask.
  auto r = Cmax({"audit", "--kubernetes", "--yes"});
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("--kube-api"), std::string::npos) << r.stderr_text;
  // Off a terminal without --yes: nothing is read beyond the node list.
  r = Cmax(
      {"audit", "--kubernetes", "--kube-api", api_.Url(), "--kube-token-file", dir_.File("token")});
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("--yes"), std::string::npos) << r.stderr_text;
  const auto requests = Calls();
  EXPECT_EQ(requests, std::vector<std::string>{"GET /api/v1/nodes"});
  // Kubernetes options need --kubernetes; --yes and --budget need a cluster target.
  const auto refused = [&](std::vector<std::string> args, const std::string& says) {
    const auto answer = Cmax(std::move(args));
    EXPECT_EQ(answer.exit_code, 2) << says;
    EXPECT_NE(answer.stderr_text.find(says), std::string::npos) << answer.stderr_text;
  };
  refused({"audit", "--kube-api", api_.Url()}, "--kube-api requires --kubernetes");
  refused({"audit", "-l", "a=b"}, "requires --kubernetes");
  refused({"audit", "--yes"}, "--budget and --yes go with --slurm or --kubernetes");
  refused({"audit", "--show", "--budget", "5"}, "--budget and --yes go with");
  refused({"audit", "--kubernetes", "--slurm"}, "excludes");
  refused({"audit", "--kubernetes", "--node-evidence"}, "excludes");
  // A pod on every node is a side effect: --image needs it allowed.
  refused(Audit({"--image", "cmax:test"}), "--image requires --allow-side-effects");
  // --host-root reads this host's mounted root, never a cluster's.
  refused({"audit", "--kubernetes", "--host-root", "/"}, "excludes --host-root");
  EXPECT_TRUE(api_.CreatedPods().empty());
}

// With --allow-side-effects and an image, each node is read by a pod of its own, which the
// stand-in kubelet (fake_kube_api.hpp) runs here: what the API cannot tell comes from the node,
// read through the host's root (gpu2's is a folder of its own, with its own os-release), and
// every pod is deleted afterwards, its start and deletion logged as a side effect.
TEST_F(AuditKubeTest, WithSideEffectsAllowedAPodReadsEachNodeAndIsDeleted) {
  const std::string gpu2_root = dir_.File("gpu2-root");
  ASSERT_TRUE(fs_.CreateDirs(gpu2_root + "/etc", 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(gpu2_root + "/etc/os-release",
                                  "ID=cmaxtestos\nVERSION_ID=\"42\"\n", 0644));
  api_.SetKubelet({.cmax_binary = CMAX_BINARY, .host_roots = {{"gpu2", gpu2_root}}});
  // The first create's answer is lost after the pod was made: the retry finds it (409), and it
  // is waited for and deleted like the others.
  api_.lose_pod_creates = 1;
  EmptyVolumes();
  const auto r = Cmax(Audit(
      {"--allow-side-effects", "--image", "registry.example/cmax:test", "--node-timeout", "30"}));
  ASSERT_NE(r.exit_code, 2) << r.stderr_text;
  const json doc = json::parse(r.stdout_text);

  const std::vector<json> pods = api_.CreatedPods();
  ASSERT_EQ(pods.size(), 2U);
  std::set<std::string> placed;
  for (const json& pod : pods) {
    placed.insert(pod["spec"]["nodeName"].get<std::string>());
    EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false) << pod;
    EXPECT_EQ(pod["spec"]["volumes"][0]["hostPath"]["path"], "/");
    const json& container = pod["spec"]["containers"][0];
    EXPECT_EQ(container["image"], "registry.example/cmax:test");
    EXPECT_EQ(container["volumeMounts"][0]["readOnly"], true);
    EXPECT_FALSE(container.contains("resources")) << "a pod that asks nothing is always admitted";
    const json& command = container["command"];
    for (const char* word : {"--node-evidence", "--host-root=/host", "--allow-side-effects"}) {
      EXPECT_NE(std::ranges::find(command, json(word)), command.end()) << word << ": " << command;
    }
  }
  EXPECT_EQ(placed, (std::set<std::string>{"gpu1", "gpu2"}));
  EXPECT_EQ(api_.DeletedPods(), 2);

  // Each node's evidence is its own: gpu2's OS is the one in its root, not the API's label.
  const json& gpu1 = doc["evidence"]["audit.node.gpu1"]["evidence"];
  const json& gpu2 = doc["evidence"]["audit.node.gpu2"]["evidence"];
  EXPECT_EQ(gpu2["host.os.id"], "cmaxtestos") << gpu2["host.os.id"];
  EXPECT_NE(gpu1["host.os.id"], "cmaxtestos");
  EXPECT_TRUE(gpu1.contains("host.sysctl.kernel.perf_event_paranoid"))
      << "a key only the node can read";
  const auto f = ByCheck(doc);
  EXPECT_EQ(f.at("software.perf-event-paranoid")["message"].get<std::string>().find("a pod"),
            std::string::npos)
      << f.at("software.perf-event-paranoid");
  // The pod is root: what sudo lets a tenant do is not told by it.
  EXPECT_EQ(f.at("access.sudo")["status"], "UNKNOWN") << f.at("access.sudo");
  EXPECT_NE(f.at("access.sudo")["message"].get<std::string>().find("runs as root"),
            std::string::npos)
      << f.at("access.sudo");
  // Where the pod found nothing the API did (the driver, from GPU Feature Discovery's labels,
  // which this machine without a driver cannot confirm), the API's answer stays.
  EXPECT_EQ(gpu1["gpu.driver.version"], "580.159.03") << gpu1["gpu.driver.version"];
  // The side effect in each node's log, with how to undo it.
  const json& log = gpu1["audit.side_effects"];
  ASSERT_TRUE(log.is_array()) << gpu1;
  const auto pod_entry = std::ranges::find_if(log, [](const json& e) {
    return e["did"].get<std::string>().starts_with("started pod cmax/");
  });
  ASSERT_NE(pod_entry, log.end()) << log;
  EXPECT_NE((*pod_entry)["did"].get<std::string>().find("; deleted it"), std::string::npos);
  EXPECT_NE(r.stderr_text.find("2 node(s) read by their pod (2 pod(s) started, all deleted)"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("token-1"), std::string::npos);
  // Every request the audit made is one deploy/kubernetes/audit-rbac.yaml grants its auditors,
  // and it grants nothing the audit does not use.
  testing::ExpectLeastPrivilege(api_.Http().Requests(),
                                testing::GrantedBy("audit-rbac.yaml", "cmax-auditors"),
                                "cmax-auditors");

  // The stored run regraded from each node's evidence, the pods' included: the same grades.
  const auto review = Cmax({"audit", "review", "--regrade"});
  ASSERT_EQ(review.exit_code, 0) << review.stderr_text;
  EXPECT_NE(review.stdout_text.find("No check changed"), std::string::npos) << review.stdout_text;
}

// A pod whose image cannot be pulled never runs: its node's checks are UNKNOWN saying so once
// the budget is spent, the other node is read, and both pods are deleted.
TEST_F(AuditKubeTest, APodThatNeverStartsLeavesItsNodeUnknownAndIsDeleted) {
  api_.SetKubelet({.cmax_binary = CMAX_BINARY, .image_pull_fails = {"gpu2"}});
  EmptyVolumes();
  const auto r = Cmax(Audit({"--allow-side-effects", "--image", "cmax:missing", "--budget", "4"}));
  ASSERT_NE(r.exit_code, 2) << r.stderr_text;
  const json doc = json::parse(r.stdout_text);
  EXPECT_EQ(api_.DeletedPods(), 2);
  EXPECT_TRUE(doc["evidence"]["audit.node.gpu1"]["evidence"].contains(
      "host.sysctl.kernel.perf_event_paranoid"))
      << "gpu1 read by its pod";
  const auto f = ByCheck(doc);
  const json& paranoid = f.at("software.perf-event-paranoid");
  EXPECT_EQ(paranoid["status"], "UNKNOWN") << paranoid;
  EXPECT_NE(paranoid["message"].get<std::string>().find("ImagePullBackOff"), std::string::npos)
      << paranoid;
  // A namespace that is not there: no pod at all, and the reason.
  const auto elsewhere =
      Cmax(Audit({"--allow-side-effects", "--image", "cmax:test", "--pod-namespace", "nowhere"}));
  ASSERT_NE(elsewhere.exit_code, 2) << elsewhere.stderr_text;
  EXPECT_NE(elsewhere.stdout_text.find("namespace nowhere does not exist"), std::string::npos);
}

}  // namespace
}  // namespace cmax
