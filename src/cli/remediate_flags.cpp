#include "cli/remediate_flags.hpp"

#include <CLI/CLI.hpp>

#include "cli/numbers.hpp"

namespace cmax::cli {

void AddControllerFlags(CLI::App& r, ControllerFlags& o) {
  r.add_option("--scheduler", o.scheduler,
               "slurm (its clients on PATH, SLURM_CONF) or kubernetes (the API server)")
      ->check(CLI::IsMember({"slurm", "kubernetes"}))
      ->capture_default_str();
  r.add_option("--validation-command", o.validation_command,
               "Shell command run on the out-of-service node (a Slurm job in a MAINT "
               "reservation, or a Kubernetes Job pinned to the node); exit 0 = passed");
  r.add_option("--validation-timeout", o.validation_timeout_min,
               "Minutes a validation may take; longer counts as failed")
      ->check(Positive(7 * 24 * 60))
      ->capture_default_str();
  r.add_option("--reset-command", o.reset_command,
               "Shell command that resets one GPU, with {node} and {device} replaced (quoted); "
               "without it a GPU reset fails over to a reboot");
  r.add_option("--breaker-percent", o.breaker_percent,
               "Trip the circuit breaker when more than this share of the fleet would be taken "
               "out within --breaker-window")
      ->check(Positive(100))
      ->capture_default_str();
  r.add_option("--breaker-window", o.breaker_window_s, "Seconds")
      ->check(SecondsIn(7 * 24 * 3600))
      ->capture_default_str();
  r.add_option("--rate-limit", o.rate_limit, "Disruptive actions per node per hour")
      ->check(Whole(1, 1000))
      ->capture_default_str();
  r.add_option("--service-partition", o.service_partition, "Where spares go into service")
      ->capture_default_str();
  r.add_option("--spare-partition", o.spare_partition, "The hot-spare pool")->capture_default_str();
  r.add_flag("--no-spares", o.no_spares, "No hot-spare pool");
  r.add_option("--architecture", o.architecture, "hgx or nvl72")->capture_default_str();
  r.add_option("--probation", o.probation_min, "Minutes a reintroduced node is watched")
      ->check(Positive(30 * 24 * 60))
      ->capture_default_str();
  r.add_option("--escalation-faults", o.escalation_faults,
               "Serious faults on a node within 24 h that send it to REPAIR")
      ->check(Whole(1, 100))
      ->capture_default_str();
  r.add_option("--racks", o.racks_file,
               "NVL72: file with one rack per line, its name then its trays (ranges like "
               "tray[01-18] allowed); a rack that is down has its other trays drained too")
      ->check(CLI::ExistingFile);
  r.add_option("--rack-down-at", o.rack_down_at, "NVL72: trays out at which a rack is down")
      ->check(Whole(1, 72))
      ->capture_default_str();
  r.add_flag("--domain-needs-every-tray", o.domain_needs_every_tray,
             "NVL72: the NVLink domain stops with any tray out, so one tray out holds the rack");
  AddKubeFlags(r, o.kube);
  const char* const kube = "Kubernetes";
  r.add_option("--kube-namespace", o.kube_namespace,
               "Namespace for validation Jobs (default: the context's, else cmax)")
      ->group(kube);
  r.add_option("--validation-image", o.validation_image, "Image of the validation Job")
      ->group(kube)
      ->capture_default_str();
  r.add_option("--validation-gpus", o.validation_gpus,
               "nvidia.com/gpu the validation Job asks for (all of the node's, to test them all)")
      ->check(Whole(0, 64))
      ->group(kube)
      ->capture_default_str();
  r.add_option("--taint-effect", o.taint_effect,
               "Effect of the cmax.dev/quarantine taint; NoExecute evicts without asking "
               "PodDisruptionBudgets")
      ->check(CLI::IsMember({"NoSchedule", "NoExecute"}))
      ->group(kube)
      ->capture_default_str();
}

void AddKubeFlags(CLI::App& app, remediate::KubeFlags& o) {
  const char* const kube = "Kubernetes";
  app.add_option("--kube-api", o.api_server,
                 "API server URL (https://HOST:6443); default: --kubeconfig, KUBECONFIG, the "
                 "pod's service account, ~/.kube/config")
      ->group(kube);
  app.add_option("--kube-token-file", o.token_file,
                 "File holding a bearer token, read before each request (or CMAX_KUBE_TOKEN)")
      ->group(kube);
  app.add_option("--kube-ca", o.ca_file, "PEM file of the CA that signs the API server")
      ->group(kube);
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig file")->group(kube);
  app.add_option("--kube-context", o.context, "kubeconfig context (default: current)")->group(kube);
  app.add_flag("--kube-insecure", o.insecure, "Do not verify the API server's certificate")
      ->group(kube);
}

}  // namespace cmax::cli
