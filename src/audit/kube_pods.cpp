#include "audit/kube_pods.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "audit/fanout.hpp"
#include "audit/slurm_audit.hpp"
#include "core/strings.hpp"
#include "remediate/kube_api.hpp"
#include "sys/interrupt.hpp"

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
// How long the deleted pods are waited for: their grace (5 s) and the kubelet's next look.
constexpr int kDeleteWaitSeconds = 30;

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + KubeEscape(ns) + "/pods/" + KubeEscape(name);
}

double SecondsSince(const Clock& clock, WallTime since) {
  return std::chrono::duration<double>(clock.Now() - since).count();
}

}  // namespace

std::string NewRunToken() {
  std::random_device random;  // the kernel's getrandom(2)
  const uint64_t bits = (uint64_t{random()} << 32U) | random();
  return fmt::format("{:012x}", bits & 0xffffffffffffULL);
}

std::string AuditPodName(std::string_view node, std::string_view run_token) {
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string part = ToLower(node);
  for (char& c : part) {
    if (!alnum(c) && c != '-') c = '-';
  }
  const bool changed = part != node || part.starts_with('-') || part.ends_with('-');
  std::string token = ToLower(run_token);
  std::erase_if(token, [&](char c) { return !alnum(c); });
  token = token.substr(0, 12);
  const size_t room =
      63 - std::string_view("cmax-audit-").size() - (token.empty() ? 0 : 1 + token.size());
  if (changed || part.size() > room) {
    // Names that differ only where they were changed stay apart: a hash of the whole name.
    part = part.substr(0, room - 9);
    while (!part.empty() && part.back() == '-') part.pop_back();
    part += (part.empty() ? "" : "-") + remediate::KubeNameHash(node);
  }
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
  json container = {{"name", kContainer},
                    {"image", options.image},
                    {"imagePullPolicy", "IfNotPresent"},
                    {"command", command},
                    {"env",
                     {{{"name", "CMAX_NODE_NAME"},
                       {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
                      // The container toolkit's NVML and nvidia-smi for cmax's own reads; no GPU is
                      // asked of the device plugin, so none is taken from a tenant.
                      {{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}},
                      {{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", "utility"}}}},
                    {"securityContext", {{"privileged", true}, {"readOnlyRootFilesystem", true}}},
                    // No resources asked: a node whose tenants hold all it has still admits the
                    // pod. Read-only all the way down where the cluster can (Kubernetes 1.30 on): a
                    // hostPath's readOnly alone leaves its submounts (/run, /var/lib/...) writable.
                    {"volumeMounts",
                     {{{"name", "host"},
                       {"mountPath", kPodHostRoot},
                       {"readOnly", true},
                       {"recursiveReadOnly", "IfPossible"}}}}};
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
  const std::string pods_path = "/api/v1/namespaces/" + KubeEscape(ns) + "/pods";
  AuditOptions on_node = options;
  on_node.host_root = std::string(kPodHostRoot);
  const std::vector<std::string> args = NodeEvidenceArgs(on_node, pods.node_timeout_s);
  const WallTime started = io.clock->Now();
  const auto spent = [&] { return SecondsSince(*io.clock, started) > pods.budget_s; };
  const auto pause = [&] {
    constexpr auto kBetweenLooks = std::chrono::milliseconds(500);
    io.sleep ? io.sleep(kBetweenLooks) : std::this_thread::sleep_for(kBetweenLooks);
  };
  std::map<std::string, AuditPodOutcome> outcomes;
  std::map<std::string, std::string> waiting;  // node -> its pod's name, until it is done
  if (io.note && !nodes.empty()) {
    io.note(
        fmt::format("starting {} audit pod(s) in namespace {} (image {}); should this be "
                    "stopped hard, `kubectl -n {} delete pods -l cmax.io/audit-run={}` "
                    "removes them",
                    nodes.size(), ns, pods.image, ns, pods.run_token));
  }
  // Until the function's end, by which every pod asked for has been deleted.
  std::optional<sys::LeftBehind> left_behind;
  if (!nodes.empty()) {
    left_behind.emplace(
        fmt::format("this audit's pods: kubectl -n {} delete pods -l cmax.io/audit-run={}", ns,
                    pods.run_token));
  }
  for (const std::string& node : nodes) {
    AuditPodOutcome& outcome = outcomes[node];
    if (io.interrupted && io.interrupted()) {
      outcome.problem = "interrupted before its pod was started";
      continue;
    }
    const std::string name = AuditPodName(node, pods.run_token);
    // Named before it is asked for: a create whose answer is lost (and whose retry then finds
    // it there, 409) may still have made it, so it is deleted all the same.
    outcome.pod = ns + "/" + name;
    auto created = api.Call("POST", pods_path, AuditPodManifest(node, name, args, pods).dump());
    if (!created) {
      outcome.problem = "its pod could not be created: " + SanitizeUtf8(created.error().message);
    } else if (created->status == 404) {
      outcome.problem = fmt::format(
          "its pod could not be created: namespace {} does not exist "
          "(deploy/kubernetes/namespace.yaml creates it; --pod-namespace names another)",
          SanitizeUtf8(ns));
    } else if (created->status == 403) {
      outcome.problem = fmt::format(
          "its pod was refused: {} (the auditing identity needs create and delete on pods and "
          "get on pods/log in namespace {}, and list on pods, as deploy/kubernetes/audit-rbac.yaml "
          "grants, and the namespace must admit privileged pods)",
          SanitizeUtf8(remediate::KubeStatusMessage(*created)), SanitizeUtf8(ns));
    } else if (created->status == 200 || created->status == 201 || created->status == 409) {
      waiting[node] = name;  // 409: a name only this run's token makes (a retried create), so ours
    } else {
      outcome.problem = "its pod could not be created: " +
                        SanitizeUtf8(remediate::KubeStatusError(*created, "create pod").message);
    }
  }
  // Until each is done, or the budget is spent: one list of this run's pods a look, half a
  // second apart, and each finished pod's log.
  std::map<std::string, std::string> last_seen;  // node -> where its pod stood
  const std::string this_run = "labelSelector=" + KubeEscape("cmax.io/audit-run=" + pods.run_token);
  while (!waiting.empty()) {
    auto listed = api.List(pods_path, this_run);
    std::map<std::string, json> by_name;
    if (listed) {
      for (json& pod : *listed) {
        std::string name = KubeStr(pod, {"metadata", "name"});  // before the pod is moved
        by_name.emplace(std::move(name), std::move(pod));
      }
    }
    for (auto it = waiting.begin(); it != waiting.end() && !spent();) {
      const auto& [node, name] = *it;
      AuditPodOutcome& outcome = outcomes[node];
      if (!listed) {
        last_seen[node] = "its pod could not be listed: " + SanitizeUtf8(listed.error().message);
        ++it;
        continue;
      }
      const auto pod = by_name.find(name);
      if (pod == by_name.end()) {
        outcome.problem = "its pod vanished (deleted by someone else)";
        it = waiting.erase(it);
        continue;
      }
      const PodProgress progress = AuditPodProgress(pod->second);
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
    if (interrupted || spent()) {
      for (const auto& [node, name] : waiting) {
        outcomes[node].problem =
            interrupted ? "interrupted while its pod ran"
                        : fmt::format("its pod was not done within the --budget of {} s ({})",
                                      pods.budget_s, last_seen[node]);
      }
      break;
    }
    pause();
  }
  // Every pod asked for goes, whatever came of it, with the grace its manifest gives (a forced
  // delete would drop the object before the kubelet has stopped the container).
  std::map<std::string, std::string> going;  // node -> its pod's name, until it is gone
  for (auto& [node, outcome] : outcomes) {
    if (outcome.pod.empty()) continue;
    const std::string name = outcome.pod.substr(outcome.pod.find('/') + 1);
    auto deleted = api.Call("DELETE", PodPath(ns, name));
    if (!deleted) {
      outcome.deleted = SanitizeUtf8(deleted.error().message);
    } else if (deleted->status == 404) {
      outcome.deleted = std::string(kPodNeverCreated);
    } else if (deleted->status == 200 || deleted->status == 202) {
      outcome.deleted = "deleted";
      going[node] = name;
    } else {
      outcome.deleted = SanitizeUtf8(remediate::KubeStatusMessage(*deleted));
    }
  }
  // Gone once the kubelet has stopped it and the object is removed: waited for a while.
  const WallTime asked = io.clock->Now();
  while (!going.empty()) {
    auto listed = api.List(pods_path, this_run);
    if (listed) {
      std::set<std::string> left;
      for (const json& pod : *listed) left.insert(KubeStr(pod, {"metadata", "name"}));
      std::erase_if(going, [&](const auto& entry) { return !left.contains(entry.second); });
    }
    if (going.empty()) break;
    if (SecondsSince(*io.clock, asked) > kDeleteWaitSeconds) {
      for (const auto& [node, name] : going) {
        outcomes[node].deleted = fmt::format(
            "deletion asked, but it was still there {} s later (terminating)", kDeleteWaitSeconds);
      }
      break;
    }
    pause();
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
