#include "evaluate/evaluation.hpp"

#include <fmt/format.h>

#include "active/active_run.hpp"
#include "core/strings.hpp"
#include "endpoint/load_run.hpp"
#include "evaluate/plan_file.hpp"
#include "health/log_scanner.hpp"
#include "health/passive_run.hpp"
#include "net/mpi_launch.hpp"
#include "net/nccl_analyze_run.hpp"
#include "net/nccl_sweep.hpp"
#include "net/netns_lab.hpp"
#include "rate/rate_run.hpp"
#include "reliability/scenario_run.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/nvml.hpp"
#include "train/trace_run.hpp"
#include "train/train_runner.hpp"

namespace cmax::evaluate {
namespace {

constexpr size_t kMaxPlanBytes = size_t{1} << 20;

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Result<Plan> ReadPlan(const std::string& path, sys::FileSystem& fs) {
  if (path.empty()) return Plan{};
  auto text = fs.ReadFile(path, kMaxPlanBytes);
  if (!text) {
    // A signal while a FIFO given as the plan waited for its writer is an interruption (exit
    // 128+N), not a plan that cannot be read.
    return Fail(text.error().code == ErrorCode::kInterrupted ? ErrorCode::kInterrupted
                                                             : ErrorCode::kInvalidArgument,
                "cannot read the plan {}: {}", path, text.error().message);
  }
  auto plan = ParsePlan(*text, FolderOf(path));
  if (!plan) return Fail(ErrorCode::kInvalidArgument, "{}: {}", path, plan.error().message);
  return plan;
}

// "endpoint chat", or "health" for the phases that are one per run.
std::string Named(const std::string& kind, const std::string& name) {
  return kind == name ? kind : kind + " " + name;
}

PhaseOutcome Untested(std::string kind, std::string name, std::string reason) {
  return {.kind = std::move(kind),
          .name = std::move(name),
          .state = PhaseState::kUntested,
          .reason = std::move(reason)};
}

// A phase whose engine returned an error: what the user gave (or this host lacks) leaves it
// untested; anything else is a failure of the phase.
PhaseOutcome FromError(std::string kind, std::string name, const Error& error) {
  PhaseOutcome out = Untested(std::move(kind), std::move(name), error.message);
  if (error.code != ErrorCode::kInvalidArgument && error.code != ErrorCode::kUnavailable &&
      error.code != ErrorCode::kNotFound) {
    out.state = PhaseState::kFailed;
  }
  return out;
}

// One phase's result as the evaluation keeps it: the outcome and, when it recorded one, its run.
struct PhaseResult {
  PhaseOutcome outcome;
  std::optional<RunRecord> run;
};

PhaseResult FromRun(std::string kind, std::string name, RunRecord run) {
  PhaseOutcome outcome = OutcomeOfRun(std::move(kind), std::move(name), run.run);
  return {std::move(outcome), std::move(run)};
}

class PhaseRunner {
 public:
  PhaseRunner(const EvaluationOptions& options, const EvaluationIo& io, std::string provider)
      : options_(options), io_(io), provider_(std::move(provider)) {}

  PhaseResult Health(const Plan& plan) const {
    if (!plan.health) return {Untested("health", "health", "the plan turns it off"), {}};
    const audit::HostRunIo& h = io_.host;
    auto report = health::RunPassiveHealth({.since = plan.health_since},
                                           {.db_path = h.db_path,
                                            .cmax_version = h.cmax_version,
                                            .provider = provider_,
                                            .interrupted = h.interrupted,
                                            .interrupt_signal = h.interrupt_signal});
    if (!report) return {FromError("health", "health", report.error()), {}};
    if (!report->record) return {Untested("health", "health", "it recorded no run"), {}};
    return FromRun("health", "health", std::move(*report->record));
  }

  // This host exercised (cmax health --active) when the plan gives a level. A run whose every
  // check was skipped (no GPU, GPUs in use) is kept but UNTESTED, with the first skip's reason.
  PhaseResult Active(const ActivePhasePlan& plan) const {
    if (plan.level.empty()) {
      return {Untested("active", "active",
                       "the plan does not ask for this host's active checks (active: {level: "
                       "quick}): they exercise its GPUs"),
              {}};
    }
    const audit::HostRunIo& h = io_.host;
    active::ActiveRunOptions options{.level = active::ActiveLevelNamed(plan.level),
                                     .force = options_.force,
                                     .gpu_class = plan.gpu_class,
                                     .deadline_s = plan.deadline_s,
                                     .burn_s = plan.burn_s};
    if (h.env) options.own_job = h.env("SLURM_JOB_ID");
    auto report = active::RunActiveHealth(
        options, {.db_path = h.db_path,
                  .cmax_version = h.cmax_version,
                  .provider = provider_,
                  .host = sys::ThisNodeName(""),
                  .clock = h.clock,
                  .tools = {.runner = h.runner, .find_program = sys::FindProgram},
                  .snapshot = [] { return sys::ReadNvmlSnapshot(); },
                  .probe_program = io_.probe_program,
                  .watch_gpus = [] { return active::NvmlLook(); }});
    if (!report) return {FromError("active", "active", report.error()), {}};
    for (const std::string& note : report->notes) Say("active: " + note);
    PhaseResult result = FromRun("active", "active", std::move(report->record));
    const std::vector<Finding>& findings = result.run->findings;
    const bool all_skipped =
        !findings.empty() && std::ranges::all_of(findings, [](const Finding& f) {
          return f.status == CheckStatus::kSkip;
        });
    if (all_skipped && result.outcome.state == PhaseState::kRan) {
      result.outcome.state = PhaseState::kUntested;
      result.outcome.reason = "every check skipped: " + findings.front().message;
    }
    return result;
  }

  // The fleet's newest view (`cmax health schedule`'s run) in the store, when recent enough to
  // say how the provider checks its nodes now: the evaluated provider's own, when the evaluation
  // names one (another provider's fleet says nothing of this one), else the newest.
  PhaseResult Fleet(const ActivePhasePlan& plan) const {
    const char* const name = "active-fleet";
    if (!plan.fleet) return {Untested("active", name, "the plan turns it off"), {}};
    const audit::HostRunIo& h = io_.host;
    auto store = store::Store::Open({.path = h.db_path, .create = false, .read_only = true});
    if (!store) return {FromError("active", name, store.error()), {}};
    const std::string provider =
        !provider_.empty() ? provider_ : (h.env ? h.env("CMAX_PROVIDER") : std::string());
    // Of the evaluated provider, or of anyone's; none is a phase UNTESTED, a store that cannot
    // answer is an error of the phase.
    auto found = provider.empty()
                     ? store->LatestRunId("health", "active schedule", /*closed_only=*/true)
                     : store->LatestProviderRunId(provider, "health", "active schedule",
                                                  /*closed_only=*/true);
    if (!found && found.error().code != ErrorCode::kNotFound) {
      return {FromError("active", name, found.error()), {}};
    }
    const std::optional<int64_t> newest = found ? std::optional(*found) : std::nullopt;
    if (!newest) {
      return {Untested("active", name,
                       fmt::format("no fleet view{} in the store: cmax{} health schedule checks "
                                   "the idle nodes weekly and records one",
                                   provider.empty() ? "" : " of " + provider,
                                   provider.empty() ? "" : " --provider " + provider)),
              {}};
    }
    auto run = store->LoadRun(*newest);
    if (!run) return {FromError("active", name, run.error()), {}};
    // A view dated ahead of this clock (another host's) counts as new, not as older than new.
    const double age_days = std::max(
        0.0, std::chrono::duration<double>(h.clock->Now() - run->run.started_at).count() / 86400);
    if (age_days > plan.fleet_max_age_days) {
      return {Untested("active", name,
                       fmt::format("the newest fleet view (run {}) is {:.1f} days old, more than "
                                   "{:g}: run cmax health schedule",
                                   *newest, age_days, plan.fleet_max_age_days)),
              {}};
    }
    return FromRun("active", name, std::move(*run));
  }

  PhaseResult Endpoint(const EndpointPhasePlan& phase) const {
    const audit::HostRunIo& h = io_.host;
    endpoint::LoadRunIo load;
    load.db_path = h.db_path;
    load.cmax_version = h.cmax_version;
    load.provider = provider_;
    load.fs = h.fs;
    load.env = [&h](const std::string& name) { return h.env ? h.env(name) : std::string(); };
    load.hooks.interrupted = [&h] { return h.interrupted && h.interrupted(); };
    load.interrupt_signal = h.interrupt_signal;
    load.note = [this](std::string_view line) { Say(line); };
    load.table = [](std::string_view) {};
    load.write_output = [](const std::string&, std::string_view) -> Result<void> { return {}; };
    auto report = endpoint::RunEndpoint(phase.target, phase.workload, phase.pace, load);
    if (!report) return {FromError("endpoint", phase.name, report.error()), {}};
    return Stored("endpoint", phase.name, report->run_id);
  }

  PhaseResult Scenario(const ScenarioPhasePlan& phase) const {
    const audit::HostRunIo& h = io_.host;
    std::vector<std::string> refusals;
    reliability::ReliabilityIo rio{
        .db_path = h.db_path,
        .cmax_version = h.cmax_version,
        .provider = provider_,
        .fs = h.fs,
        .runner = h.runner,
        .clock = h.clock,
        .stop = h.interrupted,
        .interrupt_signal = h.interrupt_signal,
        .out = [this](std::string_view line) { Say(line); },
        .refused = [&refusals](std::string_view line) { refusals.emplace_back(line); }};
    auto report = reliability::RunScenarioFile({.scenario_path = phase.scenario,
                                                .yes = options_.yes,
                                                .force = options_.force,
                                                .allow_destructive = options_.allow_destructive},
                                               rio);
    if (!report) {
      Error error = report.error();
      if (!refusals.empty()) error.message += ": " + Join(refusals, "; ");
      return {FromError("reliability", phase.name, error), {}};
    }
    if (report->run_id == 0) {
      return {Untested("reliability", phase.name, "the scenario recorded no run"), {}};
    }
    return Stored("reliability", phase.name, report->run_id);
  }

  // The plan's sweep run and its logs analysed, its hosts searched for a bad node, or its
  // nccl-tests logs analysed; with none of them, UNTESTED.
  PhaseResult Network(const NetworkPhasePlan& phase) const {
    const audit::HostRunIo& h = io_.host;
    const auto with_stand_in = [&](net::NcclSweepRequest request, const char* folder) {
      request.force = options_.force;
      // The logs beside the store (or in logs_dir), a folder per phase and evaluation.
      net::PlaceNcclRequest(request, folder + phase.name,
                            {.cpu_perf = io_.cpu_perf,
                             .db_path = h.db_path,
                             .logs_dir = options_.logs_dir,
                             .own_job = h.env ? h.env("SLURM_JOB_ID") : "",
                             .now = h.clock->Now()});
      Say(fmt::format("network {}: logs in {}", phase.name, request.out_dir));
      return request;
    };
    const net::NcclSweepIo sweep_io{.analyze = {.db_path = h.db_path,
                                                .cmax_version = h.cmax_version,
                                                .provider = provider_,
                                                .fs = h.fs,
                                                .clock = h.clock,
                                                .interrupted = h.interrupted},
                                    .fs = h.fs,
                                    .runner = h.runner,
                                    .interrupted = h.interrupted,
                                    .progress = [this, &phase](std::string_view line) {
                                      Say(fmt::format("network {}: {}", phase.name, line));
                                    }};
    if (phase.sweep) {
      net::NcclSweepRequest request = with_stand_in(*phase.sweep, "nccl-sweep-");
      request.analysis = {.platform = phase.platform, .tolerance_pct = phase.tolerance_pct};
      auto report = net::SweepNccl(std::move(request), sweep_io);
      if (!report) return {FromError("network", phase.name, report.error()), {}};
      return FromRun("network", phase.name, std::move(report->analyzed.record));
    }
    if (phase.find_bad_node) {
      net::NcclSweepRequest request = with_stand_in(*phase.find_bad_node, "nccl-find-");
      const net::BadNodeOptions finder{
          .tolerance = phase.tolerance_pct / 100,
          .reference_gbs = phase.reference_gbs,
          .max_measurements = static_cast<size_t>(phase.max_measurements)};
      auto report = net::FindNcclBadNodes(std::move(request), finder, sweep_io);
      if (!report) return {FromError("network", phase.name, report.error()), {}};
      return FromRun("network", phase.name, std::move(report->record));
    }
    if (phase.logs.empty()) {
      return {Untested("network", phase.name,
                       "neither logs of a sweep (logs: [FILE]), a sweep to run (sweep: {hosts: "
                       "[...]}) nor hosts to search (find_bad_node: {hosts: [...]})"),
              {}};
    }
    auto report = net::AnalyzeNcclFiles(
        {.files = phase.logs, .platform = phase.platform, .tolerance_pct = phase.tolerance_pct},
        {.db_path = h.db_path,
         .cmax_version = h.cmax_version,
         .provider = provider_,
         .fs = h.fs,
         .clock = h.clock,
         .interrupted = h.interrupted});
    if (!report) return {FromError("network", phase.name, report.error()), {}};
    return FromRun("network", phase.name, std::move(report->record));
  }

  // The plan's TorchTitan logs read, its traces analysed, or its training command run; with
  // none of them, UNTESTED.
  PhaseResult Training(const TrainingPhasePlan& phase) const {
    const audit::HostRunIo& h = io_.host;
    const train::TrainLogIo store_io{.db_path = h.db_path,
                                     .cmax_version = h.cmax_version,
                                     .provider = provider_,
                                     .fs = h.fs,
                                     .clock = h.clock,
                                     .interrupted = h.interrupted};
    if (!phase.logs.empty()) {
      auto report = train::AnalyzeTrainLogFiles({.files = phase.logs, .reference = phase.reference},
                                                store_io);
      if (!report) return {FromError("training", phase.name, report.error()), {}};
      return FromRun("training", phase.name, std::move(report->record));
    }
    if (!phase.traces.empty()) {
      auto report = train::AnalyzeTraceFiles({.files = phase.traces}, store_io);
      if (!report) return {FromError("training", phase.name, report.error()), {}};
      return FromRun("training", phase.name, std::move(report->record));
    }
    if (phase.command.empty()) {
      return {Untested("training", phase.name,
                       "neither logs (logs: [FILE]), profiler traces (traces: [FILE]) nor a "
                       "command to run (command: [...])"),
              {}};
    }
    train::TrainRunOptions options{
        .command = phase.command,
        .env = phase.env,
        .cwd = phase.cwd,
        .step_budget = phase.steps,
        .deadline = SecondsAsDuration(phase.deadline_s),
        .log_path = train::DefaultTrainLogPath(h.db_path, h.clock->Now()),
        .reference = phase.reference};
    const train::TrainRunIo run_io{
        .runner = h.runner, .fs = h.fs, .progress = [this, &phase](std::string_view line) {
          Say(fmt::format("training {}: {}", phase.name, line));
        }};
    const auto recorded = [&](Result<train::TrainRunReport> report) -> PhaseResult {
      if (!report) return {FromError("training", phase.name, report.error()), {}};
      return FromRun("training", phase.name, std::move(report->recorded.record));
    };
    if (phase.netns_lab == 0) {
      return recorded(train::RunAndRecordTraining(options, run_io, store_io));
    }
    // One rank on each namespace host; the log in a folder of its own, beside the store (or in
    // logs_dir), as a sweep's logs are.
    const std::string kind = "train-" + phase.name;
    const std::string folder = options_.logs_dir.empty()
                                   ? net::NcclLogFolder(h.db_path, kind, h.clock->Now())
                                   : net::NcclLogFolderIn(options_.logs_dir, kind, h.clock->Now());
    if (auto made = h.fs->CreateDirs(folder, 0755); !made) {
      return {FromError("training", phase.name, made.error()), {}};
    }
    Say(fmt::format("training {}: log in {}", phase.name, folder));
    options.log_path = folder + "/train.log";
    return recorded(train::RunAndRecordTrainingOverNetnsLab(
        std::move(options), {.hosts = phase.netns_lab, .slow_links = phase.slow_links}, run_io,
        store_io));
  }

  void Say(std::string_view line) const {
    if (io_.progress) io_.progress(line);
  }
  void Before(const std::string& kind, const std::string& name) const {
    if (io_.before_phase) io_.before_phase(kind, name);
  }

 private:
  PhaseResult Stored(const char* kind, const std::string& name, int64_t run_id) const {
    auto store = store::Store::Open({.path = io_.host.db_path, .create = false});
    auto record = store ? store->LoadRun(run_id) : tl::unexpected(store.error());
    if (!record) {
      PhaseOutcome outcome =
          Untested(kind, name, "its run cannot be read back: " + record.error().message);
      outcome.state = PhaseState::kFailed;
      outcome.run_id = run_id;
      return {std::move(outcome), {}};
    }
    return FromRun(kind, name, std::move(*record));
  }

  const EvaluationOptions& options_;
  const EvaluationIo& io_;
  std::string provider_;
};

// Every phase after the host's, in order, into the evaluation's run as each ends.
Result<void> RunLaterPhases(const Plan& plan, const PhaseRunner& runner,
                            const std::function<bool()>& interrupted, store::RunWriter& writer,
                            std::vector<PhaseOutcome>& phases) {
  const auto keep = [&](PhaseResult result) -> Result<void> {
    PhaseOutcome& outcome = result.outcome;
    runner.Say(fmt::format("phase {}: {}{}", Named(outcome.kind, outcome.name),
                           PhaseStateName(outcome.state),
                           outcome.reason.empty() ? "" : " (" + outcome.reason + ")"));
    Folded folded;
    if (result.run) folded = FoldPhaseRun(*result.run, outcome.name);
    folded.findings.push_back(PhaseFinding(outcome));
    phases.push_back(std::move(outcome));
    return writer.Add(folded.evidence, folded.findings, folded.metrics);
  };
  const auto run = [&](const char* kind, const std::string& name,
                       const std::function<PhaseResult()>& work) -> Result<void> {
    if (interrupted && interrupted()) {
      return keep({Untested(kind, name, "the evaluation was interrupted before it"), {}});
    }
    runner.Say(fmt::format("phase {}: starting", Named(kind, name)));
    runner.Before(kind, name);
    return keep(work());
  };
  if (auto ok = run("health", "health", [&] { return runner.Health(plan); }); !ok) return ok;
  if (auto ok = run("active", "active", [&] { return runner.Active(plan.active); }); !ok) {
    return ok;
  }
  if (auto ok = run("active", "active-fleet", [&] { return runner.Fleet(plan.active); }); !ok) {
    return ok;
  }
  for (const EndpointPhasePlan& phase : plan.endpoints) {
    if (auto ok = run("endpoint", phase.name, [&] { return runner.Endpoint(phase); }); !ok) {
      return ok;
    }
  }
  for (const ScenarioPhasePlan& phase : plan.reliability) {
    if (auto ok = run("reliability", phase.name, [&] { return runner.Scenario(phase); }); !ok) {
      return ok;
    }
  }
  // What the plan does not ask for, and what cmax cannot run yet, is said, not left out.
  const auto untested = [&](const char* kind, std::string reason) {
    return keep({Untested(kind, kind, std::move(reason)), {}});
  };
  const char* const no_plan = " (cmax run --plan FILE names them)";
  if (plan.endpoints.empty()) {
    if (auto ok = untested("endpoint", std::string("no endpoint to load-test") + no_plan); !ok) {
      return ok;
    }
  }
  if (plan.reliability.empty()) {
    if (auto ok = untested("reliability", std::string("no reliability scenario") + no_plan); !ok) {
      return ok;
    }
  }
  for (const NetworkPhasePlan& phase : plan.network) {
    if (auto ok = run("network", phase.name, [&] { return runner.Network(phase); }); !ok) {
      return ok;
    }
  }
  if (plan.network.empty()) {
    if (auto ok = untested("network", std::string("no NCCL sweep to run and no nccl-tests logs "
                                                  "to analyse") +
                                          no_plan);
        !ok) {
      return ok;
    }
  }
  for (const TrainingPhasePlan& phase : plan.training) {
    if (auto ok = run("training", phase.name, [&] { return runner.Training(phase); }); !ok) {
      return ok;
    }
  }
  if (plan.training.empty()) {
    if (auto ok = untested("training", std::string("no training logs, traces or run") + no_plan);
        !ok) {
      return ok;
    }
  }
  return writer.Add({{"evaluation.phases", PhasesJson(phases).dump()}}, {});
}

// A lab's scaled pass bars, recorded so that the rating (now and re-rated) scales its bands.
Result<void> RecordTimeScale(double scale, store::RunWriter& writer) {
  if (scale == 1) return {};
  return writer.Add({{rate::kTimeScaleEvidence, nlohmann::json(scale).dump()}}, {});
}

}  // namespace

Result<Evaluation> Evaluate(const EvaluationOptions& options, const EvaluationIo& io) {
  const audit::HostRunIo& hio = io.host;
  if (!(options.time_scale > 0 && options.time_scale <= 1)) {
    return Fail(ErrorCode::kInvalidArgument, "a lab's time scale is in (0, 1]");
  }
  auto plan = ReadPlan(options.plan, *hio.fs);
  if (!plan) return tl::unexpected(plan.error());
  // The plan's health.since against this clock too (its form was checked as it was read): a
  // time in the future or more than ten years back is refused before anything runs.
  if (plan->health && !options.plan.empty()) {
    if (auto since = health::ParseSince(plan->health_since, hio.clock->Now(), 0); !since) {
      return Fail(ErrorCode::kInvalidArgument, "{}: health.since: {}", options.plan,
                  since.error().message);
    }
  }
  const rate::RateIo rate_io{.db_path = hio.db_path, .fs = hio.fs, .clock = hio.clock};
  const std::string attestation_path =
      options.attestation.empty() ? plan->attestation : options.attestation;
  auto files =
      rate::LoadRatingFiles({.rubric = options.rubric.empty() ? plan->rubric : options.rubric,
                             .attestation = attestation_path},
                            rate_io);
  if (!files) return tl::unexpected(files.error());
  // The provider evaluated: --provider (or CMAX_PROVIDER), else the plan's, else the
  // attestation's; then `cmax rate --provider` finds the run and `--providers` ranks it.
  audit::HostRunIo host_io = hio;
  if (hio.env && hio.env("CMAX_PROVIDER").empty()) {
    if (!plan->provider.empty()) {
      host_io.provider = plan->provider;
    } else if (files->attestation) {
      host_io.provider = files->attestation->provider;
    }
  }
  // An attestation is one provider's promises: another's evaluation rated with it would be
  // scored on its prices, SLA and certificates, under its name.
  const std::string evaluated = !host_io.provider.empty()
                                    ? host_io.provider
                                    : (hio.env ? hio.env("CMAX_PROVIDER") : std::string());
  if (files->attestation && !evaluated.empty() && files->attestation->provider != evaluated) {
    return Fail(ErrorCode::kInvalidArgument,
                "attestation {}: it is provider {}'s, and this evaluation is of provider {} (from "
                "--provider, CMAX_PROVIDER or the plan)",
                attestation_path, SanitizeUtf8(files->attestation->provider),
                SanitizeUtf8(evaluated));
  }
  const PhaseRunner runner(options, io, host_io.provider);
  std::vector<PhaseOutcome> phases;
  auto host = audit::EvaluateHost(
      options.probe_timeout_s, host_io, [&](store::RunWriter& writer) -> Result<void> {
        PhaseOutcome outcome{
            .kind = "host", .name = "host", .state = PhaseState::kRan, .run_id = writer.RunId()};
        if (auto ok = writer.Add({}, {PhaseFinding(outcome)}); !ok) return ok;
        if (auto ok = RecordTimeScale(options.time_scale, writer); !ok) return ok;
        if (const auto& attested = files->attestation) {
          // Kept with the run, so that `cmax rate RUN` rates it with what it was rated with.
          const nlohmann::json kept = {
              {"path", attestation_path}, {"sha256", attested->sha256}, {"yaml", attested->yaml}};
          if (auto ok = writer.Add({{rate::kAttestationEvidence, kept.dump()}}, {}); !ok) {
            return ok;
          }
        }
        phases.push_back(std::move(outcome));
        return RunLaterPhases(*plan, runner, hio.interrupted, writer, phases);
      });
  if (!host) return tl::unexpected(host.error());
  Evaluation out{.exit_code = host->exit_code,
                 .interrupted = host->interrupted,
                 .record = std::move(host->record),
                 .phases = std::move(phases)};
  if (out.interrupted) return out;
  // The record EvaluateHost read back from the store, and the store's remediation journal:
  // what `cmax rate RUN` will read.
  auto store = store::Store::Open({.path = hio.db_path});
  if (!store) return tl::unexpected(store.error());
  auto drains = rate::JournalDrains(*store);
  if (!drains) return tl::unexpected(drains.error());
  // Rated as `cmax rate RUN` will rate it: the run records its lab's time scale.
  const std::optional<double> scale = rate::TimeScaleOf({&out.record});
  const std::optional<rate::Rubric> scaled =
      scale ? std::optional(files->RubricToUse().WithTimesScaled(*scale)) : std::nullopt;
  rate::Rating rating =
      rate::RateEvidence(scaled ? *scaled : files->RubricToUse(),
                         {.runs = {&out.record},
                          .attestation = files->attestation ? &*files->attestation : nullptr,
                          .journal_drains = std::move(*drains),
                          .now = hio.clock->Now()});
  EvidenceItem item{"rating", rate::RatingJson(rating).dump()};
  if (auto ok = store->AddToRun(out.record.run.id, {item}); !ok) {
    return tl::unexpected(ok.error());
  }
  out.record.evidence.push_back(std::move(item));
  out.rating = std::move(rating);
  return out;
}

std::string DefaultHtmlReportPath(const std::string& db_path, int64_t run_id) {
  return sys::AbsolutePath(store::BesideStore(db_path, fmt::format("reports/run-{}.html", run_id)));
}

}  // namespace cmax::evaluate
