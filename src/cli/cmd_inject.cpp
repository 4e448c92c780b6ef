// `cmax inject`: writes a GPU fault where a provider's health checks read it, to time how the
// provider reacts (`cmax reliability`). `xid` and `sxid` write the driver's exact records to
// /dev/kmsg. Every injector prints exactly what it would do with --dry-run, refuses a node that
// is not a lab's without --yes, refuses a node the scheduler already shows out of service, and
// records what it did in the store.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "inject/dcgm.hpp"
#include "inject/injection.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

// Xid and SXid codes the driver prints are small; anything past a million is a typo.
constexpr int64_t kMaxEventCode = 1'000'000;

// Runs one injector with this process's files, programs, clock and terminal.
template <typename Options>
int Run(Context& ctx, const std::string& name, const Options& options,
        Result<void> (*injector)(const Options&, const inject::InjectionIo&)) {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  inject::InjectionIo io{
      .db_path = ctx.DbPath(),
      .fs = &fs,
      .runner = &runner,
      .clock = &clock,
      .node_gpus = inject::NvmlGpuAddresses,
      .out = [&ctx](std::string_view line) { ctx.out << line << "\n"; },
      .refused = [&ctx, &name](std::string_view line) { ctx.err << name << ": " << line << "\n"; }};
  auto ok = injector(options, io);
  return ok ? kExitOk : PrintError(ctx, name, ok.error());
}

void CommonFlags(CLI::App* app, inject::KernelEventOptions& o) {
  Opt(app, "--node", o.node,
      "The node the fault is for (default: this host); it must be this host or a lab node");
  Opt(app, "--text", o.text, "The message after the code (default: the catalogue's)");
  Flag(app, "--dry-run", o.safety.dry_run, "Print exactly what would be written; write nothing");
  Flag(app, "--yes", o.safety.yes,
       "Inject into a node that is not a lab's: the provider's automation may drain, requeue, "
       "reset or reboot it for a fault that is not there, and a kernel-log record cannot be "
       "taken back");
  Flag(app, "--force", o.safety.force,
       "Even when the node runs jobs (the provider's drain and requeue end them), and for a "
       "device that cannot be confirmed");
  Opt(app, "--kmsg", o.kmsg, "Where to write");
}

}  // namespace

Command SetupInjectCommand(CLI::App& parent) {
  auto xid = std::make_shared<inject::KernelEventOptions>();
  auto sxid = std::make_shared<inject::KernelEventOptions>();
  sxid->sxid = true;
  auto sim = std::make_shared<inject::NvmlSimOptions>();
  auto dcgm = std::make_shared<inject::DcgmOptions>();
  auto sbr = std::make_shared<inject::PcieSbrOptions>();
  CLI::App* app = parent.add_subcommand(
      "inject",
      "Write a GPU fault where the provider's health checks read it, to time their reaction\n"
      "(see `cmax reliability`). Needs root; refuses a node that is not a lab's without\n"
      "--yes, a node already out of service, and one that runs jobs without --force.\n"
      "Recorded in the store.");
  app->require_subcommand(1);
  const CLI::Validator code = Whole(0, kMaxEventCode);
  CLI::App* xid_app = app->add_subcommand("xid", "An NVRM Xid record in /dev/kmsg");
  Num(xid_app, "code", xid->code, code, "Xid code (79: fallen off the bus, 48: DBE, ...)")
      ->required();
  Opt(xid_app, "--gpu", xid->gpu, "GPU index (from NVML) or PCI address")->required();
  Num(xid_app, "--pid", xid->pid, Whole(1, 4194304),  // the kernel's largest pid_max
      "Process id in the record (default '<unknown>')");
  CommonFlags(xid_app, *xid);
  CLI::App* sxid_app = app->add_subcommand("sxid", "An NVSwitch SXid record in /dev/kmsg");
  Num(sxid_app, "code", sxid->code, code, "SXid code")->required();
  Opt(sxid_app, "--switch-pci", sxid->gpu, "The NVSwitch's PCI address")->required();
  Num(sxid_app, "--switch", sxid->switch_index, Whole(0, 255), "N of nvidia-nvswitchN");
  Num(sxid_app, "--link", sxid->link, Whole(0, 255), "NVLink number");
  Flag(sxid_app, "--fatal", sxid->fatal, "A fatal SXid (default non-fatal)");
  CommonFlags(sxid_app, *sxid);
  CLI::App* sim_app = app->add_subcommand(
      "nvml-sim", "A fault in the simulated NVML's state (libnvml-sim.so, for the lab and tests)");
  Opt(sim_app, "fault", sim->fault,
      "lost, dbe, row-remap-failure, row-remap-pending, recovery-action, pcie-width, xid");
  Opt(sim_app, "--gpu", sim->gpu, "GPU index or PCI address in the simulated state");
  Num(sim_app, "--value", sim->value, code, "recovery-action: 1-4; pcie-width: lanes; xid: code");
  Opt(sim_app, "--state", sim->state, "State file (default $CMAX_NVML_SIM_STATE)");
  Flag(sim_app, "--restore", sim->restore, "Put back the state from before the first fault");
  Opt(sim_app, "--node", sim->node, "The node the simulated GPUs belong to");
  Flag(sim_app, "--dry-run", sim->safety.dry_run, "Print the change; write nothing");
  Flag(sim_app, "--yes", sim->safety.yes, "On a node that is not a lab's");
  Flag(sim_app, "--force", sim->safety.force, "Even when the node runs jobs");
  CLI::App* dcgm_app = app->add_subcommand(
      "dcgm", "A field value in DCGM's host engine (dcgmi test --inject), for its policies");
  Opt(dcgm_app, "field", dcgm->field, "Field id, or one of the names below")->required();
  std::string fields = "Field names (DCGM's field id, and what the value means):\n";
  for (const inject::DcgmField& f : inject::DcgmFields()) {
    fields += fmt::format("  {:<28}{}\n", fmt::format("{} ({})", f.name, f.id), f.meaning);
  }
  dcgm_app->footer(fields);
  Num(dcgm_app, "value", dcgm->value, Whole(0, INT64_MAX), "The value")->required();
  Opt(dcgm_app, "--gpu", dcgm->gpu, "DCGM's GPU id")->required();
  Num(dcgm_app, "--offset", dcgm->offset_s, Whole(0, 86400),
      "Seconds into the future the value is dated");
  Opt(dcgm_app, "--node", dcgm->node, "The node (default: this host)");
  Flag(dcgm_app, "--dry-run", dcgm->safety.dry_run, "Print the dcgmi command; run nothing");
  Flag(dcgm_app, "--yes", dcgm->safety.yes, "On a node that is not a lab's");
  Flag(dcgm_app, "--force", dcgm->safety.force, "Even when the node runs jobs");
  CLI::App* sbr_app = app->add_subcommand(
      "pcie-sbr",
      "A secondary bus reset of the PCIe bridge above a GPU: a real Xid 79. Destructive: what "
      "runs on the GPU dies, and it may stay lost until a reboot");
  Opt(sbr_app, "--gpu", sbr->gpu, "The GPU's PCI address")->required();
  Flag(sbr_app, "--allow-destructive", sbr->safety.allow_destructive,
       "Required: this injector changes the hardware's state");
  Flag(sbr_app, "--force", sbr->safety.force, "Even when the node runs jobs");
  Opt(sbr_app, "--node", sbr->node, "The node (default: this host)");
  Flag(sbr_app, "--dry-run", sbr->safety.dry_run, "Print the setpci commands; run nothing");
  Flag(sbr_app, "--yes", sbr->safety.yes, "On a node that is not a lab's");
  return {app, [=](Context& ctx) {
            if (sim_app->parsed())
              return Run(ctx, "cmax inject nvml-sim", *sim, &inject::InjectNvmlSim);
            if (sbr_app->parsed())
              return Run(ctx, "cmax inject pcie-sbr", *sbr, &inject::InjectPcieSbr);
            if (dcgm_app->parsed()) return Run(ctx, "cmax inject dcgm", *dcgm, &inject::InjectDcgm);
            if (xid_app->parsed())
              return Run(ctx, "cmax inject xid", *xid, &inject::InjectKernelEvent);
            return Run(ctx, "cmax inject sxid", *sxid, &inject::InjectKernelEvent);
          }};
}

}  // namespace cmax::cli
