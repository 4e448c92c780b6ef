// Signals besides the scheduler: a provider may detect a fault and alert before (or instead
// of) taking the node out. The alert counts as detection on the timeline, never as out of
// service. Here: a Prometheus query whose result names the nodes that alert (for example
// `max by (node) (ALERTS{alertstate="firing"})` or an exporter's own series).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/http_client.hpp"
#include "sys/metrics_server.hpp"

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

// Alerts pushed to cmax: an Alertmanager-style webhook receiver ({"alerts": [{"status":
// "firing", "labels": {"node": ...}}]}). A node is alerting from a firing alert until its
// resolved one. Served from the caller's loop (each Firing() answers what has arrived).
class WebhookAlerts final : public AlertSource {
 public:
  // "127.0.0.1:9099", ":9099", or port 0 for any free one.
  static Result<std::unique_ptr<WebhookAlerts>> Listen(const std::string& address,
                                                       std::string node_label = "node");
  Result<std::set<std::string>> Firing() override;
  std::string Describe() const override { return "webhook alert"; }
  int Port() const { return server_.Port(); }
  // One body: the nodes it fires and resolves; refuses what is not an alert list.
  Result<void> Take(std::string_view body);

 private:
  WebhookAlerts(sys::MetricsServer server, std::string node_label)
      : server_(std::move(server)), node_label_(std::move(node_label)) {}
  sys::MetricsServer server_;
  std::string node_label_;
  std::set<std::string> firing_;
};

// Several signals as one: a node alerting in any of them.
class AnyAlerts final : public AlertSource {
 public:
  void Add(AlertSource* source) { sources_.push_back(source); }
  bool Empty() const { return sources_.empty(); }
  Result<std::set<std::string>> Firing() override;
  std::string Describe() const override;

 private:
  std::vector<AlertSource*> sources_;
};

}  // namespace cmax::reliability
