#include "net/mpi_launch.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "core/strings.hpp"
#include "sys/process_runner.hpp"

namespace cmax::net {

std::vector<std::string> EnvNames(const std::vector<std::string>& settings) {
  std::vector<std::string> names;
  names.reserve(settings.size());
  for (const std::string& s : settings) names.push_back(s.substr(0, s.find('=')));
  return names;
}

std::vector<std::string> MpirunPrefix(const std::string& mpirun,
                                      const std::vector<std::string>& addresses, int slots,
                                      const std::string& agent, const std::string& subnet,
                                      const std::vector<std::string>& env) {
  std::vector<std::string> hosts;
  for (const std::string& a : addresses) {
    hosts.push_back(slots == 1 ? a : fmt::format("{}:{}", a, slots));
  }
  std::vector<std::string> argv = {mpirun,
                                   "--host",
                                   Join(hosts, ","),
                                   "-np",
                                   std::to_string(addresses.size() * static_cast<size_t>(slots)),
                                   "--bind-to",
                                   "none"};
  if (!agent.empty()) argv.insert(argv.end(), {"--mca", "plm_rsh_agent", agent});
  if (!subnet.empty()) {
    // A subnet is a namespace lab's, whose "hosts" share this machine's cores. mpirun sees one
    // slot per host, so it does not know the ranks oversubscribe the cores and lets each spin
    // while it waits: on 2 cores, 4 lab hosts' all_reduce fell to 0.05-0.07 GB/s from 1.2 over 2
    // hosts, a 94-96 % drop that was the lab's CPUs, not its links. Yielding while idle, as
    // OpenMPI does when it knows it oversubscribes: 0.55-0.76 GB/s (docs/PERFORMANCE.md).
    // Its daemons report straight to mpirun (routed direct), not through each other: through
    // ORTE's default tree, 4 of 30 four-host launches failed here ("no path" to a daemon, exit
    // 213, or mpirun dying of SIGSEGV), 0 of 40 direct (2026-12-06, OpenMPI 4.1.4).
    argv.insert(argv.end(), {"--mca", "oob_tcp_if_include", subnet, "--mca", "btl", "tcp,self",
                             "--mca", "btl_tcp_if_include", subnet, "--mca", "mpi_yield_when_idle",
                             "1", "--mca", "routed", "direct"});
  }
  for (const std::string& e : env) argv.insert(argv.end(), {"-x", e});
  return argv;
}

std::vector<std::string> MpiRunArgv(const MpiLaunch& launch,
                                    const std::vector<std::string>& addresses) {
  std::vector<std::string> argv =
      MpirunPrefix(launch.mpirun, addresses, 1, launch.agent, launch.subnet, {});
  argv.insert(argv.end(),
              {launch.perf, launch.collective, "-b", launch.min_bytes, "-e", launch.max_bytes, "-n",
               std::to_string(launch.iters), "-w", std::to_string(launch.warmup)});
  return argv;
}

std::string LauncherWhy(std::string_view stderr_text) {
  static constexpr std::string_view kCues[] = {
      "error",  "could not", "cannot",    "failed", "failure", "unable",   "abort",
      "denied", "refused",   "not found", "killed", "signal",  "timed out"};
  std::string_view last;
  for (std::string_view line : Split(stderr_text, '\n')) {
    line = Trim(line);
    if (std::ranges::count_if(
            line, [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }) < 3) {
      continue;  // banners of dashes, blank lines
    }
    const std::string lower = ToLower(line);
    if (lower.find("warning") != std::string::npos) continue;  // setpgid and other noise
    last = line;
    if (std::ranges::any_of(
            kCues, [&](std::string_view cue) { return lower.find(cue) != std::string::npos; })) {
      return SanitizeUtf8(line.substr(0, 200));
    }
  }
  return SanitizeUtf8(last.substr(0, 200));
}

Result<sys::ProcessResult> RunLauncher(const sys::ProcessSpec& spec, int crash_retries,
                                       sys::ProcessRunner& runner, int& crashes) {
  const auto crashed = [](const sys::ProcessResult& p) {
    return !p.timed_out && !p.interrupted && (p.signal != 0 || p.exit_code > 128) &&
           p.stdout_text.find("# Collective test starting") == std::string::npos &&
           p.stdout_text.find("#  Rank ") == std::string::npos;
  };
  auto r = runner.Run(spec);
  while (r && crashed(*r) && crashes < crash_retries) {
    ++crashes;
    r = runner.Run(spec);
  }
  return r;
}

MpiPerfRun RunMpiPerf(const MpiLaunch& launch, const std::vector<std::string>& addresses,
                      sys::ProcessRunner& runner) {
  MpiPerfRun out;
  // mpirun refuses root unless told; the lab needs root for its namespaces.
  const sys::ProcessSpec spec{.argv = MpiRunArgv(launch, addresses),
                              .env_add = kMpirunAsRootEnv,
                              .timeout = launch.timeout,
                              .kill_grace = std::chrono::seconds(2)};
  auto r = RunLauncher(spec, launch.crash_retries, runner, out.crashes);
  if (!r) {
    out.problem = r.error().message;
    return out;
  }
  out.took = r->duration;
  out.output = ParseNcclTestsOutput(r->stdout_text);
  if (r->timed_out) {
    out.problem =
        fmt::format("no result within {} s: killed",
                    std::chrono::duration_cast<std::chrono::seconds>(launch.timeout).count());
  } else if (!r->Succeeded()) {
    out.problem = fmt::format("mpirun exited {}: {}", r->exit_code, LauncherWhy(r->stderr_text));
  } else if (out.output.tables.empty() || out.output.tables[0].rows.empty()) {
    out.problem = "no nccl-tests table in its output";
  }
  return out;
}

MeasureGroup MpiMeasure(const MpiLaunch& launch, std::map<std::string, std::string> addresses,
                        sys::ProcessRunner& runner) {
  return
      [launch, addresses = std::move(addresses), &runner](const std::vector<std::string>& hosts) {
        GroupMeasurement m;
        std::vector<std::string> list;
        for (const std::string& h : hosts) {
          const auto it = addresses.find(h);
          if (it == addresses.end()) {
            m.problem = "no address for " + h;
            return m;
          }
          list.push_back(it->second);
        }
        const MpiPerfRun run = RunMpiPerf(launch, list, runner);
        if (!run.problem.empty()) {
          m.problem = run.problem;
          return m;
        }
        m.busbw_gbs = run.output.tables[0].largest_size_busbw_gbs;
        if (!m.busbw_gbs) m.problem = "no busbw at its largest size";
        return m;
      };
}

}  // namespace cmax::net
