#include "remediate/kubernetes.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <thread>

#include "core/log.hpp"
#include "core/strings.hpp"

namespace cmax::remediate {
namespace {

using nlohmann::json;

bool HasTaint(const json& node, std::string_view key) {
  const json& taints = KubeField(node, {"spec", "taints"});
  if (!taints.is_array()) return false;
  return std::any_of(taints.begin(), taints.end(),
                     [&](const json& t) { return KubeStr(t, {"key"}) == key; });
}

json TaintsWithout(const json& node, std::string_view key) {
  json out = json::array();
  const json& taints = KubeField(node, {"spec", "taints"});
  if (taints.is_array()) {
    for (const json& t : taints) {
      if (KubeStr(t, {"key"}) != key) out.push_back(t);
    }
  }
  return out;
}

json TaintsWith(const json& node, std::string_view key, std::string_view effect) {
  json out = TaintsWithout(node, key);
  out.push_back({{"key", key}, {"value", "true"}, {"effect", effect}});
  return out;
}

bool Cordoned(const json& node) {
  const json& v = KubeField(node, {"spec", "unschedulable"});
  return v.is_boolean() && v.get<bool>();
}

bool OursToResume(const json& node) {
  return KubeField(node, {"metadata", "annotations"}).contains(kKubeReasonAnnotation);
}

// Not a tenant's work on the node: finished, a mirror, cmax's validation, a daemonset's.
bool NotTenantWork(const json& pod, std::string& why) {
  const std::string phase = KubeStr(pod, {"status", "phase"});
  if (phase == "Succeeded" || phase == "Failed") {
    why = "finished";
    return true;
  }
  if (KubeField(pod, {"metadata", "annotations"}).contains("kubernetes.io/config.mirror")) {
    why = "mirror";
    return true;
  }
  if (KubeField(pod, {"metadata", "labels"}).contains(kKubeValidationLabel)) {
    why = "cmax validation";
    return true;
  }
  const json& owners = KubeField(pod, {"metadata", "ownerReferences"});
  if (owners.is_array() && std::any_of(owners.begin(), owners.end(), [](const json& o) {
        return KubeStr(o, {"kind"}) == "DaemonSet";
      })) {
    why = "daemonset";
    return true;
  }
  return false;
}

// What a requeue leaves: what is no tenant's work, and a pod already leaving (still on the
// node, and still a tenant's work until it has gone: JobsOn counts it).
bool SkipForEviction(const json& pod, std::string& why) {
  if (NotTenantWork(pod, why)) return true;
  if (!KubeField(pod, {"metadata", "deletionTimestamp"}).is_null()) {
    why = "already leaving";
    return true;
  }
  return false;
}

}  // namespace

SchedulerNode KubeNodeView(const json& node) {
  SchedulerNode view;
  view.name = KubeStr(node, {"metadata", "name"});
  const std::string ready = KubeConditionStatus(node, "Ready");
  view.state = ready == "True" ? "ready" : ready == "False" ? "not-ready" : "unknown";
  const bool cordoned = Cordoned(node);
  if (cordoned) view.state += ",cordoned";
  view.drain = cordoned || HasTaint(node, kKubeTaintKey);
  view.reason = KubeStr(node, {"metadata", "annotations", kKubeReasonAnnotation.data()});
  if (view.reason.empty() && cordoned) view.reason = "cordoned";
  // Partitions in Slurm's sense: a spare in standby is in "spare", every other node serves.
  const bool standby = KubeStr(node, {"metadata", "labels", kKubeSpareLabel.data()}) == "true" &&
                       HasTaint(node, kKubeSpareTaint);
  view.partitions.emplace_back(standby ? "spare" : "service");
  const json& conditions = KubeField(node, {"status", "conditions"});
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      const std::string type = KubeStr(c, {"type"});
      const std::string status = KubeStr(c, {"status"});
      if (type == "Ready") {
        if (status != "True") view.conditions.emplace_back("NotReady");
      } else if (status == "True") {
        view.conditions.push_back(type);
      }
    }
  }
  const json& taints = KubeField(node, {"spec", "taints"});
  if (taints.is_array()) {
    for (const json& t : taints) {
      const std::string effect = KubeStr(t, {"effect"});
      if (effect == "NoSchedule" || effect == "NoExecute")
        view.taints.push_back(KubeStr(t, {"key"}) + ":" + effect);
    }
  }
  return view;
}

std::string ValidationJobName(const std::string& node) {
  std::string name = "cmax-validate-" + ToLower(node);
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '-';
  }
  if (name.size() <= 63) return name;
  // Long node names: keep a prefix and make it unique with a hash of the whole name.
  return name.substr(0, 54) + "-" + KubeNameHash(node);
}

json ValidationJob(const std::string& node, const std::string& job_name, const ValidationSpec& spec,
                   const KubernetesOptions& options) {
  const auto deadline =
      std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(spec.timeout).count());
  json container = {{"name", "validate"},
                    {"image", options.validation_image},
                    {"command", {"/bin/sh", "-c", spec.command}}};
  if (options.validation_gpus > 0) {
    container["resources"] = {{"limits", {{"nvidia.com/gpu", options.validation_gpus}}}};
  }
  const json labels = {{"app.kubernetes.io/managed-by", "cmax"}, {kKubeValidationLabel, "true"}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", job_name},
            {"namespace", options.validation_namespace},
            {"labels", labels},
            {"annotations", {{"cmax.dev/node", node}}}}},
          {"spec",
           {{"backoffLimit", 0},
            {"activeDeadlineSeconds", deadline},  // a hanging validation fails, it never waits on
            {"ttlSecondsAfterFinished", 86400},
            {"template",
             {{"metadata", {{"labels", labels}}},
              {"spec",
               {{"restartPolicy", "Never"},
                // Node affinity on the name, as DaemonSets do: the scheduler places it on the
                // cordoned node because it tolerates the cordon and cmax's taint; nothing else can.
                {"affinity",
                 {{"nodeAffinity",
                   {{"requiredDuringSchedulingIgnoredDuringExecution",
                     {{"nodeSelectorTerms",
                       {{{"matchFields",
                          {{{"key", "metadata.name"},
                            {"operator", "In"},
                            {"values", {node}}}}}}}}}}}}}},
                {"tolerations",
                 {{{"key", "node.kubernetes.io/unschedulable"},
                   {"operator", "Exists"},
                   {"effect", "NoSchedule"}},
                  {{"key", kKubeTaintKey}, {"operator", "Exists"}}}},
                {"containers", {container}}}}}}}}};
}

ValidationStatus KubeJobState(const json& job) {
  const json& conditions = KubeField(job, {"status", "conditions"});
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (KubeStr(c, {"status"}) != "True") continue;
      const std::string type = KubeStr(c, {"type"});
      if (type == "Complete") return {ValidationState::kPassed, "job complete"};
      if (type == "Failed") {
        const std::string reason = KubeStr(c, {"reason"});
        if (reason == "DeadlineExceeded") {
          return {ValidationState::kFailed, "timed out (activeDeadlineSeconds)"};
        }
        const std::string message = KubeStr(c, {"message"});
        return {ValidationState::kFailed,
                reason.empty() ? std::string("job failed") : reason + ": " + message};
      }
    }
  }
  if (KubeInt(job, {"status", "succeeded"}) > 0) return {ValidationState::kPassed, "job succeeded"};
  if (KubeInt(job, {"status", "failed"}) > 0) return {ValidationState::kFailed, "pod failed"};
  return {ValidationState::kRunning, ""};
}

KubernetesScheduler::KubernetesScheduler(sys::HttpClient& http, sys::FileSystem& fs,
                                         const Clock& clock, KubeConnection connection,
                                         KubernetesOptions options)
    : api_(http, fs, clock, std::move(connection), options.api), options_(std::move(options)) {}

Result<std::vector<SchedulerNode>> KubernetesScheduler::Nodes() {
  auto items = api_.List("/api/v1/nodes", "");
  if (!items) return tl::unexpected(items.error());
  std::vector<SchedulerNode> nodes;
  nodes.reserve(items->size());
  for (const json& item : *items) nodes.push_back(KubeNodeView(item));
  return nodes;
}

Result<std::vector<TakeOut>> KubernetesScheduler::CmaxTakeOuts() {
  auto items = api_.List("/api/v1/nodes", "");
  if (!items) return tl::unexpected(items.error());
  std::vector<TakeOut> out;
  for (const json& item : *items) {
    if (!OursToResume(item)) continue;
    auto since =
        ParseIso8601(KubeStr(item, {"metadata", "annotations", kKubeSinceAnnotation.data()}));
    // Without a readable time it still counts, as of now: the breaker errs on the safe side.
    out.push_back({KubeStr(item, {"metadata", "name"}), since ? *since : api_.Now()});
  }
  return out;
}

Result<std::string> KubernetesScheduler::Drain(const std::string& node, const std::string& reason) {
  bool foreign = false;
  bool condition_set = false;
  auto done = api_.PatchNode(node, [&](const json& current, std::string& detail) -> json {
    const bool ours = OursToResume(current);
    const bool cordoned = Cordoned(current);
    condition_set = KubeConditionStatus(current, kKubeConditionType) == "True";
    if (cordoned && !ours) {
      foreign = true;
      detail = "cordoned by someone else; left as it is";
      return nullptr;
    }
    const bool tainted = HasTaint(current, kKubeTaintKey);
    const std::string had =
        KubeStr(current, {"metadata", "annotations", kKubeReasonAnnotation.data()});
    if (ours && cordoned && tainted && had == reason) {
      detail = "already drained by cmax";
      return nullptr;
    }
    json patch;
    patch["metadata"]["annotations"][kKubeReasonAnnotation] = reason;
    if (!ours) patch["metadata"]["annotations"][kKubeSinceAnnotation] = KubeTime(api_.Now());
    patch["spec"]["unschedulable"] = true;
    if (!tainted) {
      patch["spec"]["taints"] = TaintsWith(current, kKubeTaintKey, options_.taint_effect);
    }
    detail = ours ? "drain reason updated"
                  : fmt::format("cordoned and tainted {}:{}", kKubeTaintKey, options_.taint_effect);
    return patch;
  });
  if (!done) return done;
  if (!foreign && !condition_set) {
    if (auto ok = api_.SetNodeCondition(node, kKubeConditionType, true, "FaultQuarantined", reason);
        !ok)
      return tl::unexpected(ok.error());
  }
  return done;
}

Result<std::string> KubernetesScheduler::Resume(const std::string& node) {
  bool foreign = false;
  bool condition_set = false;
  auto done = api_.PatchNode(node, [&](const json& current, std::string& detail) -> json {
    const bool ours = OursToResume(current);
    const bool tainted = HasTaint(current, kKubeTaintKey);
    condition_set = KubeConditionStatus(current, kKubeConditionType) == "True";
    if (!ours && !tainted) {
      foreign = Cordoned(current);
      detail = "not drained; nothing to resume";
      return nullptr;
    }
    json patch;
    patch["metadata"]["annotations"][kKubeReasonAnnotation] = nullptr;
    patch["metadata"]["annotations"][kKubeSinceAnnotation] = nullptr;
    if (ours) patch["spec"]["unschedulable"] = nullptr;
    patch["spec"]["taints"] = TaintsWithout(current, kKubeTaintKey);
    detail = ours ? fmt::format("uncordoned; taint {} removed", kKubeTaintKey)
                  : fmt::format("taint {} removed", kKubeTaintKey);
    return patch;
  });
  if (!done) return done;
  if (foreign) {
    return Fail(ErrorCode::kPermissionDenied,
                "{} is cordoned by someone else (no {} annotation): cmax leaves it", node,
                kKubeReasonAnnotation);
  }
  if (condition_set) {
    if (auto ok = api_.SetNodeCondition(node, kKubeConditionType, false, "Reintroduced",
                                        "validated and back in service");
        !ok)
      return tl::unexpected(ok.error());
  }
  return done;
}

Result<std::string> KubernetesScheduler::RequeueJobs(const std::string& node) {
  auto pods = api_.List("/api/v1/pods", "fieldSelector=" + KubeEscape("spec.nodeName=" + node));
  if (!pods) return tl::unexpected(pods.error());
  int evicted = 0;
  int skipped = 0;
  std::vector<std::string> blocked;
  for (const json& pod : *pods) {
    std::string why;
    if (SkipForEviction(pod, why)) {
      ++skipped;
      continue;
    }
    const std::string ns = KubeStr(pod, {"metadata", "namespace"});
    const std::string name = KubeStr(pod, {"metadata", "name"});
    const json eviction = {{"apiVersion", "policy/v1"},
                           {"kind", "Eviction"},
                           {"metadata", {{"name", name}, {"namespace", ns}}}};
    auto response = api_.Call(
        "POST", "/api/v1/namespaces/" + KubeEscape(ns) + "/pods/" + KubeEscape(name) + "/eviction",
        eviction.dump());
    if (!response) return tl::unexpected(response.error());
    if (response->status == 200 || response->status == 201) {
      ++evicted;
    } else if (response->status == 404) {
      ++skipped;  // gone already
    } else if (response->status == 429) {
      blocked.push_back(ns + "/" + name);  // a PodDisruptionBudget says not now
    } else {
      return tl::unexpected(KubeStatusError(*response, "evict " + ns + "/" + name));
    }
  }
  if (!blocked.empty()) {
    // Pending, not failed: the budget allows it later, and the next step asks again.
    return Fail(ErrorCode::kUnavailable,
                "evicted {}; {} blocked by a PodDisruptionBudget ({}); asked again next step",
                evicted, blocked.size(), Join(blocked, ", "));
  }
  return fmt::format("evicted {} pods ({} left: daemonset, mirror, finished or gone)", evicted,
                     skipped);
}

Result<std::vector<std::string>> KubernetesScheduler::JobsOn(const std::string& node) {
  auto pods = api_.List("/api/v1/pods", "fieldSelector=" + KubeEscape("spec.nodeName=" + node));
  if (!pods) return tl::unexpected(pods.error());
  std::vector<std::string> left;
  for (const json& pod : *pods) {
    std::string why;
    if (NotTenantWork(pod, why)) continue;
    left.push_back(KubeStr(pod, {"metadata", "namespace"}) + "/" +
                   KubeStr(pod, {"metadata", "name"}));
  }
  return left;
}

Result<std::string> KubernetesScheduler::Reboot(const std::string& node, const std::string&) {
  return Fail(ErrorCode::kUnsupported,
              "Kubernetes has no API to reboot {}; reboot it by other means and run `cmax "
              "remediate repaired {}`",
              node, node);
}

Result<std::string> KubernetesScheduler::BootTime(const std::string& node) {
  auto current = api_.GetNode(node);
  if (!current) return tl::unexpected(current.error());
  std::string boot = KubeStr(*current, {"status", "nodeInfo", "bootID"});
  return boot.empty() ? std::string("unknown") : boot;
}

Result<std::string> KubernetesScheduler::StartValidation(const std::string& node,
                                                         const ValidationSpec& spec) {
  const std::string name = ValidationJobName(node);
  const std::string& ns = options_.validation_namespace;
  const std::string handle = ns + "/" + name;
  KubernetesOptions asked = options_;
  if (asked.validation_gpus == 0) {
    // All of the node's: a validation that asks for no GPU may be given none (the device
    // plugin hands a container only what it asked for) and pass without testing any. The node
    // is quarantined, so they are all free.
    auto current = api_.GetNode(node);
    if (!current) return tl::unexpected(current.error());
    const std::string allocatable = KubeStr(*current, {"status", "allocatable", "nvidia.com/gpu"});
    asked.validation_gpus = ParseWhole<int>(allocatable).value_or(0);
  }
  const json job = ValidationJob(node, name, spec, asked);
  auto response =
      api_.Call("POST", "/apis/batch/v1/namespaces/" + KubeEscape(ns) + "/jobs", job.dump());
  if (!response) return tl::unexpected(response.error());
  if (response->status == 200 || response->status == 201 || response->status == 409) {
    return handle;  // 409: started before a restart; the same job
  }
  if (response->status == 404) {
    return Fail(ErrorCode::kNotFound,
                "namespace {} does not exist (deploy/kubernetes/namespace.yaml creates it)", ns);
  }
  return tl::unexpected(KubeStatusError(*response, "create job " + handle));
}

Result<ValidationStatus> KubernetesScheduler::PollValidation(const std::string&,
                                                             const std::string& handle) {
  const size_t slash = handle.find('/');
  if (slash == std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "not a validation job handle: '{}'", handle);
  }
  const std::string ns = handle.substr(0, slash);
  const std::string name = handle.substr(slash + 1);
  auto response =
      api_.Call("GET", "/apis/batch/v1/namespaces/" + KubeEscape(ns) + "/jobs/" + KubeEscape(name));
  if (!response) return tl::unexpected(response.error());
  if (response->status == 404) {
    return ValidationStatus{ValidationState::kFailed, "validation job " + handle + " vanished"};
  }
  if (response->status != 200)
    return tl::unexpected(KubeStatusError(*response, "get job " + handle));
  auto job = KubeParse(*response, "get job " + handle);
  if (!job) return tl::unexpected(job.error());
  ValidationStatus status = KubeJobState(*job);
  if (status.state != ValidationState::kFailed) return status;
  // The exit code says more than "BackoffLimitExceeded"; it is a bonus, so errors are ignored.
  auto pods = api_.List("/api/v1/namespaces/" + KubeEscape(ns) + "/pods",
                        "labelSelector=" + KubeEscape("job-name=" + name));
  if (pods && !pods->empty()) {
    const json& statuses = KubeField(pods->front(), {"status", "containerStatuses"});
    if (statuses.is_array() && !statuses.empty()) {
      const json& terminated = KubeField(statuses.front(), {"state", "terminated"});
      if (terminated.is_object()) {
        status.detail =
            fmt::format("exit {}; {}", KubeInt(terminated, {"exitCode"}), status.detail);
      }
    }
  }
  return status;
}

Result<std::string> KubernetesScheduler::EndValidation(const std::string& node, bool passed,
                                                       const std::string& reason) {
  const std::string name = ValidationJobName(node);
  const std::string& ns = options_.validation_namespace;
  // Background: the Job goes at once and its pods after it.
  auto response = api_.Call("DELETE", "/apis/batch/v1/namespaces/" + KubeEscape(ns) + "/jobs/" +
                                          KubeEscape(name) + "?propagationPolicy=Background");
  if (!response) return tl::unexpected(response.error());
  std::string detail;
  if (response->status == 200 || response->status == 202) {
    detail = "validation job " + ns + "/" + name + " deleted";
  } else if (response->status == 404) {
    detail = "no validation job left";
  } else {
    return tl::unexpected(KubeStatusError(*response, "delete job " + ns + "/" + name));
  }
  if (!passed) {
    // The node stayed cordoned throughout; the reason becomes why validation failed.
    auto drained = Drain(node, reason);
    if (!drained) return tl::unexpected(drained.error());
    detail = *drained + "; " + detail;
  }
  return detail;
}

Result<std::string> KubernetesScheduler::PickSpare() {
  auto items = api_.List("/api/v1/nodes",
                         "labelSelector=" + KubeEscape(std::string(kKubeSpareLabel) + "=true"));
  if (!items) return tl::unexpected(items.error());
  std::vector<std::string> ready;
  for (const json& item : *items) {
    if (HasTaint(item, kKubeSpareTaint) && !Cordoned(item) &&
        KubeConditionStatus(item, "Ready") == "True") {
      ready.push_back(KubeStr(item, {"metadata", "name"}));
    }
  }
  if (ready.empty()) {
    return Fail(ErrorCode::kNotFound,
                "no spare in standby (a Ready node labelled {}=true with taint {}:NoSchedule)",
                kKubeSpareLabel, kKubeSpareTaint);
  }
  std::sort(ready.begin(), ready.end());
  return ready.front();
}

Result<std::string> KubernetesScheduler::SwapInSpare(const std::string& spare) {
  return api_.PatchNode(spare, [&](const json& current, std::string& detail) -> json {
    if (!HasTaint(current, kKubeSpareTaint)) {
      detail = "spare " + spare + " already in service";
      return nullptr;
    }
    detail = fmt::format("spare {} in service: taint {} removed", spare, kKubeSpareTaint);
    json patch;
    patch["spec"]["taints"] = TaintsWithout(current, kKubeSpareTaint);
    return patch;
  });
}

Result<std::string> KubernetesScheduler::ReturnSpare(const std::string& spare) {
  return api_.PatchNode(spare, [&](const json& current, std::string& detail) -> json {
    if (HasTaint(current, kKubeSpareTaint)) {
      detail = "spare " + spare + " already in standby";
      return nullptr;
    }
    detail = fmt::format("spare {} back in standby: taint {}:NoSchedule", spare, kKubeSpareTaint);
    json patch;
    patch["spec"]["taints"] = TaintsWith(current, kKubeSpareTaint, "NoSchedule");
    return patch;
  });
}

}  // namespace cmax::remediate
