#include "audit/kube_pods.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <thread>

#include "audit/fanout.hpp"
#include "audit/slurm_audit.hpp"
#include "core/strings.hpp"
#include "remediate/kube_api.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;
using remediate::KubeEscape;
using remediate::KubeField;
using remediate::KubeInt;
using remediate::KubeStr;

constexpr std::string_view kContainer = "audit";
// A pod's log holds its node's frames (tens of KB); more is not an audit pod's.
constexpr size_t kLogLimitBytes = size_t{16} << 20;

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + KubeEscape(ns) + "/pods/" + KubeEscape(name);
}

double SecondsSince(const Clock& clock, WallTime since) {
  return std::chrono::duration<double>(clock.Now() - since).count();
}

}  // namespace

std::string AuditPodName(std::string_view node, std::string_view run_token) {
  std::string part;
  for (const char c : node) {
    const auto u = static_cast<unsigned char>(c);
    part.push_back(std::isalnum(u) != 0 ? static_cast<char>(std::tolower(u)) : '-');
  }
  std::string token;
  for (const char c : run_token) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      token.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  token = token.substr(0, 12);
  const size_t room =
      63 - std::string_view("cmax-audit-").size() - (token.empty() ? 0 : 1 + token.size());
  if (part.size() > room) {
    // Two long names that share a beginning stay apart: a hash of the whole name.
    uint32_t hash = 2166136261U;
    for (const char c : node) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
    part = fmt::format("{}-{:08x}", part.substr(0, room - 9), hash);
  }
  while (!part.empty() && part.back() == '-') part.pop_back();
  std::string name = "cmax-audit-" + part;
  if (!token.empty()) name += "-" + token;
  return name;
}

json AuditPodManifest(std::string_view node, std::string_view pod_name,
                      const std::vector<std::string>& args, const AuditPodOptions& options) {
  json command = json::array({"cmax"});
  for (const std::string& arg : args) command.push_back(arg);
  // The kubelet ends a pod the audit lost track of (its host gone, Ctrl-C twice).
  const auto deadline = static_cast<int64_t>(std::ceil(std::max(options.budget_s, 1.0))) + 30;
  json container = {
      {"name", kContainer},
      {"image", options.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", command},
      {"env",
       {{{"name", "CMAX_NODE_NAME"},
         {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
        // The container toolkit's NVML and nvidia-smi for cmax's own reads; no GPU is asked of
        // the device plugin, so none is taken from a tenant.
        {{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}},
        {{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "utility"}}}},
      {"securityContext", {{"privileged", true}, {"readOnlyRootFilesystem", true}}},
      // No resources asked: a node whose tenants hold all it has still admits the pod.
      {"volumeMounts", {{{"name", "host"}, {"mountPath", kPodHostRoot}, {"readOnly", true}}}}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", pod_name},
        {"namespace", options.pod_namespace},
        {"labels",
         {{"app.kubernetes.io/name", "cmax-audit"}, {"cmax.io/audit-run", options.run_token}}}}},
      {"spec",
       {{"nodeName", node},
        {"restartPolicy", "Never"},
        {"hostPID", true},
        {"hostNetwork", true},
        {"dnsPolicy", "ClusterFirstWithHostNet"},
        {"automountServiceAccountToken", false},
        {"enableServiceLinks", false},
        {"terminationGracePeriodSeconds", 5},
        {"activeDeadlineSeconds", deadline},
        {"tolerations", {{{"operator", "Exists"}}}},
        {"containers", {container}},
        {"volumes", {{{"name", "host"}, {"hostPath", {{"path", "/"}}}}}}}}};
}

PodProgress AuditPodProgress(const json& pod) {
  const std::string phase = KubeStr(pod, {"status", "phase"});
  const json& statuses = KubeField(pod, {"status", "containerStatuses"});
  const json& status = statuses.is_array() && !statuses.empty() ? statuses.front() : json();
  const json& terminated = KubeField(status, {"state", "terminated"});
  const json& waiting = KubeField(status, {"state", "waiting"});
  std::string why;
  if (terminated.is_object()) {
    why = fmt::format("exit {}", KubeInt(terminated, {"exitCode"}));
    if (const std::string reason = KubeStr(terminated, {"reason"}); !reason.empty()) {
      why += " (" + reason + ")";
    }
  } else if (waiting.is_object()) {
    why = KubeStr(waiting, {"reason"});
    if (const std::string message = KubeStr(waiting, {"message"}); !message.empty()) {
      why += ": " + message;
    }
  } else if (const std::string reason = KubeStr(pod, {"status", "reason"}); !reason.empty()) {
    why = reason;  // the kubelet's own words for a pod it ended (Evicted, DeadlineExceeded)
    if (const std::string message = KubeStr(pod, {"status", "message"}); !message.empty()) {
      why += ": " + message;
    }
  }
  const std::string detail = SanitizeUtf8(why.empty() ? phase : phase + ": " + why);
  if (phase == "Succeeded") return {PodState::kDone, detail};
  if (phase == "Failed") return {PodState::kFailed, detail};
  return {PodState::kWaiting, detail.empty() ? "not yet placed" : detail};
}

std::map<std::string, AuditPodOutcome> RunAuditPods(remediate::KubeApi& api,
                                                    const std::vector<std::string>& nodes,
                                                    const AuditOptions& options,
                                                    const AuditPodOptions& pods,
                                                    const AuditPodIo& io) {
  const std::string& ns = pods.pod_namespace;
  AuditOptions on_node = options;
  on_node.host_root = std::string(kPodHostRoot);
  const std::vector<std::string> args = NodeEvidenceArgs(on_node, pods.node_timeout_s);
  const WallTime started = io.clock->Now();
  std::map<std::string, AuditPodOutcome> outcomes;
  std::map<std::string, std::string> waiting;  // node -> its pod's name, until it is done
  for (const std::string& node : nodes) {
    AuditPodOutcome& outcome = outcomes[node];
    if (io.interrupted && io.interrupted()) {
      outcome.problem = "interrupted before its pod was started";
      continue;
    }
    const std::string name = AuditPodName(node, pods.run_token);
    auto created = api.Call("POST", "/api/v1/namespaces/" + KubeEscape(ns) + "/pods",
                            AuditPodManifest(node, name, args, pods).dump());
    if (!created) {
      outcome.problem = "its pod could not be created: " + SanitizeUtf8(created.error().message);
    } else if (created->status == 404) {
      outcome.problem = fmt::format(
          "its pod could not be created: namespace {} does not exist "
          "(deploy/kubernetes/namespace.yaml creates it; --pod-namespace names another)",
          SanitizeUtf8(ns));
    } else if (created->status != 200 && created->status != 201) {
      outcome.problem = "its pod could not be created: " +
                        SanitizeUtf8(remediate::KubeStatusError(*created, "create pod").message);
    } else {
      outcome.pod = ns + "/" + name;
      waiting[node] = name;
    }
  }
  if (io.note && !waiting.empty()) {
    io.note(fmt::format("started {} audit pod(s) in namespace {} (image {}); waiting for them ...",
                        waiting.size(), ns, pods.image));
  }
  // Until each is done, or the budget is spent; half a second between looks.
  std::map<std::string, std::string> last_seen;  // node -> where its pod stood
  while (!waiting.empty()) {
    for (auto it = waiting.begin(); it != waiting.end();) {
      const auto& [node, name] = *it;
      AuditPodOutcome& outcome = outcomes[node];
      auto got = api.Call("GET", PodPath(ns, name));
      if (!got || got->status != 200) {
        last_seen[node] = !got ? SanitizeUtf8(got.error().message)
                               : SanitizeUtf8(remediate::KubeStatusMessage(*got));
        if (got && got->status == 404) {
          outcome.problem = "its pod vanished (deleted by someone else): " + last_seen[node];
          it = waiting.erase(it);
          continue;
        }
        ++it;
        continue;
      }
      auto pod = remediate::KubeParse(*got, "get pod");
      const PodProgress progress =
          pod ? AuditPodProgress(*pod) : PodProgress{PodState::kWaiting, pod.error().message};
      last_seen[node] = progress.detail;
      if (progress.state == PodState::kWaiting) {
        ++it;
        continue;
      }
      // Done or failed: its log says which document, or which error, it sent.
      auto log = api.Call("GET", PodPath(ns, name) + "/log?container=" + std::string(kContainer) +
                                     "&limitBytes=" + std::to_string(kLogLimitBytes));
      std::map<std::string, NodeDocument> heard;
      if (log && log->status == 200) heard = ReadFrames(log->body);
      NodeDocument mine;
      if (heard.size() == 1) {
        mine = std::move(heard.begin()->second);
      } else if (heard.contains(node)) {
        mine = std::move(heard[node]);
      } else {
        mine.problem = !log ? "its log could not be read: " + SanitizeUtf8(log.error().message)
                       : log->status != 200 ? "its log could not be read: " +
                                                  SanitizeUtf8(remediate::KubeStatusMessage(*log))
                                            : "its pod sent no evidence (" + progress.detail + ")";
      }
      if (auto document = UsableNodeDocument(std::move(mine)); document) {
        outcome.document = std::move(*document);
      } else {
        outcome.problem = document.error().message;
      }
      if (io.note) io.note(fmt::format("{}: its pod is done ({})", node, progress.detail));
      it = waiting.erase(it);
    }
    if (waiting.empty()) break;
    const bool interrupted = io.interrupted && io.interrupted();
    if (interrupted || SecondsSince(*io.clock, started) > pods.budget_s) {
      for (const auto& [node, name] : waiting) {
        outcomes[node].problem =
            interrupted ? "interrupted while its pod ran"
                        : fmt::format("its pod was not done within the --budget of {} s ({})",
                                      pods.budget_s, last_seen[node]);
      }
      break;
    }
    constexpr auto kBetweenLooks = std::chrono::milliseconds(500);
    io.sleep ? io.sleep(kBetweenLooks) : std::this_thread::sleep_for(kBetweenLooks);
  }
  // Every pod started goes, whatever came of it.
  for (auto& [node, outcome] : outcomes) {
    if (outcome.pod.empty()) continue;
    const std::string name = outcome.pod.substr(outcome.pod.find('/') + 1);
    auto deleted = api.Call("DELETE", PodPath(ns, name) + "?gracePeriodSeconds=0");
    if (!deleted) {
      outcome.deleted = SanitizeUtf8(deleted.error().message);
    } else if (deleted->status == 200 || deleted->status == 202 || deleted->status == 404) {
      outcome.deleted = "deleted";
    } else {
      outcome.deleted = SanitizeUtf8(remediate::KubeStatusMessage(*deleted));
    }
  }
  return outcomes;
}

PodSideEffect DescribePodSideEffect(std::string_view node, const AuditPodOutcome& outcome,
                                    const AuditPodOptions& options) {
  const std::string name = outcome.pod.substr(outcome.pod.find('/') + 1);
  PodSideEffect effect;
  effect.did = fmt::format(
      "started pod {} on node {} (image {}; privileged, host PID and network, the host's / "
      "read-only at {}) to read the node's evidence",
      outcome.pod, node, options.image, kPodHostRoot);
  if (outcome.deleted == "deleted") {
    effect.did += "; deleted it";
    effect.undo = "nothing left to undo (the image stays in the node's image cache)";
  } else {
    effect.did += "; it could not be deleted: " + outcome.deleted;
    effect.undo = fmt::format("kubectl -n {} delete pod {}", options.pod_namespace, name);
  }
  return effect;
}

}  // namespace cmax::audit
