// `cmax inject`: writes a GPU fault where a provider's health checks read it, to time how the
// provider reacts (`cmax reliability`). `xid` and `sxid` write the driver's exact records to
// /dev/kmsg. Every injector prints exactly what it would do with --dry-run, refuses a node that
// is not a lab's without --yes, refuses a node the scheduler already shows out of service, and
// records what it did in the store.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/numbers.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "health/xid_catalog.hpp"
#include "inject/dcgm.hpp"
#include "inject/kernel_lines.hpp"
#include "inject/nvml_sim.hpp"
#include "inject/pcie_sbr.hpp"
#include "inject/target.hpp"
#include "inject/target_facts.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/nvml.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

// Xid and SXid codes the driver prints are small; anything past a million is a typo.
constexpr int64_t kMaxEventCode = 1'000'000;

struct InjectOptions {
  CLI::App* xid = nullptr;
  CLI::App* sxid = nullptr;
  CLI::App* nvml_sim = nullptr;
  CLI::App* dcgm = nullptr;
  CLI::App* pcie_sbr = nullptr;
  bool allow_destructive = false;
  std::string field;  // dcgm
  long long field_value = 0;
  int offset_s = -1;
  std::string fault;  // nvml-sim
  long value = 0;
  std::string state;  // nvml-sim state file
  bool restore = false;
  int code = 0;
  std::string gpu;  // xid: index or PCI address; sxid: the switch's PCI address
  std::string node;
  std::string text;
  int pid = 0;
  int switch_index = 0;
  int link = 0;
  bool fatal = false;
  bool dry_run = false;
  bool yes = false;
  bool force = false;
  std::string kmsg = "/dev/kmsg";
};

// Every injection is recorded in the store before it is done, so none goes unrecorded.
Result<void> RecordInjection(const Context& ctx, const std::string& node, const std::string& kind,
                             const nlohmann::json& payload) {
  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) return tl::unexpected(store.error());
  return store->SaveConditions({}, {{SystemClock().Now(), node, "inject", kind, payload.dump()}});
}

// The node's GPUs, from NVML when it loads (the lab's is libnvml-sim through CMAX_NVML_LIB).
std::vector<std::string> NodeGpus() {
  auto nvml = sys::Nvml::Load();
  if (!nvml) return {};
  auto snapshot = (*nvml)->Snapshot();
  if (!snapshot) return {};
  std::vector<std::string> pcis;
  for (const sys::GpuReading& g : snapshot->gpus) pcis.push_back(g.pci_bus_id);
  return pcis;
}

int Inject(const InjectOptions& o, Context& ctx, const std::string& kind) {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  const inject::TargetFacts target = inject::GatherFacts(o.node, fs, runner);
  const std::string name = "cmax inject " + kind;

  // The record, from a GPU (or switch) that is really there.
  auto pci = kind == "xid" ? inject::ResolveGpu(o.gpu, NodeGpus(), fs, target.lab, o.force)
                           : inject::ResolveGpu(o.gpu, {}, fs, target.lab, o.force);
  if (!pci) {
    ctx.err << name << ": " << pci.error().message << "\n";
    return kExitUsage;
  }
  auto record =
      kind == "xid"
          ? inject::XidRecord({.code = o.code, .pci = *pci, .pid = o.pid, .text = o.text},
                              health::XidCatalog::Builtin())
          : inject::SxidRecord({.code = o.code,
                                .pci = *pci,
                                .switch_index = o.switch_index,
                                .fatal = o.fatal,
                                .link = o.link,
                                .text = o.text.empty() ? inject::SxidSpec{}.text : o.text});
  if (!record) {
    ctx.err << name << ": " << record.error().message << "\n";
    return kExitUsage;
  }

  ctx.out << fmt::format("{}: node {}{}, {} {}\n", name, target.node, target.lab ? " (lab)" : "",
                         kind == "xid" ? "GPU" : "NVSwitch", *pci);
  ctx.out << (o.dry_run ? "  would write to " : "  writes to ") << o.kmsg << ": "
          << SanitizeUtf8(*record) << "\n";
  const auto refusals =
      inject::Refusals(target, {.dry_run = o.dry_run, .yes = o.yes, .force = o.force});
  for (const std::string& why : refusals) ctx.err << name << ": refused: " << why << "\n";
  if (!refusals.empty()) return kExitUsage;
  if (o.dry_run) return kExitOk;

  const WallTime at = SystemClock().Now();
  const nlohmann::json payload = {
      {"code", o.code}, {"pci", *pci}, {"record", *record}, {"path", o.kmsg}};
  if (auto ok = RecordInjection(ctx, target.node, kind, payload); !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    return kExitError;
  }
  if (auto ok = inject::WriteKernelRecord(o.kmsg, *record); !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    (void)RecordInjection(ctx, target.node, kind + "-failed", payload);
    return kExitError;
  }
  log::Info("injected {} {} on {} at {}", kind, o.code, target.node, FormatIso8601(at));
  ctx.out << "  injected at " << FormatIso8601(at) << "\n"
          << "  to undo: nothing stays in the kernel log to remove; the provider's reaction is "
             "what is being tested. If it drained "
          << target.node
          << ", resume it when the test is over (Slurm: scontrol update nodename=" << target.node
          << " state=resume).\n";
  return kExitOk;
}

// The simulated NVML's state file changed in place (written beside it and renamed over, so the
// library never reads half a file); the first change keeps the original as STATE.cmax-backup,
// which --restore puts back.
int InjectNvmlSim(const InjectOptions& o, Context& ctx) {
  const std::string name = "cmax inject nvml-sim";
  const std::string path = inject::SimStatePath(o.state);
  if (path.empty()) {
    ctx.err << name << ": no state file: give --state or set CMAX_NVML_SIM_STATE\n";
    return kExitUsage;
  }
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  const inject::TargetFacts target = inject::GatherFacts(o.node, fs, runner);
  const auto refusals =
      inject::Refusals(target, {.dry_run = o.dry_run, .yes = o.yes, .force = o.force});
  std::string description;
  if (o.restore) {
    if (!fs.Exists(inject::SimBackupPath(path))) {
      ctx.err << name << ": nothing to restore: no " << inject::SimBackupPath(path) << "\n";
      return kExitUsage;
    }
    description = "restore " + path + " from " + inject::SimBackupPath(path);
  } else {
    if (o.fault.empty() || o.gpu.empty()) {
      ctx.err << name << ": give a fault and --gpu (or --restore)\n";
      return kExitUsage;
    }
    auto change =
        inject::ApplySimFaultToFile(fs, path, {o.fault, o.value, o.gpu}, /*dry_run=*/true);
    if (!change) {
      ctx.err << name << ": " << change.error().message << "\n";
      return kExitUsage;
    }
    description = change->description;
  }
  ctx.out << name << ": " << (o.dry_run ? "would " : "") << SanitizeUtf8(description) << " ("
          << path << ")\n";
  for (const std::string& why : refusals) ctx.err << name << ": refused: " << why << "\n";
  if (!refusals.empty()) return kExitUsage;
  if (o.dry_run) return kExitOk;
  const nlohmann::json payload = {{"change", description}, {"state", path}};
  if (auto ok = RecordInjection(ctx, target.node, "nvml-sim", payload); !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    return kExitError;
  }
  auto done = o.restore
                  ? inject::RestoreSimState(fs, path)
                  : inject::ApplySimFaultToFile(fs, path, {o.fault, o.value, o.gpu})
                        .and_then([](const inject::SimChange&) -> Result<void> { return {}; });
  if (!done) {
    ctx.err << name << ": " << done.error().message << "\n";
    return kExitError;
  }
  if (!o.restore) ctx.out << "  to undo: cmax inject nvml-sim --restore --state " << path << "\n";
  return kExitOk;
}

// DCGM field injection through dcgmi, which talks to the node's host engine.
int InjectDcgm(const InjectOptions& o, Context& ctx) {
  const std::string name = "cmax inject dcgm";
  const auto gpu = inject::DcgmGpuId(o.gpu);
  if (!gpu) {
    ctx.err << name << ": --gpu: " << gpu.error().message << "\n";
    return kExitUsage;
  }
  auto argv =
      inject::DcgmInjectArgv(o.field, o.field_value, *gpu,
                             o.offset_s >= 0 ? std::optional<int>(o.offset_s) : std::nullopt);
  if (!argv) {
    ctx.err << name << ": " << argv.error().message << "\n";
    return kExitUsage;
  }
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  const inject::TargetFacts target = inject::GatherFacts(o.node, fs, runner);
  ctx.out << name << ": node " << target.node << (o.dry_run ? ", would run: " : ", runs: ")
          << Join(*argv, " ") << "\n";
  const auto refusals =
      inject::Refusals(target, {.dry_run = o.dry_run, .yes = o.yes, .force = o.force});
  for (const std::string& why : refusals) ctx.err << name << ": refused: " << why << "\n";
  if (!refusals.empty()) return kExitUsage;
  if (o.dry_run) return kExitOk;
  if (auto ready = inject::DcgmiReady(); !ready) {
    ctx.err << name << ": " << ready.error().message << "\n";
    return kExitError;
  }
  const nlohmann::json payload = {{"argv", *argv}};
  if (auto ok = RecordInjection(ctx, target.node, "dcgm", payload); !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    return kExitError;
  }
  auto r = inject::RunDcgmInject(runner, *argv);
  if (!r) {
    ctx.err << name << ": " << r.error().message << "\n";
    return kExitError;
  }
  ctx.out << "  " << SanitizeUtf8(*r) << "\n"
          << "  to undo: inject the field's normal value the same way (DCGM keeps the last "
             "value in its cache)\n";
  return kExitOk;
}

// A secondary bus reset of the bridge above a GPU: a real Xid 79.
int InjectPcieSbr(const InjectOptions& o, Context& ctx) {
  const std::string name = "cmax inject pcie-sbr";
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  const inject::TargetFacts target = inject::GatherFacts(o.node, fs, runner);
  auto plan = inject::PlanSecondaryBusReset(fs, o.gpu);
  std::vector<std::string> refusals =
      inject::Refusals(target, {.dry_run = o.dry_run,
                                .yes = o.yes,
                                .force = o.force,
                                .allow_destructive = o.allow_destructive,
                                .destructive = true});
  if (!plan) {
    refusals.insert(refusals.begin(), plan.error().message);
  } else {
    ctx.out << name << ": node " << target.node << ", GPU " << plan->gpu << " below bridge "
            << plan->bridge << (o.dry_run ? "; would run:\n" : "; runs:\n") << "  "
            << Join(plan->assert_reset, " ") << "\n  (200 ms)\n  " << Join(plan->release_reset, " ")
            << "\n";
  }
  for (const std::string& why : refusals) ctx.err << name << ": refused: " << why << "\n";
  if (!refusals.empty()) return kExitUsage;
  if (o.dry_run) return kExitOk;
  const nlohmann::json payload = {{"gpu", plan->gpu}, {"bridge", plan->bridge}};
  if (auto ok = RecordInjection(ctx, target.node, "pcie-sbr", payload); !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    return kExitError;
  }
  if (auto ok = inject::RunSecondaryBusReset(runner, *plan); !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    return kExitError;
  }
  log::Info("secondary bus reset of {} above {} on {}", plan->bridge, plan->gpu, target.node);
  ctx.out << "  done: the driver should log Xid 79 for " << plan->gpu
          << "\n  to undo: the GPU comes back only if the driver brings it up again; if it "
             "stays lost, reboot "
          << target.node << "\n";
  return kExitOk;
}

void CommonFlags(CLI::App* app, InjectOptions& o) {
  app->add_option("--node", o.node,
                  "The node the fault is for (default: this host); it must be this host or a "
                  "lab node");
  app->add_option("--text", o.text, "The message after the code (default: the catalogue's)");
  app->add_flag("--dry-run", o.dry_run, "Print exactly what would be written; write nothing");
  app->add_flag("--yes", o.yes, "Inject into a node that is not a lab's");
  app->add_flag("--force", o.force, "Accept a device that cannot be confirmed");
  app->add_option("--kmsg", o.kmsg, "Where to write")->capture_default_str();
}

}  // namespace

Command SetupInjectCommand(CLI::App& parent) {
  auto o = std::make_shared<InjectOptions>();
  CLI::App* app = parent.add_subcommand(
      "inject",
      "Write a GPU fault where the provider's health checks read it, to time their reaction\n"
      "(see `cmax reliability`). Needs root; refuses a node that is not a lab's without\n"
      "--yes, and a node already out of service. Recorded in the store.");
  app->require_subcommand(1);
  o->xid = app->add_subcommand("xid", "An NVRM Xid record in /dev/kmsg");
  o->xid->add_option("code", o->code, "Xid code (79: fallen off the bus, 48: DBE, ...)")
      ->check(Whole(0, kMaxEventCode))
      ->required();
  o->xid->add_option("--gpu", o->gpu, "GPU index (from NVML) or PCI address")->required();
  o->xid->add_option("--pid", o->pid, "Process id in the record (default '<unknown>')")
      ->check(Whole(1, 4194304));  // the kernel's largest pid_max
  CommonFlags(o->xid, *o);
  o->sxid = app->add_subcommand("sxid", "An NVSwitch SXid record in /dev/kmsg");
  o->sxid->add_option("code", o->code, "SXid code")->check(Whole(0, kMaxEventCode))->required();
  o->sxid->add_option("--switch-pci", o->gpu, "The NVSwitch's PCI address")->required();
  o->sxid->add_option("--switch", o->switch_index, "N of nvidia-nvswitchN")
      ->check(Whole(0, 255))
      ->capture_default_str();
  o->sxid->add_option("--link", o->link, "NVLink number")
      ->check(Whole(0, 255))
      ->capture_default_str();
  o->sxid->add_flag("--fatal", o->fatal, "A fatal SXid (default non-fatal)");
  CommonFlags(o->sxid, *o);
  o->nvml_sim = app->add_subcommand(
      "nvml-sim", "A fault in the simulated NVML's state (libnvml-sim.so, for the lab and tests)");
  o->nvml_sim->add_option("fault", o->fault,
                          "lost, dbe, row-remap-failure, row-remap-pending, recovery-action, "
                          "pcie-width, xid");
  o->nvml_sim->add_option("--gpu", o->gpu, "GPU index or PCI address in the simulated state");
  o->nvml_sim->add_option("--value", o->value, "recovery-action: 1-4; pcie-width: lanes; xid: code")
      ->check(Whole(0, kMaxEventCode));
  o->nvml_sim->add_option("--state", o->state, "State file (default $CMAX_NVML_SIM_STATE)");
  o->nvml_sim->add_flag("--restore", o->restore, "Put back the state from before the first fault");
  o->nvml_sim->add_option("--node", o->node, "The node the simulated GPUs belong to");
  o->nvml_sim->add_flag("--dry-run", o->dry_run, "Print the change; write nothing");
  o->nvml_sim->add_flag("--yes", o->yes, "On a node that is not a lab's");
  o->dcgm = app->add_subcommand(
      "dcgm", "A field value in DCGM's host engine (dcgmi test --inject), for its policies");
  o->dcgm->add_option("field", o->field, "Field id, or one of the names below")->required();
  std::string fields = "Field names (DCGM's field id, and what the value means):\n";
  for (const inject::DcgmField& f : inject::DcgmFields()) {
    fields += fmt::format("  {:<28}{}\n", fmt::format("{} ({})", f.name, f.id), f.meaning);
  }
  o->dcgm->footer(fields);
  o->dcgm->add_option("value", o->field_value, "The value")->check(Whole(0, INT64_MAX))->required();
  o->dcgm->add_option("--gpu", o->gpu, "DCGM's GPU id")->required();
  o->dcgm->add_option("--offset", o->offset_s, "Seconds into the future the value is dated")
      ->check(Whole(0, 86400));
  o->dcgm->add_option("--node", o->node, "The node (default: this host)");
  o->dcgm->add_flag("--dry-run", o->dry_run, "Print the dcgmi command; run nothing");
  o->dcgm->add_flag("--yes", o->yes, "On a node that is not a lab's");
  o->pcie_sbr = app->add_subcommand(
      "pcie-sbr",
      "A secondary bus reset of the PCIe bridge above a GPU: a real Xid 79. Destructive: what "
      "runs on the GPU dies, and it may stay lost until a reboot");
  o->pcie_sbr->add_option("--gpu", o->gpu, "The GPU's PCI address")->required();
  o->pcie_sbr->add_flag("--allow-destructive", o->allow_destructive,
                        "Required: this injector changes the hardware's state");
  o->pcie_sbr->add_flag("--force", o->force, "Even when the node runs jobs");
  o->pcie_sbr->add_option("--node", o->node, "The node (default: this host)");
  o->pcie_sbr->add_flag("--dry-run", o->dry_run, "Print the setpci commands; run nothing");
  o->pcie_sbr->add_flag("--yes", o->yes, "On a node that is not a lab's");
  return {app, [o](Context& ctx) {
            if (o->nvml_sim->parsed()) return InjectNvmlSim(*o, ctx);
            if (o->pcie_sbr->parsed()) return InjectPcieSbr(*o, ctx);
            if (o->dcgm->parsed()) return InjectDcgm(*o, ctx);
            return Inject(*o, ctx, o->xid->parsed() ? "xid" : "sxid");
          }};
}

}  // namespace cmax::cli
