#include "health/conditions.hpp"

#include <algorithm>

namespace cmax::health {
namespace {

constexpr size_t kMaxEvidenceBytes = 4096;

// The driver prints a GPU's bus id without the function in Xid lines ("0000:9b:00") and with
// it elsewhere ("0000:9b:00.0"): one GPU, one key.
std::string GpuBusId(const std::string& device) {
  const size_t dot = device.rfind('.');
  return dot != std::string::npos && dot + 2 == device.size() ? device.substr(0, dot) : device;
}

// How far an action goes, to keep the most urgent one a condition has called for.
int ActionUrgency(RecommendedAction action) {
  switch (action) {
    case RecommendedAction::kNone: return 0;
    case RecommendedAction::kRestartApp: return 1;
    case RecommendedAction::kResetGpu: return 2;
    case RecommendedAction::kContactSupport: return 3;
    case RecommendedAction::kRebootNode: return 4;
    case RecommendedAction::kDrainAndRma: return 5;
  }
  return 0;
}

Component ComponentOf(KernelEventKind kind) {
  switch (kind) {
    case KernelEventKind::kXid:
    case KernelEventKind::kGpuFallenOffBus:
    case KernelEventKind::kGpuUuid: return Component::kGpu;
    case KernelEventKind::kSxid: return Component::kNvSwitch;
    case KernelEventKind::kNicLinkDown:
    case KernelEventKind::kNicLinkUp:
    case KernelEventKind::kNicFatal: return Component::kNic;
    case KernelEventKind::kPcieAer: return Component::kPcie;
    case KernelEventKind::kSoftLockup:
    case KernelEventKind::kRcuStall: return Component::kCpu;
    case KernelEventKind::kMachineCheck:
    case KernelEventKind::kOomKill: return Component::kMemory;
    case KernelEventKind::kFsTimeout:
    case KernelEventKind::kFsRecovered: return Component::kFilesystem;
    case KernelEventKind::kHungTask: return Component::kNode;
  }
  return Component::kNode;
}

// The condition a recovery event closes: link up closes link down, "server OK" a timeout.
std::optional<KernelEventKind> RecoveryOf(KernelEventKind kind) {
  if (kind == KernelEventKind::kNicLinkUp) return KernelEventKind::kNicLinkDown;
  if (kind == KernelEventKind::kFsRecovered) return KernelEventKind::kFsTimeout;
  return std::nullopt;
}

std::string KeyOf(const KernelEvent& event, KernelEventKind kind) {
  // AER severities and fatal/non-fatal SXids are separate conditions of one device.
  std::string variant;
  if (event.kind == KernelEventKind::kPcieAer) {
    variant = event.fatal ? "/fatal" : (event.corrected ? "/corrected" : "/uncorrected");
  }
  if (event.kind == KernelEventKind::kMachineCheck) {
    variant = event.fatal ? "/uncorrected" : (event.corrected ? "/corrected" : "");
  }
  return std::string(KernelEventKindName(kind)) + "/" + event.device + "/" +
         std::to_string(event.code) + variant;
}

}  // namespace

std::string_view ComponentName(Component component) {
  switch (component) {
    case Component::kGpu: return "gpu";
    case Component::kNvSwitch: return "nvswitch";
    case Component::kNic: return "nic";
    case Component::kPcie: return "pcie";
    case Component::kCpu: return "cpu";
    case Component::kMemory: return "memory";
    case Component::kFilesystem: return "filesystem";
    case Component::kNode: return "node";
  }
  return "node";
}

Observation ConditionTracker::Observe(const KernelEvent& event, const KernelRecord& record) {
  ++events_seen_;
  if (event.kind == KernelEventKind::kGpuUuid) {
    gpu_uuids_[GpuBusId(event.device)] = event.uuid;
    for (auto& [key, condition] : conditions_) {
      if (condition.component == Component::kGpu &&
          GpuBusId(condition.device) == GpuBusId(event.device)) {
        condition.gpu_uuid = event.uuid;
      }
    }
    return {};
  }
  if (auto closes = RecoveryOf(event.kind)) {
    if (auto it = conditions_.find(KeyOf(event, *closes)); it != conditions_.end()) {
      it->second.recovered = true;
      return {&it->second, false};
    }
    return {};
  }
  const std::string key = KeyOf(event, event.kind);
  auto [it, inserted] = conditions_.try_emplace(key);
  Condition& c = it->second;
  if (inserted) {
    order_.push_back(key);
    c.key = key;
    c.component = ComponentOf(event.kind);
    c.device = event.device;
    c.kind = event.kind;
    c.code = event.code;
    c.meaning = catalog_->Explain(event);
    c.first_monotonic_us = record.monotonic_us;
    c.first_wall = record.wall_time;
    if (auto uuid = gpu_uuids_.find(GpuBusId(event.device)); uuid != gpu_uuids_.end()) {
      c.gpu_uuid = uuid->second;
    }
  } else {
    // A later Xid 154 may change the recommended action; the most urgent one stays.
    const EventMeaning meaning = catalog_->Explain(event);
    if (meaning.severity > c.meaning.severity ||
        (meaning.severity == c.meaning.severity &&
         ActionUrgency(meaning.action) > ActionUrgency(c.meaning.action))) {
      c.meaning = meaning;
    }
  }
  ++c.count;
  c.recovered = false;
  // Evidence, not a copy of the log: a megabyte-long line keeps its first 4 KiB.
  c.last_message = record.message.substr(0, kMaxEvidenceBytes);
  c.last_monotonic_us = record.monotonic_us;
  c.last_wall = record.wall_time;
  return {&c, inserted};
}

const Condition* ConditionTracker::Find(const std::string& key) const {
  auto it = conditions_.find(key);
  return it == conditions_.end() ? nullptr : &it->second;
}

std::vector<Condition> ConditionTracker::Conditions() const {
  std::vector<Condition> out;
  out.reserve(order_.size());
  for (const std::string& key : order_) out.push_back(conditions_.at(key));
  std::stable_sort(out.begin(), out.end(), [](const Condition& a, const Condition& b) {
    if (a.meaning.severity != b.meaning.severity) return a.meaning.severity > b.meaning.severity;
    return a.count > b.count;
  });
  return out;
}

}  // namespace cmax::health
