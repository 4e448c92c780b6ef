// `cmax health schedule`: the active checks submitted as whole-node, low-priority Slurm jobs to
// the idle nodes not checked within the interval (active/schedule.hpp does the work).
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "active/schedule.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct ScheduleFlags {
  std::string level = "quick";
  double every_days = 7;
  double start_within_s = 60;
  double burn_s = -1;
  double deadline_s = 0;
  int64_t time_limit_min = -1;      // -1: the checks' own bound
  active::ScheduleOptions options;  // its nodes, partition, log folder, pairs and dry run as given
};

int RunSchedule(ScheduleFlags o, Context& ctx) {
  o.options.level = active::ActiveLevelNamed(o.level);
  o.options.every = SecondsAsDuration(o.every_days * 86400);
  o.options.start_within = SecondsAsDuration(o.start_within_s);
  if (o.burn_s >= 0) o.options.burn_s = o.burn_s;
  if (o.deadline_s > 0) o.options.deadline_s = o.deadline_s;
  if (o.time_limit_min >= 0) o.options.time_limit_min = o.time_limit_min;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  const active::ScheduleIo io{.runner = &runner,
                              .db_path = sys::AbsolutePath(ctx.DbPath()),
                              .cmax_binary = sys::SelfExecutable(),
                              .cmax_version = VersionString(),
                              .host = sys::Hostname(),
                              .clock = &clock,
                              .interrupted = sys::Interrupted};
  auto report = active::ScheduleActiveChecks(o.options, io);
  if (!report) return PrintError(ctx, "cmax health schedule", report.error());
  ctx.out << active::ScheduleText(*report, o.options.dry_run);
  return report->exit_code;
}

}  // namespace

Command SetupHealthScheduleCommand(CLI::App& health) {
  auto o = std::make_shared<ScheduleFlags>();
  CLI::App* app = health.add_subcommand(
      "schedule",
      "Submit the active checks (cmax health --active) as Slurm jobs to the nodes that are\n"
      "idle and were not checked within --every days: one job a node, the whole node\n"
      "(--exclusive), at a low priority (--nice=10000), recording into this store, where a\n"
      "failed check becomes a node condition that remediation acts on: give a --db every node\n"
      "can reach (a shared filesystem), or each check records on its node's own disk, where\n"
      "neither the next pass nor remediation sees it. A node with a job is\n"
      "never chosen; a check that cannot start within --start-within seconds (the node got\n"
      "a job meanwhile) is cancelled. Run it daily (cron, a systemd timer or scrontab): the\n"
      "store's last check per node paces it. Slurm's commands read $SLURM_CONF as usual.");
  Choice(app, "--level", o->level, {"quick", "full"},
         "The checks' level (cmax health --active --level)");
  Num(app, "--every", o->every_days, Positive(366),
      "Days between two checks of a node; a node checked more recently is skipped");
  Opt(app, "--nodes", o->options.nodes, "Only these nodes (a Slurm node list each: gpu[1-4])")
      ->delimiter(',');
  Opt(app, "--partition", o->options.partition, "Only this partition's nodes, and the jobs there");
  Num(app, "--start-within", o->start_within_s, SecondsIn(3600),
      "Seconds a submitted check may wait for its node before it is cancelled");
  Opt(app, "--log-dir", o->options.log_dir,
      "Folder for the jobs' output (default: active-checks/ beside the store)");
  Num(app, "--burn", o->burn_s, SecondsIn(24 * 3600, true),
      "Passed to each check: seconds of burn (default: the level's)")
      ->default_str("");  // -1 stands for "the level's"
  Num(app, "--deadline", o->deadline_s, SecondsIn(24 * 3600),
      "Passed to each check: seconds each tool may run");
  Num(app, "--time-limit", o->time_limit_min, Whole(0, 525600),
      "Minutes each job asks Slurm for (sbatch --time); 0: none, the partition's default "
      "(default: the longest the checks can take, every tool at its deadline, twice for a pair "
      "with up to 16 rails each, and no more than the partition's MaxTime)");
  Flag(app, "--pairs", o->options.pairs,
       "Check the due nodes two by two, each pair in one two-node job, each node's check also "
       "testing its InfiniBand/RoCE rails against the other's (ib_write_bw, --peer); an odd "
       "last node alone");
  Flag(app, "--dry-run", o->options.dry_run,
       "Say which nodes would be checked, and why; submit nothing");
  return {app, [o](Context& ctx) { return RunSchedule(*o, ctx); }};
}

}  // namespace cmax::cli
