#include "cli/remediate_flags.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sys/file.h>
#include <utility>

#include "core/strings.hpp"

namespace cmax::cli {
Duration Seconds(double seconds) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

void AddControllerFlags(CLI::App& r, ControllerFlags& o) {
  r.add_option("--validation-command", o.validation_command,
               "Shell command run as a Slurm job on the out-of-service node; exit 0 = passed");
  r.add_option("--validation-timeout", o.validation_timeout_min,
               "Minutes a validation may take; longer counts as failed")
      ->capture_default_str();
  r.add_option("--reset-command", o.reset_command,
               "Shell command that resets one GPU, with {node} and {device} replaced (quoted); "
               "without it a GPU reset fails over to a reboot");
  r.add_option("--breaker-percent", o.breaker_percent,
               "Trip the circuit breaker when more than this share of the fleet would be taken "
               "out within --breaker-window")
      ->capture_default_str();
  r.add_option("--breaker-window", o.breaker_window_s, "Seconds")->capture_default_str();
  r.add_option("--rate-limit", o.rate_limit, "Disruptive actions per node per hour")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  r.add_option("--service-partition", o.service_partition, "Where spares go into service")
      ->capture_default_str();
  r.add_option("--spare-partition", o.spare_partition, "The hot-spare pool")->capture_default_str();
  r.add_flag("--no-spares", o.no_spares, "No hot-spare pool");
  r.add_option("--architecture", o.architecture, "hgx or nvl72")->capture_default_str();
  r.add_option("--probation", o.probation_min, "Minutes a reintroduced node is watched")
      ->capture_default_str();
  r.add_option("--escalation-faults", o.escalation_faults,
               "Serious faults on a node within 24 h that send it to REPAIR")
      ->check(CLI::Range(1, 100))
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
  return c;
}

remediate::SlurmOptions SlurmOptionsFrom(const ControllerFlags& o) {
  remediate::SlurmOptions s;
  s.service_partition = o.service_partition;
  s.spare_partition = o.spare_partition;
  return s;
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
