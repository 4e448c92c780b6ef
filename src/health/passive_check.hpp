// `cmax health --passive` as a pure function: from what was read (kernel-log conditions,
// PCIe links, InfiniBand ports, filesystem probes) to findings, evidence and metrics.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/run_record.hpp"
#include "health/conditions.hpp"
#include "health/log_scanner.hpp"
#include "health/node_facts.hpp"

namespace cmax::health {

struct PassiveFacts {
  LogSummary log;
  std::optional<std::string> log_error;  // the kernel log could not be read: why
  std::vector<Condition> conditions;
  std::vector<PcieLink> links;
  std::vector<IbPort> ports;
  std::vector<MountProbe> mounts;
};

struct PassiveOptions {
  size_t max_condition_findings = 50;  // more become one summary finding; all stay in evidence
};

std::vector<Finding> PassiveFindings(const PassiveFacts& facts, const PassiveOptions& options);
std::vector<EvidenceItem> PassiveEvidence(const PassiveFacts& facts);
std::vector<Metric> PassiveMetrics(const PassiveFacts& facts);

// What people should do for an action, in one sentence.
std::string_view ActionAdvice(RecommendedAction action);
// The status a condition earns: FAIL for high and critical, WARN for medium and low (and for
// a FAIL that has since recovered), PASS for info.
CheckStatus ConditionStatus(const Condition& condition);

}  // namespace cmax::health
