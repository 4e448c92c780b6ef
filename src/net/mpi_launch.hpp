// cmax-mpi-perf launched over a list of hosts by OpenMPI's mpirun, one rank per host: the
// command line (pure), the run (through a ProcessRunner, with a deadline: a collective that
// hangs is killed and reported), its output read as nccl-tests', and the bad-node finder's
// measurement of a group (its busbw at the largest size).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "net/bad_node_finder.hpp"
#include "net/nccl_tests_output.hpp"
#include "sys/process_runner.hpp"

namespace cmax::net {

// A launcher that dies of a signal before any rank printed is started again, up to this many
// times: OpenMPI 4.1.4's mpirun crashed now and then (SIGSEGV) while starting its daemons in
// namespace hosts (2 of 40 starts with the cores busy, 2026-12-06), and one retry still let a
// sweep step fail twice running under `ctest --parallel 2`. The cause was ORTE's routing tree
// among the daemons; a namespace lab's mpirun now routes direct (MpirunPrefix), and the retries
// stay for what is left.
inline constexpr int kLauncherCrashRetries = 2;

// What mpirun needs in its environment to start as root (tests and namespace labs run as root).
inline const std::vector<std::string> kMpirunAsRootEnv = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                                          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};

struct MpiLaunch {
  std::string mpirun = "mpirun";
  std::string perf;    // cmax-mpi-perf's path
  std::string agent;   // mpirun's rsh agent (a namespace lab's); empty: mpirun's own (ssh)
  std::string subnet;  // the hosts' network, for MPI's TCP ("198.18.0.0/24"); empty: any
  std::string collective = "all_reduce";
  std::string min_bytes = "1M";
  std::string max_bytes = "16M";
  int iters = 5;
  int warmup = 1;
  Duration timeout = std::chrono::seconds(120);
  int crash_retries = kLauncherCrashRetries;
};

// mpirun's own part of a command line: `slots` ranks on each of `addresses`, unbound (see
// below), through `agent` and over `subnet` when given (a namespace lab's, whose ranks then
// yield while they wait: they share this machine's cores), with each of `env` passed to every
// rank (-x): "NAME=VALUE", or "NAME" for mpirun's own value (a value in the argv is in `ps` and
// in whatever records the command). The program and its arguments follow.
// The names of "NAME=VALUE" settings, for MpirunPrefix's `env`: each rank then gets mpirun's own
// value, which the caller puts in mpirun's environment, out of its argv.
std::vector<std::string> EnvNames(const std::vector<std::string>& settings);

std::vector<std::string> MpirunPrefix(const std::string& mpirun,
                                      const std::vector<std::string>& addresses, int slots,
                                      const std::string& agent, const std::string& subnet,
                                      const std::vector<std::string>& env);

// mpirun's argv for one rank on each of `addresses`. Ranks are not bound: one rank per host is
// alone on its host, and OpenMPI binding each "host's" first rank to core 0 put the ranks of
// namespace hosts on one core.
std::vector<std::string> MpiRunArgv(const MpiLaunch& launch,
                                    const std::vector<std::string>& addresses);

struct MpiPerfRun {
  NcclTestsOutput output;
  std::string problem;  // empty: it ran and printed a table
  Duration took{0};
  int crashes = 0;  // launcher crashes retried
};

// Runs a launcher (mpirun, srun), and once more for each of `crash_retries` while it dies of a
// signal before any rank printed its table header (a rank that died mid-run is the run's
// result, not the launcher's). `crashes` counts the retries.
Result<sys::ProcessResult> RunLauncher(const sys::ProcessSpec& spec, int crash_retries,
                                       sys::ProcessRunner& runner, int& crashes);

// The line of a launcher's standard error that says why it failed: the first that reads as a
// cause ("ssh: Could not resolve hostname n9", "srun: error: ..."), not the banners and advice
// around it; else its last line with words. Sanitized, at most 200 characters.
std::string LauncherWhy(std::string_view stderr_text);

MpiPerfRun RunMpiPerf(const MpiLaunch& launch, const std::vector<std::string>& addresses,
                      sys::ProcessRunner& runner);

// The bad-node finder's measurement: `hosts` (names) through `addresses` (name -> address).
MeasureGroup MpiMeasure(const MpiLaunch& launch, std::map<std::string, std::string> addresses,
                        sys::ProcessRunner& runner);

}  // namespace cmax::net
