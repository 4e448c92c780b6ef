// `cmax health --passive`: a one-shot node check from what the node already says - the kernel
// log (or a saved one), PCIe link widths, InfiniBand ports, network filesystems - recorded in
// the store. `--slurm-healthcheck` makes it Slurm's HealthCheckProgram.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "health/passive_run.hpp"
#include "remediate/slurm.hpp"
#include "report/render.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct HealthFlags {
  bool passive = false;
  bool json = false;
  health::PassiveRunOptions run;
};

int RunHealth(const HealthFlags& o, Context& ctx) {
  sys::PosixProcessRunner runner;
  health::PassiveRunIo io{
      .db_path = ctx.DbPath(),
      .cmax_version = VersionString(),
      .interrupted = [] { return sys::Interrupted(); },
      .interrupt_signal = [] { return sys::InterruptSignal(); },
      // The remediation adapter's drain: it never overwrites a drain someone else set.
      .drain =
          [&runner](const std::string& node, const std::string& reason) {
            return remediate::SlurmScheduler(runner, {}).Drain(node, reason);
          }};
  auto report = health::RunPassiveHealth(o.run, io);
  if (!report) return PrintError(ctx, "cmax health", report.error());
  for (const std::string& note : report->notes) ctx.err << note << "\n";
  ctx.out << report->line;
  if (report->record) {
    ctx.out << (o.json ? report::RenderJson(*report->record)
                       : report::RenderText(*report->record, {.color = ctx.Color()}));
  }
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
      "network filesystems. Records one run in the store.");
  Flag(app, "--passive", options->passive, "Passive checks only (nothing is exercised)")
      ->required();
  Opt(app, "--from-file", options->run.from_file,
      "Replay a saved kernel log (raw kmsg, dmesg [-T], journalctl -k, syslog)");
  Opt(app, "--since", options->run.since,
      "Only records since: a duration (15m, 2h, 3d) or a UTC time");
  Opt(app, "--xid-catalog", options->run.xid_catalog,
      "Use this XID catalogue (JSON, like data/xid_catalog.json)");
  Num(app, "--mount-timeout", options->run.mount_timeout_s, SecondsIn(600),
      "Seconds a network filesystem may take to answer statfs");
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
  return {app, [options](Context& ctx) { return RunHealth(*options, ctx); }};
}

}  // namespace cmax::cli
