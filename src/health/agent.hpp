// The node agent: watches the kernel log (event-driven, poll on /dev/kmsg), NVML (a timer) and
// its own footprint (the watchdog), keeps the node's conditions in the store, and serves
// Prometheus metrics. One thread, one poll loop; nothing busy-waits.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "health/agent_metrics.hpp"
#include "health/log_scanner.hpp"
#include "health/nvml_checks.hpp"
#include "health/watchdog.hpp"
#include "health/xid_catalog.hpp"
#include "store/store.hpp"
#include "sys/kmsg_reader.hpp"
#include "sys/metrics_server.hpp"
#include "sys/nvml.hpp"

namespace cmax::health {

// What the agent could open when it became ready.
struct AgentReadiness {
  bool kmsg = false;
  bool nvml = false;  // NVML loaded and answered (false also when --no-nvml)
  size_t gpus = 0;
};

// The ready line `cmax agent` prints on stdout, e.g. "agent ready: kernel log open, NVML 8 GPUs".
std::string ReadyLine(const AgentReadiness& readiness, bool nvml_wanted);

struct AgentOptions {
  std::string node;
  std::string kmsg_path = "/dev/kmsg";
  bool from_boot = false;  // also read what the ring holds when the agent starts
  bool nvml = true;
  std::string nvml_lib;  // empty: $CMAX_NVML_LIB, else libnvidia-ml.so.1
  Duration nvml_interval = std::chrono::seconds(10);
  // Each wakeup costs an idle node a little (about 1.5 ms of CPU on a small VM, measured):
  // the watchdog ticks every 10 s, like osquery's 3-12 s windows.
  Duration watchdog_interval = std::chrono::seconds(10);
  WatchdogLimits limits;
  size_t event_rows_per_minute = 30;  // per condition; the condition itself counts every one
  size_t max_batch = 10000;           // records read before the loop flushes and looks around
  // Called after each flush that stored changed conditions, and every `after_interval` in any
  // case: `cmax agent --remediate` runs its node's remediation step here. It runs on the
  // agent's one thread; while it waits on the scheduler, /dev/kmsg waits (overruns are
  // counted, as always).
  std::function<void()> after_flush;
  Duration after_interval = std::chrono::seconds(2);
  // Non-empty: kernel events that name another PCI device are not this node's. Nodes that share
  // one kernel (the lab's) each watch their own devices this way; a real node's log holds only
  // its own, so the list stays empty there.
  std::vector<std::string> devices;
  // Called once, when the sources have had their first try (the kernel log opened, the first
  // NVML snapshot taken): a record written after this is read. `cmax agent` prints its ready
  // line here, for scripts and tests that must not write a fault before the agent can see it.
  std::function<void(const AgentReadiness&)> on_ready;
};

// Whether a kernel event's device ("0000:17:00" for an Xid, "0000:05:00.0" for an SXid) is one
// of `devices` (PCI addresses with or without the function); events without a device are.
bool DeviceIsOurs(std::string_view device, const std::vector<std::string>& devices);

// Exit code when the watchdog stops the agent: systemd's Restart=on-failure brings it back.
inline constexpr int kExitWatchdog = 75;

class Agent {
 public:
  // Opens the kernel log at once, so whatever is written after construction is seen.
  Agent(AgentOptions options, const XidCatalog& catalog, store::Store& store);
  ~Agent();

  // Runs until SIGINT/SIGTERM (returns 0) or the watchdog trips (kExitWatchdog).
  int Run(sys::MetricsServer* server);

  // The current conditions, kernel-log and NVML ones together.
  std::vector<NodeCondition> Conditions() const;
  std::string MetricsText();

 private:
  void OpenKmsg();
  void ReadKmsg();
  void PollNvml();
  bool CheckWatchdog();
  void Flush();
  void QueueEvent(const KernelEvent& event, const KernelRecord& record, const Condition& condition);

  AgentOptions options_;
  const XidCatalog* catalog_;
  store::Store* store_;
  SystemClock clock_;
  std::chrono::steady_clock::time_point started_;
  WallTime boot_time_;

  std::optional<sys::KmsgReader> kmsg_;
  std::chrono::steady_clock::time_point kmsg_retry_at_;
  Duration kmsg_backoff_ = std::chrono::seconds(1);
  bool first_open_ = true;
  KernelEventParser parser_;
  ConditionTracker tracker_;
  std::set<std::string> dirty_;  // condition keys changed since the last flush

  // What the store held for this node when the agent started: counts continue across restarts.
  std::map<std::string, NodeCondition> stored_;

  std::unique_ptr<sys::Nvml> nvml_;
  std::map<unsigned, std::string> gpu_bus_ids_;  // index -> bus id, kept for GPUs that get lost
  std::chrono::steady_clock::time_point next_nvml_;
  Duration nvml_backoff_ = std::chrono::seconds(10);
  std::map<std::string, NodeCondition> nvml_conditions_;
  std::set<std::string> nvml_dirty_;

  Watchdog watchdog_;
  std::chrono::steady_clock::time_point next_watchdog_;
  std::chrono::steady_clock::time_point next_after_;
  bool flushed_ = false;    // conditions were stored since after_flush last ran
  bool announced_ = false;  // on_ready has been called
  size_t nvml_gpus_ = 0;    // GPUs in the last NVML snapshot

  struct RateWindow {
    std::chrono::steady_clock::time_point start;
    size_t rows = 0;
    uint64_t suppressed = 0;
  };
  std::map<std::string, RateWindow> rate_;
  bool wal_dirty_ = false;                            // written since the last checkpoint
  static constexpr size_t kMaxPendingEvents = 10000;  // while the store cannot be written
  std::vector<Event> pending_events_;
  std::vector<std::chrono::steady_clock::time_point> pending_read_times_;

  AgentMetrics metrics_;
};

// A tracker condition as the store keeps it.
NodeCondition ToNodeCondition(const Condition& condition, const std::string& node, WallTime now);

}  // namespace cmax::health
