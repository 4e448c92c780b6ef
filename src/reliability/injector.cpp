#include "reliability/injector.hpp"

#include <fmt/format.h>

#include "core/strings.hpp"
#include "inject/dcgm.hpp"
#include "inject/kernel_lines.hpp"
#include "inject/nvml_sim.hpp"
#include "inject/pcie_sbr.hpp"

namespace cmax::reliability {

std::vector<std::string> StepRefusals(const Step& step, const inject::TargetFacts& facts,
                                      const StepSafety& safety, const sys::FileSystem& fs) {
  const bool bus_reset = step.inject == InjectKind::kPcieSbr;
  std::vector<std::string> why_not =
      inject::Refusals(facts, {.dry_run = safety.dry_run,
                               .yes = safety.yes,
                               .force = safety.force,
                               .allow_destructive = safety.allow_destructive,
                               .destructive = bus_reset,
                               .resets_gpu = bus_reset});
  if (bus_reset) {
    // The reset runs here: it must be certain of its GPU before anything is injected.
    if (auto plan = inject::PlanSecondaryBusReset(fs, step.pci); !plan) {
      why_not.push_back(plan.error().message);
    }
  }
  return why_not;
}

Result<void> StepInjector::MayInjectNow(const Step& step) const {
  if (!refusals_now_) return {};
  if (const std::vector<std::string> why = refusals_now_(step); !why.empty()) {
    return Fail(ErrorCode::kBusy, "refused just before the step: {}", Join(why, "; "));
  }
  return {};
}

Result<void> StepInjector::Inject(const Step& step, const std::string& record) {
  switch (step.inject) {
    case InjectKind::kNvmlSim: {
      const std::string path = inject::SimStatePath(step.state);
      if (path.empty()) return Fail(ErrorCode::kInvalidArgument, "no simulated NVML state file");
      if (!sim_states_.contains(path)) {
        sim_states_[path] = std::make_unique<sys::LeftBehind>(fmt::format(
            "the simulated NVML state {} with the scenario's faults: cmax inject nvml-sim "
            "--restore --state {} --node {} --yes",
            ShellWord(path), ShellWord(path), ShellWord(step.node)));
      }
      auto change = inject::ApplySimFaultToFile(
          fs_, path, {step.fault, static_cast<long>(step.value), step.pci});
      if (!change) return tl::unexpected(change.error());
      return {};
    }
    case InjectKind::kPcieSbr: {
      auto plan = inject::PlanSecondaryBusReset(fs_, step.pci);
      if (!plan) return tl::unexpected(plan.error());
      return inject::RunSecondaryBusReset(runner_, *plan);
    }
    case InjectKind::kDcgm: {
      auto argv = StepDcgmArgv(step);
      if (!argv) return tl::unexpected(argv.error());
      auto done = inject::RunDcgmInject(runner_, *argv);
      if (!done) return tl::unexpected(done.error());
      return {};
    }
    case InjectKind::kXid:
    case InjectKind::kSxid: return inject::WriteKernelRecord(kmsg_path_, record);
  }
  return Fail(ErrorCode::kInternal, "unknown injection kind");
}

StepInjector::Restored StepInjector::Restore() {
  Restored out;
  for (const auto& changed : sim_states_) {
    const std::string& path = changed.first;
    if (auto ok = inject::RestoreSimState(fs_, path); !ok) {
      out.failures.push_back(Wrap(ok.error(), path).value());
    } else {
      out.paths.push_back(path);
    }
  }
  sim_states_.clear();
  return out;
}

}  // namespace cmax::reliability
