// The audit's pods on Kubernetes: what the API cannot tell about a node (its driver, kernel,
// PCIe, InfiniBand, software, limits ...) read on the node itself, by `cmax audit
// --node-evidence` in a pod pinned to it. Starting a pod is a side effect: only with
// --allow-side-effects and an image of cmax (--image; none is published), logged with how to
// undo it, and every pod started is deleted before the audit ends, interrupted or not.
//
// The pod reads the host, never the image: the host's "/" mounted read-only at /host and read
// through it (sys/host_root.hpp), the host's PID and network namespaces, privileged (the
// kernel's /sys and /dev, as the Slurm audit's step sees them); no service account token, no
// GPU asked of the device plugin (it takes none from a tenant). Its evidence comes back in its
// log, framed as a Slurm node's (audit/fanout.hpp).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/audit_run.hpp"
#include "core/clock.hpp"

namespace cmax::remediate {
class KubeApi;
}

namespace cmax::audit {

// Where the pod mounts the host's "/".
inline constexpr std::string_view kPodHostRoot = "/host";

struct AuditPodOptions {
  std::string image;  // an image with cmax as `cmax` on its PATH, and chroot(8)
  std::string pod_namespace = "cmax";
  double node_timeout_s = 30;  // the node's evidence (its --node-timeout)
  double budget_s = 120;       // every pod: created, pulled, run, read, by then
  std::string run_token;       // in each pod's name and label: this audit's pods (NewRunToken)
};

// A token for one audit's pods: 48 random bits as 12 hex digits. No two audits share one (an
// earlier audit killed with its pods left behind, one started the same millisecond), so a pod
// found under this audit's name (a create answered 409) is one this audit made.
std::string NewRunToken();

// The pod's name: "cmax-audit-NODE-TOKEN", a DNS label of at most 63 characters; a node name
// that had to be changed to fit (cut, or characters a label cannot hold) gets a hash of itself,
// so that two nodes never share a pod name ("gpu.1" and "gpu-1"). Pure.
std::string AuditPodName(std::string_view node, std::string_view run_token);

// The pod that reads `node` (spec.nodeName: no scheduler, every taint tolerated: it takes no
// resources from anyone), running `cmax` with `args`. Pure.
nlohmann::json AuditPodManifest(std::string_view node, std::string_view pod_name,
                                const std::vector<std::string>& args,
                                const AuditPodOptions& options);

// Where a pod stands, from its status. Pure.
enum class PodState { kWaiting, kDone, kFailed };
struct PodProgress {
  PodState state = PodState::kWaiting;
  std::string detail;  // "Pending: ImagePullBackOff (...)", "exit 124", "Failed: Evicted"
};
PodProgress AuditPodProgress(const nlohmann::json& pod);

// AuditPodOutcome::deleted of a pod whose create failed and which the delete did not find:
// none was made, so there is nothing to log or undo.
inline constexpr std::string_view kPodNeverCreated = "never created";

// What the pod on one node gave.
struct AuditPodOutcome {
  std::string pod;                         // "namespace/name" it was asked for; empty when none was
  std::optional<nlohmann::json> document;  // its evidence document, framed as a Slurm node's
  std::string problem;                     // else why there is none
  std::string deleted;  // "deleted", kPodNeverCreated, or why not (then it is left)
};

struct AuditPodIo {
  const Clock* clock = nullptr;
  std::function<void(Duration)> sleep;  // between looks at the pods
  std::function<bool()> interrupted;
  std::function<void(std::string_view)> note;  // progress
};

// Starts a pod on each of `nodes`, waits until each is done or the budget is spent, reads each
// finished pod's log, and deletes every pod it created (also when interrupted).
std::map<std::string, AuditPodOutcome> RunAuditPods(remediate::KubeApi& api,
                                                    const std::vector<std::string>& nodes,
                                                    const AuditOptions& options,
                                                    const AuditPodOptions& pods,
                                                    const AuditPodIo& io);

// The side effect a pod was, for the evidence's audit.side_effects log (RecordSideEffect).
struct PodSideEffect {
  std::string did;
  std::string undo;
};
PodSideEffect DescribePodSideEffect(std::string_view node, const AuditPodOutcome& outcome,
                                    const AuditPodOptions& options);

}  // namespace cmax::audit
