#include "active/active_run.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/slurm_jobs.hpp"

namespace cmax::active {
namespace {

constexpr Duration kNvbandwidthDeadline = std::chrono::minutes(5);
constexpr Duration kAllReduceDeadline = std::chrono::minutes(5);
// The quick probes take seconds a GPU (a cuBLAS start, then well under a second of work each).
constexpr Duration kProbeDeadline = std::chrono::minutes(3);
// Past the burn's own time: its start (cuBLAS on every GPU) and its stop.
constexpr Duration kBurnGrace = std::chrono::minutes(1);

Finding Skip(const std::string& check_id, std::string message) {
  return {.check_id = check_id,
          .status = CheckStatus::kSkip,
          .observed = "not run",
          .message = std::move(message)};
}

constexpr std::string_view kConditionPrefix = "active/";

// NVML sees a moment: a node given to another's job may have idle GPUs then (the job loading
// its data, between its steps). Slurm, where it is here to ask, says whether it is: why the node
// is left alone, or "" (what Slurm could not say is noted, and NVML's answer stands).
std::string OthersJobsOnThisNode(const std::string& node, const std::string& own_job,
                                 const ToolIo& tools, std::vector<std::string>& notes) {
  if (tools.runner == nullptr) return {};
  sys::OthersJobsAnswer answer = sys::AskOthersJobsOn(
      {.hosts = {node}, .own_job = own_job, .find_program = tools.find_program}, *tools.runner);
  std::ranges::move(answer.unchecked, std::back_inserter(notes));
  if (answer.in_use.empty()) return {};
  return fmt::format("others' Slurm jobs run on {}; --force runs the checks beside them",
                     sys::DescribeHostsInUse(answer.in_use));
}

}  // namespace

std::vector<NodeCondition> ActiveConditions(const std::vector<Finding>& findings, bool second_look,
                                            const std::string& node, WallTime now,
                                            const std::vector<NodeCondition>& before) {
  const auto previous = [&](const std::string& key) -> const NodeCondition* {
    for (const NodeCondition& c : before) {
      if (c.node == node && c.key == key) return &c;
    }
    return nullptr;
  };
  std::vector<NodeCondition> changed;
  const auto open = [&](const std::string& check_id, Severity severity, std::string message) {
    NodeCondition c{.node = node,
                    .key = std::string(kConditionPrefix) + check_id,
                    .component = check_id.starts_with("active.nccl") ? "node" : "gpu",
                    .kind = check_id,
                    .severity = severity,
                    .action = "none",
                    .action_source = "cmax health --active",
                    .message = std::move(message),
                    .count = 1,
                    .first_seen = now,
                    .last_seen = now};
    if (const NodeCondition* was = previous(c.key); was != nullptr && !was->recovered) {
      c.count = was->count + 1;
      c.first_seen = was->first_seen;
    }
    changed.push_back(std::move(c));
  };
  std::vector<std::string> failed;
  for (const Finding& f : findings) {
    if (f.status != CheckStatus::kFail) continue;
    // A FAIL is serious however its check graded it: a figure below a published limit under
    // dummy work is what the quarantine's validation is for.
    open(f.check_id, std::max(f.severity, Severity::kHigh), f.message);
    failed.push_back(f.check_id);
  }
  if (second_look) {
    open("second-look", Severity::kLow,
         "a tool hung and was killed at cmax's deadline: look at this node again before acting");
    failed.emplace_back("second-look");
  }
  // What passed (or was not asked about and did not fail) recovers what it had opened.
  for (const NodeCondition& c : before) {
    if (c.node != node || c.recovered || !c.key.starts_with(kConditionPrefix)) continue;
    const std::string check_id = c.key.substr(kConditionPrefix.size());
    if (std::ranges::find(failed, check_id) != failed.end()) continue;
    const bool passed =
        check_id == "second-look" || std::ranges::any_of(findings, [&](const Finding& f) {
          return f.check_id == check_id && f.status == CheckStatus::kPass;
        });
    if (!passed) continue;
    NodeCondition recovered = c;
    recovered.recovered = true;
    recovered.last_seen = now;
    recovered.message = check_id == "second-look" ? "every tool answered within its deadline"
                                                  : check_id + " passed again";
    changed.push_back(std::move(recovered));
  }
  return changed;
}

std::string BusyGpus(const sys::NvmlSnapshot& snapshot) {
  std::vector<std::string> busy;
  for (const sys::GpuReading& g : snapshot.gpus) {
    if (!g.compute_processes || !g.utilization_percent) {
      busy.push_back(fmt::format("GPU {} (use unknown)", g.index));
    } else if (*g.compute_processes > 0 || *g.utilization_percent > 0) {
      busy.push_back(fmt::format("GPU {} ({} process{}, {} % busy)", g.index, *g.compute_processes,
                                 *g.compute_processes == 1 ? "" : "es", *g.utilization_percent));
    }
  }
  return Join(busy, ", ");
}

Result<ActiveRunReport> RunActiveHealth(const ActiveRunOptions& options, const ActiveRunIo& io) {
  const ActiveThresholds& thresholds = ActiveThresholds::Builtin();
  const GpuClass* forced_class = nullptr;
  if (!options.gpu_class.empty()) {
    forced_class = thresholds.Find(options.gpu_class);
    if (forced_class == nullptr) {
      std::vector<std::string> ids;
      for (const GpuClass& c : thresholds.Classes()) ids.push_back(c.id);
      return Fail(ErrorCode::kInvalidArgument, "--gpu-class {}: not a class of the table ({})",
                  SanitizeUtf8(options.gpu_class), Join(ids, ", "));
    }
  }
  const WallTime started = io.clock->Now();
  const int level = options.level == ActiveLevel::kQuick ? 1 : 3;
  const std::string level_name = options.level == ActiveLevel::kQuick ? "quick" : "full";
  const auto deadline = [&](Duration fallback) {
    return options.deadline_s > 0 ? SecondsAsDuration(options.deadline_s) : fallback;
  };

  ActiveRunReport report;
  ToolIo tools = io.tools;
  tools.hung = [&report](const std::string&) { report.second_look = true; };
  std::vector<Finding> findings;
  std::vector<Metric> metrics;
  nlohmann::json gpus = nlohmann::json::array();
  const GpuClass* gpu_class = forced_class;
  std::string not_run;  // why the node is not exercised, "" when it is
  auto snapshot = io.snapshot ? io.snapshot()
                              : Result<sys::NvmlSnapshot>(tl::unexpected(
                                    Error{ErrorCode::kUnavailable, "no NVML reader"}));
  if (!snapshot || snapshot->gpus.empty()) {
    not_run = snapshot
                  ? "NVML lists no GPU on this node"
                  : fmt::format("no NVIDIA GPU to exercise (NVML: {})", snapshot.error().message);
  } else {
    for (const sys::GpuReading& g : snapshot->gpus) {
      gpus.push_back({{"index", g.index}, {"name", SanitizeUtf8(g.name)}});
    }
    if (gpu_class == nullptr) gpu_class = thresholds.ClassOf(snapshot->gpus.front().name);
    for (const sys::GpuReading& g : snapshot->gpus) {
      if (g.name != snapshot->gpus.front().name) {
        report.notes.push_back(fmt::format("GPUs of more than one model ({} and {}): judged as {}",
                                           SanitizeUtf8(g.name),
                                           SanitizeUtf8(snapshot->gpus.front().name),
                                           gpu_class != nullptr ? gpu_class->id : "no class"));
        break;
      }
    }
    if (const std::string busy = BusyGpus(*snapshot); !busy.empty() && !options.force) {
      not_run = fmt::format("GPUs in use or of unknown use: {}; --force exercises them", busy);
    } else if (!options.force) {
      not_run = OthersJobsOnThisNode(io.host, options.own_job, io.tools, report.notes);
    }
  }

  // The run is in the store from here, each check's findings written as the check ends: a
  // check killed half-way (a full level takes most of an hour) keeps those before it.
  auto recorded =
      store::BeginRecordedRun(io.db_path, {.command = "health",
                                           .target = fmt::format("active checks ({})", level_name),
                                           .host = io.host,
                                           .started_at = started,
                                           .cmax_version = io.cmax_version,
                                           .provider = io.provider});
  if (!recorded) return tl::unexpected(recorded.error());
  store::RunWriter& writer = recorded->writer;
  const auto evidence = [&] {
    return std::vector<EvidenceItem>{
        {"active.level", nlohmann::json(level_name).dump()},
        {"active.gpus", gpus.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)},
        {"active.gpu_class", gpu_class != nullptr ? nlohmann::json(gpu_class->id).dump() : "null"},
        {"active.second_look", nlohmann::json(report.second_look).dump()}};
  };
  size_t findings_kept = 0;
  size_t metrics_kept = 0;
  Result<void> kept;  // the first write that failed, if one did: later ones are not tried
  const auto keep = [&] {
    if (!kept) return;
    kept = writer.Add(
        evidence(), {findings.begin() + static_cast<std::ptrdiff_t>(findings_kept), findings.end()},
        {metrics.begin() + static_cast<std::ptrdiff_t>(metrics_kept), metrics.end()});
    findings_kept = findings.size();
    metrics_kept = metrics.size();
  };
  keep();

  // Each check's wall time, recorded: what a quick pass costs a node, check by check.
  const auto timed = [&](const char* check, const auto& work) {
    if (!kept) return;  // the store took no more: what the checks found could not be kept
    const WallTime begun = io.clock->Now();
    work();
    metrics.push_back({.name = "active.check_seconds",
                       .labels = {{"check", check}},
                       .value = std::chrono::duration<double>(io.clock->Now() - begun).count(),
                       .unit = "s"});
    keep();
  };
  const auto add = [&](std::vector<Finding> more) {
    for (Finding& f : more) findings.push_back(std::move(f));
  };
  if (!not_run.empty()) {
    findings.push_back(Skip("active.dcgm-diag", not_run));
    findings.push_back(Skip("active.nvbandwidth", not_run));
    findings.push_back(Skip("active.probe", not_run));
    findings.push_back(Skip("active.nccl.local-all-reduce", not_run));
  } else {
    timed("dcgm-diag",
          [&] { add(RunDcgmDiag(level, deadline(DefaultDiagDeadline(level)), tools)); });
    timed("nvbandwidth", [&] {
      add(RunNvbandwidth(gpu_class, thresholds, deadline(kNvbandwidthDeadline), tools));
    });
    const std::map<std::string, unsigned> by_bus = IndexByBusId(*snapshot);
    const ProbeRunIo probe_io{.tools = tools, .program = io.probe_program, .env = io.probe_env};
    const auto take = [&](ProbeVerdict verdict) {
      add(std::move(verdict.findings));
      for (Metric& m : verdict.metrics) metrics.push_back(std::move(m));
    };
    // The burn is the same program: where the probes could not run at all (no CUDA, no
    // cmax-probe), neither can it, and trying would cost its start for the same SKIP.
    std::string probes_skipped;
    timed("probes", [&] {
      ProbeVerdict verdict =
          RunCudaProbes(by_bus, gpu_class, thresholds, deadline(kProbeDeadline), probe_io);
      if (!verdict.findings.empty() && std::ranges::all_of(verdict.findings, [](const Finding& f) {
            return f.status == CheckStatus::kSkip;
          })) {
        probes_skipped = verdict.findings.front().message;
      }
      take(std::move(verdict));
    });
    const auto gpu_count = static_cast<unsigned>(snapshot->gpus.size());
    timed("local-all-reduce", [&] {
      add(RunLocalAllReduce(gpu_count, false, gpu_class, thresholds, deadline(kAllReduceDeadline),
                            tools));
    });
    // Through the adapters only at full level, and only where the class has a published limit
    // for it (or the class is unknown): a figure nothing judges would only say "unknown".
    if (options.level == ActiveLevel::kFull &&
        (gpu_class == nullptr ||
         thresholds.For(*gpu_class, "nccl.ib_loopback_all_reduce_busbw_gbs"))) {
      timed("ib-loopback-all-reduce", [&] {
        add(RunLocalAllReduce(gpu_count, true, gpu_class, thresholds, deadline(kAllReduceDeadline),
                              tools));
      });
    }
    // The burn last: it heats the GPUs, which the figures above should not inherit.
    const double burn_s =
        options.burn_s.value_or(options.level == ActiveLevel::kFull ? kFullBurnSeconds : 0);
    if (burn_s > 0) {
      LookAtGpus look;
      std::string watch_error;
      if (io.watch_gpus && probes_skipped.empty()) {
        if (auto watch = io.watch_gpus()) {
          look = std::move(*watch);
        } else {
          watch_error = watch.error().message;
        }
      }
      if (!probes_skipped.empty()) {
        findings.push_back(
            Skip("active.burn",
                 "the burn runs in cmax-probe, which could not run the probes: " + probes_skipped));
      } else if (!look) {
        findings.push_back(
            Skip("active.burn", fmt::format("the burn needs NVML to be watched and it cannot be "
                                            "({}): a GPU falling off the bus would go unseen",
                                            watch_error.empty() ? "no NVML" : watch_error)));
      } else {
        timed("burn",
              [&] { take(RunBurn(by_bus, burn_s, kBurnGrace, io.watch_every, look, probe_io)); });
      }
    }
  }
  // The rails to a peer, when asked: GPUs are not needed (a node without any still has its
  // adapters), but a node whose GPUs are in use has a tenant, whose traffic it would disturb.
  // No GPU: NVML lists none, or there is no NVML library at all (no NVIDIA driver). NVML there
  // but failing is a GPU of unknown use, left alone as a busy one is.
  const bool no_gpu =
      snapshot ? snapshot->gpus.empty() : snapshot.error().message.starts_with(sys::kNvmlNotFound);
  // Without GPUs, whether the node has a tenant is Slurm's to say alone.
  std::string rails_not_run = no_gpu ? std::string() : not_run;
  if (options.ib_pair && no_gpu && !options.force) {
    rails_not_run = OthersJobsOnThisNode(io.host, options.own_job, io.tools, report.notes);
  }
  if (options.ib_pair && rails_not_run.empty()) {
    timed("ib-write-bw", [&] {
      const sys::LocalFileSystem fs;
      const IbPairIo pair_io{
          .tools = tools,
          .read_file = [&fs](const std::string& path) -> std::optional<std::string> {
            auto text = fs.ReadFile(path, 4096);
            return text ? std::optional(*text) : std::nullopt;
          },
          .list_dir =
              [&fs](const std::string& path) {
                auto names = fs.ListDir(path);
                return names ? *names : std::vector<std::string>();
              }};
      IbPairVerdict verdict = RunIbPairs(*options.ib_pair, deadline(kIbPairDeadline), pair_io);
      add(std::move(verdict.findings));
      for (Metric& m : verdict.metrics) metrics.push_back(std::move(m));
      report.second_look = report.second_look || verdict.second_look;
    });
  } else if (options.ib_pair) {
    findings.push_back(Skip("active.ib-write-bw", rails_not_run));
  }
  keep();
  if (!kept) {
    (void)writer.FinishWithError(store::kRunError, io.clock->Now());
    return tl::unexpected(kept.error());
  }
  auto outcome = writer.Finish(0, io.clock->Now());
  if (!outcome) return tl::unexpected(outcome.error());
  auto record = recorded->store->LoadRun(writer.RunId());
  if (!record) return tl::unexpected(record.error());
  report.record = std::move(*record);
  report.exit_code = outcome->exit_code;

  // What remediation reads: the node's conditions, in the same store.
  store::Store& store = *recorded->store;
  auto before = store.LoadConditions(io.host);
  if (!before) return tl::unexpected(before.error());
  const std::vector<NodeCondition> changed =
      ActiveConditions(findings, report.second_look, io.host, io.clock->Now(), *before);
  if (!changed.empty()) {
    if (auto saved = store.SaveConditions(changed, {}); !saved) {
      return tl::unexpected(saved.error());
    }
  }
  report.conditions = changed;
  if (report.second_look) {
    report.notes.emplace_back(
        "a tool hung and was killed at cmax's deadline: look at this node again before acting on "
        "it");
  }
  for (const NodeCondition& c : changed) {
    report.notes.push_back(
        fmt::format("node condition {} on {} {}", c.key, c.node,
                    c.recovered ? std::string("recovered")
                                : fmt::format("({}, seen {} time{})", SeverityName(c.severity),
                                              c.count, c.count == 1 ? "" : "s")));
  }
  return report;
}

Duration LongestActiveRun(const ActiveRunOptions& options, int rails) {
  const auto deadline = [&](Duration fallback) {
    return options.deadline_s > 0 ? SecondsAsDuration(options.deadline_s) : fallback;
  };
  const bool full = options.level == ActiveLevel::kFull;
  // A tool past its deadline is killed: the runner's grace for one that will not die.
  constexpr Duration kKillGrace = std::chrono::seconds(10);
  Duration longest = deadline(DefaultDiagDeadline(full ? 3 : 1)) + deadline(kNvbandwidthDeadline) +
                     deadline(kProbeDeadline) + deadline(kAllReduceDeadline) + 4 * kKillGrace;
  if (full) longest += deadline(kAllReduceDeadline) + kKillGrace;  // through the adapters
  const double burn_s = options.burn_s.value_or(full ? kFullBurnSeconds : 0);
  if (burn_s > 0) longest += SecondsAsDuration(burn_s) + kBurnGrace;
  if (options.ib_pair) {
    const size_t count =
        options.ib_pair->rails.empty() ? static_cast<size_t>(rails) : options.ib_pair->rails.size();
    longest += static_cast<Duration::rep>(count) *
               (IbRailWindow(*options.ib_pair, deadline(kIbPairDeadline)) + kKillGrace);
  }
  // cmax's start, squeue and sinfo (30 s each at most), NVML, and the store's write.
  return longest + std::chrono::minutes(3);
}

ActiveLevel ActiveLevelNamed(std::string_view name) {
  return name == "full" ? ActiveLevel::kFull : ActiveLevel::kQuick;
}

}  // namespace cmax::active
