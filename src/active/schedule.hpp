// `cmax health schedule`: the active checks as Slurm jobs on the nodes that are idle and have
// not been checked within the interval (a week by default), one whole-node (--exclusive),
// low-priority (--nice) job a node running `cmax health --active` there and recording into the
// same store, so that what fails becomes a node condition remediation acts on. Run it as often
// as you like (daily from cron, or a scrontab line): the store's last check per node paces it.
// A node with a job is never chosen (only Slurm's plain "idle" is); one that gets a job between
// the look and the check's start is skipped: a check still pending after `start_within` is
// cancelled and said.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "active/active_run.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"
#include "sys/process_runner.hpp"

namespace cmax::active {

struct SlurmNodeState {
  std::string node;
  std::string state;  // sinfo's long state: "idle", "mixed", "drained", "idle*", ...
  int gpus = 0;       // GPUs in its generic resources (%G), 0 where none are configured
};

// `sinfo -h -N -o %N|%T|%G` (the third field optional): a node is listed once per partition it
// is in, kept once. kCorrupt for a line that is not NODE|STATE[|GRES]. Pure.
Result<std::vector<SlurmNodeState>> ParseSinfoNodeStates(std::string_view text);

// The GPUs in sinfo's %G: "gpu:8", "gpu:h100:8(S:0-1)", "gpu:a100:4,gpu:1g.10gb:7" (summed),
// "(null)" 0; an entry it cannot read counts 0. Pure.
int GpusInGres(std::string_view gres);

// A Slurm time limit as sinfo's %l writes it ("30:00", "1:00:00", "2-00:00:00", "15"), in whole
// minutes, rounded down (a job may ask for no more); none for "infinite", "UNLIMITED" or what is
// not a time.
std::optional<int64_t> ParseSlurmTimeLimit(std::string_view text);
// `sinfo -h -o %P|%l`: the time limit of `partition`, or of the default partition (sinfo marks
// it with '*') when `partition` is empty; none when it has none or is not listed.
std::optional<int64_t> PartitionTimeLimit(std::string_view sinfo_text, std::string_view partition);

// A node's latest active check, from the store.
struct LastCheck {
  WallTime at;
  int64_t run_id = 0;
  StatusCounts counts;
};

struct ScheduleDecision {
  std::string node;
  std::string state;
  std::optional<LastCheck> last_check;
  bool submit = false;
  std::string why;      // "idle; last checked 9 days ago", "mixed: a job runs there"
  std::string peer;     // --pairs: the node checked with it in one job (their rails tested)
  int gpus = 0;         // its GPUs as Slurm counts them: asked for by its check's job or step
  std::string job_id;   // once submitted
  std::string outcome;  // "started", "cancelled: ...", "not submitted: ..."
};

// Which nodes get a check now: the idle ones not checked within `every`, oldest check first
// (never checked before all). Pure.
std::vector<ScheduleDecision> PlanActiveChecks(const std::vector<SlurmNodeState>& nodes,
                                               const std::map<std::string, LastCheck>& last_check,
                                               WallTime now, Duration every);

// The fleet's active checks as the rating reads them: the share of nodes checked within
// `every` (active.fleet_checked_share), the share of checked nodes whose latest check failed
// nothing (active.fleet_pass_share; a check whose every part was skipped is no check), the oldest
// latest check (active.fleet_oldest_check_days); one finding ("active.fleet": FAIL naming the nodes
// whose latest check failed, WARN naming those overdue, else PASS) and each node's row as evidence
// ("active.fleet": node, state, last_check, age_days, run, the check's status counts, overdue,
// decision, why; the report's per-node table reads it). Pure.
struct FleetView {
  std::vector<Metric> metrics;
  Finding finding;
  std::string evidence_json;
};
FleetView ViewFleet(const std::vector<ScheduleDecision>& decisions, WallTime now, Duration every);

// --pairs: the due nodes (first in the plan) two by two in the plan's order, each given the
// other as its peer; a last odd one keeps none. Pure.
void PairDueNodes(std::vector<ScheduleDecision>& plan);

struct ScheduleOptions {
  ActiveLevel level = ActiveLevel::kQuick;
  Duration every = std::chrono::hours(24 * 7);
  std::vector<std::string> nodes;  // only these; empty: every node sinfo lists
  std::string partition;
  Duration start_within = std::chrono::seconds(60);
  int nice = 10000;  // Slurm's lowest priority adjustment: tenants' jobs go first
  bool dry_run = false;
  // false: the fleet's view is recorded as on any pass, and nothing is submitted.
  bool submit = true;
  // Checks made before this do not count (a fleet whose nodes are new: cmax run --lab's lab).
  std::optional<WallTime> not_before;
  std::string log_dir;                  // the jobs' output; "" beside the store
  std::optional<double> burn_s;         // each check's --burn; none: its level's
  std::optional<double> deadline_s;     // each check's --deadline; none: its own default
  std::vector<std::string> check_args;  // more for `cmax health --active` (--peer-address ...)
  // Due nodes two by two, each pair in one whole two-node job: each node's check, one after
  // the other, also tests its InfiniBand/RoCE rails against the other's (`--peer`); a last odd
  // node is checked alone.
  bool pairs = false;
  // Each job's Slurm time limit in minutes (sbatch --time); none: ActiveCheckJobMinutes's bound;
  // 0: none asked (the partition's default).
  std::optional<int64_t> time_limit_min;
  // The partition's own limit (MaxTime), which ScheduleActiveChecks reads from sinfo: a bound
  // past it is cut to it (a job asking for more would wait for ever, or be refused).
  std::optional<int64_t> partition_limit_min;
};

// The minutes a check's job asks Slurm for (--time), 0 for none: time_limit_min when given, else
// LongestActiveRun of the check it runs (a pair's job: both nodes' checks, one after the other,
// each through up to kMostRails rails), rounded up, and no more than partition_limit_min. Pure.
int64_t ActiveCheckJobMinutes(const ScheduleOptions& options, bool pair);

struct ScheduleIo {
  sys::ProcessRunner* runner = nullptr;
  std::vector<std::string> slurm_env;  // added to Slurm's commands' (SLURM_CONF=... for a lab)
  std::string db_path;                 // absolute: the jobs write there too
  std::string cmax_binary;             // absolute
  std::string cmax_version;            // for the run the schedule records
  std::string host;
  const Clock* clock = nullptr;
  // The provider whose nodes these are: only its checks pace the schedule (another provider's
  // gpu1 is not this one's), and its checks' jobs and the schedule's run are recorded under it.
  // Empty: $CMAX_PROVIDER's, as every command's runs (none: every check in the store counts).
  std::string provider;
  // True once Ctrl-C or SIGTERM came: nothing more is submitted, the checks still waiting for
  // their node are cancelled (none is left in a tenant's way unwatched), kInterrupted.
  std::function<bool()> interrupted;
};

struct ScheduleReport {
  std::vector<ScheduleDecision> decisions;
  int submitted = 0;
  int started = 0;
  FleetView fleet;
  int64_t run_id = 0;  // the run recorded (not on a dry run)
  int exit_code = 0;   // 1 when a node's latest check failed
  // The time limit each job asks for (ActiveCheckJobMinutes): a node's, and a pair's when the
  // checks go two by two; 0: none.
  int64_t job_minutes = 0;
  std::optional<int64_t> pair_job_minutes;
  // The partition's limit, where it cut a bound: a check may be stopped there.
  std::optional<int64_t> cut_to_partition_limit;
};

// Records one run (command "health", target "active schedule": not itself a check) with the
// fleet's view, after submitting. Errors: sinfo or the store cannot be read (kUnavailable), an
// sbatch that fails for every node, an interruption (kInterrupted: what was submitted, started
// and cancelled in its message; nothing recorded).
Result<ScheduleReport> ScheduleActiveChecks(const ScheduleOptions& options, const ScheduleIo& io);

// The `sbatch` argv for one node's check; its GPUs asked for by count (--gres=gpu:N) where
// Slurm counts any, since a whole-node job does not otherwise hand them to its steps; its time
// limit ActiveCheckJobMinutes's. Pure.
std::vector<std::string> ActiveCheckJob(const ScheduleDecision& node,
                                        const ScheduleOptions& options, const ScheduleIo& io);
// The `sbatch` argv for a pair's checks: one job holding both nodes whole, whose script runs
// `cmax health --active --peer B` on A as a step (srun, with A's GPUs asked for), then
// `--peer A` on B (the second runs whatever the first found). Pure.
std::vector<std::string> ActiveCheckPairJob(const ScheduleDecision& a, const ScheduleDecision& b,
                                            const ScheduleOptions& options, const ScheduleIo& io);

// One line a node, for people. Pure.
std::string ScheduleText(const ScheduleReport& report, bool dry_run);

}  // namespace cmax::active
