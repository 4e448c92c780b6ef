#include "reliability/alerts.hpp"

#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "core/strings.hpp"

namespace cmax::reliability {
namespace {

// The node a series or an alert is about: its node label, else the host part of `instance`.
std::string NodeOf(const nlohmann::json& labels, const std::string& node_label) {
  std::string node = TextOf(labels, node_label);
  if (!node.empty()) return node;
  node = TextOf(labels, "instance");
  return node.substr(0, node.rfind(':'));
}

}  // namespace

Result<std::set<std::string>> ParsePrometheusNodes(std::string_view body,
                                                   const std::string& node_label) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || TextOf(doc, "status") != "success") {
    const std::string error = doc.is_object() ? TextOf(doc, "error") : "";
    return Fail(ErrorCode::kIo, "Prometheus query failed{}",
                error.empty() ? std::string() : ": " + error.substr(0, 300));
  }
  const nlohmann::json& data = doc["data"];
  if (!data.is_object() || TextOf(data, "resultType") != "vector" || !data.contains("result") ||
      !data["result"].is_array()) {
    return Fail(ErrorCode::kInvalidArgument,
                "the Prometheus query must give an instant vector (one series per node)");
  }
  std::set<std::string> nodes;
  for (const nlohmann::json& series : data["result"]) {
    const nlohmann::json& metric = series["metric"];
    const nlohmann::json& value = series["value"];
    if (!metric.is_object() || !value.is_array() || value.size() != 2 || !value[1].is_string()) {
      continue;
    }
    const double v = std::strtod(value[1].get<std::string>().c_str(), nullptr);
    if (v == 0 || std::isnan(v)) continue;
    if (std::string node = NodeOf(metric, node_label); !node.empty()) nodes.insert(node);
  }
  return nodes;
}

PrometheusAlerts::PrometheusAlerts(sys::HttpClient& http, std::string url, std::string query,
                                   std::string node_label)
    : http_(http),
      url_(std::move(url)),
      query_(std::move(query)),
      node_label_(std::move(node_label)) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

Result<std::set<std::string>> PrometheusAlerts::Firing() {
  sys::HttpRequest request;
  request.url = url_ + "/api/v1/query?query=" + PercentEncode(query_);
  request.timeout = std::chrono::seconds(5);
  auto response = http_.Send(request);
  if (!response) return tl::unexpected(response.error());
  if (response->status != 200 && response->status != 400 && response->status != 422) {
    return Fail(ErrorCode::kIo, "Prometheus answered HTTP {}", response->status);
  }
  return ParsePrometheusNodes(response->body, node_label_);
}

Result<std::unique_ptr<WebhookAlerts>> WebhookAlerts::Listen(const std::string& address,
                                                             std::string node_label) {
  auto server = sys::MetricsServer::Listen(address);
  if (!server) return tl::unexpected(server.error());
  return std::unique_ptr<WebhookAlerts>(
      new WebhookAlerts(std::move(*server), std::move(node_label)));
}

Result<void> WebhookAlerts::Take(std::string_view body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("alerts") || !doc["alerts"].is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "not an alert list ({\"alerts\": [...]})");
  }
  for (const nlohmann::json& alert : doc["alerts"]) {
    if (!alert.is_object() || !alert.contains("labels") || !alert["labels"].is_object()) continue;
    const nlohmann::json& labels = alert["labels"];
    const std::string node = NodeOf(labels, node_label_);
    if (node.empty()) continue;
    if (TextOf(alert, "status") == "resolved") {
      firing_.erase(node);
    } else {
      firing_.insert(node);
    }
  }
  return {};
}

Result<std::set<std::string>> WebhookAlerts::Firing() {
  server_.Serve(
      [this](const sys::ServedRequest& r) -> std::optional<sys::ServedResponse> {
        if (r.method != "POST") return sys::ServedResponse{405, "text/plain", "POST alerts here\n"};
        if (auto ok = Take(r.body); !ok) {
          return sys::ServedResponse{400, "text/plain", ok.error().message + "\n"};
        }
        return sys::ServedResponse{200, "text/plain", "ok\n"};
      },
      std::chrono::milliseconds(200), 32);
  return firing_;
}

Result<std::set<std::string>> AnyAlerts::Firing() {
  std::set<std::string> all;
  std::string errors;
  for (AlertSource* source : sources_) {
    auto firing = source->Firing();
    if (!firing) {
      errors += (errors.empty() ? "" : "; ") + source->Describe() + ": " + firing.error().message;
      continue;
    }
    all.insert(firing->begin(), firing->end());
  }
  if (all.empty() && !errors.empty()) return Fail(ErrorCode::kUnavailable, "{}", errors);
  return all;
}

std::string AnyAlerts::Describe() const {
  std::string text;
  for (const AlertSource* source : sources_)
    text += (text.empty() ? "" : " or ") + source->Describe();
  return text;
}

}  // namespace cmax::reliability
