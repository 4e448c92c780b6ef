#include "remediate/kubernetes.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <thread>

#include "core/log.hpp"
#include "core/strings.hpp"

namespace cmax::remediate {
namespace {

using nlohmann::json;

const json& Field(const json& j, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return kNull;
    const auto it = at->find(key);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

std::string Str(const json& j, std::initializer_list<const char*> path) {
  const json& v = Field(j, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t Int(const json& j, std::initializer_list<const char*> path) {
  const json& v = Field(j, path);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

// Percent-encodes all but RFC 3986's unreserved characters: for path segments and query values.
std::string Escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

Result<json> ParseJson(const sys::HttpResponse& response, std::string_view what) {
  json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return Fail(ErrorCode::kCorrupt, "{}: the API server's answer is not a JSON object", what);
  }
  return body;
}

Error StatusError(const sys::HttpResponse& response, std::string_view what) {
  const std::string message = KubeStatusMessage(response);
  switch (response.status) {
    case 401:
    case 403:
      return {ErrorCode::kPermissionDenied, fmt::format("{}: {} (the account needs the rights in "
                                                        "deploy/kubernetes/rbac.yaml)",
                                                        what, message)};
    case 404: return {ErrorCode::kNotFound, fmt::format("{}: {}", what, message)};
    case 409: return {ErrorCode::kAlreadyExists, fmt::format("{}: {}", what, message)};
    case 429: return {ErrorCode::kBusy, fmt::format("{}: {}", what, message)};
    default: return {ErrorCode::kIo, fmt::format("{}: {}", what, message)};
  }
}

bool HasTaint(const json& node, std::string_view key) {
  const json& taints = Field(node, {"spec", "taints"});
  if (!taints.is_array()) return false;
  return std::any_of(taints.begin(), taints.end(),
                     [&](const json& t) { return Str(t, {"key"}) == key; });
}

json TaintsWithout(const json& node, std::string_view key) {
  json out = json::array();
  const json& taints = Field(node, {"spec", "taints"});
  if (taints.is_array()) {
    for (const json& t : taints) {
      if (Str(t, {"key"}) != key) out.push_back(t);
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
  const json& v = Field(node, {"spec", "unschedulable"});
  return v.is_boolean() && v.get<bool>();
}

bool OursToResume(const json& node) {
  return Field(node, {"metadata", "annotations"}).contains(kKubeReasonAnnotation);
}

std::string ConditionStatus(const json& node, std::string_view type) {
  const json& conditions = Field(node, {"status", "conditions"});
  if (!conditions.is_array()) return {};
  for (const json& c : conditions) {
    if (Str(c, {"type"}) == type) return Str(c, {"status"});
  }
  return {};
}

bool SkipForEviction(const json& pod, std::string& why) {
  const std::string phase = Str(pod, {"status", "phase"});
  if (phase == "Succeeded" || phase == "Failed") {
    why = "finished";
    return true;
  }
  if (!Field(pod, {"metadata", "deletionTimestamp"}).is_null()) {
    why = "already leaving";
    return true;
  }
  if (Field(pod, {"metadata", "annotations"}).contains("kubernetes.io/config.mirror")) {
    why = "mirror";
    return true;
  }
  if (Field(pod, {"metadata", "labels"}).contains(kKubeValidationLabel)) {
    why = "cmax validation";
    return true;
  }
  const json& owners = Field(pod, {"metadata", "ownerReferences"});
  if (owners.is_array() && std::any_of(owners.begin(), owners.end(), [](const json& o) {
        return Str(o, {"kind"}) == "DaemonSet";
      })) {
    why = "daemonset";
    return true;
  }
  return false;
}

}  // namespace

std::string KubeTime(WallTime time) {
  std::string text = FormatIso8601(time);  // "...T12:00:00.123Z"
  const size_t dot = text.rfind('.');
  if (dot != std::string::npos) text = text.substr(0, dot) + "Z";
  return text;
}

std::string KubeStatusMessage(const sys::HttpResponse& response) {
  const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  const std::string message = body.is_object() ? Str(body, {"message"}) : std::string();
  if (message.empty()) return fmt::format("HTTP {}", response.status);
  return fmt::format("HTTP {}: {}", response.status, SanitizeUtf8(message.substr(0, 500)));
}

SchedulerNode KubeNodeView(const json& node) {
  SchedulerNode view;
  view.name = Str(node, {"metadata", "name"});
  const std::string ready = ConditionStatus(node, "Ready");
  view.state = ready == "True" ? "ready" : ready == "False" ? "not-ready" : "unknown";
  const bool cordoned = Cordoned(node);
  if (cordoned) view.state += ",cordoned";
  view.drain = cordoned || HasTaint(node, kKubeTaintKey);
  view.reason = Str(node, {"metadata", "annotations", kKubeReasonAnnotation.data()});
  if (view.reason.empty() && cordoned) view.reason = "cordoned";
  if (Str(node, {"metadata", "labels", kKubeSpareLabel.data()}) == "true")
    view.partitions.emplace_back("spare");
  return view;
}

std::string ValidationJobName(const std::string& node) {
  std::string name = "cmax-validate-" + ToLower(node);
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '-';
  }
  if (name.size() <= 63) return name;
  // Long node names: keep a prefix and make it unique with a hash of the whole name.
  uint32_t hash = 2166136261U;
  for (const char c : node) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
  return fmt::format("{}-{:08x}", name.substr(0, 54), hash);
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
  const json& conditions = Field(job, {"status", "conditions"});
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (Str(c, {"status"}) != "True") continue;
      const std::string type = Str(c, {"type"});
      if (type == "Complete") return {ValidationState::kPassed, "job complete"};
      if (type == "Failed") {
        const std::string reason = Str(c, {"reason"});
        if (reason == "DeadlineExceeded") {
          return {ValidationState::kFailed, "timed out (activeDeadlineSeconds)"};
        }
        const std::string message = Str(c, {"message"});
        return {ValidationState::kFailed,
                reason.empty() ? std::string("job failed") : reason + ": " + message};
      }
    }
  }
  if (Int(job, {"status", "succeeded"}) > 0) return {ValidationState::kPassed, "job succeeded"};
  if (Int(job, {"status", "failed"}) > 0) return {ValidationState::kFailed, "pod failed"};
  return {ValidationState::kRunning, ""};
}

KubernetesScheduler::KubernetesScheduler(sys::HttpClient& http, sys::FileSystem& fs,
                                         const Clock& clock, KubeConnection connection,
                                         KubernetesOptions options)
    : http_(http),
      fs_(fs),
      clock_(clock),
      connection_(std::move(connection)),
      options_(std::move(options)) {}

Result<std::string> KubernetesScheduler::Token() const {
  if (connection_.token_file.empty()) return connection_.token;
  // Read each time: service-account tokens are rotated by the kubelet.
  auto text = fs_.ReadFile(connection_.token_file, 64 * 1024);
  if (!text) {
    return Fail(ErrorCode::kPermissionDenied, "cannot read the token file: {}",
                text.error().message);
  }
  return std::string(Trim(*text));
}

Result<sys::HttpResponse> KubernetesScheduler::Call(const std::string& method,
                                                    const std::string& path,
                                                    const std::string& body,
                                                    std::string_view content_type) {
  auto token = Token();
  if (!token) return tl::unexpected(token.error());
  sys::HttpRequest request;
  request.method = method;
  request.url = connection_.server + path;
  request.body = body;
  request.timeout = options_.request_timeout;
  request.headers.emplace_back("Accept: application/json");
  request.headers.emplace_back("User-Agent: cmax-remediate");
  if (!body.empty()) request.headers.push_back(fmt::format("Content-Type: {}", content_type));
  if (!token->empty()) request.headers.push_back("Authorization: Bearer " + *token);
  Duration wait = options_.backoff;
  std::string last;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    auto response = http_.Send(request);
    if (response && response->status != 502 && response->status != 503 && response->status != 504) {
      return response;
    }
    last = response ? KubeStatusMessage(*response) : response.error().message;
    if (attempt == options_.attempts) break;
    log::Debug("{} {}: {}; again in {}", method, path, last, FormatDuration(wait));
    if (options_.sleep) {
      options_.sleep(wait);
    } else {
      std::this_thread::sleep_for(wait);
    }
    wait *= 2;
  }
  return Fail(ErrorCode::kUnavailable, "Kubernetes API server did not answer {} {} ({} tries): {}",
              method, path, options_.attempts, last);
}

Result<std::vector<json>> KubernetesScheduler::List(const std::string& path,
                                                    const std::string& query) {
  std::vector<json> items;
  std::string next;
  do {
    std::string q = query;
    if (!q.empty()) q += '&';
    q += fmt::format("limit={}", options_.page_size);
    if (!next.empty()) q += "&continue=" + Escape(next);
    auto response = Call("GET", path + "?" + q);
    if (!response) return tl::unexpected(response.error());
    if (response->status != 200) return tl::unexpected(StatusError(*response, "list " + path));
    auto body = ParseJson(*response, "list " + path);
    if (!body) return tl::unexpected(body.error());
    const json& page = Field(*body, {"items"});
    if (page.is_array()) items.insert(items.end(), page.begin(), page.end());
    next = Str(*body, {"metadata", "continue"});
  } while (!next.empty());
  return items;
}

Result<json> KubernetesScheduler::GetNode(const std::string& node) {
  auto response = Call("GET", "/api/v1/nodes/" + Escape(node));
  if (!response) return tl::unexpected(response.error());
  if (response->status == 404) {
    return Fail(ErrorCode::kNotFound, "node {} is not in the cluster", node);
  }
  if (response->status != 200) return tl::unexpected(StatusError(*response, "get node " + node));
  return ParseJson(*response, "get node " + node);
}

Result<std::string> KubernetesScheduler::PatchNode(
    const std::string& node,
    const std::function<json(const json& current, std::string& detail)>& change) {
  constexpr int kConflicts = 5;
  for (int attempt = 0; attempt < kConflicts; ++attempt) {
    auto current = GetNode(node);
    if (!current) return tl::unexpected(current.error());
    std::string detail;
    json patch = change(*current, detail);
    if (patch.is_null()) return detail;
    patch["metadata"]["resourceVersion"] = Str(*current, {"metadata", "resourceVersion"});
    auto response = Call("PATCH", "/api/v1/nodes/" + Escape(node), patch.dump(),
                         "application/merge-patch+json");
    if (!response) return tl::unexpected(response.error());
    if (response->status == 200) return detail;
    if (response->status != 409) {
      return tl::unexpected(StatusError(*response, "patch node " + node));
    }
    log::Debug("{} changed while cmax patched it; reading it again", node);
  }
  return Fail(ErrorCode::kBusy, "node {} changed under cmax {} times in a row", node, kConflicts);
}

Result<void> KubernetesScheduler::SetCondition(const std::string& node, bool quarantined,
                                               const std::string& reason,
                                               const std::string& message) {
  const std::string now = KubeTime(clock_.Now());
  // Strategic merge patch: conditions merge by type, so the kubelet's own stay as they are.
  const json patch = {{"status",
                       {{"conditions",
                         {{{"type", kKubeConditionType},
                           {"status", quarantined ? "True" : "False"},
                           {"reason", reason},
                           {"message", message.substr(0, 1024)},
                           {"lastHeartbeatTime", now},
                           {"lastTransitionTime", now}}}}}}};
  auto response = Call("PATCH", "/api/v1/nodes/" + Escape(node) + "/status", patch.dump(),
                       "application/strategic-merge-patch+json");
  if (!response) return tl::unexpected(response.error());
  if (response->status != 200) {
    return tl::unexpected(StatusError(*response, "set condition on " + node));
  }
  return {};
}

Result<std::vector<SchedulerNode>> KubernetesScheduler::Nodes() {
  auto items = List("/api/v1/nodes", "");
  if (!items) return tl::unexpected(items.error());
  std::vector<SchedulerNode> nodes;
  nodes.reserve(items->size());
  for (const json& item : *items) nodes.push_back(KubeNodeView(item));
  return nodes;
}

Result<std::vector<TakeOut>> KubernetesScheduler::CmaxTakeOuts() {
  auto items = List("/api/v1/nodes", "");
  if (!items) return tl::unexpected(items.error());
  std::vector<TakeOut> out;
  for (const json& item : *items) {
    if (!OursToResume(item)) continue;
    auto since = ParseIso8601(Str(item, {"metadata", "annotations", kKubeSinceAnnotation.data()}));
    // Without a readable time it still counts, as of now: the breaker errs on the safe side.
    out.push_back({Str(item, {"metadata", "name"}), since ? *since : clock_.Now()});
  }
  return out;
}

Result<std::string> KubernetesScheduler::Drain(const std::string& node, const std::string& reason) {
  bool foreign = false;
  bool condition_set = false;
  auto done = PatchNode(node, [&](const json& current, std::string& detail) -> json {
    const bool ours = OursToResume(current);
    const bool cordoned = Cordoned(current);
    condition_set = ConditionStatus(current, kKubeConditionType) == "True";
    if (cordoned && !ours) {
      foreign = true;
      detail = "cordoned by someone else; left as it is";
      return nullptr;
    }
    const bool tainted = HasTaint(current, kKubeTaintKey);
    const std::string had = Str(current, {"metadata", "annotations", kKubeReasonAnnotation.data()});
    if (ours && cordoned && tainted && had == reason) {
      detail = "already drained by cmax";
      return nullptr;
    }
    json patch;
    patch["metadata"]["annotations"][kKubeReasonAnnotation] = reason;
    if (!ours) patch["metadata"]["annotations"][kKubeSinceAnnotation] = KubeTime(clock_.Now());
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
    if (auto ok = SetCondition(node, true, "FaultQuarantined", reason); !ok)
      return tl::unexpected(ok.error());
  }
  return done;
}

Result<std::string> KubernetesScheduler::Resume(const std::string& node) {
  bool foreign = false;
  bool condition_set = false;
  auto done = PatchNode(node, [&](const json& current, std::string& detail) -> json {
    const bool ours = OursToResume(current);
    const bool tainted = HasTaint(current, kKubeTaintKey);
    condition_set = ConditionStatus(current, kKubeConditionType) == "True";
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
    if (auto ok = SetCondition(node, false, "Reintroduced", "validated and back in service"); !ok)
      return tl::unexpected(ok.error());
  }
  return done;
}

Result<std::string> KubernetesScheduler::RequeueJobs(const std::string& node) {
  auto pods = List("/api/v1/pods", "fieldSelector=" + Escape("spec.nodeName=" + node));
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
    const std::string ns = Str(pod, {"metadata", "namespace"});
    const std::string name = Str(pod, {"metadata", "name"});
    const json eviction = {{"apiVersion", "policy/v1"},
                           {"kind", "Eviction"},
                           {"metadata", {{"name", name}, {"namespace", ns}}}};
    auto response =
        Call("POST", "/api/v1/namespaces/" + Escape(ns) + "/pods/" + Escape(name) + "/eviction",
             eviction.dump());
    if (!response) return tl::unexpected(response.error());
    if (response->status == 200 || response->status == 201) {
      ++evicted;
    } else if (response->status == 404) {
      ++skipped;  // gone already
    } else if (response->status == 429) {
      blocked.push_back(ns + "/" + name);  // a PodDisruptionBudget says not now
    } else {
      return tl::unexpected(StatusError(*response, "evict " + ns + "/" + name));
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

Result<std::string> KubernetesScheduler::Reboot(const std::string& node, const std::string&) {
  return Fail(ErrorCode::kUnsupported,
              "Kubernetes has no API to reboot {}; reboot it by other means and run `cmax "
              "remediate repaired {}`",
              node, node);
}

Result<std::string> KubernetesScheduler::BootTime(const std::string& node) {
  auto current = GetNode(node);
  if (!current) return tl::unexpected(current.error());
  std::string boot = Str(*current, {"status", "nodeInfo", "bootID"});
  return boot.empty() ? std::string("unknown") : boot;
}

Result<std::string> KubernetesScheduler::StartValidation(const std::string& node,
                                                         const ValidationSpec& spec) {
  const std::string name = ValidationJobName(node);
  const std::string& ns = options_.validation_namespace;
  const std::string handle = ns + "/" + name;
  const json job = ValidationJob(node, name, spec, options_);
  auto response = Call("POST", "/apis/batch/v1/namespaces/" + Escape(ns) + "/jobs", job.dump());
  if (!response) return tl::unexpected(response.error());
  if (response->status == 200 || response->status == 201 || response->status == 409) {
    return handle;  // 409: started before a restart; the same job
  }
  if (response->status == 404) {
    return Fail(ErrorCode::kNotFound,
                "namespace {} does not exist (deploy/kubernetes/namespace.yaml creates it)", ns);
  }
  return tl::unexpected(StatusError(*response, "create job " + handle));
}

Result<ValidationStatus> KubernetesScheduler::PollValidation(const std::string&,
                                                             const std::string& handle) {
  const size_t slash = handle.find('/');
  if (slash == std::string::npos) {
    return Fail(ErrorCode::kInvalidArgument, "not a validation job handle: '{}'", handle);
  }
  const std::string ns = handle.substr(0, slash);
  const std::string name = handle.substr(slash + 1);
  auto response = Call("GET", "/apis/batch/v1/namespaces/" + Escape(ns) + "/jobs/" + Escape(name));
  if (!response) return tl::unexpected(response.error());
  if (response->status == 404) {
    return ValidationStatus{ValidationState::kFailed, "validation job " + handle + " vanished"};
  }
  if (response->status != 200) return tl::unexpected(StatusError(*response, "get job " + handle));
  auto job = ParseJson(*response, "get job " + handle);
  if (!job) return tl::unexpected(job.error());
  ValidationStatus status = KubeJobState(*job);
  if (status.state != ValidationState::kFailed) return status;
  // The exit code says more than "BackoffLimitExceeded"; it is a bonus, so errors are ignored.
  auto pods = List("/api/v1/namespaces/" + Escape(ns) + "/pods",
                   "labelSelector=" + Escape("job-name=" + name));
  if (pods && !pods->empty()) {
    const json& statuses = Field(pods->front(), {"status", "containerStatuses"});
    if (statuses.is_array() && !statuses.empty()) {
      const json& terminated = Field(statuses.front(), {"state", "terminated"});
      if (terminated.is_object()) {
        status.detail = fmt::format("exit {}; {}", Int(terminated, {"exitCode"}), status.detail);
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
  auto response = Call("DELETE", "/apis/batch/v1/namespaces/" + Escape(ns) + "/jobs/" +
                                     Escape(name) + "?propagationPolicy=Background");
  if (!response) return tl::unexpected(response.error());
  std::string detail;
  if (response->status == 200 || response->status == 202) {
    detail = "validation job " + ns + "/" + name + " deleted";
  } else if (response->status == 404) {
    detail = "no validation job left";
  } else {
    return tl::unexpected(StatusError(*response, "delete job " + ns + "/" + name));
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
  auto items =
      List("/api/v1/nodes", "labelSelector=" + Escape(std::string(kKubeSpareLabel) + "=true"));
  if (!items) return tl::unexpected(items.error());
  std::vector<std::string> ready;
  for (const json& item : *items) {
    if (HasTaint(item, kKubeSpareTaint) && !Cordoned(item) &&
        ConditionStatus(item, "Ready") == "True") {
      ready.push_back(Str(item, {"metadata", "name"}));
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
  return PatchNode(spare, [&](const json& current, std::string& detail) -> json {
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
  return PatchNode(spare, [&](const json& current, std::string& detail) -> json {
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
