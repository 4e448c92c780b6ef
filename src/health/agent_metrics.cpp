#include "health/agent_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax::health {
namespace {

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
  std::string out = "{";
  for (const auto& [key, value] : labels) {
    if (out.size() > 1) out += ",";
    out += fmt::format("{}=\"{}\"", key, EscapeLabel(value));
  }
  return out + "}";
}

std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  return fmt::format("{}", value);
}

}  // namespace

void LatencyWindow::Add(double seconds) {
  values_.push_back(seconds);
  if (values_.size() > capacity_) values_.pop_front();
  ++count_;
  sum_ += seconds;
}

double LatencyWindow::Quantile(double q) const {
  if (values_.empty()) return 0.0;
  std::vector<double> sorted(values_.begin(), values_.end());
  std::sort(sorted.begin(), sorted.end());
  const double rank = q * static_cast<double>(sorted.size() - 1);
  return sorted[static_cast<size_t>(std::ceil(rank))];
}

std::string EscapeLabel(std::string_view value) {
  std::string out;
  for (char c : SanitizeUtf8(value)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderPrometheus(const AgentMetrics& m) {
  std::string out;
  const std::string node = m.node;
  Header(out, "cmax_xid_total", "counter",
         "NVIDIA Xid errors seen in the kernel log since the agent started, by code and GPU.");
  for (const auto& [key, count] : m.xid_total) {
    out += fmt::format(
        "cmax_xid_total{} {}\n",
        Labels({{"node", node}, {"code", std::to_string(key.first)}, {"pci", key.second}}), count);
  }
  Header(
      out, "cmax_sxid_total", "counter",
      "NVSwitch SXid errors seen in the kernel log since the agent started, by code and switch.");
  for (const auto& [key, count] : m.sxid_total) {
    out += fmt::format(
        "cmax_sxid_total{} {}\n",
        Labels({{"node", node}, {"code", std::to_string(key.first)}, {"pci", key.second}}), count);
  }
  Header(out, "cmax_kernel_events_total", "counter",
         "Health events in the kernel log since the agent started, by kind and device.");
  for (const auto& [key, count] : m.kernel_events_total) {
    out +=
        fmt::format("cmax_kernel_events_total{} {}\n",
                    Labels({{"node", node}, {"kind", key.first}, {"device", key.second}}), count);
  }
  Header(out, "cmax_condition", "gauge",
         "Node conditions: 1 while active, 0 once recovered. Labels say what and what to do.");
  for (const NodeCondition& c : m.conditions) {
    out += fmt::format("cmax_condition{} {}\n",
                       Labels({{"node", node},
                               {"key", c.key},
                               {"component", c.component},
                               {"device", c.device},
                               {"kind", c.kind},
                               {"severity", SeverityName(c.severity)},
                               {"action", c.action}}),
                       c.recovered ? 0 : 1);
  }
  Header(out, "cmax_condition_events", "gauge", "How many times each condition's fault was seen.");
  for (const NodeCondition& c : m.conditions) {
    out += fmt::format("cmax_condition_events{} {}\n", Labels({{"node", node}, {"key", c.key}}),
                       c.count);
  }
  // GPU readings: metric names come from NvmlMetrics ("gpu_temperature", unit "C").
  std::map<std::string, std::vector<const Metric*>> gpu;
  for (const Metric& metric : m.gpu) gpu["cmax_" + metric.name].push_back(&metric);
  for (const auto& [name, series] : gpu) {
    Header(out, name, "gauge",
           "GPU reading from the last NVML snapshot (" + series[0]->unit + ").");
    for (const Metric* metric : series) {
      std::string labels = "{node=\"" + EscapeLabel(node) + "\"";
      for (const auto& [key, value] : metric->labels) {
        labels += fmt::format(",{}=\"{}\"", key, EscapeLabel(value));
      }
      out += fmt::format("{}{}}} {}\n", name, labels, Number(metric->value));
    }
  }
  auto scalar = [&](std::string_view name, std::string_view type, std::string_view help,
                    double value) {
    Header(out, name, type, help);
    out += fmt::format("{}{} {}\n", name, Labels({{"node", node}}), Number(value));
  };
  scalar("cmax_kmsg_records_total", "counter", "Kernel log records read.",
         static_cast<double>(m.kmsg_records));
  scalar("cmax_kmsg_lost_total", "counter",
         "Kernel log records the ring overwrote before the agent read them.",
         static_cast<double>(m.kmsg_lost));
  scalar("cmax_kmsg_overruns_total", "counter", "Times the kernel reported an overrun (EPIPE).",
         static_cast<double>(m.kmsg_overruns));
  scalar("cmax_events_total", "counter", "Health events parsed.", static_cast<double>(m.events));
  scalar("cmax_events_suppressed_total", "counter",
         "Event rows not written to the store because a condition exceeded its per-minute "
         "limit (the condition still counts them).",
         static_cast<double>(m.events_suppressed));
  scalar("cmax_store_flushes_total", "counter", "Transactions written to the store.",
         static_cast<double>(m.store_flushes));
  scalar("cmax_store_errors_total", "counter", "Store writes that failed.",
         static_cast<double>(m.store_errors));
  scalar("cmax_agent_source_restarts_total", "counter", "Sources reopened after an error.",
         static_cast<double>(m.source_restarts));
  Header(out, "cmax_agent_source_up", "gauge", "1 when the source is being read.");
  out += fmt::format("cmax_agent_source_up{} {}\n", Labels({{"node", node}, {"source", "kmsg"}}),
                     m.kmsg_up ? 1 : 0);
  out += fmt::format("cmax_agent_source_up{} {}\n", Labels({{"node", node}, {"source", "nvml"}}),
                     m.nvml_up ? 1 : 0);
  scalar("cmax_agent_uptime_seconds", "gauge", "Seconds since the agent started.",
         m.uptime_seconds);
  scalar("cmax_agent_resident_memory_bytes", "gauge", "The agent's resident memory.",
         static_cast<double>(m.rss_bytes));
  scalar("cmax_agent_cpu_seconds_total", "counter", "CPU time the agent used.", m.cpu_seconds);
  Header(out, "cmax_agent_store_latency_seconds", "summary",
         "From reading a kernel record to its condition committed to the store, last 1024.");
  for (double q : {0.5, 0.9, 0.99}) {
    out += fmt::format("cmax_agent_store_latency_seconds{} {}\n",
                       Labels({{"node", node}, {"quantile", Number(q)}}),
                       Number(m.store_latency.Quantile(q)));
  }
  out += fmt::format("cmax_agent_store_latency_seconds_sum{} {}\n", Labels({{"node", node}}),
                     Number(m.store_latency.Sum()));
  out += fmt::format("cmax_agent_store_latency_seconds_count{} {}\n", Labels({{"node", node}}),
                     m.store_latency.Count());
  return out;
}

}  // namespace cmax::health
