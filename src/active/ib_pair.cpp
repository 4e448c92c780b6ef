#include "active/ib_pair.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "active/ib_write_bw.hpp"
#include "core/strings.hpp"
#include "sys/slurm_jobs.hpp"

namespace cmax::active {
namespace {

constexpr std::string_view kCheck = "active.ib-write-bw";

std::string Gbits(double v) {
  return fmt::format("{:.1f} Gb/s", v);
}

bool CouldNotConnect(std::string_view text) {
  return text.find("Couldn't connect") != std::string_view::npos ||
         text.find("Unable to init the socket connection") != std::string_view::npos;
}

std::string RailList(const std::vector<std::string>& parts) {
  constexpr size_t kMost = 8;
  std::vector<std::string> shown(parts.begin(),
                                 parts.begin() + static_cast<long>(std::min(parts.size(), kMost)));
  return Join(shown, "; ") +
         (parts.size() > kMost ? fmt::format("; and {} more", parts.size() - kMost) : "");
}

// Stops the peer's server and waits for its thread on every way out of RunRail, an exception
// included: a std::thread destroyed unjoined would end the process.
class ServerThread {
 public:
  ServerThread(std::mutex& mutex, std::condition_variable& changed, bool& client_done)
      : mutex_(mutex), changed_(changed), client_done_(client_done) {}
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;
  ~ServerThread() { StopAndJoin(); }
  template <typename Work>
  void Start(Work work) {
    thread_ = std::thread(std::move(work));
  }
  void StopAndJoin() {
    {
      const std::lock_guard lock(mutex_);
      client_done_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex& mutex_;
  std::condition_variable& changed_;
  bool& client_done_;
  std::thread thread_;
};

// One rail: the peer's server started, this node's client run against it (again, a second
// apart, while the server may still be starting: perftest says it waits only in a banner that a
// pipe may hold back), the server stopped once the client is done with it.
RailResult RunRail(const IbPairOptions& options, const std::string& rail, int port,
                   Duration deadline, const IbPairIo& io) {
  RailResult r{.rail = rail};
  const Duration test_time = std::chrono::seconds(options.seconds);
  const Duration window = IbRailWindow(options, deadline);
  const std::vector<std::string> server_argv =
      IbServerArgv(options, rail, port,
                   static_cast<int>(std::chrono::ceil<std::chrono::seconds>(window).count()));
  std::mutex mutex;
  std::condition_variable changed;
  bool ready = false;
  bool server_ended = false;
  bool client_done = false;
  std::optional<ToolOutcome> server;
  std::atomic<bool> hung = false;  // told from both threads
  ToolIo server_io = io.tools;
  server_io.hung = [&hung](const std::string&) { hung = true; };
  const ToolRun server_run{
      .check_id = std::string(kCheck),
      .tool = server_argv.front(),
      .where = options.launch.empty() ? "on PATH" : "on PATH (it starts the peer's server)",
      .args = std::vector<std::string>(server_argv.begin() + 1, server_argv.end()),
      .deadline = window,
      .on_output =
          [&](int, std::string_view data) {
            if (data.find("Waiting for client") != std::string_view::npos) {
              const std::lock_guard lock(mutex);
              ready = true;
              changed.notify_all();
            }
            return true;
          },
      .keep_running =
          [&] {
            const std::lock_guard lock(mutex);
            return !client_done;
          }};
  ServerThread server_thread(mutex, changed, client_done);
  server_thread.Start([&] {
    ToolOutcome outcome = RunTool(server_run, server_io);
    const std::lock_guard lock(mutex);
    server = std::move(outcome);
    server_ended = true;
    changed.notify_all();
  });
  const auto started = std::chrono::steady_clock::now();
  const auto give_up = started + options.start_within;
  {
    std::unique_lock lock(mutex);
    changed.wait_until(lock, std::min(give_up, started + std::chrono::seconds(1)),
                       [&] { return ready || server_ended; });
  }
  std::optional<ToolOutcome> client;
  std::string client_text;
  const std::vector<std::string> client_argv = IbClientArgv(options, rail, port);
  while (true) {
    {
      const std::lock_guard lock(mutex);
      if (server_ended) break;
    }
    client = RunTool({.check_id = std::string(kCheck),
                      .tool = client_argv.front(),
                      .args = std::vector<std::string>(client_argv.begin() + 1, client_argv.end()),
                      .deadline = test_time + deadline},
                     {.runner = io.tools.runner,
                      .find_program = io.tools.find_program,
                      .hung = [&hung](const std::string&) { hung = true; }});
    client_text = client->result ? client->result->stdout_text + "\n" + client->result->stderr_text
                                 : std::string();
    const bool retry = client->result && CouldNotConnect(client_text) &&
                       std::chrono::steady_clock::now() + std::chrono::seconds(1) < give_up;
    if (!retry) break;
    std::unique_lock lock(mutex);
    changed.wait_for(lock, std::chrono::seconds(1), [&] { return server_ended; });
  }
  server_thread.StopAndJoin();
  r.hung = hung;

  if (client && client->result) {
    auto report = ParseIbWriteBw(client_text);
    if (report) {
      r.average_gbits = report->AverageGbits();
      return r;
    }
    r.problem = SanitizeUtf8(report.error().message);
  } else if (client && client->instead) {
    r.problem = client->instead->message;
  }
  // No figure. The server's words say more when the client never reached it and the server
  // ended on its own (no such device on the peer, a launcher that refused, a server that hung);
  // a client that connected and then failed or hung has its own words.
  const bool unreached = !client || (client->result && CouldNotConnect(client_text));
  if (unreached && server && server->result && !server->result->stopped &&
      !server->result->Succeeded()) {
    r.problem = fmt::format("the server on {} ended ({}): {}", options.peer,
                            server->result->Describe(), FirstWords(*server->result));
  } else if (unreached && server && server->instead) {
    r.problem = fmt::format("the server on {}: {}", options.peer, server->instead->message);
  } else if (r.problem.empty()) {
    r.problem = "no result";
  }
  return r;
}

// What Slurm says of the peer's jobs: those other than this node's own (`busy`), or what it
// could not say (`unknown`); both empty when it runs none, or no Slurm is here to ask.
struct PeerJobs {
  std::string busy;
  std::string unknown;
};
PeerJobs AskSlurmAboutThePeer(const IbPairOptions& options, const IbPairIo& io) {
  if (io.tools.runner == nullptr) return {};
  const sys::OthersJobsAnswer answer = sys::AskOthersJobsOn(
      {.hosts = {options.peer}, .own_job = options.own_job, .find_program = io.tools.find_program},
      *io.tools.runner);
  PeerJobs out{.unknown = Join(answer.unchecked, "; ")};
  if (!answer.in_use.empty()) {
    out.busy = fmt::format("others' Slurm jobs run on {}, whose traffic the test would disturb",
                           sys::DescribeHostsInUse(answer.in_use));
  }
  return out;
}

}  // namespace

// The server's whole window: the client's kill grace (RunTool's 2 s, 5 s for one that will not
// die) with room to spare, so that the server is never the first to give up on a client that is
// still running.
Duration IbRailWindow(const IbPairOptions& options, Duration deadline) {
  return options.start_within + std::chrono::seconds(options.seconds) + deadline +
         std::chrono::seconds(10);
}

std::optional<double> ParsePortRate(std::string_view text) {
  text = Trim(text);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view unit = Trim(text.substr(space));
  if (!unit.starts_with("Gb/sec")) return std::nullopt;
  const auto value = ParseNonNegative(text.substr(0, space));
  if (!value || *value <= 0) return std::nullopt;
  return value;
}

Result<std::vector<std::string>> PeerLauncher(std::string_view text, bool in_slurm_job) {
  std::optional<std::vector<std::string>> words = SplitShellWords(text);
  if (!words) {
    return Fail(ErrorCode::kInvalidArgument,
                "--peer-launch: a quote is not closed, it ends in a backslash, or it holds one "
                "of ; | & < > ( ) ` unquoted (no shell runs it): {}",
                text);
  }
  if (!words->empty() && words->front().empty()) {
    return Fail(ErrorCode::kInvalidArgument, "--peer-launch: the program's name is empty: {}",
                text);
  }
  if (!words->empty()) return std::move(*words);
  if (in_slurm_job) {
    return std::vector<std::string>{"srun", "--overlap", "--nodes=1", "--ntasks=1",
                                    "--nodelist={peer}"};
  }
  return std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "{peer}"};
}

std::vector<std::string> IbServerArgv(const IbPairOptions& options, const std::string& rail,
                                      int port, int limit_s) {
  std::vector<std::string> argv;
  for (std::string word : options.launch) {
    for (size_t at = word.find("{peer}"); at != std::string::npos; at = word.find("{peer}", at)) {
      word.replace(at, 6, options.peer);
      at += options.peer.size();
    }
    argv.push_back(std::move(word));
  }
  // On the peer, coreutils' timeout ends the server whatever becomes of its launcher: ssh
  // without a terminal does not hang up the remote command when it is stopped here.
  argv.insert(argv.end(), {"timeout", "--kill-after=5", std::to_string(limit_s)});
  const std::vector<std::string> perftest = IbClientArgv(options, rail, port);
  argv.insert(argv.end(), perftest.begin(), perftest.end() - 1);  // the client's, no address
  return argv;
}

std::vector<std::string> IbClientArgv(const IbPairOptions& options, const std::string& rail,
                                      int port) {
  std::vector<std::string> argv = {"ib_write_bw",
                                   "-d",
                                   rail,
                                   "-p",
                                   std::to_string(port),
                                   "--report_gbits",
                                   "-F",
                                   "-D",
                                   std::to_string(options.seconds)};
  argv.insert(argv.end(), options.extra.begin(), options.extra.end());
  argv.push_back(options.address.empty() ? options.peer : options.address);
  return argv;
}

Finding JudgeIbPairs(const std::vector<RailResult>& rails, const std::string& peer,
                     double min_share) {
  Finding f{.check_id = std::string(kCheck),
            .expected = fmt::format("each rail to {} at {:.0f} % of its port's rate or more", peer,
                                    100 * min_share)};
  if (rails.empty()) {
    f.status = CheckStatus::kSkip;
    f.observed = "no rail";
    f.message = "no InfiniBand or RoCE device on this node: not run";
    return f;
  }
  std::vector<std::string> slow;
  std::vector<std::string> unread;
  double lo = INFINITY;
  double hi = 0;
  for (const RailResult& r : rails) {
    if (!r.average_gbits) {
      unread.push_back(fmt::format("{}: {}", r.rail, r.problem));
      continue;
    }
    lo = std::min(lo, *r.average_gbits);
    hi = std::max(hi, *r.average_gbits);
    if (!r.port_gbits) {
      unread.push_back(fmt::format("{}: {} measured, but its port's rate cannot be read", r.rail,
                                   Gbits(*r.average_gbits)));
      continue;
    }
    const double share = *r.average_gbits / *r.port_gbits;
    if (share < min_share) {
      slow.push_back(fmt::format("{} {} ({:.0f} % of its {} port)", r.rail, Gbits(*r.average_gbits),
                                 100 * share, Gbits(*r.port_gbits)));
    }
  }
  const auto measured =
      std::ranges::count_if(rails, [](const RailResult& r) { return r.average_gbits.has_value(); });
  f.observed = measured == 0 ? "no figure"
                             : fmt::format("{} of {} rail{}: {} to {}", measured, rails.size(),
                                           rails.size() == 1 ? "" : "s", Gbits(lo), Gbits(hi));
  if (!slow.empty()) {
    f.status = CheckStatus::kFail;
    f.severity = Severity::kMedium;  // a pair cannot say which end is slow
    f.message = fmt::format("ib_write_bw to {} slow on {}", peer, RailList(slow));
    if (!unread.empty()) f.message += fmt::format("; no figure for {}", RailList(unread));
    f.remediation = fmt::format(
        "A pair cannot say which end is slow: test this node and {} each against a third "
        "node. Then look at the slow rail's port (ibstat: rate and width; perfquery: symbol "
        "and link-downed counters), its cable and its PCIe link (lspci -vv: LnkSta).",
        peer);
  } else if (!unread.empty()) {
    f.status = CheckStatus::kUnknown;
    f.severity = Severity::kMedium;
    f.message = fmt::format("ib_write_bw to {}: no figure to judge for {}", peer, RailList(unread));
  } else {
    f.status = CheckStatus::kPass;
    f.message = fmt::format("ib_write_bw to {}: every rail at {:.0f} % of its port's rate or more",
                            peer, 100 * min_share);
  }
  return f;
}

IbPairVerdict RunIbPairs(const IbPairOptions& options, Duration deadline, const IbPairIo& io) {
  IbPairVerdict out;
  const std::string here = io.tools.find_program ? io.tools.find_program("ib_write_bw")
                                                 : sys::FindProgram("ib_write_bw");
  if (here.empty()) {
    out.findings.push_back({.check_id = std::string(kCheck),
                            .status = CheckStatus::kSkip,
                            .observed = "not installed",
                            .expected = "ib_write_bw on PATH",
                            .message = "ib_write_bw (perftest) is not on PATH: not run"});
    return out;
  }
  // A peer not known to be a Slurm node (no squeue here, or it cannot say) is tested: the rails
  // are load on the network, not a fault, and the person named the peer.
  const PeerJobs peer_jobs = options.force ? PeerJobs{} : AskSlurmAboutThePeer(options, io);
  if (!peer_jobs.busy.empty()) {
    out.findings.push_back(
        {.check_id = std::string(kCheck),
         .status = CheckStatus::kSkip,
         .observed = "peer " + options.peer + " not idle",
         .expected = "a peer that runs no one else's jobs",
         .message = peer_jobs.busy + ": not run (--force-peer tests its rails)"});
    return out;
  }
  const std::string devices = options.sysfs + "/class/infiniband";
  std::vector<std::string> rails = options.rails;
  if (rails.empty() && io.list_dir) rails = io.list_dir(devices);
  std::ranges::sort(rails);
  for (size_t i = 0; i < rails.size(); ++i) {
    const std::string& rail = rails[i];
    RailResult r = RunRail(options, rail, options.port + static_cast<int>(i), deadline, io);
    out.second_look = out.second_look || r.hung;
    if (io.read_file) {
      if (auto rate = io.read_file(fmt::format("{}/{}/ports/1/rate", devices, rail))) {
        r.port_gbits = ParsePortRate(*rate);
      }
    }
    if (r.average_gbits) {
      out.metrics.push_back({.name = "active.ib_write_bw_gbits",
                             .labels = {{"rail", rail}, {"peer", options.peer}},
                             .value = *r.average_gbits,
                             .unit = "Gb/s"});
    }
    out.rails.push_back(std::move(r));
  }
  out.findings.push_back(JudgeIbPairs(out.rails, options.peer));
  if (!peer_jobs.unknown.empty()) {
    out.findings.back().message +=
        fmt::format(" (tested without knowing all of what runs on {}: {})", AsOneLine(options.peer),
                    AsOneLine(peer_jobs.unknown));
  }
  return out;
}

}  // namespace cmax::active
