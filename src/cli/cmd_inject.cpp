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
  app->add_option("--node", o.node,
                  "The node the fault is for (default: this host); it must be this host or a "
                  "lab node");
  app->add_option("--text", o.text, "The message after the code (default: the catalogue's)");
  app->add_flag("--dry-run", o.safety.dry_run,
                "Print exactly what would be written; write nothing");
  app->add_flag("--yes", o.safety.yes, "Inject into a node that is not a lab's");
  app->add_flag("--force", o.safety.force, "Accept a device that cannot be confirmed");
  app->add_option("--kmsg", o.kmsg, "Where to write")->capture_default_str();
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
      "--yes, and a node already out of service. Recorded in the store.");
  app->require_subcommand(1);
  CLI::App* xid_app = app->add_subcommand("xid", "An NVRM Xid record in /dev/kmsg");
  xid_app->add_option("code", xid->code, "Xid code (79: fallen off the bus, 48: DBE, ...)")
      ->check(Whole(0, kMaxEventCode))
      ->required();
  xid_app->add_option("--gpu", xid->gpu, "GPU index (from NVML) or PCI address")->required();
  xid_app->add_option("--pid", xid->pid, "Process id in the record (default '<unknown>')")
      ->check(Whole(1, 4194304));  // the kernel's largest pid_max
  CommonFlags(xid_app, *xid);
  CLI::App* sxid_app = app->add_subcommand("sxid", "An NVSwitch SXid record in /dev/kmsg");
  sxid_app->add_option("code", sxid->code, "SXid code")->check(Whole(0, kMaxEventCode))->required();
  sxid_app->add_option("--switch-pci", sxid->gpu, "The NVSwitch's PCI address")->required();
  sxid_app->add_option("--switch", sxid->switch_index, "N of nvidia-nvswitchN")
      ->check(Whole(0, 255))
      ->capture_default_str();
  sxid_app->add_option("--link", sxid->link, "NVLink number")
      ->check(Whole(0, 255))
      ->capture_default_str();
  sxid_app->add_flag("--fatal", sxid->fatal, "A fatal SXid (default non-fatal)");
  CommonFlags(sxid_app, *sxid);
  CLI::App* sim_app = app->add_subcommand(
      "nvml-sim", "A fault in the simulated NVML's state (libnvml-sim.so, for the lab and tests)");
  sim_app->add_option("fault", sim->fault,
                      "lost, dbe, row-remap-failure, row-remap-pending, recovery-action, "
                      "pcie-width, xid");
  sim_app->add_option("--gpu", sim->gpu, "GPU index or PCI address in the simulated state");
  sim_app->add_option("--value", sim->value, "recovery-action: 1-4; pcie-width: lanes; xid: code")
      ->check(Whole(0, kMaxEventCode));
  sim_app->add_option("--state", sim->state, "State file (default $CMAX_NVML_SIM_STATE)");
  sim_app->add_flag("--restore", sim->restore, "Put back the state from before the first fault");
  sim_app->add_option("--node", sim->node, "The node the simulated GPUs belong to");
  sim_app->add_flag("--dry-run", sim->safety.dry_run, "Print the change; write nothing");
  sim_app->add_flag("--yes", sim->safety.yes, "On a node that is not a lab's");
  CLI::App* dcgm_app = app->add_subcommand(
      "dcgm", "A field value in DCGM's host engine (dcgmi test --inject), for its policies");
  dcgm_app->add_option("field", dcgm->field, "Field id, or one of the names below")->required();
  std::string fields = "Field names (DCGM's field id, and what the value means):\n";
  for (const inject::DcgmField& f : inject::DcgmFields()) {
    fields += fmt::format("  {:<28}{}\n", fmt::format("{} ({})", f.name, f.id), f.meaning);
  }
  dcgm_app->footer(fields);
  dcgm_app->add_option("value", dcgm->value, "The value")->check(Whole(0, INT64_MAX))->required();
  dcgm_app->add_option("--gpu", dcgm->gpu, "DCGM's GPU id")->required();
  dcgm_app->add_option("--offset", dcgm->offset_s, "Seconds into the future the value is dated")
      ->check(Whole(0, 86400));
  dcgm_app->add_option("--node", dcgm->node, "The node (default: this host)");
  dcgm_app->add_flag("--dry-run", dcgm->safety.dry_run, "Print the dcgmi command; run nothing");
  dcgm_app->add_flag("--yes", dcgm->safety.yes, "On a node that is not a lab's");
  CLI::App* sbr_app = app->add_subcommand(
      "pcie-sbr",
      "A secondary bus reset of the PCIe bridge above a GPU: a real Xid 79. Destructive: what "
      "runs on the GPU dies, and it may stay lost until a reboot");
  sbr_app->add_option("--gpu", sbr->gpu, "The GPU's PCI address")->required();
  sbr_app->add_flag("--allow-destructive", sbr->safety.allow_destructive,
                    "Required: this injector changes the hardware's state");
  sbr_app->add_flag("--force", sbr->safety.force, "Even when the node runs jobs");
  sbr_app->add_option("--node", sbr->node, "The node (default: this host)");
  sbr_app->add_flag("--dry-run", sbr->safety.dry_run, "Print the setpci commands; run nothing");
  sbr_app->add_flag("--yes", sbr->safety.yes, "On a node that is not a lab's");
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
