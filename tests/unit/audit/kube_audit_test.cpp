// The Kubernetes audit's pure parts: what the API's objects say (labels, images, RBAC, storage)
// turned into the audit's evidence, node by node, and graded.
#include "audit/kube_audit.hpp"

#include <gtest/gtest.h>

#include "audit/catalogue.hpp"
#include "audit/fanout.hpp"
#include "audit/grading.hpp"
#include "core/clock.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

json Role(const std::string& name, json rules) {
  return {{"metadata", {{"name", name}}}, {"rules", std::move(rules)}};
}
json Binding(const std::string& name, const std::string& role, json subjects) {
  return {{"metadata", {{"name", name}}},
          {"roleRef", {{"kind", "ClusterRole"}, {"name", role}}},
          {"subjects", std::move(subjects)}};
}
json Rule(json groups, json resources, json verbs) {
  return {{"apiGroups", std::move(groups)},
          {"resources", std::move(resources)},
          {"verbs", std::move(verbs)}};
}

TEST(NodesProxySubjects, FindsWhoReachesTheKubelets) {
  const std::vector<json> roles = {
      Role("cluster-admin", {Rule({"*"}, {"*"}, {"*"})}),
      Role("system:kubelet-api-admin", {Rule({""}, {"nodes/proxy"}, {"get", "create"})}),
      Role("prometheus", {Rule({""}, {"nodes", "nodes/proxy"}, {"get", "list"})}),
      Role("proxy-all", {Rule({""}, {"*/proxy"}, {"get"})}),
      Role("metrics-only", {Rule({""}, {"nodes/metrics"}, {"get"})}),
      Role("proxy-watch-only", {Rule({""}, {"nodes/proxy"}, {"watch"})}),
      Role("other-group", {Rule({"apps"}, {"nodes/proxy"}, {"get"})}),
  };
  const std::vector<json> bindings = {
      // The administrators and the API server's kubelet client (kubeadm's, k3s's): left out.
      Binding("cluster-admin", "cluster-admin", {{{"kind", "Group"}, {"name", "system:masters"}}}),
      Binding("kubelet-api", "system:kubelet-api-admin",
              {{{"kind", "User"}, {"name", "kube-apiserver-kubelet-client"}}}),
      Binding("kube-apiserver-kubelet-admin", "system:kubelet-api-admin",
              {{{"kind", "User"}, {"name", "kube-apiserver"}}}),
      // The kubelets themselves reaching each other: found.
      Binding("nodes-proxy", "system:kubelet-api-admin",
              {{{"kind", "Group"}, {"name", "system:nodes"}}}),
      // Tenants and workloads: found.
      Binding("prom", "prometheus",
              {{{"kind", "ServiceAccount"}, {"namespace", "monitoring"}, {"name", "prom"}}}),
      Binding("everyone", "proxy-all", {{{"kind", "Group"}, {"name", "system:authenticated"}}}),
      Binding("team-admin", "cluster-admin", {{{"kind", "User"}, {"name", "alice@example.com"}}}),
      // Roles that do not reach it, and a binding to a Role (namespaced: not nodes).
      Binding("metrics", "metrics-only", {{{"kind", "User"}, {"name", "bob"}}}),
      Binding("watch", "proxy-watch-only", {{{"kind", "User"}, {"name", "carol"}}}),
      Binding("apps", "other-group", {{{"kind", "User"}, {"name", "dave"}}}),
      {{"metadata", {{"name", "ns-role"}}},
       {"roleRef", {{"kind", "Role"}, {"name", "prometheus"}}},
       {"subjects", {{{"kind", "User"}, {"name", "erin"}}}}},
      // A binding with no subjects, and one of an unexpected shape.
      Binding("empty", "prometheus", json::array()),
      {{"roleRef", "nonsense"}},
      // Fields of the wrong type: no exception, the subject shown as far as it can be.
      Binding("odd", "prometheus", {{{"kind", 7}, {"name", nullptr}}, "not-an-object"}),
  };
  EXPECT_EQ(NodesProxySubjects(roles, bindings),
            (std::vector<std::string>{
                "? ? via ClusterRole prometheus (binding odd)",
                "Group system:authenticated via ClusterRole proxy-all (binding everyone)",
                "Group system:nodes via ClusterRole system:kubelet-api-admin (binding nodes-proxy)",
                "ServiceAccount monitoring/prom via ClusterRole prometheus (binding prom)",
                "User alice@example.com via ClusterRole cluster-admin (binding team-admin)"}));
  EXPECT_TRUE(NodesProxySubjects(roles, {bindings[0], bindings[1], bindings[2]}).empty());
}

TEST(KubeLabels, DriverVersion) {
  EXPECT_EQ(DriverVersionFromLabels({{"nvidia.com/cuda.driver-version.full", "570.133.20"}}),
            "570.133.20");
  EXPECT_EQ(DriverVersionFromLabels({{"nvidia.com/cuda.driver.major", "580"},
                                     {"nvidia.com/cuda.driver.minor", "105"},
                                     {"nvidia.com/cuda.driver.rev", "08"}}),
            "580.105.08");
  // GFD leaves the revision empty for two-field versions.
  EXPECT_EQ(DriverVersionFromLabels({{"nvidia.com/cuda.driver.major", "550"},
                                     {"nvidia.com/cuda.driver.minor", "120"},
                                     {"nvidia.com/cuda.driver.rev", ""}}),
            "550.120");
  EXPECT_EQ(DriverVersionFromLabels({{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}),
            std::nullopt);
  EXPECT_EQ(DriverVersionFromLabels({{"nvidia.com/cuda.driver.major", "5\"; rm"},
                                     {"nvidia.com/cuda.driver.minor", "1"}}),
            std::nullopt);
  EXPECT_EQ(DriverVersionFromLabels(json("labels")), std::nullopt);
}

TEST(KubeImages, TagNameAndExporterVersions) {
  EXPECT_EQ(ImageTag("nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"),
            "4.5.3-4.8.2-ubuntu22.04");
  EXPECT_EQ(ImageName("nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04"), "dcgm-exporter");
  EXPECT_EQ(ImageTag("registry:5000/dcgm-exporter"), "");  // a port is not a tag
  EXPECT_EQ(ImageName("registry:5000/dcgm-exporter"), "dcgm-exporter");
  EXPECT_EQ(ImageTag("nvcr.io/nvidia/k8s/container-toolkit:v1.17.4-ubuntu20.04@sha256:abc"),
            "v1.17.4-ubuntu20.04");
  EXPECT_EQ(ImageName("container-toolkit@sha256:abc"), "container-toolkit");
  const auto v = ParseExporterTag("4.5.3-4.8.2-ubuntu22.04");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dcgm, "4.5.3");
  EXPECT_EQ(v->exporter, "4.8.2");
  EXPECT_FALSE(ParseExporterTag("latest"));
  EXPECT_FALSE(ParseExporterTag("4.5.3"));
  EXPECT_FALSE(ParseExporterTag("ubuntu-4.8.2"));
}

TEST(KubeStorage, SharedFilesystemProvisioners) {
  for (const char* shared :
       {"nfs.csi.k8s.io", "rook-ceph.cephfs.csi.ceph.com", "efs.csi.aws.com",
        "filestore.csi.storage.gke.io", "file.csi.azure.com", "fsx.csi.aws.com", "csi.weka.io",
        "csi.vastdata.com", "spectrumscale.csi.ibm.com"}) {
    EXPECT_TRUE(SharedFilesystemProvisioner(shared)) << shared;
  }
  for (const char* block : {"ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com",
                            "rancher.io/local-path", "rook-ceph.rbd.csi.ceph.com"}) {
    EXPECT_FALSE(SharedFilesystemProvisioner(block)) << block;
  }
}

json Node(const std::string& name, json labels, json capacity, bool ready = true) {
  return {{"metadata", {{"name", name}, {"labels", std::move(labels)}}},
          {"status",
           {{"capacity", std::move(capacity)},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}},
            {"nodeInfo",
             {{"kernelVersion", "6.8.0-60-generic"},
              {"osImage", "Ubuntu 24.04.2 LTS"},
              {"architecture", "amd64"}}}}}};
}

json DaemonSet(const std::string& ns, const std::string& name, const std::string& image) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", {{"spec", {{"containers", {{{"name", "main"}, {"image", image}}}}}}}}}}};
}

json Pod(const std::string& node, bool ready, const std::string& owner = "nvidia-dcgm-exporter") {
  return {{"metadata", {{"ownerReferences", {{{"kind", "DaemonSet"}, {"name", owner}}}}}},
          {"spec", {{"nodeName", node}}},
          {"status",
           {{"phase", "Running"},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

KubeSnapshot Cluster() {
  KubeSnapshot s;
  const json h100 = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                     {"nvidia.com/cuda.driver-version.full", "580.159.03"},
                     {"nvidia.com/gpu.clique", "cluster-a.1"}};
  s.nodes = {Node("gpu1", h100, {{"nvidia.com/gpu", "8"}}),
             Node("gpu2", {{"nvidia.com/gpu.present", "true"}}, {{"nvidia.com/gpu", "8"}}),
             Node("cpu1", json::object(), {{"cpu", "64"}})};
  s.nodes_listed = 3;
  s.daemonsets.items =
      std::vector<json>{DaemonSet("gpu-operator", "nvidia-container-toolkit-daemonset",
                                  "nvcr.io/nvidia/k8s/container-toolkit:v1.19.1-ubuntu20.04"),
                        DaemonSet("gpu-operator", "nvidia-dcgm-exporter",
                                  "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04")};
  s.exporter_pods["gpu-operator/nvidia-dcgm-exporter"].items =
      std::vector<json>{Pod("gpu1", true), Pod("gpu2", false)};
  s.storage_classes.items = std::vector<json>{
      {{"metadata",
        {{"name", "local"},
         {"annotations", {{"storageclass.kubernetes.io/is-default-class", "true"}}}}},
       {"provisioner", "rancher.io/local-path"}},
      {{"metadata", {{"name", "shared"}}}, {"provisioner", "nfs.csi.k8s.io"}}};
  s.volumes.items = std::vector<json>{};
  s.cluster_roles.items = std::vector<json>{Role("cluster-admin", {Rule({"*"}, {"*"}, {"*"})})};
  s.cluster_role_bindings.items = std::vector<json>{
      Binding("cluster-admin", "cluster-admin", {{{"kind", "Group"}, {"name", "system:masters"}}})};
  s.kueue_topologies.items = std::vector<json>{};
  s.volcano_hypernodes.items = std::vector<json>{};
  s.kubelet_configs["gpu1"] = {{"kubeletconfig", {{"cpuManagerPolicy", "static"}}}};
  s.kubelet_configs["cpu1"] = {{"kubeletconfig", json::object()}};
  s.kubelet_problems["gpu2"] = "nodes/proxy: forbidden";
  return s;
}

TEST(KubeEvidence, AmdGpusAreCountedAndTheirDriverLeftToTheNode) {
  KubeSnapshot cluster = Cluster();
  cluster.nodes.push_back(
      Node("mi1", {{"amd.com/gpu.product-name", "Instinct_MI300X"}}, {{"amd.com/gpu", "8"}}));
  const auto nodes = KubeEvidence(cluster);
  const KubeNodeEvidence& mi1 = nodes.at("mi1");
  EXPECT_EQ(mi1.evidence.at("gpu.amd.devices"), 8);
  EXPECT_EQ(mi1.evidence.at("gpu.amd.models"), json{"MI300X"});
  EXPECT_NE(mi1.unread.at("gpu.amd.driver.version").find("the API does not hold them"),
            std::string::npos);
  EXPECT_EQ(nodes.at("gpu1").evidence.at("gpu.amd.devices"), 0);
  EXPECT_FALSE(nodes.at("gpu1").unread.contains("gpu.amd.driver.version"));
}

TEST(KubeEvidence, EachNodesFactsAndTheClustersFromTheApi) {
  const auto nodes = KubeEvidence(Cluster());
  ASSERT_EQ(nodes.size(), 3U);
  const AuditEvidence& gpu1 = nodes.at("gpu1").evidence;
  EXPECT_EQ(gpu1.at("gpu.driver.version"), "580.159.03");
  EXPECT_NE(nodes.at("gpu1").unread.at("gpu.controls.vboost").find("sudo on the node"),
            std::string::npos);
  EXPECT_EQ(gpu1.at("host.kernel.release"), "6.8.0-60-generic");
  EXPECT_EQ(gpu1.at("host.os.id"), "ubuntu");
  EXPECT_EQ(gpu1.at("host.os.version_id"), "24.04");
  EXPECT_EQ(gpu1.at("host.arch"), "x86_64");
  EXPECT_EQ(gpu1.at("containers.nvidia_ctk.version"), "1.19.1");
  EXPECT_EQ(gpu1.at("health.dcgm.version"), "4.5.3");
  EXPECT_EQ(gpu1.at("health.dcgm_exporter.version"), "4.8.2");
  EXPECT_EQ(gpu1.at("health.dcgm_exporter.listening"), true);
  EXPECT_EQ(gpu1.at("kubernetes.kubelet.cpu_manager_policy"), "static");
  EXPECT_EQ(gpu1.at("kubernetes.storage.default_class"), "local");
  EXPECT_EQ(gpu1.at("kubernetes.storage.rwx_provisioner"), "shared");
  EXPECT_EQ(gpu1.at("kubernetes.rbac.nodes_proxy_subjects"), json::array());
  EXPECT_EQ(gpu1.at("kubernetes.topology")["nodes with an NVLink clique label"], 1);
  EXPECT_EQ(gpu1.at("audit.coverage.nodes_read"), (json{{"read", 2}, {"total", 3}}));

  // A GPU node without GFD's driver labels, whose exporter is not ready and whose kubelet the
  // API would not let us ask.
  const KubeNodeEvidence& gpu2 = nodes.at("gpu2");
  EXPECT_FALSE(gpu2.evidence.contains("gpu.driver.version"));
  EXPECT_NE(gpu2.unread.at("gpu.driver.version").find("GPU Feature Discovery"), std::string::npos);
  EXPECT_EQ(gpu2.evidence.at("health.dcgm_exporter.listening"), false);
  EXPECT_EQ(gpu2.evidence.at("health.dcgm_exporter.service"), true);
  EXPECT_EQ(gpu2.unread.at("kubernetes.kubelet.cpu_manager_policy"),
            "its kubelet's configuration could not be read: nodes/proxy: forbidden");

  // A node without GPUs: the GPU facts are "none", not "unread".
  const AuditEvidence& cpu1 = nodes.at("cpu1").evidence;
  EXPECT_TRUE(cpu1.at("gpu.driver.version").is_null());
  EXPECT_TRUE(cpu1.at("containers.nvidia_ctk.version").is_null());
  EXPECT_EQ(cpu1.at("kubernetes.kubelet.cpu_manager_policy"), "none");  // the default
}

TEST(KubeEvidence, ListsTheApiRefusedAreUnreadWithTheReason) {
  KubeSnapshot s = Cluster();
  s.cluster_role_bindings = {std::nullopt, "list clusterrolebindings: forbidden"};
  s.storage_classes = {std::nullopt, "list storageclasses: forbidden"};
  s.daemonsets = {std::nullopt, "list daemonsets: forbidden"};
  s.kueue_topologies = {std::nullopt, "forbidden"};
  const auto nodes = KubeEvidence(s);
  const KubeNodeEvidence& gpu1 = nodes.at("gpu1");
  for (const char* key : {"kubernetes.rbac.nodes_proxy_subjects",
                          "kubernetes.storage.default_class", "kubernetes.storage.rwx_provisioner",
                          "containers.nvidia_ctk.version", "health.dcgm_exporter.listening"}) {
    EXPECT_FALSE(gpu1.evidence.contains(key)) << key;
    EXPECT_NE(gpu1.unread.at(key).find("forbidden"), std::string::npos) << key;
  }
  EXPECT_TRUE(gpu1.evidence.at("kubernetes.topology")["Kueue Topologies"].is_null());
}

TEST(KubeEvidence, ABoundReadWriteManyVolumeShowsASharedClass) {
  KubeSnapshot s = Cluster();
  s.storage_classes.items->pop_back();  // no NFS class
  EXPECT_TRUE(
      KubeEvidence(s).at("gpu1").evidence.at("kubernetes.storage.rwx_provisioner").is_null());
  s.volumes.items = std::vector<json>{
      {{"metadata", {{"name", "pv1"}}},
       {"spec", {{"accessModes", {"ReadWriteMany"}}, {"storageClassName", "weka-fs"}}},
       {"status", {{"phase", "Bound"}}}}};
  EXPECT_EQ(KubeEvidence(s).at("gpu1").evidence.at("kubernetes.storage.rwx_provisioner"),
            "weka-fs");
  // Volumes unreadable and no class by name: unread, not "none".
  s.volumes = {std::nullopt, "forbidden"};
  EXPECT_FALSE(KubeEvidence(s).at("gpu1").evidence.contains("kubernetes.storage.rwx_provisioner"));
}

TEST(KubeEvidence, WhatIsReadAndWhatIsNot) {
  KubeSnapshot s = Cluster();
  // A node the API says is down is not read, whatever its labels.
  s.nodes[0]["status"]["conditions"][0]["status"] = "False";
  // A configz answer without its object is not a policy of "none".
  s.kubelet_configs["cpu1"] = json::object();
  // An exporter pod of another DaemonSet on gpu2 (a selector that matched too much), and one
  // whose Ready condition has the wrong type.
  const json owner = {
      {"ownerReferences", {{{"kind", "DaemonSet"}, {"name", "nvidia-dcgm-exporter"}}}}};
  s.exporter_pods["gpu-operator/nvidia-dcgm-exporter"].items = std::vector<json>{
      Pod("gpu2", true, "something-else"),
      {{"metadata", owner},
       {"spec", {{"nodeName", "gpu1"}}},
       {"status",
        {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", true}}}}}}}};
  // EKS's zone-id label on every node says nothing about the network; a network layer does.
  for (json& node : s.nodes) {
    node["metadata"]["labels"]["topology.k8s.aws/zone-id"] = "use1-az1";
    node["metadata"]["labels"].erase("nvidia.com/gpu.clique");
  }
  auto nodes = KubeEvidence(s);
  EXPECT_EQ(nodes.at("gpu1").evidence.at("audit.coverage.nodes_read"),
            (json{{"read", 1}, {"total", 3}}));
  EXPECT_EQ(nodes.at("gpu1").evidence.at("health.dcgm_exporter.listening"), false);
  EXPECT_EQ(nodes.at("gpu1").evidence.at("health.dcgm_exporter.service"), true);
  EXPECT_EQ(nodes.at("gpu2").evidence.at("health.dcgm_exporter.service"), false);
  EXPECT_FALSE(nodes.at("cpu1").evidence.contains("kubernetes.kubelet.cpu_manager_policy"));
  EXPECT_NE(
      nodes.at("cpu1").unread.at("kubernetes.kubelet.cpu_manager_policy").find("no kubeletconfig"),
      std::string::npos);
  const json& topology = nodes.at("gpu1").evidence.at("kubernetes.topology");
  EXPECT_EQ(topology["nodes with network topology labels"], 0) << topology;
  s.nodes[1]["metadata"]["labels"]["topology.k8s.aws/network-node-layer-1"] = "nn-1";
  nodes = KubeEvidence(s);
  EXPECT_EQ(
      nodes.at("gpu1").evidence.at("kubernetes.topology")["nodes with network topology labels"], 1);
  // The beta default-class annotation still counts.
  s.storage_classes.items->front()["metadata"]["annotations"] = {
      {"storageclass.beta.kubernetes.io/is-default-class", "true"}};
  EXPECT_EQ(KubeEvidence(s).at("gpu1").evidence.at("kubernetes.storage.default_class"), "local");
}

TEST(KubeNodes, GpuNodesByDefault) {
  const KubeSnapshot s = Cluster();
  EXPECT_EQ(GpuNodes(s.nodes).size(), 2U);
  const std::vector<json> cpus = {s.nodes[2]};
  EXPECT_EQ(GpuNodes(cpus).size(), 1U);  // none has a GPU: all of them
}

// Graded, node by node, the worst deciding: what the cluster above comes to.
TEST(KubeEvidence, GradedPerNode) {
  // Two days after the built-in table's date: within its 10 days, and past no grace period.
  const GradeContext context{.target = AuditTarget::kKubernetes,
                             .minimums = &MinimumTable::Builtin(),
                             .now = *ParseIso8601("2026-09-28T00:00:00Z")};
  auto checks = AuditCatalogue::Builtin().Select("");
  ASSERT_TRUE(checks);
  std::vector<NodeFindings> nodes;
  for (auto& [name, e] : KubeEvidence(Cluster())) {
    GradeContext node_context = context;
    node_context.unread = &e.unread;
    node_context.unread_otherwise = kNeedsAPodOnTheNode;
    nodes.push_back({name, GradeChecks(*checks, e.evidence, node_context)});
  }
  std::map<std::string, Finding> by_id;
  for (Finding& f : WorstNodeFindings(nodes)) by_id[f.check_id] = f;
  const auto status = [&](const char* id) { return by_id.at(id).status; };
  EXPECT_EQ(status("isolation.kubernetes-nodes-proxy"), CheckStatus::kPass);
  EXPECT_EQ(status("storage.default-storageclass"), CheckStatus::kPass);
  EXPECT_EQ(status("storage.rwx"), CheckStatus::kPass);
  EXPECT_EQ(status("networking.topology-configured"), CheckStatus::kPass);
  EXPECT_EQ(status("versions.dcgm-exporter"), CheckStatus::kPass);
  EXPECT_EQ(status("versions.nvidia-container-toolkit"), CheckStatus::kPass);
  // gpu2's unread driver and kubelet: UNKNOWN, saying why, and naming the node.
  EXPECT_EQ(status("versions.nvidia-driver"), CheckStatus::kUnknown);
  EXPECT_NE(by_id.at("versions.nvidia-driver").message.find("gpu2: "), std::string::npos);
  EXPECT_NE(by_id.at("versions.nvidia-driver").message.find("GPU Feature Discovery"),
            std::string::npos);
  EXPECT_EQ(status("orchestration.kubelet-cpu-manager"), CheckStatus::kUnknown);
  EXPECT_NE(by_id.at("orchestration.kubelet-cpu-manager").message.find("forbidden"),
            std::string::npos);
  // gpu2's exporter pod is there but not ready: a WARN (FAIL would mean none at all).
  EXPECT_EQ(status("health.dcgm-exporter-running"), CheckStatus::kWarn);
  EXPECT_EQ(status("orchestration.worker-check"), CheckStatus::kWarn);  // 2 of 3 nodes read
  // A host file no API object holds: UNKNOWN, saying a pod would be needed.
  EXPECT_EQ(status("software.perf-event-paranoid"), CheckStatus::kUnknown);
  EXPECT_NE(by_id.at("software.perf-event-paranoid").message.find("needs a pod on the node"),
            std::string::npos);
  // Slurm's checks do not apply.
  EXPECT_EQ(status("orchestration.slurm-accounting"), CheckStatus::kSkip);
}

}  // namespace
}  // namespace cmax::audit
