// The audit of a Kubernetes cluster, through its API server only: GET requests, no pod, no
// claim, nothing written. What the API holds is graded per node as on Slurm (the worst node
// decides each check): GPU Feature Discovery's labels (the driver), each node's own facts
// (kernel, OS, architecture), the GPU Operator's DaemonSets and their images (the container
// toolkit; DCGM and dcgm-exporter, and whether an exporter pod is ready on each node), the
// kubelet's configuration through nodes/proxy (the CPU manager policy), StorageClasses and
// bound volumes (a default class, ReadWriteMany), ClusterRoles and their bindings (who reaches
// nodes/proxy), and the scheduler's view of the network (Kueue Topology, Volcano HyperNodes,
// clique and topology labels). What only a pod on the node could read is UNKNOWN, and says so.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/audit_run.hpp"
#include "audit/grading.hpp"
#include "remediate/kube_config.hpp"

namespace cmax::audit {

struct KubeAuditOptions {
  remediate::KubeFlags connection;  // --kube-api, --kubeconfig, --kube-context ...
  std::string selector;   // a label selector for the nodes (-l); empty: the nodes with GPUs
  double budget_s = 120;  // every read in all; kubelets not asked by then are UNKNOWN
  // With --allow-side-effects: an image of cmax to read each node in a pod (kube_pods.hpp);
  // empty: no pod, and what only a node can tell is UNKNOWN.
  std::string image;
  std::string pod_namespace = "cmax";
  double node_timeout_s = 30;  // a pod's evidence (its --node-timeout)
};

// `cmax audit --kubernetes`. Without an API server to ask (no flag, kubeconfig or service
// account) it is a usage error; one that does not answer makes every check UNKNOWN and the run
// is still recorded.
Result<AuditReport> RunKubeAudit(const AuditOptions& options, const KubeAuditOptions& kube,
                                 const AuditIo& io);

// Pure parts.

// One list read from the API server: its items, or why it could not be read. A kind the
// cluster does not have (its CRD is not installed) is read, and empty.
struct KubeList {
  std::optional<std::vector<nlohmann::json>> items;
  std::string problem;
};

// What the audit read, as it came.
struct KubeSnapshot {
  std::vector<nlohmann::json> nodes;  // the nodes audited
  size_t nodes_listed = 0;            // all the API listed, before choosing
  KubeList daemonsets;
  KubeList storage_classes;
  KubeList volumes;  // PersistentVolumes
  KubeList cluster_roles;
  KubeList cluster_role_bindings;
  KubeList kueue_topologies;
  KubeList volcano_hypernodes;
  std::map<std::string, KubeList> exporter_pods;  // a dcgm-exporter DaemonSet ("ns/name"): pods
  std::map<std::string, nlohmann::json> kubelet_configs;  // node: its kubelet's configz
  std::map<std::string, std::string> kubelet_problems;    // node: why that was not read
  // What each node's audit pod read (its document's evidence), and why a pod gave none.
  std::map<std::string, nlohmann::json> pod_evidence;
  std::map<std::string, std::string> pod_problems;
};

// A node's evidence, and for each key that could not be read, why not.
struct KubeNodeEvidence {
  AuditEvidence evidence;
  std::map<std::string, std::string> unread;
  std::string unread_otherwise;  // why any other key is missing (kNeedsAPodOnTheNode ...)
};
std::map<std::string, KubeNodeEvidence> KubeEvidence(const KubeSnapshot& snapshot);

// Why a check whose evidence is not in KubeNodeEvidence::unread was not collected.
inline constexpr std::string_view kNeedsAPodOnTheNode =
    "not readable through the Kubernetes API: it needs a pod on the node, which this read-only "
    "audit does not start (--allow-side-effects --image IMAGE starts one)";

// The nodes worth auditing when no selector is given: those with GPUs (nvidia.com/gpu or
// amd.com/gpu in their capacity, or GPU Feature Discovery's gpu.present label); all of them
// when none has one.
std::vector<nlohmann::json> GpuNodes(const std::vector<nlohmann::json>& nodes);

// The subjects a ClusterRoleBinding gives get (or create, or *) on nodes/proxy, */proxy or *,
// as "Kind namespace/name via ClusterRole R (binding B)", leaving out the control plane's own
// identities (the system:masters and system:nodes groups, the control plane's system: users).
std::vector<std::string> NodesProxySubjects(const std::vector<nlohmann::json>& roles,
                                            const std::vector<nlohmann::json>& bindings);

// The driver version GPU Feature Discovery labelled a node with ("570.133.20"); nullopt
// without those labels.
std::optional<std::string> DriverVersionFromLabels(const nlohmann::json& labels);

// An image reference's tag ("nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04" ->
// "4.5.3-4.8.2-ubuntu22.04"), and the name before it ("dcgm-exporter"); empty when absent.
std::string ImageTag(std::string_view image);
std::string ImageName(std::string_view image);
// dcgm-exporter's tag holds DCGM's version, then the exporter's.
struct ExporterVersions {
  std::string dcgm;
  std::string exporter;
};
std::optional<ExporterVersions> ParseExporterTag(std::string_view tag);

// Whether a StorageClass's provisioner is a shared filesystem's CSI driver (NFS, CephFS, EFS,
// Filestore, Azure Files, Lustre, WEKA, VAST, GPFS, JuiceFS, BeeGFS ...): ReadWriteMany.
bool SharedFilesystemProvisioner(std::string_view provisioner);

}  // namespace cmax::audit
