#include "inject/injection.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "health/xid_catalog.hpp"
#include "inject/dcgm.hpp"
#include "inject/kernel_lines.hpp"
#include "inject/nvml_sim.hpp"
#include "inject/pcie_sbr.hpp"
#include "inject/target_facts.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/nvml.hpp"
#include "sys/process_runner.hpp"

namespace cmax::inject {
namespace {

void Out(const InjectionIo& io, std::string_view line) {
  if (io.out) io.out(line);
}

// The reasons to refuse go to the operator; any one stops the injection.
Result<void> Refuse(const InjectionIo& io, const std::vector<std::string>& refusals) {
  for (const std::string& why : refusals) {
    if (io.refused) io.refused("refused: " + why);
  }
  if (refusals.empty()) return {};
  return Fail(ErrorCode::kInvalidArgument, "nothing injected");
}

Result<void> Usage(const Error& error, std::string_view prefix = {}) {
  return Fail(ErrorCode::kInvalidArgument, "{}{}", prefix, error.message);
}

// Not the user's to fix: the store, the device, the tool.
Result<void> Broken(const Error& error) {
  return Fail(error.code == ErrorCode::kInvalidArgument || error.code == ErrorCode::kNotFound
                  ? ErrorCode::kIo
                  : error.code,
              "{}", error.message);
}

// Every injection is recorded in the store before it is done, so none goes unrecorded.
Result<void> RecordInjection(const InjectionIo& io, const std::string& node,
                             const std::string& kind, const nlohmann::json& payload) {
  auto store = store::Store::Open({.path = io.db_path});
  if (!store) return Broken(store.error());
  if (auto ok =
          store->SaveConditions({}, {{io.clock->Now(), node, "inject", kind, payload.dump()}});
      !ok) {
    return Broken(ok.error());
  }
  return {};
}

}  // namespace

std::vector<std::string> NvmlGpuAddresses() {
  auto nvml = sys::Nvml::Load();
  if (!nvml) return {};
  auto snapshot = (*nvml)->Snapshot();
  if (!snapshot) return {};
  std::vector<std::string> pcis;
  for (const sys::GpuReading& g : snapshot->gpus) pcis.push_back(g.pci_bus_id);
  return pcis;
}

Result<void> InjectKernelEvent(const KernelEventOptions& o, const InjectionIo& io) {
  const TargetFacts target = GatherFacts(o.node, *io.fs, *io.runner);
  const std::string kind = o.sxid ? "sxid" : "xid";
  // The record, from a GPU (or switch) that is really there.
  const std::vector<std::string> gpus =
      !o.sxid && io.node_gpus ? io.node_gpus() : std::vector<std::string>{};
  auto pci = ResolveGpu(o.gpu, gpus, *io.fs, target.lab, o.safety.force);
  if (!pci) return Usage(pci.error());
  auto record = !o.sxid ? XidRecord({.code = o.code, .pci = *pci, .pid = o.pid, .text = o.text},
                                    health::XidCatalog::Builtin())
                        : SxidRecord({.code = o.code,
                                      .pci = *pci,
                                      .switch_index = o.switch_index,
                                      .fatal = o.fatal,
                                      .link = o.link,
                                      .text = o.text.empty() ? SxidSpec{}.text : o.text});
  if (!record) return Usage(record.error());
  Out(io, fmt::format("cmax inject {}: node {}{}, {} {}", kind, target.node,
                      target.lab ? " (lab)" : "", o.sxid ? "NVSwitch" : "GPU", *pci));
  Out(io, fmt::format("  {} {}: {}", o.safety.dry_run ? "would write to" : "writes to", o.kmsg,
                      SanitizeUtf8(*record)));
  SafetyFlags safety = o.safety;
  safety.allow_destructive = false;
  safety.destructive = false;
  if (auto ok = Refuse(io, Refusals(target, safety)); !ok) return ok;
  if (o.safety.dry_run) return {};

  const WallTime at = io.clock->Now();
  const nlohmann::json payload = {
      {"code", o.code}, {"pci", *pci}, {"record", *record}, {"path", o.kmsg}};
  if (auto ok = RecordInjection(io, target.node, kind, payload); !ok) return ok;
  if (auto ok = WriteKernelRecord(o.kmsg, *record); !ok) {
    (void)RecordInjection(io, target.node, kind + "-failed", payload);
    return Broken(ok.error());
  }
  log::Info("injected {} {} on {} at {}", kind, o.code, target.node, FormatIso8601(at));
  Out(io, "  injected at " + FormatIso8601(at));
  Out(io, fmt::format("  to undo: nothing stays in the kernel log to remove; the provider's "
                      "reaction is what is being tested. If it drained {0}, resume it when the "
                      "test is over (Slurm: scontrol update nodename={0} state=resume).",
                      target.node));
  return {};
}

// The simulated NVML's state file changed in place (written beside it and renamed over, so the
// library never reads half a file); the first change keeps the original as STATE.cmax-backup,
// which --restore puts back.
Result<void> InjectNvmlSim(const NvmlSimOptions& o, const InjectionIo& io) {
  const std::string path = SimStatePath(o.state);
  if (path.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "no state file: give --state or set CMAX_NVML_SIM_STATE");
  }
  const TargetFacts target = GatherFacts(o.node, *io.fs, *io.runner);
  SafetyFlags safety = o.safety;
  safety.allow_destructive = false;
  safety.destructive = false;
  const auto refusals = Refusals(target, safety);
  std::string description;
  if (o.restore) {
    if (!io.fs->Exists(SimBackupPath(path))) {
      return Fail(ErrorCode::kInvalidArgument, "nothing to restore: no {}", SimBackupPath(path));
    }
    description = "restore " + path + " from " + SimBackupPath(path);
  } else {
    if (o.fault.empty() || o.gpu.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "give a fault and --gpu (or --restore)");
    }
    auto change = ApplySimFaultToFile(*io.fs, path, {o.fault, o.value, o.gpu}, /*dry_run=*/true);
    if (!change) return Usage(change.error());
    description = change->description;
  }
  Out(io, fmt::format("cmax inject nvml-sim: {}{} ({})", o.safety.dry_run ? "would " : "",
                      SanitizeUtf8(description), path));
  if (auto ok = Refuse(io, refusals); !ok) return ok;
  if (o.safety.dry_run) return {};
  const nlohmann::json payload = {{"change", description}, {"state", path}};
  if (auto ok = RecordInjection(io, target.node, "nvml-sim", payload); !ok) return ok;
  auto done = o.restore ? RestoreSimState(*io.fs, path)
                        : ApplySimFaultToFile(*io.fs, path, {o.fault, o.value, o.gpu})
                              .and_then([](const SimChange&) -> Result<void> { return {}; });
  if (!done) return Broken(done.error());
  if (!o.restore) Out(io, "  to undo: cmax inject nvml-sim --restore --state " + path);
  return {};
}

// DCGM field injection through dcgmi, which talks to the node's host engine.
Result<void> InjectDcgm(const DcgmOptions& o, const InjectionIo& io) {
  const auto gpu = DcgmGpuId(o.gpu);
  if (!gpu) return Usage(gpu.error(), "--gpu: ");
  auto argv = DcgmInjectArgv(o.field, o.value, *gpu,
                             o.offset_s >= 0 ? std::optional<int>(o.offset_s) : std::nullopt);
  if (!argv) return Usage(argv.error());
  const TargetFacts target = GatherFacts(o.node, *io.fs, *io.runner);
  Out(io, fmt::format("cmax inject dcgm: node {}{}{}", target.node,
                      o.safety.dry_run ? ", would run: " : ", runs: ", Join(*argv, " ")));
  SafetyFlags safety = o.safety;
  safety.allow_destructive = false;
  safety.destructive = false;
  if (auto ok = Refuse(io, Refusals(target, safety)); !ok) return ok;
  if (o.safety.dry_run) return {};
  if (auto ready = DcgmiReady(); !ready) return Broken(ready.error());
  if (auto ok = RecordInjection(io, target.node, "dcgm", {{"argv", *argv}}); !ok) return ok;
  auto r = RunDcgmInject(*io.runner, *argv);
  if (!r) return Broken(r.error());
  Out(io, "  " + SanitizeUtf8(*r));
  Out(io,
      "  to undo: inject the field's normal value the same way (DCGM keeps the last value "
      "in its cache)");
  return {};
}

// A secondary bus reset of the bridge above a GPU: a real Xid 79.
Result<void> InjectPcieSbr(const PcieSbrOptions& o, const InjectionIo& io) {
  const TargetFacts target = GatherFacts(o.node, *io.fs, *io.runner);
  auto plan = PlanSecondaryBusReset(*io.fs, o.gpu);
  SafetyFlags safety = o.safety;
  safety.destructive = true;
  safety.resets_gpu = true;
  std::vector<std::string> refusals = Refusals(target, safety);
  if (!plan) {
    refusals.insert(refusals.begin(), plan.error().message);
  } else {
    Out(io, fmt::format("cmax inject pcie-sbr: node {}, GPU {} below bridge {}{}", target.node,
                        plan->gpu, plan->bridge, o.safety.dry_run ? "; would run:" : "; runs:"));
    Out(io, "  " + Join(plan->assert_reset, " "));
    Out(io, "  (200 ms)");
    Out(io, "  " + Join(plan->release_reset, " "));
  }
  if (auto ok = Refuse(io, refusals); !ok) return ok;
  if (o.safety.dry_run) return {};
  const nlohmann::json payload = {{"gpu", plan->gpu}, {"bridge", plan->bridge}};
  if (auto ok = RecordInjection(io, target.node, "pcie-sbr", payload); !ok) return ok;
  if (auto ok = RunSecondaryBusReset(*io.runner, *plan); !ok) return Broken(ok.error());
  log::Info("secondary bus reset of {} above {} on {}", plan->bridge, plan->gpu, target.node);
  Out(io, "  done: the driver should log Xid 79 for " + plan->gpu);
  Out(io,
      "  to undo: the GPU comes back only if the driver brings it up again; if it stays "
      "lost, reboot " +
          target.node);
  return {};
}

}  // namespace cmax::inject
