// Where each scenario step's fault is written, and whether it may be: the one place that maps a
// step's kind to its injector (the kernel log, the simulated NVML's state file, DCGM, a bus
// reset) and applies `cmax inject`'s safety rules to it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "inject/target.hpp"
#include "reliability/scenario.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::reliability {

// What the person allowed (the same flags as `cmax inject`).
struct StepSafety {
  bool dry_run = false;
  bool yes = false;
  bool force = false;
  bool allow_destructive = false;
};

// Why the step may not be injected on the node `facts` describe (empty: it may): inject's
// rules (inject::Refusals, a bus reset counted as destructive), and a bus reset only when its
// GPU's bridge is certain (read from sysfs through `fs`).
std::vector<std::string> StepRefusals(const Step& step, const inject::TargetFacts& facts,
                                      const StepSafety& safety, const sys::FileSystem& fs);

// Why a step may not be injected now (StepRefusals over facts gathered again): asked just
// before each step, because a scenario's earlier steps take minutes, in which a tenant's job
// may have started on the node.
using RefusalsNow = std::function<std::vector<std::string>(const Step& step)>;

class StepInjector {
 public:
  StepInjector(sys::FileSystem& fs, sys::ProcessRunner& runner, std::string kmsg_path,
               RefusalsNow refusals_now = nullptr)
      : fs_(fs),
        runner_(runner),
        kmsg_path_(std::move(kmsg_path)),
        refusals_now_(std::move(refusals_now)) {}

  // Asked just before the step is recorded and injected: a step that `refusals_now` refuses now
  // is kBusy, with the reasons.
  Result<void> MayInjectNow(const Step& step) const;

  // Writes the step's fault (`record` is StepRecord's text: the kernel-log line for xid and
  // sxid). A simulated-NVML state file changed here is remembered for Restore.
  Result<void> Inject(const Step& step, const std::string& record);

  // Puts back every simulated-NVML state file a step changed; what cannot be put back is
  // returned as an error each (a kernel-log record cannot be taken back, and what the provider
  // did to its nodes is the provider's to undo).
  struct Restored {
    std::vector<std::string> paths;
    std::vector<Error> failures;
  };
  Restored Restore();

 private:
  sys::FileSystem& fs_;
  sys::ProcessRunner& runner_;
  std::string kmsg_path_;
  RefusalsNow refusals_now_;
  // Each changed state file, and what a second Ctrl-C before Restore says of it.
  std::map<std::string, std::unique_ptr<sys::LeftBehind>> sim_states_;
};

}  // namespace cmax::reliability
