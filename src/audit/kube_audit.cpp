#include "audit/kube_audit.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <fmt/format.h>
#include <memory>
#include <set>

#include "audit/amd_driver.hpp"
#include "audit/fanout.hpp"
#include "audit/kube_pods.hpp"
#include "audit/side_effects.hpp"
#include "core/strings.hpp"
#include "remediate/kube_api.hpp"
#include "remediate/settings.hpp"
#include "sys/curl_library.hpp"
#include "sys/host.hpp"
#include "sys/http_client.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;
using remediate::KubeField;
using remediate::KubeStr;

// Lists the audit reads besides the nodes (the path, and what it is called in messages).
constexpr std::string_view kDaemonSets = "/apis/apps/v1/daemonsets";
constexpr std::string_view kStorageClasses = "/apis/storage.k8s.io/v1/storageclasses";
constexpr std::string_view kVolumes = "/api/v1/persistentvolumes";
constexpr std::string_view kClusterRoles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
constexpr std::string_view kClusterRoleBindings =
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
constexpr std::array<std::string_view, 3> kKueueTopologies = {
    "/apis/kueue.x-k8s.io/v1beta2/topologies", "/apis/kueue.x-k8s.io/v1beta1/topologies",
    "/apis/kueue.x-k8s.io/v1alpha1/topologies"};
constexpr std::string_view kVolcanoHyperNodes = "/apis/topology.volcano.sh/v1alpha1/hypernodes";

int64_t Quantity(const json& node, const char* resource) {
  const json& value = KubeField(node, {"status", "capacity", resource});
  if (!value.is_string()) return 0;
  int64_t n = 0;
  for (const char c : value.get_ref<const std::string&>()) {
    if (c < '0' || c > '9') break;
    n = n * 10 + (c - '0');
    if (n > 1'000'000) break;
  }
  return n;
}

bool HasGpu(const json& node) {
  return Quantity(node, "nvidia.com/gpu") > 0 || Quantity(node, "amd.com/gpu") > 0 ||
         KubeStr(node, {"metadata", "labels", "nvidia.com/gpu.present"}) == "true";
}

bool HasNvidiaGpu(const json& node) {
  return Quantity(node, "nvidia.com/gpu") > 0 ||
         KubeStr(node, {"metadata", "labels", "nvidia.com/gpu.present"}) == "true" ||
         !KubeStr(node, {"metadata", "labels", "nvidia.com/gpu.product"}).empty();
}

bool LooksLikeVersion(std::string_view text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return false;
  return std::ranges::all_of(text, [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// The images of a pod template's containers.
std::vector<std::string> TemplateImages(const json& daemonset) {
  std::vector<std::string> images;
  const json& containers = KubeField(daemonset, {"spec", "template", "spec", "containers"});
  if (!containers.is_array()) return images;
  for (const json& c : containers) {
    if (c.is_object() && c.contains("image") && c["image"].is_string()) {
      images.push_back(c["image"].get<std::string>());
    }
  }
  return images;
}

std::string DaemonSetKey(const json& daemonset) {
  return KubeStr(daemonset, {"metadata", "namespace"}) + "/" +
         KubeStr(daemonset, {"metadata", "name"});
}

// The first image among the DaemonSets named `name` ("dcgm-exporter", "container-toolkit").
struct FoundImage {
  std::string daemonset;  // "ns/name"
  std::string image;
};
std::vector<FoundImage> ImagesNamed(const std::vector<json>& daemonsets, std::string_view name) {
  std::vector<FoundImage> found;
  for (const json& ds : daemonsets) {
    for (const std::string& image : TemplateImages(ds)) {
      if (ImageName(image) == name) {
        found.push_back({DaemonSetKey(ds), image});
        break;
      }
    }
  }
  return found;
}

// The label selector of a DaemonSet's pods, as a query value ("app=x,release=y").
std::string MatchLabels(const json& daemonset) {
  const json& labels = KubeField(daemonset, {"spec", "selector", "matchLabels"});
  std::vector<std::string> pairs;
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) pairs.push_back(key + "=" + value.get<std::string>());
    }
  }
  return Join(pairs, ",");
}

bool PodReady(const json& pod) {
  if (KubeStr(pod, {"status", "phase"}) != "Running") return false;
  const json& conditions = KubeField(pod, {"status", "conditions"});
  if (!conditions.is_array()) return false;
  return std::ranges::any_of(conditions, [](const json& c) {
    return KubeStr(c, {"type"}) == "Ready" && KubeStr(c, {"status"}) == "True";
  });
}

// "Ubuntu 24.04.1 LTS" -> ("ubuntu", "24.04"); what /etc/os-release would say, for the
// distributions whose osImage says it plainly.
std::pair<std::string, std::string> OsFromImage(std::string_view image) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kNames = {{
      {"Ubuntu ", "ubuntu"},
      {"Debian GNU/Linux ", "debian"},
      {"Rocky Linux ", "rocky"},
      {"Red Hat Enterprise Linux ", "rhel"},
      {"Amazon Linux ", "amzn"},
  }};
  for (const auto& [prefix, id] : kNames) {
    if (!image.starts_with(prefix)) continue;
    std::string_view rest = image.substr(prefix.size());
    size_t end = 0;
    int dots = 0;
    while (end < rest.size() && ((rest[end] >= '0' && rest[end] <= '9') || rest[end] == '.')) {
      if (rest[end] == '.' && ++dots > 1) break;
      ++end;
    }
    return {std::string(id), std::string(rest.substr(0, end))};
  }
  return {};
}

std::string Arch(std::string_view kube_arch) {
  if (kube_arch == "amd64") return "x86_64";
  if (kube_arch == "arm64") return "aarch64";
  return std::string(kube_arch);
}

// A label that says where a node sits in the network: an NVLink clique (GPU Feature
// Discovery), AWS's network node layers, GCE's topology block, sub-block and host, and the
// block/rack/spine keys topology-aware schedulers are set up with. Not zones, regions or
// anything else that merely contains "topology" (EKS puts topology.k8s.aws/zone-id on every
// node).
bool TopologyLabel(std::string_view key) {
  static constexpr std::array<std::string_view, 3> kParts = {"gpu.clique", "network-node-layer",
                                                             "gce-topology-"};
  static constexpr std::array<std::string_view, 4> kEnds = {"topology-block", "topology-subblock",
                                                            "topology-rack", "topology-spine"};
  return std::ranges::any_of(kParts, [&](std::string_view p) { return key.find(p) != key.npos; }) ||
         std::ranges::any_of(kEnds, [&](std::string_view e) { return key.ends_with(e); }) ||
         key.starts_with("network.topology.");
}

json Count(const KubeList& list) {
  return list.items ? json(list.items->size()) : json(nullptr);
}

bool RoleReachesNodesProxy(const json& role) {
  const json& rules = KubeField(role, {"rules"});
  if (!rules.is_array()) return false;
  const auto has = [](const json& list, std::initializer_list<std::string_view> wanted) {
    if (!list.is_array()) return false;
    return std::ranges::any_of(list, [&](const json& v) {
      return v.is_string() && std::ranges::find(wanted, v.get<std::string>()) != wanted.end();
    });
  };
  return std::ranges::any_of(rules, [&](const json& rule) {
    return has(KubeField(rule, {"apiGroups"}), {"", "*"}) &&
           has(KubeField(rule, {"resources"}), {"nodes/proxy", "*/proxy", "*"}) &&
           has(KubeField(rule, {"verbs"}), {"get", "create", "*"});
  });
}

// The identities that must reach the kubelets: the cluster's administrators and the API server
// itself (its kubelet client user: kubeadm's kube-apiserver-kubelet-client, k3s's and RKE2's
// kube-apiserver). Anything else that does (a tenant, a workload's service account, the kubelets
// themselves, system:authenticated) is a finding.
bool ControlPlaneIdentity(const json& subject) {
  const std::string kind = KubeStr(subject, {"kind"});
  const std::string name = KubeStr(subject, {"name"});
  if (kind == "Group") return name == "system:masters";
  return kind == "User" && (name == "kube-apiserver-kubelet-client" || name == "kube-apiserver");
}

}  // namespace

std::vector<json> GpuNodes(const std::vector<json>& nodes) {
  std::vector<json> gpu;
  std::ranges::copy_if(nodes, std::back_inserter(gpu), HasGpu);
  return gpu.empty() ? nodes : gpu;
}

std::vector<std::string> NodesProxySubjects(const std::vector<json>& roles,
                                            const std::vector<json>& bindings) {
  std::set<std::string> reaching;
  for (const json& role : roles) {
    if (RoleReachesNodesProxy(role)) reaching.insert(KubeStr(role, {"metadata", "name"}));
  }
  std::vector<std::string> out;
  for (const json& binding : bindings) {
    if (KubeStr(binding, {"roleRef", "kind"}) != "ClusterRole") continue;
    const std::string role = KubeStr(binding, {"roleRef", "name"});
    if (!reaching.contains(role)) continue;
    const json& subjects = KubeField(binding, {"subjects"});
    if (!subjects.is_array()) continue;
    for (const json& subject : subjects) {
      if (!subject.is_object() || ControlPlaneIdentity(subject)) continue;
      const std::string ns = KubeStr(subject, {"namespace"});
      const std::string kind = KubeStr(subject, {"kind"});
      const std::string subject_name = KubeStr(subject, {"name"});
      out.push_back(SanitizeUtf8(fmt::format("{} {}{} via ClusterRole {} (binding {})",
                                             kind.empty() ? "?" : kind, ns.empty() ? "" : ns + "/",
                                             subject_name.empty() ? "?" : subject_name, role,
                                             KubeStr(binding, {"metadata", "name"}))));
    }
  }
  std::ranges::sort(out);
  return out;
}

std::optional<std::string> DriverVersionFromLabels(const json& labels) {
  if (!labels.is_object()) return std::nullopt;
  const auto label = [&](const char* key) {
    return labels.contains(key) && labels[key].is_string() ? labels[key].get<std::string>()
                                                           : std::string();
  };
  if (std::string full = label("nvidia.com/cuda.driver-version.full"); LooksLikeVersion(full)) {
    return full;
  }
  const std::string major = label("nvidia.com/cuda.driver.major");
  const std::string minor = label("nvidia.com/cuda.driver.minor");
  if (!LooksLikeVersion(major) || !LooksLikeVersion(minor)) return std::nullopt;
  const std::string rev = label("nvidia.com/cuda.driver.rev");
  return major + "." + minor + (LooksLikeVersion(rev) ? "." + rev : "");
}

std::string ImageTag(std::string_view image) {
  image = image.substr(0, image.find('@'));  // a digest pins the image, it is not its tag
  const size_t slash = image.rfind('/');
  const size_t colon = image.rfind(':');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && colon < slash)) {
    return {};
  }
  return std::string(image.substr(colon + 1));
}

std::string ImageName(std::string_view image) {
  image = image.substr(0, image.find('@'));
  const size_t slash = image.rfind('/');
  std::string_view last = slash == std::string_view::npos ? image : image.substr(slash + 1);
  return std::string(last.substr(0, last.find(':')));
}

std::optional<ExporterVersions> ParseExporterTag(std::string_view tag) {
  const std::vector<std::string_view> fields = Split(tag, '-');
  if (fields.size() < 2 || !LooksLikeVersion(fields[0]) || !LooksLikeVersion(fields[1])) {
    return std::nullopt;
  }
  return ExporterVersions{std::string(fields[0]), std::string(fields[1])};
}

bool SharedFilesystemProvisioner(std::string_view provisioner) {
  static constexpr std::array<std::string_view, 17> kShared = {
      "nfs",           "cephfs", "efs.csi.aws.com", "filestore", "file.csi.azure.com",
      "azurefile",     "lustre", "fsx.csi",         "weka",      "vastdata",
      "spectrumscale", "gpfs",   "juicefs",         "beegfs",    "glusterfs",
      "csi.ddn.com",   "exa.csi"};
  return std::ranges::any_of(kShared, [&](std::string_view part) {
    return provisioner.find(part) != std::string_view::npos;
  });
}

// The keys an audit pod reads for itself and not for a tenant: it runs as root, where sudo's
// policy does not apply. (Its resource limits are the container runtime's for every pod, a
// tenant's too, so they are kept.)
namespace {
constexpr std::string_view kPodCannotTell[] = {"access.sudo_noninteractive", "gpu.controls.vboost"};
}  // namespace

std::map<std::string, KubeNodeEvidence> KubeEvidence(const KubeSnapshot& s) {
  // What is the same for every node: the cluster's.
  AuditEvidence cluster;
  std::map<std::string, std::string> cluster_unread;
  const auto unread = [&](const char* key, const KubeList& list, std::string_view what) {
    cluster_unread[key] = fmt::format("{} could not be read: {}", what, list.problem);
  };

  if (s.cluster_roles.items && s.cluster_role_bindings.items) {
    cluster["kubernetes.rbac.nodes_proxy_subjects"] =
        NodesProxySubjects(*s.cluster_roles.items, *s.cluster_role_bindings.items);
  } else {
    unread("kubernetes.rbac.nodes_proxy_subjects",
           s.cluster_roles.items ? s.cluster_role_bindings : s.cluster_roles,
           s.cluster_roles.items ? "ClusterRoleBindings" : "ClusterRoles");
  }

  if (s.storage_classes.items) {
    json classes = json::array();
    json default_class = nullptr;
    json shared = nullptr;
    for (const json& sc : *s.storage_classes.items) {
      const std::string name = SanitizeUtf8(KubeStr(sc, {"metadata", "name"}));
      const std::string provisioner = SanitizeUtf8(KubeStr(sc, {"provisioner"}));
      // The beta annotation is still honoured by Kubernetes.
      const bool is_default =
          KubeStr(sc, {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) ==
              "true" ||
          KubeStr(sc, {"metadata", "annotations",
                       "storageclass.beta.kubernetes.io/is-default-class"}) == "true";
      classes.push_back({{"name", name}, {"provisioner", provisioner}, {"default", is_default}});
      if (is_default && default_class.is_null()) default_class = name;
      if (SharedFilesystemProvisioner(provisioner) && shared.is_null()) shared = name;
    }
    // A ReadWriteMany volume already Bound shows a class that serves it, whatever its driver.
    if (shared.is_null() && s.volumes.items) {
      for (const json& pv : *s.volumes.items) {
        const json& modes = KubeField(pv, {"spec", "accessModes"});
        const bool rwx =
            modes.is_array() && std::ranges::find(modes, json("ReadWriteMany")) != modes.end();
        if (rwx && KubeStr(pv, {"status", "phase"}) == "Bound") {
          const std::string name = KubeStr(pv, {"spec", "storageClassName"});
          shared = SanitizeUtf8(name.empty() ? KubeStr(pv, {"metadata", "name"}) : name);
          break;
        }
      }
    }
    cluster["kubernetes.storage.classes"] = classes;
    cluster["kubernetes.storage.default_class"] = default_class;
    if (!shared.is_null() || s.volumes.items) {
      cluster["kubernetes.storage.rwx_provisioner"] = shared;
    } else {
      unread("kubernetes.storage.rwx_provisioner", s.volumes, "PersistentVolumes");
    }
  } else {
    for (const char* key : {"kubernetes.storage.classes", "kubernetes.storage.default_class",
                            "kubernetes.storage.rwx_provisioner"}) {
      unread(key, s.storage_classes, "StorageClasses");
    }
  }

  size_t topology_nodes = 0;
  size_t clique_nodes = 0;
  for (const json& node : s.nodes) {
    const json& labels = KubeField(node, {"metadata", "labels"});
    if (!labels.is_object()) continue;
    bool topology = false;
    for (const auto& [key, value] : labels.items()) topology = topology || TopologyLabel(key);
    if (labels.contains("nvidia.com/gpu.clique")) ++clique_nodes;
    if (topology) ++topology_nodes;
  }
  cluster["network.fabric.tiers"] = FabricTiers(s.nodes.size());
  cluster["kubernetes.topology"] = {{"Kueue Topologies", Count(s.kueue_topologies)},
                                    {"Volcano HyperNodes", Count(s.volcano_hypernodes)},
                                    {"nodes with an NVLink clique label", clique_nodes},
                                    {"nodes with network topology labels", topology_nodes}};

  // The GPU Operator's DaemonSets: the container toolkit, and dcgm-exporter (with DCGM in it).
  std::optional<std::string> toolkit;
  std::optional<ExporterVersions> exporter;
  std::vector<FoundImage> exporters;
  if (s.daemonsets.items) {
    for (const FoundImage& found : ImagesNamed(*s.daemonsets.items, "container-toolkit")) {
      std::string tag = ImageTag(found.image);
      if (tag.starts_with('v')) tag.erase(0, 1);
      tag = tag.substr(0, tag.find('-'));
      if (LooksLikeVersion(tag)) toolkit = tag;
    }
    exporters = ImagesNamed(*s.daemonsets.items, "dcgm-exporter");
    for (const FoundImage& found : exporters) {
      if (auto v = ParseExporterTag(ImageTag(found.image))) exporter = v;
    }
  }
  // Nodes with a ready exporter pod, and nodes with one that is not ready.
  std::set<std::string> exporter_ready;
  std::set<std::string> exporter_present;
  std::string exporter_pods_problem;
  for (const FoundImage& found : exporters) {
    const auto it = s.exporter_pods.find(found.daemonset);
    if (it == s.exporter_pods.end() || !it->second.items) {
      exporter_pods_problem =
          it == s.exporter_pods.end() ? "not asked" : SanitizeUtf8(it->second.problem);
      continue;
    }
    const std::string daemonset = found.daemonset.substr(found.daemonset.find('/') + 1);
    for (const json& pod : *it->second.items) {
      // The DaemonSet's own pods: its selector may be expressions the list could not use.
      const json& owners = KubeField(pod, {"metadata", "ownerReferences"});
      const bool owned =
          owners.is_array() && std::ranges::any_of(owners, [&](const json& o) {
            return KubeStr(o, {"kind"}) == "DaemonSet" && KubeStr(o, {"name"}) == daemonset;
          });
      if (!owned) continue;
      const std::string node = KubeStr(pod, {"spec", "nodeName"});
      exporter_present.insert(node);
      if (PodReady(pod)) exporter_ready.insert(node);
    }
  }

  std::map<std::string, KubeNodeEvidence> out;
  size_t read = 0;
  for (const json& node : s.nodes) {
    // The snapshot's maps hold the name as the API gave it; what is written is made safe.
    const std::string name = KubeStr(node, {"metadata", "name"});
    KubeNodeEvidence& e = out[SanitizeUtf8(name)];
    e.evidence = cluster;
    e.unread = cluster_unread;
    const bool nvidia = HasNvidiaGpu(node);
    const json& labels = KubeField(node, {"metadata", "labels"});

    // The node's own facts.
    if (const std::string kernel = KubeStr(node, {"status", "nodeInfo", "kernelVersion"});
        !kernel.empty()) {
      e.evidence["host.kernel.release"] = SanitizeUtf8(kernel);
    }
    if (const auto [id, version] = OsFromImage(KubeStr(node, {"status", "nodeInfo", "osImage"}));
        !id.empty()) {
      e.evidence["host.os.id"] = id;
      e.evidence["host.os.version_id"] = version;
    }
    if (const std::string arch = KubeStr(node, {"status", "nodeInfo", "architecture"});
        !arch.empty()) {
      e.evidence["host.arch"] = SanitizeUtf8(Arch(arch));
    }

    // The GPU's model, as GPU Feature Discovery names it ("NVIDIA-GB200").
    if (const std::string product = KubeStr(labels, {"nvidia.com/gpu.product"}); !product.empty()) {
      e.evidence["gpu.name"] = json::array({SanitizeUtf8(product)});
    }
    // AMD GPUs, as the device plugin counts them; their models as its node labeller names them
    // ("Instinct_MI300X"). The driver's release is proved from the node's files and packages,
    // which the API does not hold.
    const int64_t amd = Quantity(node, "amd.com/gpu");
    e.evidence["gpu.amd.devices"] = amd;
    if (amd > 0) {
      e.evidence["gpu.amd.models"] = InstinctModels(KubeStr(labels, {"amd.com/gpu.product-name"}));
      e.unread["gpu.amd.driver.version"] =
          "the amdgpu module and the package it came from are on the node: the API does not "
          "hold them";
    }
    // The driver, from GPU Feature Discovery.
    bool driver_read = true;
    if (!nvidia) {
      e.evidence["gpu.driver.version"] = nullptr;
    } else if (auto driver = DriverVersionFromLabels(labels)) {
      e.evidence["gpu.driver.version"] = *driver;
      e.unread["gpu.controls.vboost"] =
          "whether a tenant may set vboost is asked of sudo on the node: the API does not hold it";
    } else {
      driver_read = false;
      e.unread["gpu.driver.version"] =
          "the node has NVIDIA GPUs but no GPU Feature Discovery driver labels "
          "(nvidia.com/cuda.driver.*)";
    }

    // The GPU Operator's components.
    if (!s.daemonsets.items) {
      for (const char* key : {"containers.nvidia_ctk.version", "health.dcgm.version",
                              "health.dcgm_exporter.version", "health.dcgm_exporter.listening"}) {
        e.unread[key] = "DaemonSets could not be read: " + SanitizeUtf8(s.daemonsets.problem);
      }
    } else {
      if (!nvidia) {
        e.evidence["containers.nvidia_ctk.version"] = nullptr;
      } else if (toolkit) {
        e.evidence["containers.nvidia_ctk.version"] = *toolkit;
      } else {
        e.unread["containers.nvidia_ctk.version"] =
            "no GPU Operator toolkit DaemonSet; a toolkit installed on the host is not visible "
            "through the API";
      }
      if (exporter) {
        e.evidence["health.dcgm.version"] = exporter->dcgm;
        e.evidence["health.dcgm_exporter.version"] = exporter->exporter;
      } else if (exporters.empty()) {
        e.evidence["health.dcgm_exporter.version"] = nullptr;
        e.unread["health.dcgm.version"] =
            "no dcgm-exporter DaemonSet; DCGM on the host is not visible through the API";
      } else {
        e.unread["health.dcgm_exporter.version"] = e.unread["health.dcgm.version"] =
            "the dcgm-exporter image's tag does not name its versions";
      }
      if (!exporter_pods_problem.empty()) {
        e.unread["health.dcgm_exporter.listening"] =
            "dcgm-exporter's pods could not be read: " + exporter_pods_problem;
      } else {
        e.evidence["health.dcgm_exporter.listening"] = exporter_ready.contains(name);
        e.evidence["health.dcgm_exporter.service"] = exporter_present.contains(name);
      }
    }

    // The kubelet's configuration, through nodes/proxy.
    const auto config = s.kubelet_configs.find(name);
    const json* kubelet =
        config == s.kubelet_configs.end() ? nullptr : &KubeField(config->second, {"kubeletconfig"});
    if (kubelet != nullptr && kubelet->is_object()) {
      const json& policy = KubeField(*kubelet, {"cpuManagerPolicy"});
      // configz lists every setting; an older kubelet leaves out the default.
      e.evidence["kubernetes.kubelet.cpu_manager_policy"] =
          policy.is_string() ? json(SanitizeUtf8(policy.get<std::string>())) : json("none");
    } else if (kubelet != nullptr) {
      e.unread["kubernetes.kubelet.cpu_manager_policy"] =
          "its kubelet's configz answer holds no kubeletconfig";
    } else {
      const auto problem = s.kubelet_problems.find(name);
      e.unread["kubernetes.kubelet.cpu_manager_policy"] =
          problem == s.kubelet_problems.end()
              ? std::string("its kubelet was not asked")
              : "its kubelet's configuration could not be read: " + SanitizeUtf8(problem->second);
    }

    // What the node's own pod read is first-hand: it stands over what the API tells, except
    // where the pod found nothing the API did find (the GPU Operator keeps its toolkit, DCGM
    // and exporter in containers and paths of their own, which the host's PATH and network do
    // not show), and what the pod cannot tell for a tenant.
    e.unread_otherwise = std::string(kNeedsAPodOnTheNode);
    const auto pod = s.pod_evidence.find(name);
    if (pod != s.pod_evidence.end() && pod->second.is_object()) {
      for (const auto& [key, value] : pod->second.items()) {
        if (key.starts_with("audit.coverage.")) continue;  // the whole audit's, set below
        if (std::ranges::find(kPodCannotTell, key) != std::ranges::end(kPodCannotTell)) {
          e.unread[key] =
              "the audit pod runs as root, so it cannot tell what a tenant's pod may do with "
              "sudo or nvidia-smi";
          continue;
        }
        const auto api = e.evidence.find(key);
        const bool api_found =
            api != e.evidence.end() && !api->second.is_null() && api->second != json(false);
        if (api_found && (value.is_null() || value == json(false))) continue;
        e.evidence[key] = value;
        e.unread.erase(key);
      }
      e.unread_otherwise = "its audit pod did not read it on the node";
      driver_read = true;
    } else if (const auto problem = s.pod_problems.find(name); problem != s.pod_problems.end()) {
      e.unread_otherwise = "not read on the node: its audit pod gave no evidence (" +
                           SanitizeUtf8(problem->second) + ")";
    }
    // Read: the API says the node is up, and for a GPU node its driver is known.
    if (driver_read && remediate::KubeConditionStatus(node, "Ready") == "True") ++read;
  }
  for (auto& [name, e] : out) {
    e.evidence["audit.coverage.nodes_read"] = {{"read", read}, {"total", s.nodes.size()}};
  }
  return out;
}

namespace {

// One list, read or not.
KubeList ReadList(remediate::KubeApi& api, std::string_view path, bool kind_may_be_absent,
                  const std::string& query = "") {
  auto items = api.List(std::string(path), query);
  if (items) return {std::move(*items), {}};
  if (kind_may_be_absent && items.error().code == ErrorCode::kNotFound) {
    return {std::vector<json>{}, {}};  // the CRD is not installed: none
  }
  return {std::nullopt, SanitizeUtf8(items.error().message)};
}

// "https://10.0.0.1:6443/prefix" -> "10.0.0.1:6443": the run's target.
std::string ServerHost(std::string_view server) {
  if (const size_t scheme = server.find("://"); scheme != std::string_view::npos) {
    server.remove_prefix(scheme + 3);
  }
  return SanitizeUtf8(server.substr(0, server.find('/')));
}

std::map<std::string, std::string> KubeEnv(const AuditIo& io) {
  if (!io.env) return {};
  return remediate::KubeEnvironment(io.env);
}

}  // namespace

Result<AuditReport> RunKubeAudit(const AuditOptions& options, const KubeAuditOptions& kube,
                                 const AuditIo& io) {
  if (!(kube.budget_s > 0)) return Fail(ErrorCode::kInvalidArgument, "--budget must be > 0");
  if (!kube.image.empty() && !options.side_effects.allowed) {
    return Fail(ErrorCode::kInvalidArgument,
                "--image starts a pod on every node audited, a side effect: it needs "
                "--allow-side-effects");
  }
  const bool pods_wanted = options.side_effects.allowed && !kube.image.empty();
  const WallTime run_started = io.clock->Now();  // the run's start
  auto prepared = PrepareAudit(options, io);
  if (!prepared) return tl::unexpected(prepared.error());
  auto connection = remediate::ResolveKubeConnection(kube.connection, *io.fs, KubeEnv(io));
  if (!connection) return Fail(ErrorCode::kInvalidArgument, "{}", connection.error().message);
  std::unique_ptr<sys::HttpClient> own_http;
  sys::HttpClient* http = io.http;
  if (http == nullptr) {
    if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
    own_http = std::make_unique<sys::CurlHttpClient>(connection->tls);
    http = own_http.get();
  }
  const Duration request_timeout = SecondsAsDuration(options.probe_timeout_s);
  remediate::KubeApi api(*http, *io.fs, *io.clock, *connection,
                         {.request_timeout = request_timeout});
  // A kubelet that does not answer is not retried: the API server has waited for it already.
  remediate::KubeApi once(*http, *io.fs, *io.clock, *connection,
                          {.request_timeout = request_timeout, .attempts = 1});
  const GradeContext context{.target = AuditTarget::kKubernetes,
                             .minimums = &prepared->table,
                             .now = io.clock->Now(),
                             .allow_side_effects = options.side_effects.allowed};
  GradedAudit graded{.target = "kubernetes/" + ServerHost(connection->server),
                     .host = sys::Hostname(),
                     .started = run_started};

  KubeSnapshot snapshot;
  std::string server_problem;
  std::string query;
  if (!kube.selector.empty()) query = "labelSelector=" + remediate::KubeEscape(kube.selector);
  auto listed = api.List("/api/v1/nodes", query);
  if (!listed) {
    server_problem = SanitizeUtf8(listed.error().message);
  } else {
    snapshot.nodes_listed = listed->size();
    snapshot.nodes = kube.selector.empty() ? GpuNodes(*listed) : std::move(*listed);
    if (snapshot.nodes.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "the API server lists no node{}",
                  kube.selector.empty() ? "" : " matching " + SanitizeUtf8(kube.selector));
    }
    std::vector<std::string> names;
    for (const json& node : snapshot.nodes) names.push_back(KubeStr(node, {"metadata", "name"}));
    const std::string what = fmt::format(
        "read {} node(s) ({}) of {} and the cluster's DaemonSets, StorageClasses, volumes and "
        "RBAC, and each node's kubelet configuration through nodes/proxy (GET requests only){}",
        names.size(), SanitizeUtf8(Join(names, ",")), connection->server,
        pods_wanted ? fmt::format("; then start a privileged pod of image {} on each (namespace "
                                  "{}; the host's / read-only) to read the node, and delete it",
                                  SanitizeUtf8(kube.image), SanitizeUtf8(kube.pod_namespace))
                    : "");
    if (io.confirm && !io.confirm(what)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "not confirmed: nothing was read (--yes goes ahead without asking)");
    }
  }

  if (server_problem.empty()) {
    // The budget starts once the user said yes: every read after it is within it.
    const WallTime reads_started = io.clock->Now();
    const auto spent = [&] {
      return std::chrono::duration<double>(io.clock->Now() - reads_started).count();
    };
    const std::string over = fmt::format("the --budget of {} s was spent", kube.budget_s);
    const auto read = [&](std::string_view path, bool kind_may_be_absent,
                          const std::string& list_query = "") -> KubeList {
      if (spent() > kube.budget_s) return {std::nullopt, over};
      return ReadList(api, path, kind_may_be_absent, list_query);
    };
    snapshot.daemonsets = read(kDaemonSets, false);
    snapshot.storage_classes = read(kStorageClasses, false);
    snapshot.volumes = read(kVolumes, false);
    snapshot.cluster_roles = read(kClusterRoles, false);
    snapshot.cluster_role_bindings = read(kClusterRoleBindings, false);
    // Kueue's Topology moved from v1alpha1 to v1beta1 and v1beta2, and the older versions stop
    // being served: the newest the server has.
    for (std::string_view version : kKueueTopologies) {
      snapshot.kueue_topologies = read(version, true);
      if (!snapshot.kueue_topologies.items || !snapshot.kueue_topologies.items->empty()) break;
    }
    snapshot.volcano_hypernodes = read(kVolcanoHyperNodes, true);
    if (snapshot.daemonsets.items) {
      for (const FoundImage& found : ImagesNamed(*snapshot.daemonsets.items, "dcgm-exporter")) {
        const std::string ns = found.daemonset.substr(0, found.daemonset.find('/'));
        const auto ds = std::ranges::find_if(*snapshot.daemonsets.items, [&](const json& d) {
          return DaemonSetKey(d) == found.daemonset;
        });
        const std::string selector = MatchLabels(*ds);
        snapshot.exporter_pods[found.daemonset] =
            read("/api/v1/namespaces/" + remediate::KubeEscape(ns) + "/pods", false,
                 selector.empty() ? "" : "labelSelector=" + remediate::KubeEscape(selector));
      }
    }
    for (const json& node : snapshot.nodes) {
      if (io.interrupted && io.interrupted()) break;
      const std::string name = KubeStr(node, {"metadata", "name"});
      if (remediate::KubeConditionStatus(node, "Ready") != "True") {
        snapshot.kubelet_problems[name] = "the node is not Ready";
        continue;
      }
      if (spent() > kube.budget_s) {
        snapshot.kubelet_problems[name] = over;
        continue;
      }
      auto response =
          once.Call("GET", "/api/v1/nodes/" + remediate::KubeEscape(name) + "/proxy/configz");
      if (!response) {
        snapshot.kubelet_problems[name] = SanitizeUtf8(response.error().message);
      } else if (response->status != 200) {
        snapshot.kubelet_problems[name] =
            SanitizeUtf8(remediate::KubeStatusError(*response, "nodes/proxy").message);
      } else if (auto body = remediate::KubeParse(*response, "configz"); body) {
        snapshot.kubelet_configs[name] = std::move(*body);
      } else {
        snapshot.kubelet_problems[name] = SanitizeUtf8(body.error().message);
      }
    }
  }

  // With side effects allowed and an image given, each Ready node is read by its own pod.
  std::map<std::string, AuditPodOutcome> pod_outcomes;
  if (server_problem.empty() && pods_wanted && !(io.interrupted && io.interrupted())) {
    std::vector<std::string> ready;
    for (const json& node : snapshot.nodes) {
      const std::string name = KubeStr(node, {"metadata", "name"});
      if (remediate::KubeConditionStatus(node, "Ready") == "True") {
        ready.push_back(name);
      } else {
        snapshot.pod_problems[name] = "the node is not Ready";
      }
    }
    const double left =
        kube.budget_s - std::chrono::duration<double>(io.clock->Now() - run_started).count();
    pod_outcomes =
        RunAuditPods(api, ready, options,
                     {.image = kube.image,
                      .pod_namespace = kube.pod_namespace,
                      .node_timeout_s = kube.node_timeout_s,
                      .budget_s = std::max(left, 1.0),
                      .run_token = NewRunToken()},
                     {.clock = io.clock, .interrupted = io.interrupted, .note = io.note});
    for (auto& [name, outcome] : pod_outcomes) {
      if (outcome.document) {
        snapshot.pod_evidence[name] = std::move((*outcome.document)["evidence"]);
      } else {
        snapshot.pod_problems[name] = outcome.problem;
      }
    }
  }

  std::vector<NodeFindings> nodes;
  json documents = json::object();
  json nodes_read = {{"read", 0}, {"total", snapshot.nodes.size()}};
  for (auto& [name, e] : KubeEvidence(snapshot)) {
    nodes_read = e.evidence["audit.coverage.nodes_read"];
    if (const auto pod = pod_outcomes.find(name); pod != pod_outcomes.end() &&
                                                  !pod->second.pod.empty() &&
                                                  pod->second.deleted != kPodNeverCreated) {
      const PodSideEffect effect = DescribePodSideEffect(
          name, pod->second, {.image = kube.image, .pod_namespace = kube.pod_namespace});
      RecordSideEffect(e.evidence, "audit.pod", effect.did, effect.undo);
    }
    GradeContext node_context = context;
    node_context.unread = &e.unread;
    node_context.unread_otherwise = e.unread_otherwise;
    nodes.push_back({name, GradeChecks(prepared->checks, e.evidence, node_context)});
    json doc = {{"node", name},
                {"evidence", json::object()},
                {"unread", e.unread},
                {"unread_otherwise", e.unread_otherwise}};
    for (const auto& [key, value] : e.evidence) doc["evidence"][key] = value;
    documents[name] = std::move(doc);
  }
  const bool interrupted = io.interrupted && io.interrupted();
  if (!server_problem.empty()) {
    graded.summary =
        "the Kubernetes API server did not answer (" + server_problem + "): every check is UNKNOWN";
    graded.findings =
        UnreachableNodeFindings(GradeChecks(prepared->checks, {}, context),
                                "the Kubernetes API server did not answer: " + server_problem);
  } else if (!interrupted) {
    graded.findings = WorstNodeFindings(nodes);
    std::vector<std::string> unread_lists;
    for (const auto& [what, list] : {std::pair{"DaemonSets", &snapshot.daemonsets},
                                     {"StorageClasses", &snapshot.storage_classes},
                                     {"PersistentVolumes", &snapshot.volumes},
                                     {"ClusterRoles", &snapshot.cluster_roles},
                                     {"ClusterRoleBindings", &snapshot.cluster_role_bindings}}) {
      if (!list->items) unread_lists.push_back(what);
    }
    graded.summary = fmt::format(
        "{} node(s) audited through the API ({} listed{}); {} kubelet configuration(s) read",
        snapshot.nodes.size(), snapshot.nodes_listed,
        kube.selector.empty() ? ", those with GPUs" : ", matching " + SanitizeUtf8(kube.selector),
        snapshot.kubelet_configs.size());
    if (!unread_lists.empty()) {
      graded.summary += "; the API refused " + Join(unread_lists, ", ");
    }
    if (pods_wanted) {
      size_t started = 0;
      size_t left_behind = 0;
      for (const auto& [name, outcome] : pod_outcomes) {
        if (outcome.pod.empty() || outcome.deleted == kPodNeverCreated) continue;
        ++started;
        if (outcome.deleted != "deleted") ++left_behind;
      }
      graded.summary += fmt::format("; {} node(s) read by their pod ({} pod(s) started{})",
                                    snapshot.pod_evidence.size(), started,
                                    left_behind == 0 ? ", all deleted"
                                                     : fmt::format(", {} NOT deleted: see "
                                                                   "audit.side_effects",
                                                                   left_behind));
    }
  }
  json coverage = {{"nodes", snapshot.nodes.size()},
                   {"answered", nodes_read["read"]},  // GPU nodes with driver facts
                   {"unreachable", json::object()},
                   {"listed", snapshot.nodes_listed},
                   {"selector", kube.selector},
                   {"server", connection->server},
                   {"kubelets_read", snapshot.kubelet_configs.size()},
                   {"kubelets_unread", snapshot.kubelet_problems}};
  for (EvidenceItem& item : ClusterEvidence("kubernetes", coverage, nodes, documents)) {
    graded.evidence.push_back(std::move(item));
  }
  return RecordAudit(options, *prepared, std::move(graded), io);
}

}  // namespace cmax::audit
