// The Scheduler for Kubernetes, through the API server (libcurl + JSON), with a kubeconfig or
// the in-cluster service account (kube_config.hpp). What each verb means here:
//
//   drain      cordon (spec.unschedulable), taint cmax.dev/quarantine (NoSchedule, or NoExecute
//              when asked), annotations cmax.dev/reason and cmax.dev/since (the ownership mark:
//              cmax uncordons only nodes that carry it), and node condition CmaxQuarantined=True
//   resume     the reverse, only on a node with cmax's annotation; an operator's cordon stays
//   requeue    every pod on the node evicted through the eviction API, so PodDisruptionBudgets
//              hold (blocked evictions leave the action pending; it is tried again next step);
//              DaemonSet pods, mirror pods and finished pods are left alone
//   validate   a Job pinned to the node by node affinity on metadata.name, tolerating the
//              cordon and cmax's taint: it runs on the out-of-service node and nothing else can
//   spares     nodes labelled cmax.dev/spare=true wait with taint cmax.dev/spare:NoSchedule;
//              taking the taint off puts one in service, putting it back returns it
//   reboot     Kubernetes has no API for it: refused (kUnsupported), which sends the node to
//              repair; bootID tells when a node rebooted by other means
//
// Every change to a node goes through KubeApi::PatchNode: a concurrent change (an operator's
// kubectl) is read again and recomputed, never overwritten.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "remediate/kube_api.hpp"
#include "remediate/kube_config.hpp"
#include "remediate/scheduler.hpp"
#include "sys/http_client.hpp"

namespace cmax::remediate {

inline constexpr std::string_view kKubeTaintKey = "cmax.dev/quarantine";
inline constexpr std::string_view kKubeReasonAnnotation = "cmax.dev/reason";
inline constexpr std::string_view kKubeSinceAnnotation = "cmax.dev/since";
inline constexpr std::string_view kKubeConditionType = "CmaxQuarantined";
inline constexpr std::string_view kKubeSpareLabel = "cmax.dev/spare";
inline constexpr std::string_view kKubeSpareTaint = "cmax.dev/spare";
inline constexpr std::string_view kKubeValidationLabel = "cmax.dev/validation";
// Has /bin/sh and nvidia-smi (mounted by the NVIDIA container toolkit); dcgmi needs a DCGM image.
inline constexpr const char* kKubeDefaultValidationImage =
    "nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04";

struct KubernetesOptions {
  std::string validation_namespace = "cmax";
  std::string validation_image = kKubeDefaultValidationImage;
  // nvidia.com/gpu the validation Job asks for; 0: all the node has allocatable (none on a
  // node without them).
  int validation_gpus = 0;
  std::string taint_effect = "NoSchedule";  // or NoExecute: evicts without asking PDBs
  KubeApiOptions api;
};

class KubernetesScheduler final : public Scheduler {
 public:
  KubernetesScheduler(sys::HttpClient& http, sys::FileSystem& fs, const Clock& clock,
                      KubeConnection connection, KubernetesOptions options);

  Result<std::vector<SchedulerNode>> Nodes() override;
  Result<std::vector<TakeOut>> CmaxTakeOuts() override;
  Result<std::string> Drain(const std::string& node, const std::string& reason) override;
  Result<std::string> Resume(const std::string& node) override;
  Result<std::string> RequeueJobs(const std::string& node) override;
  Result<std::vector<std::string>> JobsOn(const std::string& node) override;
  Result<std::string> Reboot(const std::string& node, const std::string& reason) override;
  Result<std::string> BootTime(const std::string& node) override;
  Result<std::string> StartValidation(const std::string& node, const ValidationSpec& spec) override;
  Result<ValidationStatus> PollValidation(const std::string& node,
                                          const std::string& handle) override;
  Result<std::string> EndValidation(const std::string& node, bool passed,
                                    const std::string& reason) override;
  Result<std::string> PickSpare() override;
  Result<std::string> SwapInSpare(const std::string& spare) override;
  Result<std::string> ReturnSpare(const std::string& spare) override;

 private:
  KubeApi api_;
  KubernetesOptions options_;
};

// Pure parts, tested on their own.
SchedulerNode KubeNodeView(const nlohmann::json& node);
// The Job that validates `node`: name, labels, affinity, tolerations, deadline.
nlohmann::json ValidationJob(const std::string& node, const std::string& job_name,
                             const ValidationSpec& spec, const KubernetesOptions& options);
// A Job name (at most 63 characters, DNS label) for validating `node`.
std::string ValidationJobName(const std::string& node);
// Job status: succeeded, failed (with why), or still running.
ValidationStatus KubeJobState(const nlohmann::json& job);

}  // namespace cmax::remediate
