// Rules over more than one node, pure like the policy: the circuit breaker that stops a
// remediation storm, the per-node rate limit, and NVL72 racks, where trays share one NVLink
// domain and the rack counts as down when enough of them are out.
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/policy.hpp"

namespace cmax::remediate {

// --- circuit breaker ---------------------------------------------------------------------------

struct BreakerConfig {
  double max_fraction = 0.5;  // more than this share of the fleet out within the window trips it
  Duration window = std::chrono::minutes(5);
};

// Kept in the store; only a person resets it (`cmax remediate reset-breaker`).
struct BreakerState {
  bool tripped = false;
  WallTime tripped_at;
  std::string reason;
};

struct BreakerVerdict {
  bool allow = true;       // the take-out may go ahead
  bool trips_now = false;  // this take-out is the one that trips the breaker
  std::string reason;
};

struct TakeOut {
  std::string node;
  WallTime at;
};

// May `node` be taken out of service now? `take_outs` are when nodes were taken out (from the
// store, or from the scheduler's cmax-owned drains); the breaker counts distinct nodes within
// the window, this one included, so one flapping node is not a storm. A fleet of zero is
// treated as one node.
BreakerVerdict CheckBreaker(const BreakerState& state, std::span<const TakeOut> take_outs,
                            const std::string& node, int fleet_size, WallTime now,
                            const BreakerConfig& config);

// --- per-node rate limit -----------------------------------------------------------------------

struct RateLimit {
  int max_actions = 6;  // disruptive actions (drain, reset, reboot) per node in the window
  Duration window = std::chrono::hours(1);
};

bool WithinRateLimit(std::span<const WallTime> node_actions, WallTime now, const RateLimit& limit);

// --- NVL72 racks -------------------------------------------------------------------------------

struct RackConfig {
  int down_at = 3;  // trays out of service at which the rack counts as down (of 18)
  // Whether the NVLink domain keeps working with a tray out. When it does not, one tray out
  // takes the rack's other trays out of scheduling too.
  bool domain_survives_tray_loss = true;
};

enum class RackHealth { kUp, kDegraded, kDown };
std::string_view RackHealthName(RackHealth health);  // "up", "degraded", "down"

struct RackView {
  std::string name;
  std::map<std::string, NodeState> trays;  // every tray of the rack and its state
  std::set<std::string> held;              // trays cmax drained because the rack is down
};

struct RackPlan {
  RackHealth health = RackHealth::kUp;
  int out = 0;                       // trays out of service in their own right
  std::vector<std::string> hold;     // in-service trays to drain for the rack
  std::vector<std::string> release;  // held trays to resume: the rack is back
  std::vector<std::string> forget;   // held trays to stop tracking, with no action: they went
                                     // out of service in their own right or left the rack
  std::string reason;                // the drain reason for `hold`, prefixed "cmax:"
};

// A tray is out of service in QUARANTINED, VALIDATING, REPAIR and RETIRED.
bool OutOfService(NodeState state);

RackPlan PlanRack(const RackView& rack, const RackConfig& config);

// The rack file: one rack per line, its name then its trays, which may use Slurm-style ranges
// ("rack-a nvl-a[01-18]", "rack-b b1,b2 b[3-4,7]"); '#' starts a comment. Refuses a tray
// named twice, a rack named twice, a rack without trays and malformed ranges.
using RackMap = std::map<std::string, std::vector<std::string>>;
Result<RackMap> ParseRacks(std::string_view text);

}  // namespace cmax::remediate
