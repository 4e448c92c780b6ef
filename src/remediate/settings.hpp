// How a controller is set up from what a person asked for: the settings (the values behind
// `cmax remediate run`'s and `cmax agent --remediate`'s flags), the config they make, the
// scheduler they name, and the one-controller-per-store lock.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "remediate/controller.hpp"
#include "remediate/kube_api.hpp"
#include "remediate/kube_config.hpp"
#include "remediate/kubernetes.hpp"
#include "remediate/slurm.hpp"
#include "sys/file_lock.hpp"
#include "sys/file_system.hpp"
#include "sys/http_client.hpp"
#include "sys/process_runner.hpp"

namespace cmax::remediate {

struct ControllerSettings {
  // Set by commands that watch another's remediation (`cmax reliability`), not by a flag.
  bool observe_maintenance = false;
  bool act = false;
  bool dry_run = false;
  std::string validation_command;
  double validation_timeout_min = 30;
  std::string reset_command;
  double breaker_percent = 50;
  double breaker_window_s = 300;
  int rate_limit = 6;
  std::string service_partition = "gpu";
  std::string spare_partition = "spare";
  bool no_spares = false;
  std::string architecture = "hgx";
  std::vector<std::string> nodes;
  double probation_min = 60;
  int escalation_faults = 3;
  std::string scheduler = "slurm";  // or kubernetes
  KubeFlags kube;
  std::string kube_namespace;  // for validation Jobs; empty: the kubeconfig's, else "cmax"
  std::string validation_image = kKubeDefaultValidationImage;
  int validation_gpus = 0;
  std::string taint_effect = "NoSchedule";
  std::string racks_file;  // NVL72: RACK TRAY... per line
  int rack_down_at = 3;
  bool domain_needs_every_tray = false;
};

// Checks the values and makes the config; refuses to act without --act or --dry-run, or
// without a validation. The racks file is read through `fs`.
Result<ControllerConfig> BuildControllerConfig(const ControllerSettings& settings,
                                               sys::FileSystem& fs);
SlurmOptions SlurmOptionsFrom(const ControllerSettings& settings);

// The scheduler `settings.scheduler` names, with what it needs to live (an HTTP client for
// Kubernetes).
struct SchedulerChoice {
  sys::LocalFileSystem fs;
  std::unique_ptr<sys::HttpClient> http;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<KubeApi> kube;  // Kubernetes: for conditions published on Nodes
  std::string description;  // "Slurm", "Kubernetes at https://... (in-cluster service account)"
};
// `env`: the variables that locate the API server (KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT,
// HOME, CMAX_KUBE_TOKEN), as the process has them.
Result<std::unique_ptr<SchedulerChoice>> MakeScheduler(
    const ControllerSettings& settings, sys::ProcessRunner& runner, const Clock& clock,
    const std::map<std::string, std::string>& env);
// The variables MakeScheduler reads, from this process's environment, or from `get` (a variable's
// value, "" when unset) where the caller has its own view of the environment.
std::map<std::string, std::string> KubeEnvironment();
std::map<std::string, std::string> KubeEnvironment(
    const std::function<std::string(const std::string&)>& get);

// One controller per store (`remediate run` or `agent --remediate`): a second one would act on
// the same nodes twice. An flock on STORE.remediate.lock, released when the process ends.
class ControllerLock {
 public:
  static Result<ControllerLock> Take(const std::string& store_path);

 private:
  explicit ControllerLock(sys::FileLock lock) : lock_(std::move(lock)) {}
  sys::FileLock lock_;
};

// `cmax remediate run`: the controller's passes, one or until stopped.
struct ControllerLoop {
  bool once = false;
  double interval_s = 2;
  std::string conditions_from = "store";  // or "kubernetes": imported from the Nodes each pass
};
struct ControllerLoopIo {
  std::string db_path;
  sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  Clock* clock = nullptr;
  std::function<bool()> stop;                   // Ctrl-C, SIGTERM
  std::function<void(std::string_view)> error;  // a pass that failed (the loop goes on)
  // Without `once`: each decision of each pass as it is made (StepSummary::decided).
  std::function<void(std::string_view)> decided;
};
struct ControllerLoopReport {
  StepSummary last;      // with `once`: the pass
  bool stopped = false;  // without `once`: stopped by `stop`
};
// Errors: kInvalidArgument for settings that cannot make a controller; others when the store,
// its lock or (with `once`) the pass failed.
Result<ControllerLoopReport> RunControllerLoop(const ControllerSettings& settings,
                                               const ControllerLoop& loop,
                                               const ControllerLoopIo& io);

}  // namespace cmax::remediate
