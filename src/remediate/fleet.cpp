#include "remediate/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace cmax::remediate {

BreakerVerdict CheckBreaker(const BreakerState& state, std::span<const TakeOut> take_outs,
                            const std::string& node, int fleet_size, WallTime now,
                            const BreakerConfig& config) {
  if (state.tripped) return {false, false, "circuit breaker tripped: " + state.reason};
  std::set<std::string> nodes{node};
  for (const TakeOut& t : take_outs) {
    if (t.at <= now && now - t.at < config.window) nodes.insert(t.node);
  }
  const int fleet = std::max(fleet_size, 1);
  const auto after = static_cast<int>(nodes.size());
  const double share = static_cast<double>(after) / fleet;
  if (share > config.max_fraction) {
    return {false, true,
            fmt::format("{} of {} nodes taken out within {} (limit {:.0f}%)", after, fleet,
                        FormatDuration(config.window), config.max_fraction * 100)};
  }
  return {true, false, ""};
}

bool WithinRateLimit(std::span<const WallTime> node_actions, WallTime now, const RateLimit& limit) {
  const auto recent = std::ranges::count_if(
      node_actions, [&](WallTime t) { return t <= now && now - t < limit.window; });
  return recent < limit.max_actions;
}

std::string_view RackHealthName(RackHealth health) {
  switch (health) {
    case RackHealth::kUp: return "up";
    case RackHealth::kDegraded: return "degraded";
    case RackHealth::kDown: return "down";
  }
  return "?";
}

bool OutOfService(NodeState state) {
  return state == NodeState::kQuarantined || state == NodeState::kValidating ||
         state == NodeState::kRepair || state == NodeState::kRetired;
}

RackPlan PlanRack(const RackView& rack, const RackConfig& config) {
  RackPlan plan;
  for (const auto& [tray, state] : rack.trays) plan.out += OutOfService(state) ? 1 : 0;
  const bool down =
      plan.out >= config.down_at || (plan.out > 0 && !config.domain_survives_tray_loss);
  plan.health = down ? RackHealth::kDown : plan.out > 0 ? RackHealth::kDegraded : RackHealth::kUp;
  if (down) {
    plan.reason = plan.out >= config.down_at
                      ? fmt::format("cmax: rack {} down ({} of {} trays out)", rack.name, plan.out,
                                    rack.trays.size())
                      : fmt::format("cmax: rack {} NVLink domain needs every tray ({} out)",
                                    rack.name, plan.out);
  }
  for (const auto& [tray, state] : rack.trays) {
    const bool held = rack.held.contains(tray);
    if (OutOfService(state)) {
      if (held) plan.forget.push_back(tray);  // its own lifecycle owns its drain now
    } else if (down && !held) {
      plan.hold.push_back(tray);
    } else if (!down && held) {
      plan.release.push_back(tray);
    }
  }
  for (const std::string& tray : rack.held) {
    if (!rack.trays.contains(tray)) plan.forget.push_back(tray);  // left the rack
  }
  return plan;
}

}  // namespace cmax::remediate
