// Signals besides the scheduler: a provider may detect a fault and alert before (or instead
// of) taking the node out. The alert counts as detection on the timeline, never as out of
// service. Here: a Prometheus query whose result names the nodes that alert (for example
// `max by (node) (ALERTS{alertstate="firing"})` or an exporter's own series).
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "sys/http_client.hpp"

namespace cmax::reliability {

class AlertSource {
 public:
  virtual ~AlertSource() = default;
  // The nodes the source says are alerting now.
  virtual Result<std::set<std::string>> Firing() = 0;
  virtual std::string Describe() const = 0;  // for the observation's detail
};

// The nodes of an instant-query result (Prometheus HTTP API, resultType vector) whose value is
// not 0: the `node_label` label, else `instance` without its port.
Result<std::set<std::string>> ParsePrometheusNodes(std::string_view body,
                                                   const std::string& node_label);

class PrometheusAlerts final : public AlertSource {
 public:
  PrometheusAlerts(sys::HttpClient& http, std::string url, std::string query,
                   std::string node_label = "node");
  Result<std::set<std::string>> Firing() override;
  std::string Describe() const override { return "prometheus: " + query_; }

 private:
  sys::HttpClient& http_;
  std::string url_;
  std::string query_;
  std::string node_label_;
};

}  // namespace cmax::reliability
