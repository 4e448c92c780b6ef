// The small part of the Kubernetes API cmax uses, over an HttpClient: calls with the bearer
// token (read again each time: service-account tokens rotate) and retries while the server does
// not answer, paged lists, and node changes as JSON merge patches that carry the
// resourceVersion they were computed from (a 409 means someone else changed the node: read it
// again and recompute, never overwrite). Shared by the scheduler adapter (kubernetes.hpp) and
// the condition exchange between agents and a central controller (kube_conditions.hpp).
#pragma once

#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/kube_config.hpp"
#include "sys/file_system.hpp"
#include "sys/http_client.hpp"

namespace cmax::remediate {

struct KubeApiOptions {
  Duration request_timeout = std::chrono::seconds(10);
  int attempts = 4;                                   // for an API server that does not answer
  Duration backoff = std::chrono::milliseconds(250);  // doubled after each attempt
  int page_size = 500;                                // list calls are paged
  std::function<void(Duration)> sleep;                // null: really sleep
};

class KubeApi {
 public:
  KubeApi(sys::HttpClient& http, sys::FileSystem& fs, const Clock& clock, KubeConnection connection,
          KubeApiOptions options);

  // One call; retried while the server does not answer (or answers 502/503/504), then
  // kUnavailable. Any other status is returned for the caller to judge.
  Result<sys::HttpResponse> Call(const std::string& method, const std::string& path,
                                 const std::string& body = "",
                                 std::string_view content_type = "application/json");
  // Every item of a list, following `continue` tokens.
  Result<std::vector<nlohmann::json>> List(const std::string& path, const std::string& query);
  Result<nlohmann::json> GetNode(const std::string& node);
  // GET, compute a patch from what is there, PATCH it with its resourceVersion; again on 409.
  // `change` returns null for "nothing to do" and says what it did in `detail`.
  using NodeChange =
      std::function<nlohmann::json(const nlohmann::json& current, std::string& detail)>;
  Result<std::string> PatchNode(const std::string& node, const NodeChange& change);
  // A node condition of cmax's, by strategic merge patch on /status: conditions merge by type,
  // so the kubelet's own stay as they are. `transition`: the status changed (its time is set).
  Result<void> SetNodeCondition(const std::string& node, std::string_view type, bool status,
                                const std::string& reason, const std::string& message,
                                bool transition = true);

  WallTime Now() const { return clock_.Now(); }

 private:
  Result<std::string> Token() const;

  sys::HttpClient& http_;
  sys::FileSystem& fs_;
  const Clock& clock_;
  KubeConnection connection_;
  KubeApiOptions options_;
};

// JSON reading that never throws on an unexpected shape: a missing or mistyped field is null,
// "" or 0.
const nlohmann::json& KubeField(const nlohmann::json& j, std::initializer_list<const char*> path);
std::string KubeStr(const nlohmann::json& j, std::initializer_list<const char*> path);
int64_t KubeInt(const nlohmann::json& j, std::initializer_list<const char*> path);
// Percent-encodes all but RFC 3986's unreserved characters: for path segments and query values.
std::string KubeEscape(std::string_view text);
// Eight hex digits of a hash of `name` (FNV-1a): what keeps two object names apart when one had
// to be cut or changed to make a DNS label.
std::string KubeNameHash(std::string_view name);
// A response body that must be a JSON object.
Result<nlohmann::json> KubeParse(const sys::HttpResponse& response, std::string_view what);
// A status that is not the one wanted, as an error: 401/403 kPermissionDenied (with the RBAC
// file to look at), 404 kNotFound, 409 kAlreadyExists, 429 kBusy, else kIo.
Error KubeStatusError(const sys::HttpResponse& response, std::string_view what);
// A Kubernetes Status body's message, or the status code when there is none.
std::string KubeStatusMessage(const sys::HttpResponse& response);
// "2026-11-30T12:00:00Z": what Kubernetes writes in its times (seconds).
std::string KubeTime(WallTime time);
// The status ("True", "False", "Unknown") of a node condition; empty when absent.
std::string KubeConditionStatus(const nlohmann::json& node, std::string_view type);

}  // namespace cmax::remediate
