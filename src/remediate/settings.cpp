#include "remediate/settings.hpp"

#include <cmath>
#include <fmt/format.h>
#include <utility>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "remediate/kube_conditions.hpp"
#include "store/store.hpp"
#include "sys/curl_library.hpp"
#include "sys/host.hpp"

namespace cmax::remediate {

Result<ControllerConfig> BuildControllerConfig(const ControllerSettings& o, sys::FileSystem& fs) {
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
                SanitizeUtf8(o.architecture));
  }
  if (o.act && o.dry_run) {
    return Fail(ErrorCode::kInvalidArgument,
                "--act and --dry-run exclude each other: --act lets cmax drain, requeue, reset "
                "and resume nodes, --dry-run only says what it would do");
  }
  if (!o.act && !o.dry_run) {
    return Fail(ErrorCode::kInvalidArgument,
                "say --act to let cmax drain, requeue, reset and resume nodes, or --dry-run to "
                "see what it would do");
  }
  if (o.act && Trim(o.validation_command).empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--validation-command is required to act: the checks a node must pass before it "
                "goes back into service (for example 'dcgmi diag -r 3')");
  }
  ControllerConfig c;
  c.dry_run = o.dry_run;
  c.validation = {o.validation_command, SecondsAsDuration(o.validation_timeout_min * 60)};
  c.reset_command = o.reset_command;
  c.breaker = {o.breaker_percent / 100.0, SecondsAsDuration(o.breaker_window_s)};
  c.rate.max_actions = o.rate_limit;
  c.policy.architecture = o.architecture == "nvl72" ? Architecture::kNvl72 : Architecture::kHgx;
  c.policy.spares = !o.no_spares;
  c.policy.probation = SecondsAsDuration(o.probation_min * 60);
  c.policy.validation_timeout = c.validation.timeout;
  c.policy.escalation_faults = o.escalation_faults;
  // Node names go into drain reasons and the journal: a host's name, nothing a terminal obeys.
  for (const std::string& node : o.nodes) {
    if (!IsNodeName(node)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--node '{}': a node's name, without spaces or control characters",
                  AsOneLine(node.substr(0, 60)));
    }
  }
  c.nodes = o.nodes;
  if (!o.racks_file.empty()) {
    if (o.architecture != "nvl72") {
      return Fail(ErrorCode::kInvalidArgument, "--racks needs --architecture nvl72");
    }
    auto text = fs.ReadFile(o.racks_file, size_t{4} << 20);
    if (!text) return tl::unexpected(text.error());
    auto racks = ParseRacks(*text);
    if (!racks) {
      return Fail(ErrorCode::kInvalidArgument, "{}: {}", SanitizeUtf8(o.racks_file),
                  racks.error().message);
    }
    c.racks = std::move(*racks);
    c.rack.down_at = o.rack_down_at;
    c.rack.domain_survives_tray_loss = !o.domain_needs_every_tray;
  }
  return c;
}

SlurmOptions SlurmOptionsFrom(const ControllerSettings& o) {
  SlurmOptions s;
  s.service_partition = o.service_partition;
  s.spare_partition = o.spare_partition;
  s.read_maintenance_reservations = o.observe_maintenance;
  return s;
}

std::map<std::string, std::string> KubeEnvironment(
    const std::function<std::string(const std::string&)>& get) {
  std::map<std::string, std::string> env;
  for (const char* name : kKubeEnvironment) {
    if (std::string v = get(name); !v.empty()) env[name] = v;
  }
  return env;
}

std::map<std::string, std::string> KubeEnvironment() {
  return KubeEnvironment(sys::EnvironmentValue);
}

Result<std::unique_ptr<SchedulerChoice>> MakeScheduler(
    const ControllerSettings& o, sys::ProcessRunner& runner, const Clock& clock,
    const std::map<std::string, std::string>& env) {
  auto choice = std::make_unique<SchedulerChoice>();
  if (o.scheduler == "slurm") {
    choice->scheduler = std::make_unique<SlurmScheduler>(runner, SlurmOptionsFrom(o));
    choice->description = "Slurm";
    return choice;
  }
  if (o.scheduler != "kubernetes") {
    return Fail(ErrorCode::kInvalidArgument, "--scheduler must be slurm or kubernetes, got '{}'",
                SanitizeUtf8(o.scheduler));
  }
  // The API server is reached through libcurl: a machine without it is told so at once, not
  // after the retries meant for an API server that is away.
  if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  auto connection = ResolveKubeConnection(o.kube, choice->fs, env);
  if (!connection) return tl::unexpected(connection.error());
  KubernetesOptions k;
  k.validation_namespace = !o.kube_namespace.empty()             ? o.kube_namespace
                           : !connection->namespace_name.empty() ? connection->namespace_name
                                                                 : std::string("cmax");
  k.validation_image = o.validation_image;
  k.validation_gpus = o.validation_gpus;
  k.taint_effect = o.taint_effect;
  choice->description =
      fmt::format("Kubernetes at {} ({})", connection->server, connection->source);
  choice->http = std::make_unique<sys::CurlHttpClient>(connection->tls);
  choice->kube = std::make_unique<KubeApi>(*choice->http, choice->fs, clock, *connection, k.api);
  choice->scheduler = std::make_unique<KubernetesScheduler>(*choice->http, choice->fs, clock,
                                                            std::move(*connection), std::move(k));
  return choice;
}

Result<ControllerLock> ControllerLock::Take(const std::string& store_path) {
  const std::string path = store_path + ".remediate.lock";
  auto lock = sys::FileLock::TryTake(path);
  if (!lock && lock.error().code == ErrorCode::kBusy) {
    return Fail(ErrorCode::kBusy,
                "another controller holds {}; only one controller may act on a store at a time",
                path);
  }
  if (!lock) return tl::unexpected(lock.error());
  return ControllerLock(std::move(*lock));
}

Result<ControllerLoopReport> RunControllerLoop(const ControllerSettings& settings,
                                               const ControllerLoop& loop,
                                               const ControllerLoopIo& io) {
  if (!std::isfinite(loop.interval_s) || loop.interval_s <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "--interval must be a positive number of seconds");
  }
  auto config = BuildControllerConfig(settings, *io.fs);
  if (!config) return Fail(ErrorCode::kInvalidArgument, "{}", config.error().message);
  auto store = store::Store::Open({.path = io.db_path});
  if (!store) return SystemFailure(store.error());
  auto lock = ControllerLock::Take(io.db_path);
  if (!lock) return SystemFailure(lock.error());
  auto scheduler = MakeScheduler(settings, *io.runner, *io.clock, KubeEnvironment());
  if (!scheduler) return Fail(ErrorCode::kInvalidArgument, "{}", scheduler.error().message);
  if (loop.conditions_from == "kubernetes" && !(*scheduler)->kube) {
    return Fail(ErrorCode::kInvalidArgument,
                "--conditions-from kubernetes needs --scheduler kubernetes");
  }
  Controller controller(*store, *(*scheduler)->scheduler, *io.runner, *io.clock, *config);
  const auto interval = SecondsAsDuration(loop.interval_s);
  if (!loop.once) {
    log::Info("remediation controller on {} through {} ({}), every {}", store->Path(),
              (*scheduler)->description, settings.dry_run ? "dry run" : "acting",
              FormatDuration(interval));
  }
  for (;;) {
    if (loop.conditions_from == "kubernetes") {
      // The agents' findings, from their Nodes; when the API server is away the step still
      // runs on what the store has (validations, timers).
      auto imported = ImportKubeConditions(*(*scheduler)->kube, *store);
      if (!imported) {
        log::Warn("conditions from Kubernetes: {}", imported.error().message);
      } else {
        log::Debug("{} condition(s) read from Kubernetes nodes", *imported);
      }
    }
    auto step = controller.Step();
    if (loop.once) {
      if (!step) return SystemFailure(step.error());
      return ControllerLoopReport{*step, false};
    }
    if (!step && io.error) io.error(step.error().message);
    if (step && io.decided) {
      for (const std::string& line : step->decided) io.decided(line);
    }
    // Short slices, so that Ctrl-C and SIGTERM stop the loop promptly.
    const auto until = io.clock->Monotonic() + interval;
    while (!io.stop() && io.clock->Monotonic() < until) {
      io.clock->Sleep(std::chrono::milliseconds(50));
    }
    if (io.stop()) return ControllerLoopReport{step ? *step : StepSummary{}, true};
  }
}

}  // namespace cmax::remediate
