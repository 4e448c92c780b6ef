#include "cli/remediate_flags.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <sys/file.h>
#include <utility>

#include "cli/numbers.hpp"
#include "core/strings.hpp"
#include "sys/host.hpp"

namespace cmax::cli {
Duration Seconds(double seconds) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

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
  const char* const kube = "Kubernetes";
  r.add_option("--kube-api", o.kube.api_server,
               "API server URL (https://HOST:6443); default: --kubeconfig, KUBECONFIG, the pod's "
               "service account, ~/.kube/config")
      ->group(kube);
  r.add_option("--kube-token-file", o.kube.token_file,
               "File holding a bearer token, read before each request (or CMAX_KUBE_TOKEN)")
      ->group(kube);
  r.add_option("--kube-ca", o.kube.ca_file, "PEM file of the CA that signs the API server")
      ->group(kube);
  r.add_option("--kubeconfig", o.kube.kubeconfig, "kubeconfig file")->group(kube);
  r.add_option("--kube-context", o.kube.context, "kubeconfig context (default: current)")
      ->group(kube);
  r.add_flag("--kube-insecure", o.kube.insecure, "Do not verify the API server's certificate")
      ->group(kube);
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

Result<remediate::ControllerConfig> BuildControllerConfig(const ControllerFlags& o) {
  for (double v : {o.validation_timeout_min, o.breaker_window_s, o.probation_min}) {
    if (!std::isfinite(v) || v <= 0) {
      return Fail(ErrorCode::kInvalidArgument, "times must be positive numbers");
    }
  }
  if (!std::isfinite(o.breaker_percent) || o.breaker_percent <= 0 || o.breaker_percent > 100) {
    return Fail(ErrorCode::kInvalidArgument, "--breaker-percent must be in (0, 100]");
  }
  if (o.architecture != "hgx" && o.architecture != "nvl72") {
    return Fail(ErrorCode::kInvalidArgument, "--architecture must be hgx or nvl72, got '{}'",
                o.architecture);
  }
  if (o.act == o.dry_run) {
    return Fail(ErrorCode::kInvalidArgument,
                "say --act to let cmax drain, requeue, reset and resume nodes, or --dry-run to "
                "see what it would do");
  }
  if (o.act && Trim(o.validation_command).empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--validation-command is required to act: the checks a node must pass before it "
                "goes back into service (for example 'dcgmi diag -r 3')");
  }
  remediate::ControllerConfig c;
  c.dry_run = o.dry_run;
  c.validation = {o.validation_command, Seconds(o.validation_timeout_min * 60)};
  c.reset_command = o.reset_command;
  c.breaker = {o.breaker_percent / 100.0, Seconds(o.breaker_window_s)};
  c.rate.max_actions = o.rate_limit;
  c.policy.architecture =
      o.architecture == "nvl72" ? remediate::Architecture::kNvl72 : remediate::Architecture::kHgx;
  c.policy.spares = !o.no_spares;
  c.policy.probation = Seconds(o.probation_min * 60);
  c.policy.validation_timeout = c.validation.timeout;
  c.policy.escalation_faults = o.escalation_faults;
  c.nodes = o.nodes;
  if (!o.racks_file.empty()) {
    if (o.architecture != "nvl72") {
      return Fail(ErrorCode::kInvalidArgument, "--racks needs --architecture nvl72");
    }
    sys::LocalFileSystem fs;
    auto text = fs.ReadFile(o.racks_file, size_t{4} << 20);
    if (!text) return tl::unexpected(text.error());
    auto racks = remediate::ParseRacks(*text);
    if (!racks) {
      return Fail(ErrorCode::kInvalidArgument, "{}: {}", o.racks_file, racks.error().message);
    }
    c.racks = std::move(*racks);
    c.rack.down_at = o.rack_down_at;
    c.rack.domain_survives_tray_loss = !o.domain_needs_every_tray;
  }
  return c;
}

remediate::SlurmOptions SlurmOptionsFrom(const ControllerFlags& o) {
  remediate::SlurmOptions s;
  s.service_partition = o.service_partition;
  s.spare_partition = o.spare_partition;
  s.read_maintenance_reservations = o.observe_maintenance;
  return s;
}

Result<std::unique_ptr<SchedulerChoice>> MakeScheduler(const ControllerFlags& o,
                                                       sys::ProcessRunner& runner,
                                                       const Clock& clock) {
  auto choice = std::make_unique<SchedulerChoice>();
  if (o.scheduler == "slurm") {
    choice->scheduler = std::make_unique<remediate::SlurmScheduler>(runner, SlurmOptionsFrom(o));
    choice->description = "Slurm";
    return choice;
  }
  std::map<std::string, std::string> env;
  for (const char* name : {"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
                           "HOME", "CMAX_KUBE_TOKEN"}) {
    if (std::string v = sys::GetEnv(name); !v.empty()) env[name] = v;
  }
  auto connection = remediate::ResolveKubeConnection(o.kube, choice->fs, env);
  if (!connection) return tl::unexpected(connection.error());
  remediate::KubernetesOptions k;
  k.validation_namespace = !o.kube_namespace.empty()             ? o.kube_namespace
                           : !connection->namespace_name.empty() ? connection->namespace_name
                                                                 : std::string("cmax");
  k.validation_image = o.validation_image;
  k.validation_gpus = o.validation_gpus;
  k.taint_effect = o.taint_effect;
  choice->description =
      fmt::format("Kubernetes at {} ({})", connection->server, connection->source);
  choice->http = std::make_unique<sys::CurlHttpClient>(connection->tls);
  choice->kube =
      std::make_unique<remediate::KubeApi>(*choice->http, choice->fs, clock, *connection, k.api);
  choice->scheduler = std::make_unique<remediate::KubernetesScheduler>(
      *choice->http, choice->fs, clock, std::move(*connection), std::move(k));
  return choice;
}

Result<ControllerLock> ControllerLock::Take(const std::string& store_path) {
  const std::string path = store_path + ".remediate.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Fail(ErrorCode::kIo, "cannot open {}: {}", path, std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Fail(ErrorCode::kBusy,
                "another controller holds {}; only one controller may act on a store at a time",
                path);
  }
  return ControllerLock(fd);
}

ControllerLock::ControllerLock(ControllerLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

ControllerLock::~ControllerLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace cmax::cli
