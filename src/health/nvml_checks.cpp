#include "health/nvml_checks.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.hpp"

namespace cmax::health {
namespace {

using Json = nlohmann::ordered_json;

std::string Gpu(const sys::GpuReading& g) {
  std::string id = fmt::format("GPU {}", g.index);
  if (!g.pci_bus_id.empty()) id += " (" + g.pci_bus_id + ")";
  return id;
}

// A finding about one GPU, with what the agent needs to keep it as a condition.
struct GpuProblem {
  Finding finding;
  std::string action;
  std::string device;
};

GpuProblem Problem(std::string id, CheckStatus status, Severity severity, const sys::GpuReading& g,
                   std::string observed, std::string expected, std::string message,
                   std::string remediation, std::string action) {
  Finding f;
  f.check_id = std::move(id);
  f.status = status;
  f.severity = severity;
  f.observed = std::move(observed);
  f.expected = std::move(expected);
  f.message = Gpu(g) + (g.uuid.empty() ? "" : " [" + g.uuid + "]") + ": " + message;
  f.remediation = std::move(remediation);
  std::string device = g.pci_bus_id.empty() ? "gpu" + std::to_string(g.index) : g.pci_bus_id;
  return {std::move(f), std::move(action), std::move(device)};
}

template <class T>
Json Optional(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

std::string TroubleReasons(uint64_t reasons) {
  std::vector<std::string> names;
  if (reasons & 0x8) names.emplace_back("hw_slowdown");
  if (reasons & 0x40) names.emplace_back("hw_thermal_slowdown");
  if (reasons & 0x80) names.emplace_back("hw_power_brake_slowdown");
  return Join(names, ", ");
}

namespace {

std::vector<GpuProblem> Problems(const sys::NvmlSnapshot& s) {
  std::vector<GpuProblem> findings;
  for (const sys::GpuReading& g : s.gpus) {
    if (g.lost) {
      findings.push_back(Problem("gpu.lost", CheckStatus::kFail, Severity::kCritical, g, "lost",
                                 "answering",
                                 "the driver reports the GPU lost (fallen off the bus)",
                                 "Drain the node and reboot it; send the GPU for repair if it "
                                 "recurs (reboot-node, as Xid 79).",
                                 "reboot-node"));
      continue;  // a lost GPU's other readings mean nothing
    }
    if (g.ecc_dbe_volatile.value_or(0) > 0) {
      findings.push_back(Problem(
          "gpu.ecc.dbe", CheckStatus::kFail, Severity::kHigh, g,
          fmt::format("{} double-bit errors since the driver loaded", *g.ecc_dbe_volatile), "0",
          "uncorrectable (double-bit) ECC errors in GPU memory",
          "Drain the GPU's work and reset it; the row remapper retires the bad rows at reset "
          "(reset-gpu, as Xid 48).",
          "reset-gpu"));
    }
    if (g.remapped_rows_failure.value_or(false)) {
      findings.push_back(
          Problem("gpu.memory.remap_failure", CheckStatus::kFail, Severity::kCritical, g, "failed",
                  "no failure", "a row remap failed: the GPU has run out of spare memory rows",
                  "Drain the node and send the GPU for repair (drain-and-rma).", "drain-and-rma"));
    }
    if (g.remapped_rows_pending.value_or(false)) {
      findings.push_back(Problem("gpu.memory.remap_pending", CheckStatus::kWarn, Severity::kMedium,
                                 g, "pending", "none pending",
                                 "rows are marked for remapping; they take effect at the next "
                                 "GPU reset",
                                 "Reset the GPU when its work allows (reset-gpu).", "reset-gpu"));
    }
    if (g.retired_pages_pending.value_or(false)) {
      findings.push_back(Problem("gpu.memory.retired_pages_pending", CheckStatus::kWarn,
                                 Severity::kMedium, g, "pending", "none pending",
                                 "retired pages are waiting for a reset to be retired",
                                 "Reset the GPU when its work allows (reset-gpu).", "reset-gpu"));
    }
    if (g.recovery_action.value_or(0) != 0) {
      static constexpr const char* kActions[] = {
          "none",      "GPU reset",       "node reboot",
          "drain P2P", "drain and reset", "recover IMEX domain"};
      const unsigned a = *g.recovery_action;
      const std::string name = a < 6 ? kActions[a] : "action " + std::to_string(a);
      findings.push_back(Problem(
          "gpu.recovery_action", CheckStatus::kFail, a == 2 ? Severity::kCritical : Severity::kHigh,
          g, name, "none", "the driver asks for a recovery action: " + name,
          a == 2   ? "Drain the node and reboot it (reboot-node)."
          : a == 3 ? "Stop the peer-to-peer work on this GPU, then read the action again "
                     "(restart-app)."
                   : "Drain the GPU's work and reset it (reset-gpu).",
          a == 2   ? "reboot-node"
          : a == 3 ? "restart-app"
                   : "reset-gpu"));
    }
    if (g.clock_event_reasons && !TroubleReasons(*g.clock_event_reasons).empty()) {
      findings.push_back(Problem(
          "gpu.throttle", CheckStatus::kWarn, Severity::kMedium, g,
          TroubleReasons(*g.clock_event_reasons), "no hardware slowdown",
          "clocks are held down by hardware: " + TroubleReasons(*g.clock_event_reasons),
          "Check cooling and power delivery (fans, inlet temperature, PSUs); the GPU runs slower "
          "than it should.",
          "none"));
    }
    if (g.pcie_width && g.pcie_max_width && *g.pcie_width < *g.pcie_max_width) {
      findings.push_back(Problem(
          "gpu.pcie_width", CheckStatus::kFail, Severity::kHigh, g,
          fmt::format("x{}", *g.pcie_width), fmt::format("x{}", *g.pcie_max_width),
          "the PCIe link runs narrower than it can",
          "Reseat the GPU or its riser; repair if it persists (drain-and-rma).", "drain-and-rma"));
    }
    if (g.nvlink_inactive.value_or(0) > 0) {
      findings.push_back(Problem(
          "gpu.nvlink", CheckStatus::kWarn, Severity::kMedium, g,
          fmt::format("{} of {} links inactive", *g.nvlink_inactive, g.nvlink_links.value_or(0)),
          "all links active", "NVLink links are down",
          "Check the NVLink/NVSwitch fabric (Fabric Manager, cables on NVL systems).", "none"));
    }
    if (!g.errors.empty()) {
      findings.push_back(Problem("gpu.nvml_errors", CheckStatus::kWarn, Severity::kLow, g,
                                 fmt::format("{} calls failed", g.errors.size()), "none",
                                 "NVML calls failed: " + Join(g.errors, "; "),
                                 "Look at the driver and the kernel log for this GPU.", "none"));
    }
  }
  return findings;
}

}  // namespace

std::vector<Finding> NvmlFindings(const NvmlFacts& facts) {
  std::vector<Finding> findings;
  if (!facts.snapshot) {
    Finding f;
    f.check_id = "gpu.nvml";
    f.status = CheckStatus::kSkip;
    f.message = "NVML checks skipped: " + facts.unavailable;
    f.observed = "unavailable";
    findings.push_back(std::move(f));
    return findings;
  }
  const sys::NvmlSnapshot& s = *facts.snapshot;
  Finding summary;
  summary.check_id = "gpu.nvml";
  summary.status = CheckStatus::kPass;
  summary.observed = fmt::format("{} GPUs", s.device_count);
  summary.message = fmt::format("NVML from {} answers: {} GPUs, driver {}", s.library,
                                s.device_count, s.driver_version.empty() ? "?" : s.driver_version);
  findings.push_back(std::move(summary));

  const size_t problems_before = findings.size();
  for (GpuProblem& p : Problems(s)) findings.push_back(std::move(p.finding));
  if (findings.size() == problems_before) {
    Finding healthy;
    healthy.check_id = "gpu.health";
    healthy.status = CheckStatus::kPass;
    healthy.observed = fmt::format("{} healthy", s.gpus.size());
    healthy.message = fmt::format(
        "all {} GPUs answer: no double-bit ECC error, no remap failure or pending remap, no "
        "recovery action, no hardware slowdown",
        s.gpus.size());
    findings.push_back(std::move(healthy));
  }
  return findings;
}

std::vector<NodeCondition> NvmlConditions(const NvmlFacts& facts, const std::string& node,
                                          WallTime now) {
  std::vector<NodeCondition> conditions;
  if (!facts.snapshot) return conditions;
  for (const GpuProblem& p : Problems(*facts.snapshot)) {
    NodeCondition c;
    c.node = node;
    c.kind = p.finding.check_id.substr(4);  // "gpu.ecc.dbe" -> "ecc.dbe"
    c.key = "nvml/" + c.kind + "/" + p.device;
    c.component = "gpu";
    c.device = p.device;
    c.severity = p.finding.severity;
    c.action = p.action;
    c.action_source = "cmax NVML rule (" + p.finding.check_id + ")";
    c.message = p.finding.message;
    c.count = 1;
    c.first_seen = now;
    c.last_seen = now;
    conditions.push_back(std::move(c));
  }
  return conditions;
}

std::vector<EvidenceItem> NvmlEvidence(const NvmlFacts& facts) {
  Json out = Json::object();
  if (!facts.snapshot) {
    out["available"] = false;
    out["reason"] = facts.unavailable;
  } else {
    const sys::NvmlSnapshot& s = *facts.snapshot;
    out["available"] = true;
    out["library"] = s.library;
    out["driver_version"] = s.driver_version;
    out["device_count"] = s.device_count;
    Json gpus = Json::array();
    for (const sys::GpuReading& g : s.gpus) {
      gpus.push_back({{"index", g.index},
                      {"uuid", g.uuid},
                      {"name", g.name},
                      {"pci", g.pci_bus_id},
                      {"lost", g.lost},
                      {"temperature_c", Optional(g.temperature_c)},
                      {"power_mw", Optional(g.power_mw)},
                      {"power_limit_mw", Optional(g.power_limit_mw)},
                      {"sm_clock_mhz", Optional(g.sm_clock_mhz)},
                      {"max_sm_clock_mhz", Optional(g.max_sm_clock_mhz)},
                      {"clock_event_reasons", Optional(g.clock_event_reasons)},
                      {"ecc_enabled", Optional(g.ecc_enabled)},
                      {"ecc_sbe_volatile", Optional(g.ecc_sbe_volatile)},
                      {"ecc_dbe_volatile", Optional(g.ecc_dbe_volatile)},
                      {"ecc_sbe_aggregate", Optional(g.ecc_sbe_aggregate)},
                      {"ecc_dbe_aggregate", Optional(g.ecc_dbe_aggregate)},
                      {"retired_pages_sbe", Optional(g.retired_pages_sbe)},
                      {"retired_pages_dbe", Optional(g.retired_pages_dbe)},
                      {"retired_pages_pending", Optional(g.retired_pages_pending)},
                      {"remapped_rows_correctable", Optional(g.remapped_rows_correctable)},
                      {"remapped_rows_uncorrectable", Optional(g.remapped_rows_uncorrectable)},
                      {"remapped_rows_pending", Optional(g.remapped_rows_pending)},
                      {"remapped_rows_failure", Optional(g.remapped_rows_failure)},
                      {"pcie_gen", Optional(g.pcie_gen)},
                      {"pcie_width", Optional(g.pcie_width)},
                      {"pcie_max_gen", Optional(g.pcie_max_gen)},
                      {"pcie_max_width", Optional(g.pcie_max_width)},
                      {"pcie_replay", Optional(g.pcie_replay)},
                      {"nvlink_links", Optional(g.nvlink_links)},
                      {"nvlink_inactive", Optional(g.nvlink_inactive)},
                      {"recovery_action", Optional(g.recovery_action)},
                      {"errors", g.errors}});
    }
    out["gpus"] = std::move(gpus);
  }
  return {{"gpu.nvml", out.dump(-1, ' ', false, Json::error_handler_t::replace)}};
}

std::vector<Metric> NvmlMetrics(const NvmlFacts& facts) {
  std::vector<Metric> metrics;
  if (!facts.snapshot) return metrics;
  for (const sys::GpuReading& g : facts.snapshot->gpus) {
    const std::map<std::string, std::string> labels = {{"gpu", std::to_string(g.index)},
                                                       {"pci", g.pci_bus_id}};
    auto add = [&](const char* name, const auto& value, const char* unit, double scale = 1.0) {
      if (value) metrics.push_back({name, labels, static_cast<double>(*value) * scale, unit});
    };
    add("gpu_temperature", g.temperature_c, "C");
    add("gpu_power", g.power_mw, "W", 0.001);
    add("gpu_ecc_dbe_volatile", g.ecc_dbe_volatile, "errors");
    add("gpu_ecc_sbe_volatile", g.ecc_sbe_volatile, "errors");
    add("gpu_pcie_replay", g.pcie_replay, "replays");
    metrics.push_back({"gpu_lost", labels, g.lost ? 1.0 : 0.0, ""});
  }
  return metrics;
}

}  // namespace cmax::health
