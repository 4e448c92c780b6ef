// Turns host facts into what a run stores: evidence (the facts as JSON) and findings (what
// the facts mean), and names the target. Pure functions over the collected facts.
#pragma once

#include <string>
#include <vector>

#include "audit/host_inventory.hpp"
#include "core/run_record.hpp"

namespace cmax::audit {

struct Target {
  std::string environment;  // "bare-metal", "vm" or "container"
  std::string scheduler;    // "standalone", "slurm-client", "kubernetes", or both joined by '+'
  std::string Name() const { return environment + "/" + scheduler; }
};

// The environment needs only the host facts; the scheduler part is "standalone" until
// DetectScheduler fills it in.
Target DetectEnvironment(const HostFacts& host);
std::string DetectScheduler(const SchedulerFacts& scheduler);

std::vector<Finding> HostFindings(const HostFacts& host, const Target& target);
std::vector<EvidenceItem> HostEvidence(const HostFacts& host);
std::vector<Finding> GpuFindings(const GpuFacts& gpu);
std::vector<EvidenceItem> GpuEvidence(const GpuFacts& gpu);
std::vector<Finding> SchedulerFindings(const SchedulerFacts& scheduler);
std::vector<EvidenceItem> SchedulerEvidence(const SchedulerFacts& scheduler, const Target& target);

}  // namespace cmax::audit
