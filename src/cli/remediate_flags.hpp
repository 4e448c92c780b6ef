// The remediation controller's flags, shared by `cmax remediate run` and `cmax agent
// --remediate`, and the config they make.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "remediate/controller.hpp"
#include "remediate/kube_config.hpp"
#include "remediate/kubernetes.hpp"
#include "remediate/slurm.hpp"
#include "sys/file_system.hpp"
#include "sys/http_client.hpp"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's own name
class App;
}

namespace cmax::cli {

struct ControllerFlags {
  // Not a flag: set by commands that watch another's remediation (`cmax reliability`).
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
  remediate::KubeFlags kube;
  std::string kube_namespace;  // for validation Jobs; empty: the kubeconfig's, else "cmax"
  std::string validation_image = remediate::kKubeDefaultValidationImage;
  int validation_gpus = 0;
  std::string taint_effect = "NoSchedule";
  std::string racks_file;  // NVL72: RACK TRAY... per line
  int rack_down_at = 3;
  bool domain_needs_every_tray = false;
};

// Seconds given on the command line as a Duration.
Duration Seconds(double seconds);

// Every flag but --act, --dry-run and --node, which each command names its own way.
void AddControllerFlags(CLI::App& app, ControllerFlags& flags);
// Checks the values; refuses to act without --act or --dry-run, or without a validation.
Result<remediate::ControllerConfig> BuildControllerConfig(const ControllerFlags& flags);
remediate::SlurmOptions SlurmOptionsFrom(const ControllerFlags& flags);

// The scheduler --scheduler names, with what it needs to live (an HTTP client for Kubernetes).
struct SchedulerChoice {
  sys::LocalFileSystem fs;
  std::unique_ptr<sys::HttpClient> http;
  std::unique_ptr<remediate::Scheduler> scheduler;
  std::unique_ptr<remediate::KubeApi> kube;  // Kubernetes: for conditions published on Nodes
  std::string description;  // "Slurm", "Kubernetes at https://... (in-cluster service account)"
};
Result<std::unique_ptr<SchedulerChoice>> MakeScheduler(const ControllerFlags& flags,
                                                       sys::ProcessRunner& runner,
                                                       const Clock& clock);

// One controller per store (`remediate run` or `agent --remediate`): a second one would act on
// the same nodes twice. An flock on STORE.remediate.lock, released when the process ends.
class ControllerLock {
 public:
  static Result<ControllerLock> Take(const std::string& store_path);
  ControllerLock(ControllerLock&& other) noexcept;
  ControllerLock& operator=(ControllerLock&&) = delete;
  ~ControllerLock();

 private:
  explicit ControllerLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace cmax::cli
