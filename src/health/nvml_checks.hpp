// What an NVML snapshot says about each GPU: lost GPUs, double-bit ECC errors, row-remap
// failures and pending remaps, retired pages waiting for a reset, a recovery action the driver
// asks for, hardware slowdowns, inactive NVLinks. Pure: a snapshot (or why there is none) in,
// findings, evidence and metrics out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/run_record.hpp"
#include "sys/nvml.hpp"

namespace cmax::health {

struct NvmlFacts {
  std::optional<sys::NvmlSnapshot> snapshot;
  std::string unavailable;  // why there is no snapshot (library absent, init failed)
};

std::vector<Finding> NvmlFindings(const NvmlFacts& facts);
std::vector<EvidenceItem> NvmlEvidence(const NvmlFacts& facts);
std::vector<Metric> NvmlMetrics(const NvmlFacts& facts);
// The GPU problems as node conditions for the agent, keyed "nvml/<check>/<pci>".
std::vector<NodeCondition> NvmlConditions(const NvmlFacts& facts, const std::string& node,
                                          WallTime now);

// "hw_slowdown, hw_thermal_slowdown" for the clock-event reason bits that mean trouble
// (0x8, 0x40, 0x80); idle, application and power-cap reasons are normal and left out.
std::string TroubleReasons(uint64_t reasons);

}  // namespace cmax::health
