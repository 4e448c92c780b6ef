// What a kernel log record means for node health: NVIDIA Xid and NVSwitch SXid errors, GPUs
// fallen off the bus, soft lockups, hung tasks, RCU stalls, PCIe AER, NIC link changes and
// faults, Lustre/NFS timeouts, OOM kills and machine checks. Pure parsing, table-tested.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "health/kernel_record.hpp"

namespace cmax::health {

enum class KernelEventKind {
  kXid,
  kSxid,
  kGpuFallenOffBus,
  kGpuUuid,  // "NVRM: GPU at PCI:... GPU-<uuid>": maps a bus id to a GPU UUID
  kSoftLockup,
  kHungTask,
  kRcuStall,
  kPcieAer,
  kNicLinkDown,
  kNicLinkUp,
  kNicFatal,
  kFsTimeout,
  kFsRecovered,
  kOomKill,
  kMachineCheck,
};
std::string_view KernelEventKindName(KernelEventKind kind);  // "xid", "sxid", ...

// The code of an Xid or SXid line whose number is too long to be a code: the event is kept
// (an unknown Xid is never ignored) with this code.
inline constexpr int kUnreadableCode = -1;

struct KernelEvent {
  KernelEventKind kind = KernelEventKind::kXid;
  // The device as the driver printed it, lowercased: "0000:17:00" for an Xid (the driver
  // prints no function), "0000:05:00.0" for an SXid or a NIC, an interface or server name.
  std::string device;
  int code = 0;  // Xid / SXid code
  std::optional<int> pid;
  std::string process;                  // Xid "name=", hung or soft-locked task, OOM victim
  std::optional<int> gpu_instance;      // MIG "GPU-I:"
  std::optional<int> compute_instance;  // MIG "GPU-CI:"
  std::optional<int> link;              // NVLink / NVSwitch link
  std::optional<int> cpu;               // soft lockup, RCU stall
  std::optional<int> seconds;           // soft lockup / hung task duration
  bool fatal = false;                   // SXid "Fatal", AER uncorrected fatal, NVLink5 Fatal
  bool corrected = false;               // AER / EDAC corrected errors
  std::string switch_name;              // SXid: "nvswitch3"
  std::string filesystem;               // "lustre" or "nfs"
  std::string recovery_action;          // Xid 154: the action it changed to
  std::string uuid;                     // GPU UUID
  std::string detail;                   // the rest of the message
};

// Parsers for one message each (pure); nullopt when the message is not of that kind.
std::optional<KernelEvent> ParseXid(std::string_view message);
std::optional<KernelEvent> ParseSxid(std::string_view message);

// Turns records into events. Stateful only to join the "fallen off the bus" report the
// driver prints over three records; everything else is one record, one event.
class KernelEventParser {
 public:
  std::vector<KernelEvent> Feed(const KernelRecord& record);

 private:
  std::string pending_gpu_;  // "The NVIDIA GPU <bus>" seen, waiting for "fallen off the bus"
  int pending_left_ = 0;     // records it may still arrive in
};

}  // namespace cmax::health
