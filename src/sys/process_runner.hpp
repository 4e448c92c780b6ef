// ProcessRunner: runs a program by argv (a shell only when asked), with a timeout that kills
// its whole process group, output captured up to a cap, and exit code, signal and duration.
// Scheduler commands, lspci-like tools and benchmarks all run through it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

struct ProcessSpec {
  std::vector<std::string> argv;
  // When true, argv must hold exactly one string: a script for /bin/sh -c.
  bool use_shell = false;
  // "KEY=VALUE" added to (or replacing in) our environment; "KEY" alone, without '=', removes
  // KEY from it.
  std::vector<std::string> env_add;
  std::string cwd;  // empty: ours
  std::optional<std::string> stdin_data;
  Duration timeout = std::chrono::seconds(60);
  // Time between SIGTERM and SIGKILL to the group when the timeout strikes.
  Duration kill_grace = std::chrono::milliseconds(500);
  size_t output_cap = size_t{1} << 20;  // per stream; the rest is read and dropped
  // Each piece of output as it arrives (stream 1: stdout, 2: stderr), besides the capture, so
  // that a caller can follow a long job; returning false asks the program to stop: SIGTERM to
  // its group, SIGKILL after kill_grace, and ProcessResult::stopped.
  std::function<bool(int stream, std::string_view data)> on_output;
  // Asked about every 100 ms while the program runs; false stops it as on_output's false does
  // (a server whose client has given up).
  std::function<bool()> keep_running;
  // Runs to its end (or its timeout) after a Ctrl-C too: the clean-up a stopped command still
  // owes (scancel of its queued jobs), which the interrupt would otherwise cut short.
  bool runs_past_interrupt = false;
};

struct ProcessResult {
  int exit_code = -1;  // -1 when a signal ended it
  int signal = 0;      // the signal that ended it, or 0
  bool timed_out = false;
  bool interrupted = false;  // we were asked to stop (SIGINT/SIGTERM) and killed it
  bool stopped = false;      // on_output asked it to stop, and it was
  // It did not die even after SIGKILL (a process stuck in the kernel, as on a hung NFS or
  // Lustre mount, cannot) and was left behind so that the caller is not stuck too.
  bool abandoned = false;
  Duration duration{0};
  std::string stdout_text;
  std::string stderr_text;
  bool stdout_truncated = false;
  bool stderr_truncated = false;

  bool Succeeded() const { return exit_code == 0 && !timed_out && !interrupted; }
  // "exit 3", "killed by signal 9", "timed out after 2.00s" ...
  std::string Describe() const;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Fails only when the program could not be started (not found, not executable); a program
  // that ran and failed is a ProcessResult with its exit code.
  virtual Result<ProcessResult> Run(const ProcessSpec& spec) = 0;
};

class PosixProcessRunner final : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override;
};

// Starts a daemon that outlives us: double fork, own session, stdin from /dev/null, stdout and
// stderr appended to log_path. Returns the daemon's pid; it is not our child, so it never
// lingers as our zombie. Fails when exec fails, with the reason.
struct DaemonSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env_add;
  std::string log_path;
  std::string cwd = "/";
};
Result<int> SpawnDaemon(const DaemonSpec& spec);

// True when pid names a live process (a zombie is not live).
bool ProcessAlive(int pid);
// Clock ticks since boot at which pid started (field 22 of /proc/PID/stat): with the pid, an
// identity that survives pid reuse. Error when the process is gone.
Result<unsigned long long> ProcessStartTicks(int pid);
// Looks up a program on PATH the way execvp would; empty when absent.
std::string FindProgram(const std::string& name);

}  // namespace cmax::sys
