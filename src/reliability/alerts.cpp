#include "reliability/alerts.hpp"

#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>

namespace cmax::reliability {
namespace {

std::string QueryEscape(const std::string& text) {
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

}  // namespace

Result<std::set<std::string>> ParsePrometheusNodes(std::string_view body,
                                                   const std::string& node_label) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.value("status", "") != "success") {
    const std::string error = doc.is_object() ? doc.value("error", "") : "";
    return Fail(ErrorCode::kIo, "Prometheus query failed{}",
                error.empty() ? std::string() : ": " + error.substr(0, 300));
  }
  const nlohmann::json& data = doc["data"];
  if (!data.is_object() || data.value("resultType", "") != "vector" || !data.contains("result") ||
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
    std::string node = metric.value(node_label, "");
    if (node.empty()) {
      node = metric.value("instance", "");
      node = node.substr(0, node.rfind(':'));
    }
    if (!node.empty()) nodes.insert(node);
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
  request.url = url_ + "/api/v1/query?query=" + QueryEscape(query_);
  request.timeout = std::chrono::seconds(5);
  auto response = http_.Send(request);
  if (!response) return tl::unexpected(response.error());
  if (response->status != 200 && response->status != 400 && response->status != 422) {
    return Fail(ErrorCode::kIo, "Prometheus answered HTTP {}", response->status);
  }
  return ParsePrometheusNodes(response->body, node_label_);
}

}  // namespace cmax::reliability
