// Node conditions: what the kernel-log events say about each component (a GPU, an NVSwitch,
// a NIC, the CPUs, a filesystem), with severity, recommended action and evidence. Repeats
// are counted into one condition, so a storm of one fault is one condition with a count.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "health/kernel_events.hpp"
#include "health/xid_catalog.hpp"

namespace cmax::health {

enum class Component { kGpu, kNvSwitch, kNic, kPcie, kCpu, kMemory, kFilesystem, kNode };
std::string_view ComponentName(Component component);  // "gpu", "nvswitch", ...

struct Condition {
  std::string key;  // kind/device/code: one condition per fault source
  Component component = Component::kNode;
  std::string device;    // PCI address, interface, server, "node"
  std::string gpu_uuid;  // when the log mapped the GPU's bus id to its UUID
  KernelEventKind kind = KernelEventKind::kXid;
  int code = 0;
  EventMeaning meaning;
  std::string last_message;  // the most recent record, as evidence
  std::optional<int64_t> first_monotonic_us;
  std::optional<int64_t> last_monotonic_us;
  std::optional<WallTime> first_wall;
  std::optional<WallTime> last_wall;
  uint64_t count = 0;
  bool recovered = false;  // a later event said it recovered (link up, NFS server OK)
};

struct Observation {
  const Condition* condition = nullptr;  // the condition the event counted into or recovered
  bool opened = false;                   // it opened a new condition
};

class ConditionTracker {
 public:
  explicit ConditionTracker(const XidCatalog& catalog) : catalog_(&catalog) {}

  // Counts the event into its condition. The pointer stays valid until the next Observe.
  Observation Observe(const KernelEvent& event, const KernelRecord& record);

  // Worst first (severity, then count), then in the order they were first seen.
  std::vector<Condition> Conditions() const;
  const Condition* Find(const std::string& key) const;
  uint64_t EventsSeen() const { return events_seen_; }

 private:
  const XidCatalog* catalog_;
  std::map<std::string, Condition> conditions_;
  std::map<std::string, std::string> gpu_uuids_;  // bus id -> UUID
  std::vector<std::string> order_;                // keys in the order first seen
  uint64_t events_seen_ = 0;
};

}  // namespace cmax::health
