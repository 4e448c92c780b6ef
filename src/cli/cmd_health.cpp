// `cmax health --passive`: a one-shot node check from what the node already says - the kernel
// log (or a saved one), PCIe link widths, InfiniBand ports, network filesystems - recorded in
// the store. `--slurm-healthcheck` makes it Slurm's HealthCheckProgram.
// `cmax health --active`: the node exercised (DCGM's diagnostic, nvbandwidth, cmax's CUDA
// probes, a local all-reduce, a burn) under cmax's deadlines, judged against the GPU class's
// published limits, recorded likewise.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "active/active_run.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "health/passive_run.hpp"
#include "remediate/slurm.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/nvml.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct HealthFlags {
  bool passive = false;
  bool active = false;
  bool json = false;
  std::string level = "quick";
  double burn_s = -1;  // --burn; -1: the level's
  std::string peer;
  std::string peer_launch;
  active::IbPairOptions ib_pair;
  health::PassiveRunOptions run;
  active::ActiveRunOptions active_run;
};

int RunActive(HealthFlags o, Context& ctx) {
  o.active_run.level = active::ActiveLevelNamed(o.level);
  if (o.burn_s >= 0) o.active_run.burn_s = o.burn_s;
  if (o.active_run.own_job.empty()) o.active_run.own_job = sys::GetEnv("SLURM_JOB_ID");
  if (!o.peer.empty()) {
    o.ib_pair.peer = o.peer;
    o.ib_pair.own_job = o.active_run.own_job;
    // srun joins the job it runs in only through $SLURM_JOB_ID: an ssh session --own-job names
    // has none, and an srun there would ask for an allocation of its own.
    auto launch = active::PeerLauncher(o.peer_launch, !sys::GetEnv("SLURM_JOB_ID").empty());
    if (!launch) return PrintError(ctx, "cmax health --active", launch.error());
    o.ib_pair.launch = std::move(*launch);
    o.active_run.ib_pair = o.ib_pair;
  }
  sys::PosixProcessRunner runner;
  SystemClock clock;
  const std::string nvml_lib = o.run.nvml_lib;
  const active::ActiveRunIo io{.db_path = ctx.DbPath(),
                               .cmax_version = VersionString(),
                               .host = sys::ThisNodeName(o.run.node),
                               .clock = &clock,
                               .tools = {.runner = &runner, .find_program = sys::FindProgram},
                               .snapshot = [&nvml_lib] { return sys::ReadNvmlSnapshot(nvml_lib); },
                               .probe_program = active::ProbeProgramBeside(sys::SelfExecutable()),
                               .watch_gpus = [&nvml_lib] { return active::NvmlLook(nvml_lib); }};
  auto report = active::RunActiveHealth(o.active_run, io);
  if (!report) return PrintError(ctx, "cmax health --active", report.error());
  for (const std::string& note : report->notes) ctx.err << "cmax health: " << note << "\n";
  PrintRunRecord(ctx, report->record, o.json, {.color = ctx.Color()});
  return report->exit_code;
}

int RunHealth(const HealthFlags& o, Context& ctx) {
  if (o.passive == o.active) {
    return PrintError(ctx, "cmax health",
                      Error{ErrorCode::kInvalidArgument,
                            "say --passive (what the node already reports) or --active (the "
                            "node exercised: DCGM's diagnostic, nvbandwidth), one of them"});
  }
  if (o.active) return RunActive(o, ctx);
  sys::PosixProcessRunner runner;
  health::PassiveRunIo io{
      .db_path = ctx.DbPath(),
      .cmax_version = VersionString(),
      .interrupted = sys::Interrupted,
      .interrupt_signal = sys::InterruptSignal,
      // The remediation adapter's drain: it never overwrites a drain someone else set.
      .drain = [&runner](const std::string& node, const std::string& reason) {
        return remediate::SlurmScheduler(runner, {}).Drain(node, reason);
      }};
  auto report = health::RunPassiveHealth(o.run, io);
  if (!report) return PrintError(ctx, "cmax health", report.error());
  for (const std::string& note : report->notes) ctx.err << note << "\n";
  ctx.out << report->line;
  if (report->record) PrintRunRecord(ctx, *report->record, o.json, {.color = ctx.Color()});
  return report->exit_code;
}

}  // namespace

Command SetupHealthCommand(CLI::App& parent) {
  auto options = std::make_shared<HealthFlags>();
  CLI::App* app = parent.add_subcommand(
      "health",
      "Check this node's health from what it already reports: kernel log (NVIDIA Xid and\n"
      "NVSwitch SXid errors, GPUs fallen off the bus, lockups, hung tasks, PCIe AER, NIC and\n"
      "filesystem faults, OOM kills, machine checks), PCIe link widths, InfiniBand ports and\n"
      "network filesystems (--passive); or exercise it (--active): DCGM's diagnostic,\n"
      "nvbandwidth's copy bandwidths, cmax's CUDA probes (BF16 GEMM, memory and host copies,\n"
      "a burn) and a local NCCL all-reduce, each under cmax's own\n"
      "deadline, judged against the GPU model's published limits\n"
      "(data/active_thresholds.json), only when its GPUs are idle.\n"
      "Records one run in the store.");
  Flag(app, "--passive", options->passive, "Passive checks only (nothing is exercised)");
  Flag(app, "--active", options->active,
       "Active checks: exercise the GPUs (dcgmi diag, nvbandwidth, cmax's CUDA probes, a local "
       "all-reduce; at --level full a 120 s burn at full load too); refused on GPUs in use");
  Choice(app, "--level", options->level, {"quick", "full"},
         "With --active: quick (dcgmi diag -r 1, nvbandwidth, cmax's CUDA probes, a local "
         "all-reduce) or full (dcgmi diag -r 3, the all-reduce through the network adapters "
         "too, and a burn)");
  Num(app, "--burn", options->burn_s, SecondsIn(24 * 3600, true),
      "With --active: seconds of BF16 matrix multiplies on every GPU at once, NVML watched "
      "(default: none at quick, 120 at full; 0: none)")
      ->default_str("");  // -1 stands for "the level's"
  Opt(app, "--peer", options->peer,
      "With --active: test each InfiniBand/RoCE rail with ib_write_bw against this node (its "
      "server started there, the client here), judged against the port's rate; a peer that "
      "squeue says runs others' jobs is left alone (SKIP)");
  Opt(app, "--peer-address", options->ib_pair.address,
      "With --peer: the address the client connects to (default: the peer's name)");
  Opt(app, "--peer-launch", options->peer_launch,
      "With --peer: the command that runs a program on the peer, {peer} for its name, split "
      "into words as sh splits them, quotes kept, nothing expanded, no shell operators (default: "
      "srun --overlap "
      "--nodes=1 --ntasks=1 --nodelist={peer} inside a "
      "Slurm job, else ssh -o BatchMode=yes {peer})");
  Opt(app, "--rails", options->ib_pair.rails,
      "With --peer: these devices only, comma-separated (default: every one in "
      "/sys/class/infiniband)")
      ->delimiter(',');
  Num(app, "--ib-seconds", options->ib_pair.seconds, Whole(1, 600),
      "With --peer: seconds each rail's ib_write_bw runs (-D)");
  Num(app, "--ib-port", options->ib_pair.port, Whole(1024, 65000),
      "With --peer: the first rail's TCP port for perftest's exchange (-p); the next rails "
      "take the next ports");
  Flag(app, "--force", options->active_run.force,
       "With --active: exercise GPUs that are in use, or whose use NVML cannot tell, and a "
       "node where Slurm runs others' jobs (any but --own-job's)");
  Opt(app, "--own-job", options->active_run.own_job,
      "With --active: the Slurm job this runs for, whose use of the node (and of --peer) is not "
      "others' (default $SLURM_JOB_ID; give it in an ssh session that pam_slurm_adopt put in "
      "your job, which has no $SLURM_JOB_ID)")
      ->check(Whole(1, 4294967295));
  Flag(app, "--force-peer", options->ib_pair.force,
       "With --peer: test the rails of a peer that runs others' jobs (their traffic is "
       "disturbed)");
  Opt(app, "--gpu-class", options->active_run.gpu_class,
      "With --active: judge as this class of the thresholds table (h100-sxm, h200, gb200, "
      "a100-sxm) instead of the one NVML's GPU name gives");
  Num(app, "--deadline", options->active_run.deadline_s, SecondsIn(24 * 3600),
      "With --active: seconds each tool may run before cmax kills it (default per check: "
      "dcgmi diag -r 1 120, -r 3 1800, nvbandwidth and all_reduce_perf 300)");
  Opt(app, "--from-file", options->run.from_file,
      "Replay a saved kernel log (raw kmsg, dmesg [-T], journalctl -k, syslog)");
  Opt(app, "--since", options->run.since,
      "Only records since: a duration (15m, 2h, 3d) or a UTC time (2026-11-30T09:00:00Z)")
      // `--since "$UNSET"` would otherwise read the whole log unasked.
      ->check([](const std::string& text) -> std::string {
        return text.empty() ? "a duration or a UTC time (leave --since out for the whole log)" : "";
      });
  Opt(app, "--xid-catalog", options->run.xid_catalog,
      "Use this XID catalogue (JSON, like data/xid_catalog.json)");
  Num(app, "--mount-timeout", options->run.mount_timeout_s, SecondsIn(600),
      "Seconds each mounted filesystem (network, parallel or local disk) may take to answer "
      "statfs");
  Flag(app, "--json", options->json, "Print the JSON report (schema cmax.report/v1)");
  Flag(app, "--slurm-healthcheck", options->run.slurm_healthcheck,
       "Run as Slurm's HealthCheckProgram: silent on success, one line and exit 1 on "
       "failure; looks at the last 2h unless --since says otherwise");
  Flag(app, "--drain", options->run.drain,
       "With --slurm-healthcheck: drain the node on failure, reason prefixed 'cmax:' "
       "(never overwrites someone else's drain)");
  Opt(app, "--nvml-lib", options->run.nvml_lib,
      "NVML library to load (default $CMAX_NVML_LIB, else libnvidia-ml.so.1); "
      "without one the NVML checks are a SKIP finding");
  Opt(app, "--node", options->run.node,
      "Slurm node name (default $SLURMD_NODENAME, else the short hostname)");
  const Command schedule = SetupHealthScheduleCommand(*app);
  return {app, [options, schedule](Context& ctx) {
            return schedule.app->parsed() ? schedule.run(ctx) : RunHealth(*options, ctx);
          }};
}

}  // namespace cmax::cli
