#include "evaluate/lab_evaluation.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sys/stat.h>
#include <thread>

#include "active/schedule.hpp"
#include "audit/minimums.hpp"
#include "core/strings.hpp"
#include "endpoint/sim_server.hpp"
#include "lab/lab.hpp"
#include "rate/rubric.hpp"
#include "remediate/settings.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::evaluate {
namespace {

using namespace std::chrono_literals;

constexpr int kNodes = 2;
// The GPU of each node the fault goes to; each node's agent watches its own (the lab's nodes
// share this host's kernel log).
constexpr const char* kGpus[kNodes] = {"0000:17:00.0", "0000:3b:00.0"};
constexpr int kGpusPerNode = 8;
// The program the weekly active checks' jobs run on the nodes: cmax, given the node's own
// simulated GPUs and CUDA probes.
constexpr const char* kNodeCmax = "node-cmax";
// Where those jobs write their output.
constexpr const char* kCheckLogs = "active-checks";
// The fabric's logs (EvaluationOptions::logs_dir): the network search's, the training job's and
// its traces; removed before each evaluation.
constexpr const char* kNetworkLogs = "network-logs";
// The fabric: namespace hosts on this machine.
constexpr int kFabricHosts = 4;
// The training job's rows per rank and step. Its layers are 256 x 256 floats (256 KiB of
// gradient each); at 64 rows a layer's backward computes for about as long as its gradient
// takes through a healthy lab link, and several times less than through the slowed one. On 2
// cores: 1,450 tokens/s a rank and 13 % of the time exposed communication on a healthy
// fabric, 500 and 63 % through h3 at 200 Mbit/s (at 128 rows, 11 % and 55 %, and once 20-35 %
// through the slowed link: too close to the rubric's bands).
constexpr int kTrainBatch = 64;

// The PCI addresses of a node's GPUs: the first is the one its fault goes to.
std::string BusId(int node, int gpu) {
  return gpu == 0 ? std::string(kGpus[node])
                  : fmt::format("0000:{:02x}:00.0", 0x40 + kGpusPerNode * node + gpu);
}

std::string Day(WallTime time) {
  return FormatIso8601(time).substr(0, 10);
}

// What the simulated provider attests: a stand-in written by cmax, said to be one.
std::string AttestationYaml(const std::string& provider, WallTime now) {
  constexpr auto kDay = std::chrono::hours(24);
  return fmt::format(
      "# The simulated provider's attestation, written by cmax run --lab (a stand-in).\n"
      "schema: cmax.attestation/v1\n"
      "provider: {}\n"
      "source: cmax run --lab, the simulated provider's own word (a stand-in)\n"
      "date: {}\n"
      "security: {{soc2_type2_report: {}, iso27001_certificate: null, "
      "pentest_covers_fabric: true}}\n"
      "isolation: {{nvlink_domain_exclusive: true, pcie_isolation: true, ufm_secured: true, "
      "ib_sm_key: true, ib_sa_key: true}}\n"
      "sla: {{partial_failures_defined: true, template: gold}}\n"
      "pricing: {{gpu_hour_usd: 2.49, storage_gb_month_usd: 0.06, egress_gb_usd: 0}}\n"
      "delivery: {{promised: {}, delivered: {}}}\n"
      "partnerships: {{nvidia_ncp: true}}\n",
      provider, Day(now), Day(now - 90 * kDay), Day(now - 30 * kDay), Day(now - 30 * kDay));
}

// One fault, an uncorrectable ECC error on gpu1's GPU (Xid 48: reset, validate, back), with
// the published bars divided by 60; a node never drained is watched for the 60 s of the back
// bar, past the last scaled band of detection (60 s) and drain (60 s), so a provider who never
// reacts scores 0 on both. Time to service has bands up to 1,440 s: a node never out is never
// back, and that item stays evidence missing.
std::string ScenarioYaml() {
  return fmt::format(
      "name: lab double-bit ECC error\n"
      "bars: {{detect_s: 2, out_of_service_s: 2, back_s: 60}}  # 2 min, 2 min, 1 h over 60\n"
      "poll_s: 0.2\n"
      "timeout_s: 62\n"
      "steps:\n"
      "  - {{name: xid-48-gpu1, inject: xid, code: 48, node: gpu1, gpu: \"{}\"}}\n",
      kGpus[0]);
}

// The provider's fabric searched for a node that drags it down (find-bad-node), its four hosts
// network namespaces on this machine. They share its cores, so a group's figure says as much
// about the cores as about the links: on 2 cores a healthy pair read 1.2 to 3.2 GB/s at 1 MiB
// and all four hosts 0.46 to 0.76, 0.06 while other work ran, against 0.02 GB/s through a link
// slowed to 200 Mbit/s. Held against the best pair, the four were slow; held against what the
// lab asks of a link, 1 Gbit/s (0.125 GB/s, a group slow under 0.1), a healthy fabric passes in
// one run and the slowed link is named.
std::string NetworkYaml(const ProviderProfile& profile) {
  return fmt::format(
      "network:  # its fabric: 4 hosts as network namespaces here, the CPU stand-in between them\n"
      "  - {{name: fabric, tolerance_pct: 20,\n"
      "     find_bad_node: {{netns_lab: {}, min_bytes: 1M, max_bytes: 1M, iters: 5, warmup: 1,\n"
      "                     step_timeout_s: 60, reference_gbs: 0.125{}}}}}\n",
      kFabricHosts,
      profile.slow_link.empty() ? "" : fmt::format(", slow_links: [\"{}\"]", profile.slow_link));
}

// A string as YAML reads it whatever it holds: JSON's double-quoted form is YAML's too.
std::string YamlString(const std::string& text) {
  return nlohmann::json(text).dump();
}

// A data-parallel training job over the same fabric: cmax-train-sim (a CPU stand-in, named as
// one), one rank per namespace host, each layer's gradient reduced while the next computes; its
// log read for throughput and loss, its traces for the communication compute did not hide.
std::string TrainingYaml(const ProviderProfile& profile, const std::string& train_sim,
                         const std::string& trace_dir) {
  std::string traces;
  for (int rank = 0; rank < kFabricHosts; ++rank) {
    traces += fmt::format("{}{}", rank == 0 ? "" : ", ",
                          YamlString(fmt::format("{}/rank{}.trace.json", trace_dir, rank)));
  }
  return fmt::format(
      "training:  # a data-parallel job over the fabric: cmax-train-sim, a CPU stand-in\n"
      "  - {{name: job, netns_lab: {}, deadline_s: 120{},\n"
      "     command: [{}, --steps, \"30\", --layers, \"4\", --width, \"256\", --batch, \"{}\",\n"
      "               --trace-dir, {}]}}\n"
      "  - {{name: job-traces, traces: [{}]}}\n",
      kFabricHosts,
      profile.slow_link.empty() ? "" : fmt::format(", slow_links: [\"{}\"]", profile.slow_link),
      YamlString(train_sim), kTrainBatch, YamlString(trace_dir), traces);
}

std::string PlanYaml(const ProviderProfile& profile, const std::string& provider, WallTime since,
                     int sim_port, bool probes_simulated, bool fabric,
                     const std::string& training) {
  return fmt::format(
      "# The plan cmax run --lab wrote for the simulated provider ({}).\n"
      "schema: cmax.plan/v1\n"
      "provider: {}\n"
      "{}"
      "health: {{since: \"{}\"}}  # the kernel log since the lab came up\n"
      "{}"
      "endpoints:\n"
      "  - {{name: serve-sim, url: \"http://127.0.0.1:{}/v1\", model: lab-model, concurrency: 8,\n"
      "     requests: 200, input_len: 256, prefix_len: 128, output_len: 16, timeout_s: 30}}\n"
      "reliability:\n"
      "  - {{name: xid-48, scenario: scenario.yaml}}\n"
      "{}{}",
      profile.name, provider, profile.attestation ? "attestation: attestation.yaml\n" : "",
      FormatIso8601(since),
      probes_simulated ? "active: {level: quick}  # as on gpu1: its simulated GPUs and probes\n"
                       : "",
      sim_port, fabric ? NetworkYaml(profile) : "", training);
}

// Waits until a daemon's log holds `text` (its ready line), or it died, or `limit` passed, or
// the evaluation was interrupted. The log is new: the folder's old logs were removed.
bool LogSays(sys::FileSystem& fs, const std::string& log, const std::string& text, int pid,
             Duration limit, const std::function<bool()>& interrupted) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline && !(interrupted && interrupted())) {
    if (auto body = fs.ReadFile(log, size_t{1} << 20);
        body && body->find(text) != std::string::npos) {
      return true;
    }
    if (!sys::ProcessAlive(pid)) return false;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// Marks a folder as a lab evaluation's own: only such a folder is cleaned before the next one.
constexpr const char* kLabFolderMark = ".cmax-lab-run";

// Each evaluation removes what the last one wrote in its folder (stores among them) and root
// runs a script it writes there on the lab's nodes: the folder must be new, empty or marked as
// a lab's own, hold no store of the person's, and be writable by its owner (this user) alone.
// The default folder (`named` false: lab-run beside the store) is cmax's by its name, and an
// earlier version made it without the mark.
Result<void> CheckLabFolder(const std::string& dir, bool named, const std::string& db_path,
                            sys::FileSystem& fs) {
  const std::filesystem::path store = std::filesystem::path(sys::AbsolutePath(db_path));
  if (store.parent_path().lexically_normal() == std::filesystem::path(dir).lexically_normal()) {
    return Fail(ErrorCode::kInvalidArgument,
                "the store {} is in the lab's folder {}, which each evaluation cleans: name "
                "another with --lab-dir",
                store.string(), dir);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return {};  // new: made below, 0700
  if (!S_ISDIR(st.st_mode)) {
    return Fail(ErrorCode::kInvalidArgument, "--lab-dir {} is not a folder", dir);
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "--lab-dir {} must be this user's and writable by no one else (its mode is "
                "{:o}): root runs a script from it on the lab's nodes",
                dir, st.st_mode & 07777);
  }
  auto names = fs.ListDir(dir);
  if (!names) return tl::unexpected(names.error());
  if (named && !names->empty() && std::ranges::find(*names, kLabFolderMark) == names->end()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--lab-dir {} holds files no lab evaluation marked as its own, and each one "
                "cleans its folder (its *.db among them): name a new or empty folder, or remove "
                "this one",
                dir);
  }
  return {};
}

bool IsLabProviderFile(const std::string& name) {
  for (const char* suffix : {".db", ".db-wal", ".db-shm", "-nvml.json", "-probes.json", ".lock"}) {
    if (name.ends_with(suffix)) return true;
  }
  return (name.starts_with("agent-") && name.ends_with(".log")) || name == "plan.yaml" ||
         name == "scenario.yaml" || name == "attestation.yaml" || name == kNodeCmax;
}

// The driver the provider's GPUs run: a stale one (below the minimum of its branch in the
// built-in table, so security fixes are missing) or the newest minimum that table knows.
std::string DriverVersion(const ProviderProfile& profile) {
  if (profile.stale_driver) return "535.54.03";  // June 2023; the 535 branch's fixes came later
  std::string newest;
  if (const audit::ComponentMinimums* driver =
          audit::MinimumTable::Builtin().Find("nvidia-driver")) {
    for (const auto& [branch, minimum] : driver->minimums) {
      if (newest.empty() || audit::CompareTableVersions(minimum, newest).value_or(0) > 0) {
        newest = minimum;
      }
    }
  }
  return newest.empty() ? "580.159.03" : newest;
}

// A daemon cmax started: a pid and the start time it had then (a pid alone may be another
// process's by now, the daemon having died early).
struct Started {
  int pid = 0;
  unsigned long long start_ticks = 0;
};

bool StillOurs(const Started& started) {
  auto ticks = sys::ProcessStartTicks(started.pid);
  return started.pid > 0 && started.start_ticks != 0 && ticks && *ticks == started.start_ticks;
}

void Stop(const Started& started) {
  if (!StillOurs(started)) return;
  const int pid = started.pid;
  ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (StillOurs(started) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  if (StillOurs(started)) ::kill(pid, SIGKILL);
}

// Everything the simulated provider runs, stopped in reverse order however the evaluation
// ends: its controller, its agents, its endpoint, and the lab itself.
class SimulatedProvider {
 public:
  SimulatedProvider(const LabEvaluationOptions& options, const LabEvaluationIo& io,
                    const ProviderProfile& profile)
      : options_(options), io_(io), profile_(profile), fs_(*io.evaluation.host.fs) {}
  ~SimulatedProvider() { TakeDown(); }
  SimulatedProvider(const SimulatedProvider&) = delete;
  SimulatedProvider& operator=(const SimulatedProvider&) = delete;

  Result<void> BringUp(lab::LabSpec& spec, const std::string& provider) {
    Say(fmt::format("lab: starting Slurm ({} nodes) in {}", kNodes, spec.dir));
    lab::LabContext ctx{fs_, runner_, *io_.evaluation.host.clock,
                        [this](std::string_view line) { Say(fmt::format("lab: {}", line)); }};
    auto up = lab::Up(spec, ctx, 60s);
    if (!up) return tl::unexpected(up.error());
    if (up->already_running) {
      // Its nodes may still be drained from an evaluation that was killed: not a clean start.
      return Fail(ErrorCode::kUnavailable,
                  "a lab is already running in {} (cmax lab down --dir {}, then again)", spec.dir,
                  spec.dir);
    }
    lab_dir_ = spec.dir;
    // Its node agents are daemons of the lab (AdoptDaemon): `cmax lab down` stops them too.
    left_.emplace(fmt::format("the Slurm lab in {} and its node agents: cmax lab down --dir {}",
                              spec.dir, ShellWord(spec.dir)));
    slurm_conf_.emplace("SLURM_CONF", lab::PathsFor(spec.dir).slurm_conf);
    if (!io_.nvml_sim_lib.empty()) {
      for (int i = 0; i < kNodes; ++i) {
        if (auto ok = WriteGpus(i); !ok) return ok;
      }
      // The evaluation runs as on the provider's first node: its audit reads that node's GPUs
      // (their driver) through the simulated NVML. Set before any thread starts.
      nvml_lib_.emplace("CMAX_NVML_LIB", io_.nvml_sim_lib);
      nvml_state_.emplace("CMAX_NVML_SIM_STATE", GpuState(0));
    }
    if (ProbesSimulated()) {
      for (int i = 0; i < kNodes; ++i) {
        if (auto ok = WriteProbes(i); !ok) return ok;
      }
      // Its active checks, as that node's, probe through the stand-in too.
      probes_lib_.emplace("CMAX_PROBES_LIB", io_.probes_sim_lib);
      probes_state_.emplace("CMAX_PROBES_SIM", ProbesState(0));
    }
    if (auto ok = StartEndpoint(); !ok) return ok;
    if (profile_.checks != ProviderProfile::Checks::kNone) {
      for (int i = 0; i < kNodes; ++i) {
        if (auto ok = StartAgent(i); !ok) return ok;
      }
    }
    if (profile_.weekly_checks) return RunWeeklyChecks(provider);
    return {};
  }

  int SimPort() const { return sim_ ? sim_->Port() : 0; }
  // Its GPUs and their CUDA probes are simulated: active checks can run on its nodes.
  bool ProbesSimulated() const { return !io_.nvml_sim_lib.empty() && !io_.probes_sim_lib.empty(); }

  // The slow provider's controller starts with the phase that injects: its first pass is done
  // before the fault, so the fault waits for the next one, `interval_s` later.
  void BeforePhase(const std::string& kind) {
    if (kind != "reliability" || profile_.checks != ProviderProfile::Checks::kSlowController ||
        controller_.joinable()) {
      return;
    }
    ControllerPass();
    controller_ = std::thread([this] {
      const auto every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(profile_.interval_s));
      auto next = std::chrono::steady_clock::now() + every;
      std::unique_lock lock(mutex_);
      while (!wake_.wait_until(lock, next, [this] { return stop_controller_; })) {
        lock.unlock();
        ControllerPass();
        lock.lock();
        next += every;
      }
    });
  }

  void TakeDown() {
    {
      std::lock_guard lock(mutex_);
      stop_controller_ = true;
    }
    wake_.notify_all();
    if (controller_.joinable()) controller_.join();
    // The controller's complaints, said here on this thread: its own shares no stream.
    for (const std::string& line : controller_said_) Say(line);
    controller_said_.clear();
    for (const Started& agent : agents_) Stop(agent);
    agents_.clear();
    sim_stop_ = true;
    if (sim_thread_.joinable()) sim_thread_.join();
    slurm_conf_.reset();
    probes_state_.reset();
    probes_lib_.reset();
    nvml_state_.reset();
    nvml_lib_.reset();
    if (!lab_dir_.empty()) {
      lab::LabContext ctx{fs_, runner_, *io_.evaluation.host.clock, {}};
      if (auto down = lab::Down(lab_dir_, ctx); down) {
        Say(fmt::format("lab: down ({} daemons stopped)", down->stopped.size()));
      } else {
        Say("lab: could not take the lab down: " + down.error().message +
            fmt::format(" (cmax lab down --dir {})", lab_dir_));
      }
      lab_dir_.clear();
    }
    left_.reset();
  }

 private:
  bool Interrupted() const {
    return io_.evaluation.host.interrupted && io_.evaluation.host.interrupted();
  }
  void Say(std::string_view line) const {
    if (io_.evaluation.progress) io_.evaluation.progress(line);
  }

  Result<void> StartEndpoint() {
    endpoint::SimConfig config;
    config.decode_ms = 1;
    config.rate_500 = profile_.endpoint_error_share;
    if (!profile_.prefix_cache) config.cache_blocks = 0;
    auto server = endpoint::SimServer::Listen("127.0.0.1:0", config);
    if (!server) return tl::unexpected(server.error());
    sim_ = std::move(*server);
    sim_thread_ = std::thread([this] { (void)sim_->Run([this] { return sim_stop_.load(); }); });
    Say(fmt::format("lab: the provider's endpoint (serve-sim) on 127.0.0.1:{}", sim_->Port()));
    return {};
  }

  Result<void> StartAgent(int index) {
    const std::string node = lab::NodeName(index + 1);
    const bool acts = profile_.checks == ProviderProfile::Checks::kAgents;
    // Agents that act keep their own store; agents that only report share the controller's.
    const std::string db = options_.dir + "/" + (acts ? node + ".db" : std::string("provider.db"));
    std::vector<std::string> argv = {
        io_.cmax_binary,    "--db", db,          "agent",     "--node", node,
        "--metrics-listen", "none", "--devices", kGpus[index]};
    std::vector<std::string> env = {"SLURM_CONF=" + lab::PathsFor(lab_dir_).slurm_conf};
    if (io_.nvml_sim_lib.empty()) {
      argv.emplace_back("--no-nvml");
    } else {
      env.push_back("CMAX_NVML_LIB=" + io_.nvml_sim_lib);
      env.push_back("CMAX_NVML_SIM_STATE=" + GpuState(index));
    }
    if (acts) {
      for (const char* arg : {"--remediate", "--validation-command", "true", "--reset-command",
                              "true", "--breaker-percent", "100"}) {
        argv.emplace_back(arg);
      }
    }
    const std::string log = options_.dir + "/agent-" + node + ".log";
    auto pid = sys::SpawnDaemon({.argv = argv, .env_add = env, .log_path = log});
    if (!pid) return tl::unexpected(pid.error());
    agents_.push_back({*pid, sys::ProcessStartTicks(*pid).value_or(0)});
    // One of the lab's daemons: should this process be killed, `cmax lab down` (or the next
    // evaluation's refusal, which says to run it) stops the agent too, which would otherwise
    // go on draining and validating the next lab's nodes from its old journal.
    lab::LabContext ctx{fs_, runner_, *io_.evaluation.host.clock, {}};
    if (auto adopted = lab::AdoptDaemon(
            lab_dir_, ctx,
            {.name = "agent-" + node, .program = io_.cmax_binary, .pid = *pid, .log_path = log});
        !adopted) {
      return adopted;
    }
    if (!LogSays(fs_, log, "agent ready: kernel log open", *pid, 30s,
                 io_.evaluation.host.interrupted)) {
      return Fail(ErrorCode::kUnavailable, "the agent of {} did not start; its log: {}", node, log);
    }
    Say(fmt::format("lab: agent of {} ready{}", node, acts ? " (remediates)" : " (reports)"));
    return {};
  }

  std::string GpuState(int index) const {
    return options_.dir + "/" + lab::NodeName(index + 1) + "-nvml.json";
  }

  // The node's eight GPUs, healthy, with the profile's driver, through the simulated NVML (a
  // stand-in). The first is the GPU its fault goes to and its agent watches.
  Result<void> WriteGpus(int index) {
    std::string gpus;
    for (int g = 0; g < kGpusPerNode; ++g) {
      gpus += fmt::format("{}{{\"bus_id\": \"{}\", \"name\": \"NVIDIA H100 80GB HBM3\"}}",
                          g == 0 ? "" : ", ", BusId(index, g));
    }
    return fs_.WriteFileAtomic(GpuState(index),
                               fmt::format("{{\"driver_version\": \"{}\", \"gpus\": [{}]}}\n",
                                           DriverVersion(profile_), gpus),
                               0644);
  }

  // The provider's weekly active checks (`cmax health schedule`), as its cron would run them,
  // once as it comes up: a pass that submits each idle node's check (`cmax health --active` in
  // a whole-node Slurm job, recording into the evaluation's store), the checks themselves, then
  // the next day's pass, which finds every node checked and records the fleet's view that the
  // evaluation's active-fleet phase reads.
  Result<void> RunWeeklyChecks(const std::string& provider) {
    if (!ProbesSimulated()) {
      Say("lab: no weekly active checks: the simulated NVML and CUDA probes (stand-ins) are not "
          "beside cmax");
      return {};
    }
    std::vector<std::string> nodes;
    for (int i = 0; i < kNodes; ++i) nodes.push_back(lab::NodeName(i + 1));
    const std::string node_cmax = options_.dir + "/" + kNodeCmax;
    if (auto ok = fs_.WriteFileAtomic(node_cmax, NodeCmaxScript(), 0700); !ok) return ok;
    // The lab's nodes are new: checks an earlier evaluation of this provider recorded in the
    // store are not theirs.
    active::ScheduleOptions schedule{.nodes = nodes,
                                     .start_within = 30s,
                                     .not_before = io_.evaluation.host.clock->Now(),
                                     .log_dir = options_.dir + "/" + kCheckLogs};
    const active::ScheduleIo io{.runner = &runner_,
                                .slurm_env = lab::SlurmEnv(lab_dir_),
                                .db_path = sys::AbsolutePath(io_.evaluation.host.db_path),
                                .cmax_binary = node_cmax,
                                .cmax_version = io_.evaluation.host.cmax_version,
                                .host = sys::Hostname(),
                                .clock = io_.evaluation.host.clock,
                                .provider = provider,
                                .interrupted = io_.evaluation.host.interrupted};
    Say("lab: the provider's weekly active checks (cmax health schedule)");
    auto submitted = active::ScheduleActiveChecks(schedule, io);
    if (!submitted) {
      return Fail(submitted.error().code, "the provider's weekly active checks: {}",
                  submitted.error().message);
    }
    std::vector<std::string> jobs;
    for (const active::ScheduleDecision& d : submitted->decisions) {
      if (!d.job_id.empty()) jobs.push_back(d.job_id);
      Say(fmt::format("lab: {}: {}", d.node,
                      !d.job_id.empty()   ? fmt::format("check job {} {}", d.job_id, d.outcome)
                      : d.outcome.empty() ? d.why
                                          : d.outcome + " (" + d.why + ")"));
    }
    if (!jobs.empty() && !JobsEnded(jobs)) {
      if (Interrupted()) {
        return Fail(ErrorCode::kInterrupted,
                    "interrupted while the provider's active checks ran (jobs {})",
                    Join(jobs, ", "));
      }
      // Not left on the nodes the evaluation is about to fault: its view says they are unchecked.
      sys::ProcessSpec scancel{.argv = {"scancel"}, .env_add = lab::SlurmEnv(lab_dir_)};
      scancel.argv.insert(scancel.argv.end(), jobs.begin(), jobs.end());
      scancel.timeout = 10s;
      (void)runner_.Run(scancel);
      Say(
          fmt::format("lab: the active checks (jobs {}) did not end within 60 s: cancelled; "
                      "their output: {}/{}",
                      Join(jobs, ", "), options_.dir, kCheckLogs));
    }
    // The next day's pass: the fleet's view with the checks just made, nothing submitted (a check
    // that recorded nothing leaves its node unchecked there, and the phase says so).
    schedule.submit = false;
    auto view = active::ScheduleActiveChecks(schedule, io);
    if (!view) {
      return Fail(view.error().code, "the provider's fleet view: {}", view.error().message);
    }
    Say(fmt::format("lab: the fleet's view (run {}): {}", view->run_id,
                    view->fleet.finding.message));
    return {};
  }

  // Until none of `jobs` is in Slurm's queue any more, 60 s at most, or the evaluation is
  // interrupted.
  bool JobsEnded(const std::vector<std::string>& jobs) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline && !Interrupted()) {
      sys::ProcessSpec squeue{.argv = {"squeue", "-h", "-j", Join(jobs, ","), "-o", "%i"},
                              .env_add = lab::SlurmEnv(lab_dir_)};
      squeue.timeout = 10s;
      auto queue = runner_.Run(squeue);
      // A job long gone is "Invalid job id" to squeue: ended too.
      if (queue &&
          (queue->Succeeded() ? Trim(queue->stdout_text).empty()
                              : queue->stderr_text.find("Invalid job id") != std::string::npos)) {
        return true;
      }
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  // The node's CUDA probes, through their stand-in (libcmax-probes-sim.so): figures a healthy
  // H100 SXM reaches (BF16 GEMM above 80 % of its 989 TFLOP/s peak, copies above the limits).
  Result<void> WriteProbes(int index) {
    std::string devices;
    std::string gemm;
    std::string hbm;
    std::string in;
    std::string out;
    for (int g = 0; g < kGpusPerNode; ++g) {
      const char* comma = g == 0 ? "" : ", ";
      devices += fmt::format("{}\"{}\"", comma, BusId(index, g));
      // Each node's own figures, so that a node reading another's file would show.
      gemm += fmt::format("{}{}", comma, 805 + 10 * index + g);
      hbm += fmt::format("{}{}", comma, 3010 + 20 * index + 2 * g);
      in += fmt::format("{}55.{}", comma, g);
      out += fmt::format("{}53.{}", comma, g);
    }
    return fs_.WriteFileAtomic(
        ProbesState(index),
        fmt::format("{{\"devices\": [{}], \"gemm_bf16\": [{}], \"hbm_copy\": [{}], "
                    "\"host_to_device\": [{}], \"device_to_host\": [{}]}}\n",
                    devices, gemm, hbm, in, out),
        0644);
  }
  std::string ProbesState(int index) const {
    return options_.dir + "/" + lab::NodeName(index + 1) + "-probes.json";
  }

  // cmax as the lab's nodes run it for their checks: every node of the lab is this host, so the
  // node a job runs on ($SLURMD_NODENAME) picks its GPUs' and probes' files.
  std::string NodeCmaxScript() const {
    const std::string dir = ShellQuote(options_.dir + "/");
    return fmt::format(
        "#!/bin/sh\n"
        "# cmax on a node of the simulated provider (written by cmax run --lab): the node's\n"
        "# GPUs and CUDA probes are stand-ins, read from its own files in this folder.\n"
        "node=\"${{SLURMD_NODENAME:?the lab nodes run this in their Slurm jobs}}\"\n"
        "export CMAX_NVML_LIB={} CMAX_PROBES_LIB={}\n"
        "export CMAX_NVML_SIM_STATE={}\"$node-nvml.json\" CMAX_PROBES_SIM={}\"$node-probes.json\"\n"
        "exec {} \"$@\"\n",
        ShellQuote(io_.nvml_sim_lib), ShellQuote(io_.probes_sim_lib), dir, dir,
        ShellQuote(io_.cmax_binary));
  }

  void ControllerPass() {
    remediate::ControllerSettings settings;
    settings.act = true;
    settings.validation_command = "true";
    settings.reset_command = "true";
    settings.breaker_percent = 100;
    settings.no_spares = true;
    auto pass = remediate::RunControllerLoop(
        settings, {.once = true},
        {.db_path = options_.dir + "/provider.db",
         .fs = &fs_,
         .runner = &runner_,
         .clock = io_.evaluation.host.clock,
         .stop = [] { return false; },
         .error = [this](std::string_view why) { Keep(fmt::format("lab: controller: {}", why)); }});
    if (!pass) Keep("lab: controller: " + pass.error().message);
  }

  void Keep(std::string line) {
    std::lock_guard lock(said_mutex_);
    controller_said_.push_back(std::move(line));
  }

  const LabEvaluationOptions& options_;
  const LabEvaluationIo& io_;
  const ProviderProfile& profile_;
  sys::FileSystem& fs_;
  sys::PosixProcessRunner runner_;
  std::string lab_dir_;
  // The phases run Slurm's commands, which find the lab's controller through SLURM_CONF.
  std::optional<sys::ScopedEnv> slurm_conf_;
  std::optional<sys::ScopedEnv> nvml_lib_;
  std::optional<sys::ScopedEnv> nvml_state_;
  std::optional<sys::ScopedEnv> probes_lib_;
  std::optional<sys::ScopedEnv> probes_state_;
  std::vector<Started> agents_;
  std::optional<sys::LeftBehind> left_;  // said if a second Ctrl-C ends us
  std::unique_ptr<endpoint::SimServer> sim_;
  std::atomic<bool> sim_stop_{false};
  std::thread sim_thread_;
  std::thread controller_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_controller_ = false;
  std::mutex said_mutex_;
  std::vector<std::string> controller_said_;
};

}  // namespace

const std::vector<ProviderProfile>& ProviderProfiles() {
  static const std::vector<ProviderProfile> kProfiles = {
      {.name = "good",
       .summary = "an agent on every node drains, resets and validates a faulty GPU at once; "
                  "active checks on idle nodes weekly; attested; its endpoint answers every "
                  "request",
       .checks = ProviderProfile::Checks::kAgents},
      {.name = "slow",
       .summary = "agents report faults, but the provider acts on them only every 7.5 s (7.5 "
                  "min at the real scale); active checks on idle nodes weekly; attested; its "
                  "endpoint answers every request",
       .checks = ProviderProfile::Checks::kSlowController,
       .interval_s = 7.5},
      {.name = "negligent",
       .summary = "no health checks: nothing drains a faulty node; a GPU driver from 2023, "
                  "without its branch's security fixes; no attestation; 5% of its endpoint's "
                  "requests fail and it caches no prompt prefix; one host's network link runs "
                  "at 200 Mbit/s",
       .checks = ProviderProfile::Checks::kNone,
       .attestation = false,
       .endpoint_error_share = 0.05,
       .stale_driver = true,
       .prefix_cache = false,
       .weekly_checks = false,
       .slow_link = "h3:200mbit"},
  };
  return kProfiles;
}

const ProviderProfile* FindProviderProfile(std::string_view name) {
  for (const ProviderProfile& p : ProviderProfiles()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Result<Evaluation> EvaluateLab(const LabEvaluationOptions& asked, const LabEvaluationIo& asked_io) {
  LabEvaluationOptions options = asked;
  const bool named = !options.dir.empty();
  if (!named) options.dir = store::BesideStore(asked_io.evaluation.host.db_path, "lab-run");
  options.dir = sys::AbsolutePath(options.dir);
  // The folder's path is written into the plan (YAML, UTF-8).
  if (SanitizeUtf8(options.dir) != options.dir) {
    return Fail(ErrorCode::kInvalidArgument, "the lab's folder is not valid UTF-8: {}",
                SanitizeUtf8(options.dir));
  }

  LabEvaluationIo io = asked_io;
  // The stand-ins the build puts beside cmax: ../lib/ from its folder.
  for (auto [lib, name] : {std::pair{&io.nvml_sim_lib, "libnvml-sim.so"},
                           std::pair{&io.probes_sim_lib, "libcmax-probes-sim.so"}}) {
    if (!lib->empty() || io.cmax_binary.find('/') == std::string::npos) continue;
    const std::string beside =
        io.cmax_binary.substr(0, io.cmax_binary.rfind('/') + 1) + "../lib/" + name;
    if (io.evaluation.host.fs->Exists(beside)) *lib = beside;
  }
  const ProviderProfile* profile = FindProviderProfile(options.profile);
  if (profile == nullptr) {
    std::vector<std::string> names;
    for (const ProviderProfile& p : ProviderProfiles()) names.push_back(p.name);
    return Fail(ErrorCode::kInvalidArgument, "no provider profile \"{}\" (profiles: {})",
                SanitizeUtf8(options.profile), Join(names, ", "));
  }
  lab::LabSpec spec;
  spec.dir = options.dir + "/lab";
  spec.nodes = kNodes;
  spec.controller_port = options.port_base;
  spec.first_node_port = options.port_base + 1;
  if (const std::vector<std::string> lacks = lab::Preflight(spec); !lacks.empty()) {
    return Fail(ErrorCode::kUnavailable, "the lab needs what this machine lacks: {}",
                Join(lacks, "; "));
  }
  sys::FileSystem& fs = *io.evaluation.host.fs;
  if (auto ok = CheckLabFolder(options.dir, named, io.evaluation.host.db_path, fs); !ok)
    return tl::unexpected(ok.error());
  if (auto ok = fs.CreateDirs(options.dir, 0700); !ok) return tl::unexpected(ok.error());
  if (auto ok = fs.WriteFileAtomic(options.dir + "/" + kLabFolderMark,
                                   "cmax run --lab's folder: each evaluation cleans it\n", 0600);
      !ok) {
    return tl::unexpected(ok.error());
  }
  // A folder used before holds the last provider's stores (a journal that remembers gpu1's
  // last fault would send it to repair this time), logs and files: each evaluation starts
  // clean. Only what this code writes there is removed.
  if (auto names = fs.ListDir(options.dir)) {
    for (const std::string& name : *names) {
      if (IsLabProviderFile(name)) (void)fs.RemoveFile(options.dir + "/" + name);
    }
  }
  const std::string check_logs = options.dir + "/" + kCheckLogs;
  std::error_code ignored;
  if (auto names = fs.ListDir(check_logs);
      names && !std::filesystem::is_symlink(check_logs, ignored)) {
    for (const std::string& name : *names) {
      if (name.ends_with(".out")) (void)fs.RemoveFile(check_logs + "/" + name);
    }
  }

  const std::string network_logs = options.dir + "/" + kNetworkLogs;
  if (!std::filesystem::is_symlink(network_logs, ignored)) {
    std::filesystem::remove_all(network_logs, ignored);
  }

  const std::string provider = fmt::format("cmax lab ({})", profile->name);
  // A build whose built-in rubric is broken stops at its first use: here, before any daemon
  // starts, rather than with the lab up.
  (void)rate::Rubric::Builtin();
  SimulatedProvider simulated(options, io, *profile);
  const WallTime since = io.evaluation.host.clock->Now();
  if (auto ok = simulated.BringUp(spec, provider); !ok) return tl::unexpected(ok.error());

  const WallTime now = io.evaluation.host.clock->Now();
  const std::string plan = options.dir + "/plan.yaml";
  const bool fabric = !io.evaluation.cpu_perf.empty() && fs.Exists(io.evaluation.cpu_perf);
  const std::string train_sim =
      io.cmax_binary.substr(0, io.cmax_binary.rfind('/') + 1) + "cmax-train-sim";
  const std::string training =
      fabric && fs.Exists(train_sim)
          ? TrainingYaml(*profile, train_sim, network_logs + "/train-traces")
          : std::string();
  for (const auto& [path, text] :
       {std::pair{options.dir + "/scenario.yaml", ScenarioYaml()},
        std::pair{plan, PlanYaml(*profile, provider, since, simulated.SimPort(),
                                 simulated.ProbesSimulated(), fabric, training)},
        std::pair{options.dir + "/attestation.yaml",
                  profile->attestation ? AttestationYaml(provider, now) : std::string()}}) {
    if (text.empty()) continue;
    if (auto ok = fs.WriteFileAtomic(path, text, 0600); !ok) return tl::unexpected(ok.error());
  }

  EvaluationOptions evaluation = options.evaluation;
  evaluation.plan = plan;
  evaluation.attestation.clear();
  evaluation.time_scale = kLabTimeScale;
  evaluation.logs_dir = network_logs;
  EvaluationIo eio = io.evaluation;
  eio.before_phase = [&simulated, outer = io.evaluation.before_phase](const std::string& kind,
                                                                      const std::string& name) {
    simulated.BeforePhase(kind);
    if (outer) outer(kind, name);
  };
  // The lab's provider name is the plan's, whatever --provider says: its runs are a lab's.
  eio.host.env = [outer = io.evaluation.host.env](const std::string& name) {
    return name == "CMAX_PROVIDER" || !outer ? std::string() : outer(name);
  };
  auto result = Evaluate(evaluation, eio);
  simulated.TakeDown();
  return result;
}

}  // namespace cmax::evaluate
