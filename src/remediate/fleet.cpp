#include "remediate/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>

#include "core/hostlist.hpp"
#include "core/strings.hpp"

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

Result<RackMap> ParseRacks(std::string_view text) {
  RackMap racks;
  std::map<std::string, std::string> rack_of;
  int line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos)
      line = line.substr(0, hash);
    if (line.ends_with('\r')) line.remove_suffix(1);  // a file saved with CRLF line ends
    const auto fields = SplitFields(line);
    if (fields.empty()) continue;
    const std::string rack(fields[0]);
    // Rack and tray names go into Slurm's drain reasons and the journal.
    if (SanitizeUtf8(line) != line) {
      return Fail(ErrorCode::kInvalidArgument,
                  "line {}: a control character or bytes that are "
                  "not UTF-8",
                  line_number);
    }
    if (racks.contains(rack)) {
      return Fail(ErrorCode::kInvalidArgument, "line {}: rack {} named twice", line_number, rack);
    }
    std::vector<std::string>& trays = racks[rack];
    for (size_t i = 1; i < fields.size(); ++i) {
      auto names = ExpandHostList(fields[i]);
      if (!names) {
        return Fail(ErrorCode::kInvalidArgument, "line {}: {}", line_number, names.error().message);
      }
      for (std::string& name : *names) {
        if (auto [it, added] = rack_of.emplace(name, rack); !added) {
          return Fail(ErrorCode::kInvalidArgument, "line {}: tray {} is in rack {} already",
                      line_number, name, it->second);
        }
        trays.push_back(std::move(name));
      }
    }
    if (trays.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "line {}: rack {} has no trays", line_number, rack);
    }
  }
  // A rack file with no rack would turn the rack rules off unsaid (an empty or truncated file).
  if (racks.empty()) return Fail(ErrorCode::kInvalidArgument, "no rack in it");
  return racks;
}

}  // namespace cmax::remediate
