#include "lab/lab.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "sys/file_lock.hpp"
#include "sys/host.hpp"

namespace cmax::lab {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Locate(const std::string& name) {
  std::string path = sys::FindProgram(name);
  if (!path.empty()) return path;
  // Daemons live in sbin, which a non-login shell may leave off PATH.
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/local/sbin"}) {
    const std::string candidate = std::string(dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

bool PortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

std::string Tail(const sys::FileSystem& fs, const std::string& path, size_t lines) {
  auto text = fs.ReadFile(path, 64 << 20);
  if (!text) return "(no log: " + text.error().message + ")";
  std::vector<std::string_view> all = Split(Trim(*text), '\n');
  const size_t from = all.size() > lines ? all.size() - lines : 0;
  std::string out;
  for (size_t i = from; i < all.size(); ++i) out += "    " + std::string(all[i]) + "\n";
  return out;
}

void Say(LabContext& ctx, std::string_view text) {
  if (ctx.progress) ctx.progress(text);
  log::Debug("lab: {}", text);
}

Result<void> WriteMungeKey(sys::FileSystem& fs, const std::string& path) {
  constexpr size_t kKeyBytes = 1024;
  // A whole key is kept (a lab's daemons share it); one cut short by a kill is made again.
  if (auto kept = fs.ReadFile(path, kKeyBytes + 1); kept && kept->size() == kKeyBytes) return {};
  std::string key(kKeyBytes, '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(ErrorCode::kIo, "cannot read random bytes: {}", std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  return fs.WriteFileAtomic(path, key, 0600);  // never seen half written
}

// Root starts daemons from the folder's slurm.conf, cancels the jobs of the cluster it names, and
// stops the processes its lab.json names: a folder another user can write to could point all
// of that at anything. It must be this user's and writable by no one else (or not be there).
Result<void> CheckFolderIsSafe(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) return Fail(ErrorCode::kInvalidArgument, "{} is not a folder", dir);
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "the lab folder {} must be this user's and writable by no one else (its owner "
                "is uid {}, its mode {:o}): root starts daemons from it and stops the processes "
                "it names",
                dir, st.st_uid, st.st_mode & 07777);
  }
  return {};
}

// Held by the `up` that is looking at or starting the lab in its folder.
constexpr const char* kUpLock = "up.lock";

// The lab writes etc/, dev/, log/ ... into its folder: it must be new, empty, or a lab's.
Result<void> CheckFolderIsOurs(const LabPaths& paths, const sys::FileSystem& fs) {
  auto entries = fs.ListDir(paths.dir);
  if (entries) std::erase(*entries, kUpLock);  // what an `up` that failed its preflight leaves
  if (!entries || entries->empty() || fs.Exists(paths.state_file)) return {};
  auto conf = fs.ReadFile(paths.slurm_conf, 1 << 20);
  if (conf && conf->find(kLabConfMarker) != std::string::npos) return {};
  return Fail(ErrorCode::kInvalidArgument,
              "{} is not empty and is not a cmax lab folder; choose a new or empty folder",
              paths.dir);
}

Result<void> PrepareFolder(const LabSpec& spec, const LabPaths& paths, sys::FileSystem& fs) {
  for (const std::string& dir : {paths.dir, paths.dir + "/etc", paths.state_dir, paths.spool_dir,
                                 paths.log_dir, paths.run_dir, paths.dev_dir}) {
    if (auto ok = fs.CreateDirs(dir, 0755); !ok) return ok;
  }
  // munged insists that its key folder is not writable by others.
  if (auto ok = fs.CreateDirs(paths.munge_dir, 0700); !ok) return ok;
  if (auto ok = WriteMungeKey(fs, paths.munge_key); !ok) return ok;
  for (const std::string& node : NodeNames(spec)) {
    if (auto ok = fs.CreateDirs(paths.spool_dir + "/" + node, 0755); !ok) return ok;
    const std::string dev = paths.dev_dir + "/" + node;
    if (auto ok = fs.CreateDirs(dev, 0755); !ok) return ok;
    for (int g = 0; g < spec.gpus_per_node; ++g) {
      const std::string file = dev + "/nvidia" + std::to_string(g);
      if (!fs.Exists(file)) {
        if (auto ok = fs.WriteFileAtomic(file, "", 0644); !ok) return ok;
      }
    }
  }
  if (auto ok = fs.WriteFileAtomic(paths.slurm_conf, RenderSlurmConf(spec, paths), 0644); !ok) {
    return ok;
  }
  return fs.WriteFileAtomic(paths.gres_conf, RenderGresConf(spec, paths), 0644);
}

Result<Daemon> Start(const std::string& name, const std::vector<std::string>& argv,
                     const LabPaths& paths) {
  Daemon daemon;
  daemon.name = name;
  daemon.program = argv[0];
  daemon.log_path = paths.log_dir + "/" + name + ".out";
  auto pid = sys::SpawnDaemon({argv, {}, daemon.log_path, paths.dir});
  if (!pid) return tl::unexpected(pid.error());
  daemon.pid = *pid;
  daemon.start_ticks = sys::ProcessStartTicks(*pid).value_or(0);
  return daemon;
}

// Pid and start time together: a pid the kernel gave to another process is never ours.
bool SameProcess(const Daemon& daemon) {
  if (!sys::ProcessAlive(daemon.pid)) return false;
  auto ticks = sys::ProcessStartTicks(daemon.pid);
  return ticks && daemon.start_ticks != 0 && *ticks == daemon.start_ticks;
}

Result<void> SaveState(LabContext& ctx, const LabPaths& paths, const LabState& state) {
  return ctx.fs.WriteFileAtomic(paths.state_file, SerializeState(state), 0644);
}

// `runs_past_interrupt`: the taking down a Ctrl-C set going, which it must not cut short.
Result<sys::ProcessResult> Slurm(LabContext& ctx, const std::string& dir,
                                 std::vector<std::string> argv, Duration timeout,
                                 bool runs_past_interrupt = false) {
  sys::ProcessSpec spec{.argv = std::move(argv), .env_add = SlurmEnv(dir)};
  spec.timeout = timeout;
  spec.runs_past_interrupt = runs_past_interrupt;
  return ctx.runner.Run(spec);
}

// Stops the daemons that are still ours in stages: the slurmd first (they still report job
// completions to the controller), then slurmctld, then munged, which both of them need to
// the end. Each stage gets SIGTERM, time to exit, then SIGKILL.
void StopDaemons(const std::vector<Daemon>& daemons, DownResult& result) {
  auto stage_of = [](const Daemon& d) {
    if (d.name == "munged") return 2;
    if (d.name == "slurmctld") return 1;
    return 0;
  };
  auto all_gone = [](const std::vector<const Daemon*>& list) {
    return std::none_of(list.begin(), list.end(),
                        [](const Daemon* d) { return sys::ProcessAlive(d->pid); });
  };
  auto wait_for = [&](const std::vector<const Daemon*>& list, Duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!all_gone(list) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(20));
    }
  };
  for (int stage = 0; stage < 3; ++stage) {
    std::vector<const Daemon*> pending;
    for (auto it = daemons.rbegin(); it != daemons.rend(); ++it) {
      if (stage_of(*it) != stage) continue;
      if (!sys::ProcessAlive(it->pid)) {
        result.already_gone.push_back(it->name);
      } else if (!SameProcess(*it)) {
        result.not_ours.push_back(it->name);
        log::Warn("lab: pid {} recorded for {} now belongs to another process; left alone", it->pid,
                  it->name);
      } else {
        ::kill(it->pid, SIGTERM);
        pending.push_back(&*it);
        result.stopped.push_back(it->name);
      }
    }
    wait_for(pending, seconds(10));
    for (const Daemon* d : pending) {
      if (SameProcess(*d)) {
        log::Warn("lab: {} (pid {}) ignored SIGTERM for 10s; sending SIGKILL", d->name, d->pid);
        ::kill(d->pid, SIGKILL);
      }
    }
    wait_for(pending, seconds(3));
  }
}

void KillStrays(const std::string& dir, DownResult& result) {
  for (int round = 0; round < 2; ++round) {
    const std::vector<int> strays = ProcessesInside(dir);
    if (strays.empty()) return;
    for (int pid : strays) {
      ::kill(pid, round == 0 ? SIGTERM : SIGKILL);
      if (round == 0) ++result.stray_processes_killed;
    }
    const auto deadline = std::chrono::steady_clock::now() + seconds(3);
    while (std::chrono::steady_clock::now() < deadline && !ProcessesInside(dir).empty()) {
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
}

// Stops what a failed `up` started, and explains the failure with the daemon's log.
Error Abandon(LabContext& ctx, const LabPaths& paths, const LabState& state, Error error,
              const std::string& log_path) {
  error.message += "\n  last lines of " + log_path + ":\n" + Tail(ctx.fs, log_path, 12);
  DownResult ignored;
  StopDaemons(state.daemons, ignored);
  KillStrays(paths.dir, ignored);
  (void)::unlink(paths.state_file.c_str());
  return error;
}

}  // namespace

std::vector<std::string> Preflight(const LabSpec& spec) {
  std::vector<std::string> problems;
  if (!sys::IsRoot()) {
    problems.push_back(
        "cmax lab needs root: slurmd starts jobs as their owners and munged must own its key "
        "(run it with sudo, or as root in CI)");
  }
  for (const char* program : {"munged", "slurmctld", "slurmd", "sinfo", "scontrol", "srun"}) {
    if (Locate(program).empty()) {
      problems.push_back(
          fmt::format("{} is not installed (scripts/setup.sh installs munge, "
                      "slurmctld, slurmd and slurm-client)",
                      program));
    }
  }
  std::vector<int> ports = {spec.controller_port};
  for (int i = 0; i < spec.nodes + spec.spares; ++i) ports.push_back(spec.first_node_port + i);
  for (int port : ports) {
    if (!PortFree(port)) {
      problems.push_back(fmt::format(
          "port {} is taken (another lab, a system slurmctld/slurmd, or another service); "
          "choose other ports (cmax lab up --port-base, cmax run --lab --lab-port)",
          port));
    }
  }
  return problems;
}

bool LabStatus::Running() const {
  return std::any_of(daemons.begin(), daemons.end(), [](const auto& d) { return d.alive; });
}
std::vector<std::string> LabStatus::Missing() const {
  std::vector<std::string> expected = {"munged", "slurmctld"};
  for (const std::string& node : NodeNames(state.spec)) expected.push_back("slurmd-" + node);
  std::vector<std::string> missing;
  for (const std::string& name : expected) {
    if (!std::ranges::any_of(
            daemons, [&](const DaemonStatus& d) { return d.daemon.name == name && d.alive; })) {
      missing.push_back(name);
    }
  }
  return missing;
}
bool LabStatus::ControllerAlive() const {
  return std::ranges::any_of(
      daemons, [](const DaemonStatus& d) { return d.daemon.name == "slurmctld" && d.alive; });
}

Result<UpResult> Up(const LabSpec& spec, LabContext& ctx, Duration wait_timeout) {
  if (auto ok = ValidateSpec(spec); !ok) return tl::unexpected(ok.error());
  const LabPaths paths = PathsFor(spec.dir);
  const auto start = ctx.clock.Monotonic();

  if (auto ok = CheckFolderIsSafe(paths.dir); !ok) return tl::unexpected(ok.error());
  if (auto ok = CheckFolderIsOurs(paths, ctx.fs); !ok) return tl::unexpected(ok.error());
  // Held while the lab is looked at and started: a second `up` of the folder meanwhile would
  // find it half started and take it for one whose starter was killed.
  if (auto ok = ctx.fs.CreateDirs(paths.dir, 0755); !ok) return tl::unexpected(ok.error());
  auto starting = sys::FileLock::TryTake(paths.dir + "/" + kUpLock);
  if (!starting && starting.error().code == ErrorCode::kBusy) {
    return Fail(ErrorCode::kBusy,
                "another cmax is starting the lab in {}; wait for it, or stop it with `cmax lab "
                "down --dir {}`",
                spec.dir, spec.dir);
  }
  if (!starting) return tl::unexpected(starting.error());
  if (auto existing = Status(spec.dir, ctx); existing && existing->Running()) {
    const std::vector<std::string> missing = existing->Missing();
    if (missing.empty()) return UpResult{existing->state, true, ctx.clock.Monotonic() - start};
    // Its starter was killed part-way, or a daemon died since: not a lab anyone can use.
    Say(ctx, fmt::format("the lab in {} is not whole ({} not running); taking it down and "
                         "starting afresh",
                         spec.dir, Join(missing, ", ")));
    if (auto down = Down(spec.dir, ctx); !down) return tl::unexpected(down.error());
  } else if (existing) {
    Say(ctx, "found the state of a lab that is no longer running; starting afresh");
    DownResult ignored;
    KillStrays(spec.dir, ignored);
  }

  if (auto problems = Preflight(spec); !problems.empty()) {
    return Fail(ErrorCode::kUnavailable, "cannot start the lab:\n  - {}", Join(problems, "\n  - "));
  }
  if (auto ok = PrepareFolder(spec, paths, ctx.fs); !ok) return tl::unexpected(ok.error());

  LabState state{spec, ctx.clock.Now(), {}};
  auto record = [&](Daemon daemon) -> Result<void> {
    state.daemons.push_back(std::move(daemon));
    return SaveState(ctx, paths, state);
  };
  auto deadline_after = [&](Duration d) { return ctx.clock.Monotonic() + d; };

  // munged: the lab's own, with its own key and socket.
  auto munged =
      Start("munged",
            {Locate("munged"), "--foreground", "--force", "--socket=" + paths.munge_socket,
             "--key-file=" + paths.munge_key, "--pid-file=" + paths.munge_pid,
             "--seed-file=" + paths.munge_seed, "--log-file=" + paths.log_dir + "/munged.log"},
            paths);
  if (!munged) return tl::unexpected(munged.error());
  if (auto ok = record(*munged); !ok) {
    return tl::unexpected(Abandon(ctx, paths, state, ok.error(), munged->log_path));
  }
  for (auto deadline = deadline_after(seconds(5)); !ctx.fs.Exists(paths.munge_socket);) {
    if (!sys::ProcessAlive(munged->pid) || ctx.clock.Monotonic() > deadline) {
      return tl::unexpected(Abandon(ctx, paths, state,
                                    Error{ErrorCode::kUnavailable, "munged did not start"},
                                    munged->log_path));
    }
    ctx.clock.Sleep(milliseconds(10));
  }
  Say(ctx, fmt::format("munged up (pid {})", munged->pid));

  // slurmctld, from a clean state (-c) so that nothing of an earlier lab carries over.
  auto ctld = Start("slurmctld", {Locate("slurmctld"), "-D", "-c", "-f", paths.slurm_conf}, paths);
  if (!ctld)
    return tl::unexpected(
        Abandon(ctx, paths, state, ctld.error(), paths.log_dir + "/slurmctld.log"));
  if (auto ok = record(*ctld); !ok) {
    return tl::unexpected(Abandon(ctx, paths, state, ok.error(), ctld->log_path));
  }
  for (auto deadline = deadline_after(seconds(15));;) {
    auto ping = Slurm(ctx, spec.dir, {Locate("scontrol"), "ping"}, seconds(5));
    if (ping && ping->stdout_text.find(" is UP") != std::string::npos) break;
    if (!sys::ProcessAlive(ctld->pid) || ctx.clock.Monotonic() > deadline) {
      return tl::unexpected(Abandon(ctx, paths, state,
                                    Error{ErrorCode::kUnavailable, "slurmctld did not come up"},
                                    paths.log_dir + "/slurmctld.log"));
    }
    ctx.clock.Sleep(milliseconds(20));
  }
  Say(ctx, fmt::format("slurmctld answering on port {} (pid {})", spec.controller_port, ctld->pid));

  // Controller first, then the nodes: a slurmd that finds no controller retries only later.
  for (const std::string& node : NodeNames(spec)) {
    auto slurmd = Start("slurmd-" + node,
                        {Locate("slurmd"), "-D", "-f", paths.slurm_conf, "-N", node}, paths);
    if (!slurmd) {
      return tl::unexpected(
          Abandon(ctx, paths, state, slurmd.error(), paths.log_dir + "/slurmd-" + node + ".log"));
    }
    if (auto ok = record(*slurmd); !ok) {
      return tl::unexpected(Abandon(ctx, paths, state, ok.error(), slurmd->log_path));
    }
  }
  const size_t total = NodeNames(spec).size();
  Say(ctx, fmt::format("started {} slurmd; waiting for the nodes to be idle", total));

  std::map<std::string, std::string> nodes;
  for (auto deadline = deadline_after(wait_timeout);;) {
    auto sinfo = Slurm(ctx, spec.dir, {Locate("sinfo"), "-h", "-N", "-o", "%N %t"}, seconds(5));
    if (sinfo && sinfo->Succeeded()) nodes = ParseNodeStates(sinfo->stdout_text);
    const size_t idle = static_cast<size_t>(std::count_if(
        nodes.begin(), nodes.end(), [](const auto& n) { return n.second == "idle"; }));
    if (idle == total) break;
    for (const Daemon& d : state.daemons) {
      if (!sys::ProcessAlive(d.pid)) {
        const std::string log_path = d.name == "munged" ? paths.log_dir + "/munged.log"
                                                        : paths.log_dir + "/" + d.name + ".log";
        return tl::unexpected(Abandon(
            ctx, paths, state,
            Error{ErrorCode::kUnavailable, fmt::format("{} (pid {}) exited", d.name, d.pid)},
            log_path));
      }
    }
    if (ctx.clock.Monotonic() > deadline) {
      std::string detail;
      for (const auto& [node, node_state] : nodes) detail += " " + node + "=" + node_state;
      auto reasons =
          Slurm(ctx, spec.dir, {Locate("sinfo"), "-h", "-R", "-o", "%N: %E"}, seconds(5));
      if (reasons && !Trim(reasons->stdout_text).empty()) {
        detail += "; reasons: " + std::string(Trim(reasons->stdout_text));
      }
      return tl::unexpected(Abandon(
          ctx, paths, state,
          Error{ErrorCode::kTimeout, fmt::format("{} of {} nodes idle after {}:{}", idle, total,
                                                 FormatDuration(wait_timeout), detail)},
          paths.log_dir + "/slurmctld.log"));
    }
    ctx.clock.Sleep(milliseconds(25));
  }
  const Duration took = ctx.clock.Monotonic() - start;
  Say(ctx, fmt::format("{}/{} nodes idle after {}", total, total, FormatDuration(took)));
  return UpResult{state, false, took};
}

Result<void> AdoptDaemon(const std::string& dir, LabContext& ctx, Daemon daemon) {
  const LabPaths paths = PathsFor(dir);
  auto text = ctx.fs.ReadFile(paths.state_file, 1 << 20);
  if (!text) return tl::unexpected(text.error());
  auto state = ParseState(*text);
  if (!state) return Wrap(state.error(), paths.state_file);
  if (daemon.start_ticks == 0) daemon.start_ticks = sys::ProcessStartTicks(daemon.pid).value_or(0);
  state->daemons.push_back(std::move(daemon));
  return SaveState(ctx, paths, *state);
}

Result<LabStatus> Status(const std::string& dir, LabContext& ctx) {
  if (auto ok = CheckFolderIsSafe(dir); !ok) return tl::unexpected(ok.error());
  const LabPaths paths = PathsFor(dir);
  auto text = ctx.fs.ReadFile(paths.state_file, 1 << 20);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) {
      return Fail(ErrorCode::kNotFound, "no lab in {} (start one with `cmax lab up`)", dir);
    }
    return tl::unexpected(text.error());
  }
  auto state = ParseState(*text);
  if (!state) return Wrap(state.error(), paths.state_file);
  LabStatus status;
  status.state = std::move(*state);
  for (const Daemon& d : status.state.daemons) status.daemons.push_back({d, SameProcess(d)});
  if (!status.ControllerAlive()) {
    status.nodes_error = "slurmctld is not running";
    return status;
  }
  auto sinfo = Slurm(ctx, dir, {Locate("sinfo"), "-h", "-N", "-o", "%N %t"}, seconds(5));
  if (!sinfo) {
    status.nodes_error = sinfo.error().message;
  } else if (!sinfo->Succeeded()) {
    status.nodes_error =
        "sinfo: " + sinfo->Describe() + ": " + std::string(Trim(sinfo->stderr_text));
  } else {
    status.nodes = ParseNodeStates(sinfo->stdout_text);
  }
  return status;
}

Result<DownResult> Down(const std::string& dir, LabContext& ctx) {
  auto status = Status(dir, ctx);
  if (!status) return tl::unexpected(status.error());
  DownResult result;
  // Whether slurmctld runs, not whether sinfo answered: after a Ctrl-C, Status's sinfo was cut
  // short, and the jobs would be left to the daemons' end.
  if (status->ControllerAlive()) {
    // Jobs first, so that their steps end cleanly before the daemons go. Cancelled jobs take
    // up to KillWait to end, and their steps need the daemons meanwhile.
    const std::string squeue = Locate("squeue");
    const std::string scancel = Locate("scancel");
    for (auto deadline = ctx.clock.Monotonic() + seconds(8);
         !squeue.empty() && !scancel.empty() && ctx.clock.Monotonic() < deadline;) {
      auto jobs = Slurm(ctx, dir, {squeue, "-h", "-o", "%A"}, seconds(5), true);
      if (!jobs || !jobs->Succeeded()) break;
      std::vector<std::string> argv = {scancel, "--quiet", "--full"};
      for (std::string_view id : SplitFields(jobs->stdout_text)) argv.emplace_back(id);
      if (argv.size() == 3) break;
      (void)Slurm(ctx, dir, argv, seconds(5), true);
      ctx.clock.Sleep(milliseconds(100));
    }
  }
  StopDaemons(status->state.daemons, result);
  KillStrays(dir, result);
  const LabPaths paths = PathsFor(dir);
  if (::unlink(paths.state_file.c_str()) != 0 && errno != ENOENT) {
    return Fail(ErrorCode::kIo, "cannot remove {}: {}", paths.state_file, std::strerror(errno));
  }
  Say(ctx, fmt::format("stopped {} daemons", result.stopped.size()));
  return result;
}

std::string EnvLine(const std::string& dir) {
  return "export SLURM_CONF=" + ShellWord(PathsFor(dir).slurm_conf);
}

std::vector<std::string> SlurmEnv(const std::string& dir) {
  return {"SLURM_CONF=" + PathsFor(dir).slurm_conf};
}

std::vector<int> ProcessesInside(const std::string& dir) {
  std::vector<int> pids;
  sys::LocalFileSystem fs;
  auto entries = fs.ListDir("/proc");
  if (!entries) return pids;
  const std::string prefix = dir + "/";
  const LabPaths paths = PathsFor(dir);
  const int self = ::getpid();
  for (const std::string& name : *entries) {
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (pid == self || !sys::ProcessAlive(pid)) continue;
    // Only Slurm and munge processes: a user's shell that happens to sit in the lab folder
    // is not the lab's to kill.
    auto comm = fs.ReadFile("/proc/" + name + "/comm", 256);
    if (!comm || (comm->rfind("slurm", 0) != 0 && comm->rfind("munge", 0) != 0)) continue;
    bool inside = false;
    if (auto cwd = fs.ReadLink("/proc/" + name + "/cwd"); cwd) {
      inside = *cwd == dir || cwd->rfind(prefix, 0) == 0;
    }
    if (!inside) {
      // Only the lab's own configuration and socket count, never a mere path prefix.
      if (auto cmdline = fs.ReadFile("/proc/" + name + "/cmdline", 1 << 16); cmdline) {
        inside = cmdline->find(paths.slurm_conf) != std::string::npos ||
                 cmdline->find(paths.munge_socket) != std::string::npos;
      }
    }
    if (inside) pids.push_back(pid);
  }
  return pids;
}

}  // namespace cmax::lab
