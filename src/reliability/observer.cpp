#include "reliability/observer.hpp"

#include "core/log.hpp"
#include "reliability/alerts.hpp"

namespace cmax::reliability {

SchedulerView ViewOf(const std::vector<remediate::SchedulerNode>& nodes) {
  SchedulerView view;
  for (const remediate::SchedulerNode& n : nodes) {
    NodeView& v = view[n.name];
    v.drain = v.drain || n.OutOfService();
    // A node listed once per partition: a reason seen on any line is kept.
    if (const std::string why = n.ServiceReason();
        !why.empty() && (v.reason.empty() || !n.reason.empty())) {
      v.reason = why;
    }
    v.partitions.insert(n.partitions.begin(), n.partitions.end());
    v.taints.insert(n.taints.begin(), n.taints.end());
    v.conditions.insert(n.conditions.begin(), n.conditions.end());
  }
  return view;
}

std::vector<Observation> Diff(const SchedulerView& before, const SchedulerView& after,
                              const std::string& service_partition, WallTime at) {
  std::vector<Observation> out;
  for (const auto& [node, now] : after) {
    const auto it = before.find(node);
    const bool was_drained = it != before.end() && it->second.drain;
    if (now.drain && !was_drained) out.push_back({at, node, ObservationKind::kDrained, now.reason});
    if (!now.drain && was_drained) out.push_back({at, node, ObservationKind::kResumed, ""});
    for (const std::string& condition : now.conditions) {
      if (it == before.end() || !it->second.conditions.contains(condition)) {
        out.push_back({at, node, ObservationKind::kAlert, "node condition " + condition});
      }
    }
    for (const std::string& taint : now.taints) {
      if (it == before.end() || !it->second.taints.contains(taint)) {
        out.push_back({at, node, ObservationKind::kTainted, taint});
      }
    }
    const bool was_serving =
        it != before.end() && it->second.partitions.contains(service_partition);
    if (now.partitions.contains(service_partition) && !was_serving) {
      out.push_back({at, node, ObservationKind::kSpareIn,
                     it == before.end() ? "a new node" : "joined " + service_partition});
    }
  }
  return out;
}

Watcher::Watcher(remediate::Scheduler& scheduler, const Clock& clock, std::string service_partition,
                 AlertSource* alerts)
    : scheduler_(scheduler),
      clock_(clock),
      service_partition_(std::move(service_partition)),
      alerts_(alerts) {}

Result<SchedulerView> Watcher::Baseline() {
  auto nodes = scheduler_.Nodes();
  if (!nodes) return tl::unexpected(nodes.error());
  view_ = ViewOf(*nodes);
  lost_ = false;
  if (alerts_ != nullptr) {
    // Alerts already firing are not this injection's.
    auto firing = alerts_->Firing();
    if (firing) alerting_ = std::move(*firing);
  }
  return view_;
}

std::vector<Observation> Watcher::Poll() {
  auto nodes = scheduler_.Nodes();
  const WallTime at = clock_.Now();
  if (!nodes) {
    if (lost_) return {};
    lost_ = true;
    return {{at, "", ObservationKind::kContactLost, nodes.error().message}};
  }
  std::vector<Observation> out;
  if (lost_) {
    lost_ = false;
    out.push_back({at, "", ObservationKind::kContactBack, ""});
  }
  SchedulerView next = ViewOf(*nodes);
  std::vector<Observation> changes = Diff(view_, next, service_partition_, at);
  out.insert(out.end(), changes.begin(), changes.end());
  view_ = std::move(next);
  if (alerts_ != nullptr) {
    auto firing = alerts_->Firing();
    if (!firing) {
      if (!alerts_failing_) log::Warn("{}: {}", alerts_->Describe(), firing.error().message);
      alerts_failing_ = true;
    } else {
      alerts_failing_ = false;
      for (const std::string& node : *firing) {
        if (!alerting_.contains(node)) {
          out.push_back({at, node, ObservationKind::kAlert, alerts_->Describe()});
        }
      }
      alerting_ = std::move(*firing);
    }
  }
  return out;
}

}  // namespace cmax::reliability
