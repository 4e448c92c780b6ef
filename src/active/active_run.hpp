// `cmax health --active`'s whole work on this node, behind its thin command: the GPUs read
// through NVML (their class picks the thresholds; their use decides whether the node may be
// exercised), the checks of the level run under cmax's deadlines, and one run recorded.
// A node whose GPUs are in use, or whose use cannot be read, is not exercised unless forced:
// a diagnostic beside a tenant's job slows it and reads wrong (the field's false drains).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "active/cuda_probes.hpp"
#include "active/ib_pair.hpp"
#include "active/tool_checks.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "sys/nvml.hpp"

namespace cmax::active {

enum class ActiveLevel { kQuick, kFull };
// "full" is kFull; anything else ("quick", as --level and a plan's level are checked to be) kQuick.
ActiveLevel ActiveLevelNamed(std::string_view name);

struct ActiveRunOptions {
  ActiveLevel level = ActiveLevel::kQuick;
  bool force = false;  // exercise GPUs that are in use, or whose use is unknown
  // $SLURM_JOB_ID: the job cmax runs in (a scheduled check's) is not another's job on the node.
  std::string own_job;
  std::string gpu_class;  // a class id of the table, for a GPU NVML names differently
  double deadline_s = 0;  // each check's deadline; 0: the check's own default
  // The burn's length; nullopt: the level's (none at quick, kFullBurnSeconds at full); 0: none.
  std::optional<double> burn_s;
  // Per-rail ib_write_bw to a peer (ib_pair.hpp); none: not run.
  std::optional<IbPairOptions> ib_pair;
};

// Each end of a rail's ib_write_bw beyond its test's own seconds.
inline constexpr Duration kIbPairDeadline = std::chrono::seconds(60);

inline constexpr double kFullBurnSeconds = 120;

// The most rails a --peer test is bounded for where the node's own count is not known ahead: a
// GPU node has an adapter a GPU and one or two for storage, 8 to 10 today.
inline constexpr int kMostRails = 16;
// The longest `cmax health --active` with these options can run: every tool at its deadline
// and killed, the burn at its length and grace, a --peer test through its rails (`rails` when
// its options name none), and cmax's own start, Slurm's questions and the store. What a
// scheduled check's Slurm job asks for (--time): no more than that can it hold a node, and a
// job with a time limit is one the backfill scheduler can fit into a gap.
Duration LongestActiveRun(const ActiveRunOptions& options, int rails = kMostRails);

struct ActiveRunIo {
  std::string db_path;
  std::string cmax_version;
  std::string provider;
  std::string host;
  const Clock* clock = nullptr;
  ToolIo tools;
  // NVML's view of this node's GPUs (an error: no driver, no library, no GPU).
  std::function<Result<sys::NvmlSnapshot>()> snapshot;
  // cmax-probe and what it is given (cuda_probes.hpp); NVML kept open to watch the burn.
  std::string probe_program;
  std::vector<std::string> probe_env;
  std::function<Result<LookAtGpus>()> watch_gpus;
  Duration watch_every = std::chrono::seconds(1);
};

struct ActiveRunReport {
  int exit_code = 0;  // the recorded run's: 0, 1 a check failed, 3 a check could not be read
  RunRecord record;
  bool second_look = false;  // a tool hung: look at this node again before acting
  // For stderr: what the run saw fit to say, then the second look's warning and each node
  // condition it opened or recovered.
  std::vector<std::string> notes;
  std::vector<NodeCondition> conditions;  // the node conditions this run opened or recovered
};

// Errors: a --gpu-class the table does not have (kInvalidArgument), a store that cannot record.
Result<ActiveRunReport> RunActiveHealth(const ActiveRunOptions& options, const ActiveRunIo& io);

// The node conditions remediation reads, keyed "active/<check id>": a check that FAILed opens
// one or counts into it (its severity as found: from high up a serious fault, quarantined
// through the same lifecycle as an Xid); a tool that hung opens "active/second-look", low, so
// that the node is looked at again but never drained for a hang alone; a check that passes
// again recovers its condition. Only the conditions that change are returned. Pure.
std::vector<NodeCondition> ActiveConditions(const std::vector<Finding>& findings, bool second_look,
                                            const std::string& node, WallTime now,
                                            const std::vector<NodeCondition>& before);

// Which GPUs are in use (a compute process, or any utilisation) or of unknown use; "" when all
// are idle. Pure.
std::string BusyGpus(const sys::NvmlSnapshot& snapshot);

}  // namespace cmax::active
