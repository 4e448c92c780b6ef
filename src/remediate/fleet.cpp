#include "remediate/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <optional>

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

Result<std::vector<std::string>> ExpandHostList(std::string_view text) {
  std::vector<std::string> out;
  // Split on commas outside brackets.
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > start) items.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '[') {
      ++depth;
    } else if (text[i] == ']') {
      --depth;
    }
    if (depth < 0 || depth > 1)
      return Fail(ErrorCode::kInvalidArgument, "bad brackets in '{}'", text);
  }
  if (depth != 0) return Fail(ErrorCode::kInvalidArgument, "unclosed '[' in '{}'", text);
  for (std::string_view item : items) {
    const size_t open = item.find('[');
    if (open == std::string_view::npos) {
      out.emplace_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    const std::string_view prefix = item.substr(0, open);
    const std::string_view suffix = item.substr(close + 1);
    if (suffix.find('[') != std::string_view::npos) {
      return Fail(ErrorCode::kInvalidArgument, "one range per name: '{}'", item);
    }
    for (std::string_view part : Split(item.substr(open + 1, close - open - 1), ',')) {
      const size_t dash = part.find('-');
      const std::string_view lo_text = part.substr(0, dash);
      const std::string_view hi_text =
          dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
      auto number = [](std::string_view t) -> std::optional<long> {
        if (t.empty() || t.size() > 9) return std::nullopt;
        long v = 0;
        for (const char c : t) {
          if (c < '0' || c > '9') return std::nullopt;
          v = v * 10 + (c - '0');
        }
        return v;
      };
      const auto lo = number(lo_text);
      const auto hi = number(hi_text);
      if (!lo || !hi || *hi < *lo || *hi - *lo > 100000) {
        return Fail(ErrorCode::kInvalidArgument, "bad range '{}' in '{}'", part, item);
      }
      for (long v = *lo; v <= *hi; ++v) {
        out.push_back(fmt::format("{}{:0{}}{}", prefix, v, lo_text.size(), suffix));
      }
    }
  }
  return out;
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
