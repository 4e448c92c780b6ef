#include "cli/remediate_flags.hpp"

#include <CLI/CLI.hpp>

#include "cli/flags.hpp"
#include "cli/numbers.hpp"

namespace cmax::cli {

void AddControllerFlags(CLI::App& app, ControllerFlags& o) {
  CLI::App* r = &app;
  Choice(r, "--scheduler", o.scheduler, {"slurm", "kubernetes"},
         "slurm (its clients on PATH, SLURM_CONF) or kubernetes (the API server)");
  Opt(r, "--validation-command", o.validation_command,
      "Shell command run on the out-of-service node (a Slurm job in a MAINT reservation, or a "
      "Kubernetes Job pinned to the node); exit 0 = passed");
  Num(r, "--validation-timeout", o.validation_timeout_min, Positive(7 * 24 * 60),
      "Minutes a validation may take; longer counts as failed");
  Opt(r, "--reset-command", o.reset_command,
      "Shell command that resets one GPU, with {node} and {device} replaced (quoted); without "
      "it a GPU reset fails over to a reboot");
  Num(r, "--breaker-percent", o.breaker_percent, Positive(100),
      "Trip the circuit breaker when more than this share of the fleet would be taken out "
      "within --breaker-window");
  Num(r, "--breaker-window", o.breaker_window_s, SecondsIn(7 * 24 * 3600),
      "Seconds over which --breaker-percent counts the nodes taken out");
  Num(r, "--rate-limit", o.rate_limit, Whole(1, 1000), "Disruptive actions per node per hour");
  Opt(r, "--service-partition", o.service_partition, "Where spares go into service");
  Opt(r, "--spare-partition", o.spare_partition, "The hot-spare pool");
  Flag(r, "--no-spares", o.no_spares, "No hot-spare pool");
  Opt(r, "--architecture", o.architecture, "hgx or nvl72");
  Num(r, "--probation", o.probation_min, Positive(30 * 24 * 60),
      "Minutes a reintroduced node is watched");
  Num(r, "--escalation-faults", o.escalation_faults, Whole(1, 100),
      "Serious faults on a node within 24 h that send it to REPAIR");
  Opt(r, "--racks", o.racks_file,
      "NVL72: file with one rack per line, its name then its trays (ranges like tray[01-18] "
      "allowed); a rack that is down has its other trays drained too")
      ->check(CLI::ExistingFile);
  Num(r, "--rack-down-at", o.rack_down_at, Whole(1, 72),
      "NVL72: trays out at which a rack is down");
  Flag(r, "--domain-needs-every-tray", o.domain_needs_every_tray,
       "NVL72: the NVLink domain stops with any tray out, so one tray out holds the rack");
  AddKubeFlags(app, o.kube);
  Group("Kubernetes",
        {Opt(r, "--kube-namespace", o.kube_namespace,
             "Namespace for validation Jobs (default: the context's, else cmax)"),
         Opt(r, "--validation-image", o.validation_image, "Image of the validation Job"),
         Num(r, "--validation-gpus", o.validation_gpus, Whole(0, 64),
             "nvidia.com/gpu the validation Job asks for (0: all the node has allocatable, "
             "so that it tests them all)"),
         Choice(r, "--taint-effect", o.taint_effect, {"NoSchedule", "NoExecute"},
                "Effect of the cmax.dev/quarantine taint; NoExecute evicts without asking "
                "PodDisruptionBudgets")});
}

void AddKubeFlags(CLI::App& app, remediate::KubeFlags& o) {
  CLI::App* a = &app;
  Group("Kubernetes",
        {Opt(a, "--kube-api", o.api_server,
             "API server URL (https://HOST:6443); default: --kubeconfig, KUBECONFIG, the pod's "
             "service account, ~/.kube/config"),
         Opt(a, "--kube-token-file", o.token_file,
             "File holding a bearer token, read before each request (or CMAX_KUBE_TOKEN)"),
         Opt(a, "--kube-ca", o.ca_file, "PEM file of the CA that signs the API server"),
         Opt(a, "--kubeconfig", o.kubeconfig, "kubeconfig file"),
         Opt(a, "--kube-context", o.context, "kubeconfig context (default: current)"),
         Flag(a, "--kube-insecure", o.insecure, "Do not verify the API server's certificate")});
}

}  // namespace cmax::cli
