#include "remediate/kube_api.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <thread>
#include <utility>

#include "core/json_read.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"

namespace cmax::remediate {

using nlohmann::json;

const json& KubeField(const json& j, std::initializer_list<const char*> path) {
  return JsonAt(j, path);
}

std::string KubeStr(const json& j, std::initializer_list<const char*> path) {
  return TextAt(j, path);
}

int64_t KubeInt(const json& j, std::initializer_list<const char*> path) {
  const json& v = KubeField(j, path);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

std::string KubeNameHash(std::string_view name) {
  uint32_t hash = 2166136261U;
  for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619U;
  return fmt::format("{:08x}", hash);
}

std::string KubeEscape(std::string_view text) {
  return PercentEncode(text);
}

Result<json> KubeParse(const sys::HttpResponse& response, std::string_view what) {
  json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return Fail(ErrorCode::kCorrupt, "{}: the API server's answer is not a JSON object", what);
  }
  return body;
}

Error KubeStatusError(const sys::HttpResponse& response, std::string_view what) {
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

std::string KubeConditionStatus(const json& node, std::string_view type) {
  const json& conditions = KubeField(node, {"status", "conditions"});
  if (!conditions.is_array()) return {};
  for (const json& c : conditions) {
    if (KubeStr(c, {"type"}) == type) return KubeStr(c, {"status"});
  }
  return {};
}

std::string KubeTime(WallTime time) {
  std::string text = FormatIso8601(time);  // "...T12:00:00.123Z"
  const size_t dot = text.rfind('.');
  if (dot != std::string::npos) text = text.substr(0, dot) + "Z";
  return text;
}

std::string KubeStatusMessage(const sys::HttpResponse& response) {
  const json body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  const std::string message = body.is_object() ? KubeStr(body, {"message"}) : std::string();
  if (message.empty()) return fmt::format("HTTP {}", response.status);
  return fmt::format("HTTP {}: {}", response.status, SanitizeUtf8(message.substr(0, 500)));
}

KubeApi::KubeApi(sys::HttpClient& http, sys::FileSystem& fs, const Clock& clock,
                 KubeConnection connection, KubeApiOptions options)
    : http_(http),
      fs_(fs),
      clock_(clock),
      connection_(std::move(connection)),
      options_(std::move(options)) {}

Result<std::string> KubeApi::Token() const {
  // Trimmed at both ends whatever its source: a token from a Secret made --from-file, or a
  // kubeconfig's `token: |` block, ends in a line break that is not the token's.
  std::string token(Trim(connection_.token));
  if (!connection_.token_file.empty()) {
    // Read each time: service-account tokens are rotated by the kubelet.
    auto text = fs_.ReadFile(connection_.token_file, 64 * 1024);
    if (!text) {
      return Fail(ErrorCode::kPermissionDenied, "cannot read the token file: {}",
                  text.error().message);
    }
    token = std::string(Trim(*text));
  }
  // A bearer token is visible ASCII (RFC 6750's b64token is narrower still): a line break in a
  // kubeconfig's token, or inside a token file, would add headers of its own to every request
  // ("abc\r\nHost: elsewhere"). Refused without showing it: it is a secret.
  if (std::ranges::any_of(token, [](char c) { return c < '!' || c > '~'; })) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "the Kubernetes token{} holds a space, a line break or another byte a bearer "
        "token cannot: not sent",
        connection_.token_file.empty() ? "" : " in " + SanitizeUtf8(connection_.token_file));
  }
  return token;
}

Result<sys::HttpResponse> KubeApi::Call(const std::string& method, const std::string& path,
                                        const std::string& body, std::string_view content_type) {
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

Result<std::vector<json>> KubeApi::List(const std::string& path, const std::string& query) {
  // A server that hands back the same continue token, or pages without end, would keep this
  // loop going for ever: both are errors.
  constexpr int kMaxPages = 100'000;
  std::vector<json> items;
  std::string next;
  int pages = 0;
  do {
    if (++pages > kMaxPages) {
      return Fail(ErrorCode::kIo, "list {}: more than {} pages", path, kMaxPages);
    }
    std::string q = query;
    if (!q.empty()) q += '&';
    q += fmt::format("limit={}", options_.page_size);
    if (!next.empty()) q += "&continue=" + KubeEscape(next);
    auto response = Call("GET", path + "?" + q);
    if (!response) return tl::unexpected(response.error());
    if (response->status != 200) return tl::unexpected(KubeStatusError(*response, "list " + path));
    auto body = KubeParse(*response, "list " + path);
    if (!body) return tl::unexpected(body.error());
    const json& page = KubeField(*body, {"items"});
    if (page.is_array()) items.insert(items.end(), page.begin(), page.end());
    const std::string previous = std::exchange(next, KubeStr(*body, {"metadata", "continue"}));
    if (!next.empty() && next == previous) {
      return Fail(ErrorCode::kIo, "list {}: the server gave the same continue token twice", path);
    }
  } while (!next.empty());
  return items;
}

Result<json> KubeApi::GetNode(const std::string& node) {
  auto response = Call("GET", "/api/v1/nodes/" + KubeEscape(node));
  if (!response) return tl::unexpected(response.error());
  if (response->status == 404) {
    return Fail(ErrorCode::kNotFound, "node {} is not in the cluster", node);
  }
  if (response->status != 200)
    return tl::unexpected(KubeStatusError(*response, "get node " + node));
  return KubeParse(*response, "get node " + node);
}

Result<std::string> KubeApi::PatchNode(const std::string& node, const NodeChange& change) {
  constexpr int kConflicts = 5;
  for (int attempt = 0; attempt < kConflicts; ++attempt) {
    auto current = GetNode(node);
    if (!current) return tl::unexpected(current.error());
    std::string detail;
    json patch = change(*current, detail);
    if (patch.is_null()) return detail;
    patch["metadata"]["resourceVersion"] = KubeStr(*current, {"metadata", "resourceVersion"});
    auto response = Call("PATCH", "/api/v1/nodes/" + KubeEscape(node), patch.dump(),
                         "application/merge-patch+json");
    if (!response) return tl::unexpected(response.error());
    if (response->status == 200) return detail;
    if (response->status != 409) {
      return tl::unexpected(KubeStatusError(*response, "patch node " + node));
    }
    log::Debug("{} changed while cmax patched it; reading it again", node);
  }
  return Fail(ErrorCode::kBusy, "node {} changed under cmax {} times in a row", node, kConflicts);
}

Result<void> KubeApi::SetNodeCondition(const std::string& node, std::string_view type, bool status,
                                       const std::string& reason, const std::string& message,
                                       bool transition) {
  const std::string now = KubeTime(clock_.Now());
  json condition = {{"type", type},
                    {"status", status ? "True" : "False"},
                    {"reason", reason},
                    {"message", message.substr(0, 1024)},
                    {"lastHeartbeatTime", now}};
  if (transition) condition["lastTransitionTime"] = now;
  // Strategic merge patch: conditions merge by type, so the kubelet's own stay as they are.
  const json patch = {{"status", {{"conditions", json::array({condition})}}}};
  auto response = Call("PATCH", "/api/v1/nodes/" + KubeEscape(node) + "/status", patch.dump(),
                       "application/strategic-merge-patch+json");
  if (!response) return tl::unexpected(response.error());
  if (response->status != 200) {
    return tl::unexpected(KubeStatusError(*response, "set condition on " + node));
  }
  return {};
}

}  // namespace cmax::remediate
