// Watching the provider's scheduler after an injection: what it shows for every node (through
// the same Scheduler interface remediation uses, so Slurm and Kubernetes alike), polled at a
// rate the caller sets, each change timestamped as an Observation. It watches any provider's
// system: it only reads, and cares only what the scheduler shows, not who did it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "reliability/timeline.hpp"
#include "remediate/scheduler.hpp"

namespace cmax::reliability {

class AlertSource;  // reliability/alerts.hpp: only pointed to here

struct NodeView {
  bool drain = false;
  std::string reason;
  std::set<std::string> partitions;
  std::set<std::string> taints;      // Kubernetes NoSchedule/NoExecute taints, "key:effect"
  std::set<std::string> conditions;  // Kubernetes node conditions that say something is wrong
};
using SchedulerView = std::map<std::string, NodeView>;

SchedulerView ViewOf(const std::vector<remediate::SchedulerNode>& nodes);

// What changed between two looks, as observations at `at`: a node that stopped taking work
// (drained), took work again (resumed), got a NoSchedule/NoExecute taint it did not have
// (tainted: a provider's remediation may taint instead of cordoning), got a node condition that
// says something is wrong (an alert: detection, not out of service), or joined
// `service_partition` (spare-in, also a node that was not there before).
std::vector<Observation> Diff(const SchedulerView& before, const SchedulerView& after,
                              const std::string& service_partition, WallTime at);

class Watcher {
 public:
  // `alerts` (may be null): a second signal; a node that starts alerting is an alert
  // observation. Its errors are logged, not contact lost: the scheduler decides the verdict.
  Watcher(remediate::Scheduler& scheduler, const Clock& clock, std::string service_partition,
          AlertSource* alerts = nullptr);
  // The first look: what later looks are compared with. Fails when the scheduler cannot be
  // read at all (a test cannot start blind).
  Result<SchedulerView> Baseline();
  // One look; a scheduler that cannot be read is a contact-lost observation (once, until it
  // answers again: contact-back).
  std::vector<Observation> Poll();
  const SchedulerView& Current() const { return view_; }

 private:
  remediate::Scheduler& scheduler_;
  const Clock& clock_;
  std::string service_partition_;
  SchedulerView view_;
  bool lost_ = false;
  AlertSource* alerts_;
  std::set<std::string> alerting_;
  bool alerts_failing_ = false;
};

}  // namespace cmax::reliability
