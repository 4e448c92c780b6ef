#include "health/passive_check.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cmax::health {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kXidDocs =
    "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html";

EvidenceItem Evidence(std::string key, const Json& value) {
  return {std::move(key), value.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

Finding Make(std::string id, CheckStatus status, Severity severity, std::string observed,
             std::string message) {
  Finding f;
  f.check_id = std::move(id);
  f.status = status;
  f.severity = severity;
  f.observed = std::move(observed);
  f.message = std::move(message);
  return f;
}

std::string Subject(const Condition& c) {
  switch (c.kind) {
    case KernelEventKind::kXid:
      return fmt::format("Xid {} ({}) on GPU {}", c.code, c.meaning.meaning, c.device);
    case KernelEventKind::kSxid:
      return fmt::format("SXid {} ({}) on NVSwitch {}", c.code, c.meaning.meaning, c.device);
    default: return fmt::format("{} on {}", c.meaning.meaning, c.device);
  }
}

Json ConditionJson(const Condition& c) {
  Json j = {{"key", c.key},
            {"component", ComponentName(c.component)},
            {"kind", KernelEventKindName(c.kind)},
            {"device", c.device},
            {"count", c.count},
            {"severity", SeverityName(c.meaning.severity)},
            {"action", ActionName(c.meaning.action)},
            {"action_source", c.meaning.source},
            {"meaning", c.meaning.meaning},
            {"recovered", c.recovered},
            {"last_message", c.last_message}};
  if (c.kind == KernelEventKind::kXid || c.kind == KernelEventKind::kSxid) {
    j["code"] = c.code;
    j["pci"] = c.device;
  }
  if (!c.gpu_uuid.empty()) j["gpu_uuid"] = c.gpu_uuid;
  j["first_seen"] = c.first_wall ? Json(FormatIso8601(*c.first_wall)) : Json(nullptr);
  j["last_seen"] = c.last_wall ? Json(FormatIso8601(*c.last_wall)) : Json(nullptr);
  j["first_monotonic_us"] = c.first_monotonic_us ? Json(*c.first_monotonic_us) : Json(nullptr);
  j["last_monotonic_us"] = c.last_monotonic_us ? Json(*c.last_monotonic_us) : Json(nullptr);
  return j;
}

Json EventJson(const KernelEvent& e) {
  Json j = {{"kind", KernelEventKindName(e.kind)}, {"code", e.code}, {"pci", e.device}};
  if (e.pid) j["pid"] = *e.pid;
  if (!e.process.empty()) j["process"] = e.process;
  if (e.gpu_instance) j["gpu_instance"] = *e.gpu_instance;
  if (e.compute_instance) j["compute_instance"] = *e.compute_instance;
  if (e.link) j["link"] = *e.link;
  if (e.kind == KernelEventKind::kSxid || (e.code >= 144 && e.code <= 150)) j["fatal"] = e.fatal;
  if (!e.switch_name.empty()) j["switch"] = e.switch_name;
  if (!e.recovery_action.empty()) j["recovery_action"] = e.recovery_action;
  j["detail"] = e.detail.substr(0, 512);
  return j;
}

}  // namespace

std::string_view ActionAdvice(RecommendedAction action) {
  switch (action) {
    case RecommendedAction::kNone: return "No action now; a recurring event deserves a look.";
    case RecommendedAction::kRestartApp:
      return "Restart the affected application; the GPU and node stay in service.";
    case RecommendedAction::kResetGpu:
      return "Drain the GPU's work and reset it (nvidia-smi -r); repair it if the fault recurs.";
    case RecommendedAction::kRebootNode:
      return "Drain the node and reboot it; send it for repair if the fault recurs.";
    case RecommendedAction::kDrainAndRma:
      return "Drain the node and send the failed part for repair (RMA).";
    case RecommendedAction::kContactSupport:
      return "Drain the node if it recurs and send the log to the hardware vendor's support.";
  }
  return "";
}

CheckStatus ConditionStatus(const Condition& condition) {
  const Severity s = condition.meaning.severity;
  if (s == Severity::kInfo) return CheckStatus::kPass;
  if (s >= Severity::kHigh && !condition.recovered) return CheckStatus::kFail;
  return CheckStatus::kWarn;
}

std::vector<Finding> PassiveFindings(const PassiveFacts& facts, const PassiveOptions& options) {
  std::vector<Finding> findings;
  const LogSummary& log = facts.log;

  // The kernel log as a whole.
  if (facts.log_error) {
    // Never a pass: a fault in what could not be read is unknown, and so is the node's health.
    Finding f = Make("health.kernel_log", CheckStatus::kUnknown, Severity::kHigh, "unreadable",
                     fmt::format("the kernel log could not be read after {} records: {}",
                                 log.records, *facts.log_error));
    f.expected = "the whole log read";
    f.remediation = "Run cmax health as root, where /dev/kmsg (or the saved log) can be read.";
    findings.push_back(std::move(f));
  } else if (log.saved && log.framed == 0) {
    // Any text reads as bare kernel messages; a file in which no line carries a kernel log's
    // prefix cannot be told from one that is not a kernel log at all, and its silence about
    // faults proves nothing. (The events it does hold are still reported below.)
    const uint64_t lines = log.records + log.not_kernel;
    Finding f =
        Make("health.kernel_log", CheckStatus::kUnknown, Severity::kHigh,
             lines == 0 ? "empty" : "not a kernel log",
             lines == 0
                 ? fmt::format("{} holds no line: a saved kernel log says nothing here", log.source)
             : log.records == 0
                 ? fmt::format("none of the {} lines of {} is the kernel's (syslog lines of other "
                               "programs only)",
                               lines, log.source)
                 : fmt::format("none of the {} lines of {} carries a kernel log's prefix "
                               "(dmesg's time, journalctl -k's or syslog's date and \"host "
                               "kernel:\", a /dev/kmsg record's header): it cannot be told from "
                               "other text",
                               lines, log.source));
    f.expected = "a kernel log with its prefixes";
    f.remediation =
        "Save the log with its times (dmesg -T, journalctl -k -o short-iso) or run cmax health "
        "on the node, where /dev/kmsg is read.";
    findings.push_back(std::move(f));
  } else if (log.lost > 0) {
    Finding f = Make("health.kernel_log", CheckStatus::kWarn, Severity::kMedium,
                     fmt::format("{} records read, {} lost", log.records, log.lost),
                     fmt::format("the kernel ring overwrote {} records of {} before they were "
                                 "read: faults in them are unknown",
                                 log.lost, log.source));
    f.expected = "0 lost";
    f.remediation = "Run the cmax agent so the log is read as it is written.";
    findings.push_back(std::move(f));
  } else if (log.cut_lines > 0) {
    Finding f =
        Make("health.kernel_log", CheckStatus::kWarn, Severity::kLow,
             fmt::format("{} records read, {} lines cut", log.records, log.cut_lines),
             fmt::format("{} {} of {} {} longer than the line limit and {} read "
                         "only up to it; kernel records are far shorter",
                         log.cut_lines, log.cut_lines == 1 ? "line" : "lines", log.source,
                         log.cut_lines == 1 ? "was" : "were", log.cut_lines == 1 ? "was" : "were"));
    f.expected = "0 lines cut";
    findings.push_back(std::move(f));
  } else {
    findings.push_back(
        Make("health.kernel_log", CheckStatus::kPass, Severity::kInfo,
             fmt::format("{} records read", log.records),
             fmt::format("{} records of {} read, {} health events in {} conditions", log.records,
                         log.source, log.events, facts.conditions.size())));
  }

  // One finding per condition, worst first, bounded so a storm of distinct faults cannot
  // flood the report; every condition stays in the evidence.
  size_t shown = 0;
  for (const Condition& c : facts.conditions) {
    if (shown == options.max_condition_findings) break;
    ++shown;
    Finding f;
    f.check_id =
        fmt::format("health.{}.{}", ComponentName(c.component), KernelEventKindName(c.kind));
    f.status = ConditionStatus(c);
    f.severity = c.meaning.severity;
    f.observed = fmt::format("{}{}", c.count == 1 ? "once" : fmt::format("{} times", c.count),
                             c.recovered ? ", recovered since" : "");
    f.expected = "none";
    f.message =
        Subject(c) + (c.gpu_uuid.empty() ? "" : " [" + c.gpu_uuid + "]") + ": " + c.last_message;
    f.remediation = fmt::format("{} ({}; {})", ActionAdvice(c.meaning.action),
                                ActionName(c.meaning.action), c.meaning.source);
    if (c.kind == KernelEventKind::kXid) f.links.emplace_back(kXidDocs);
    findings.push_back(std::move(f));
  }
  if (facts.conditions.size() > shown) {
    findings.push_back(Make("health.conditions", CheckStatus::kWarn, Severity::kMedium,
                            fmt::format("{} more", facts.conditions.size() - shown),
                            fmt::format("{} more conditions are listed in the evidence "
                                        "(health.conditions)",
                                        facts.conditions.size() - shown)));
  }

  // PCIe links: a GPU or NIC below its width loses bandwidth (speed drops at idle by design,
  // so only width is judged).
  int narrow = 0;
  for (const PcieLink& link : facts.links) {
    if (link.current_width >= link.max_width) continue;
    ++narrow;
    Finding f =
        Make(link.gpu ? "health.pcie.gpu_link_width" : "health.pcie.nic_link_width",
             link.gpu ? CheckStatus::kFail : CheckStatus::kWarn,
             link.gpu ? Severity::kHigh : Severity::kMedium, fmt::format("x{}", link.current_width),
             fmt::format("{} {} runs at x{} of x{} ({})", link.gpu ? "GPU" : "NIC", link.address,
                         link.current_width, link.max_width, link.current_speed));
    f.expected = fmt::format("x{}", link.max_width);
    f.remediation = "Reseat the device or its riser and check the slot; repair if it persists.";
    findings.push_back(std::move(f));
  }
  if (facts.links.empty()) {
    findings.push_back(Make("health.pcie.link_width", CheckStatus::kSkip, Severity::kInfo, "",
                            "no GPU or NIC exposes its PCIe link width here"));
  } else if (narrow == 0) {
    findings.push_back(Make(
        "health.pcie.link_width", CheckStatus::kPass, Severity::kInfo,
        fmt::format("{} links at full width", facts.links.size()),
        fmt::format("all {} GPU and NIC PCIe links run at their full width", facts.links.size())));
  }

  // InfiniBand ports.
  int inactive = 0;
  for (const IbPort& port : facts.ports) {
    if (port.state == "ACTIVE") continue;
    ++inactive;
    Finding f = Make("health.ib.port", CheckStatus::kWarn, Severity::kMedium, port.state,
                     fmt::format("{} port {} is {} (physical: {})", port.device, port.port,
                                 port.state, port.phys_state));
    f.expected = "ACTIVE";
    f.remediation =
        "If the port should carry traffic: check the cable and the switch port (a Polling "
        "physical state means no link partner).";
    findings.push_back(std::move(f));
  }
  if (facts.ports.empty()) {
    findings.push_back(Make("health.ib.port", CheckStatus::kSkip, Severity::kInfo, "",
                            "no InfiniBand or RoCE device (/sys/class/infiniband is empty)"));
  } else if (inactive == 0) {
    findings.push_back(
        Make("health.ib.port", CheckStatus::kPass, Severity::kInfo,
             fmt::format("{} ports ACTIVE", facts.ports.size()),
             fmt::format("all {} InfiniBand/RoCE ports are ACTIVE", facts.ports.size())));
  }

  // Network and parallel filesystems.
  int silent = 0;
  for (const MountProbe& probe : facts.mounts) {
    if (probe.answered) continue;
    ++silent;
    Finding f = Make("health.filesystem.mount", CheckStatus::kFail, Severity::kHigh, "no answer",
                     fmt::format("{} ({} from {}) did not answer: {}", probe.mount.mount_point,
                                 probe.mount.fs_type, probe.mount.source, probe.detail));
    f.expected = "statfs answers";
    f.remediation =
        "Check the storage network path and the file server; jobs on this node "
        "will hang on I/O.";
    findings.push_back(std::move(f));
  }
  if (facts.mounts.empty()) {
    findings.push_back(Make("health.filesystem.mount", CheckStatus::kSkip, Severity::kInfo, "",
                            "no disk, network or parallel filesystem is mounted"));
  } else if (silent == 0) {
    findings.push_back(
        Make("health.filesystem.mount", CheckStatus::kPass, Severity::kInfo,
             fmt::format("{} mounts answer", facts.mounts.size()),
             fmt::format("all {} disk and network filesystems answer", facts.mounts.size())));
  }
  return findings;
}

std::vector<EvidenceItem> PassiveEvidence(const PassiveFacts& facts) {
  const LogSummary& log = facts.log;
  Json conditions = Json::array();
  for (const Condition& c : facts.conditions) conditions.push_back(ConditionJson(c));
  Json events = Json::array();
  for (const KernelEvent& e : log.recent_xids) events.push_back(EventJson(e));
  Json links = Json::array();
  for (const PcieLink& l : facts.links) {
    links.push_back({{"address", l.address},
                     {"gpu", l.gpu},
                     {"current_width", l.current_width},
                     {"max_width", l.max_width},
                     {"current_speed", l.current_speed},
                     {"max_speed", l.max_speed}});
  }
  Json ports = Json::array();
  for (const IbPort& p : facts.ports) {
    ports.push_back({{"device", p.device},
                     {"port", p.port},
                     {"state", p.state},
                     {"phys_state", p.phys_state},
                     {"rate", p.rate},
                     {"link_layer", p.link_layer}});
  }
  Json mounts = Json::array();
  for (const MountProbe& m : facts.mounts) {
    mounts.push_back({{"mount_point", m.mount.mount_point},
                      {"fs_type", m.mount.fs_type},
                      {"source", m.mount.source},
                      {"answered", m.answered},
                      {"took_ms", std::chrono::duration<double, std::milli>(m.took).count()},
                      {"detail", m.detail}});
  }
  return {Evidence("health.kernel_log",
                   {{"source", log.source},
                    {"error", facts.log_error ? Json(*facts.log_error) : Json(nullptr)},
                    {"records", log.records},
                    {"framed", log.framed},
                    {"events", log.events},
                    {"lost", log.lost},
                    {"overruns", log.overruns},
                    {"cut_lines", log.cut_lines},
                    {"skipped_by_since", log.skipped_by_since},
                    {"undated", log.undated},
                    {"not_kernel", log.not_kernel}}),
          Evidence("health.conditions", conditions),
          Evidence("health.xid_events", events),
          Evidence("health.pcie_links", links),
          Evidence("health.ib_ports", ports),
          Evidence("health.mounts", mounts)};
}

std::vector<Metric> PassiveMetrics(const PassiveFacts& facts) {
  std::vector<Metric> metrics;
  metrics.push_back(
      {"health_kernel_log_records", {}, static_cast<double>(facts.log.records), "records"});
  metrics.push_back({"health_kernel_log_lost", {}, static_cast<double>(facts.log.lost), "records"});
  for (const Condition& c : facts.conditions) {
    std::map<std::string, std::string> labels = {{"kind", std::string(KernelEventKindName(c.kind))},
                                                 {"device", c.device}};
    if (c.kind == KernelEventKind::kXid || c.kind == KernelEventKind::kSxid) {
      labels["code"] = std::to_string(c.code);
    }
    metrics.push_back(
        {"health_kernel_events", std::move(labels), static_cast<double>(c.count), "events"});
  }
  return metrics;
}

}  // namespace cmax::health
