#include "reliability/scenario_run.hpp"

#include <fmt/format.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "inject/target_facts.hpp"
#include "reliability/alerts.hpp"
#include "reliability/injector.hpp"
#include "reliability/reboot.hpp"
#include "reliability/scenario.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/http_client.hpp"
#include "sys/process_runner.hpp"

namespace cmax::reliability {
namespace {

std::string Took(const std::optional<Duration>& d) {
  return d ? FormatDuration(*d) : "-";
}

nlohmann::json TimelineJson(const StepResult& r) {
  nlohmann::json seen = nlohmann::json::array();
  for (const Observation& o : r.observations) {
    seen.push_back({{"at", FormatIso8601(o.at)},
                    {"after_s", std::chrono::duration<double>(o.at - r.timeline.injected).count()},
                    {"kind", ObservationKindName(o.kind)},
                    {"node", o.node},
                    {"detail", o.detail}});
  }
  return {{"step", r.step.name},
          {"node", r.step.node},
          {"record", r.record},
          {"injected", FormatIso8601(r.timeline.injected)},
          {"not_injected", r.not_injected},
          {"verdict", VerdictName(r.judgement.verdict)},
          {"reasons", r.judgement.reasons},
          {"observations", seen}};
}

Result<store::RecordedRun> Record(const ReliabilityIo& io, const std::string& target) {
  return store::BeginRecordedRun(io.db_path, {.command = "reliability",
                                              .target = target,
                                              .started_at = io.clock->Now(),
                                              .cmax_version = io.cmax_version,
                                              .provider = io.provider});
}

int InterruptSignal(const ReliabilityIo& io) {
  return io.interrupt_signal ? io.interrupt_signal() : 0;
}

void Out(const ReliabilityIo& io, std::string_view line) {
  if (io.out) io.out(line);
}

std::string VerdictTable(const std::vector<StepResult>& results) {
  std::string text =
      fmt::format("\n{:<24} {:<10} {:<8} {:>10} {:>14} {:>10} {:>10}\n", "STEP", "NODE", "VERDICT",
                  "DETECTED", "OUT OF SERVICE", "SPARE IN", "BACK");
  for (const StepResult& r : results) {
    text += fmt::format(
        "{:<24} {:<10} {:<8} {:>10} {:>14} {:>10} {:>10}\n", SanitizeUtf8(r.step.name),
        SanitizeUtf8(r.step.node), VerdictName(r.judgement.verdict), Took(r.timeline.detected),
        Took(r.timeline.out_of_service), Took(r.timeline.replaced), Took(r.timeline.back));
    for (const std::string& why : r.judgement.reasons) text += "    " + SanitizeUtf8(why) + "\n";
  }
  return text;
}

}  // namespace

Result<ReliabilityReport> RunScenarioFile(const ScenarioRunOptions& o, const ReliabilityIo& io) {
  auto text = io.fs->ReadFile(o.scenario_path, size_t{1} << 20);
  if (!text) return Fail(ErrorCode::kInvalidArgument, "{}", text.error().message);
  auto scenario = ParseScenario(*text);
  if (!scenario) {
    return Fail(ErrorCode::kInvalidArgument, "{}: {}", o.scenario_path, scenario.error().message);
  }
  // The flags' signals replace the scenario's one by one, and are held to the same rules.
  const std::string prometheus = o.prometheus.empty() ? scenario->prometheus : o.prometheus;
  const std::string query = o.alert_query.empty() ? scenario->alert_query : o.alert_query;
  const std::string webhook = o.alert_webhook.empty() ? scenario->alert_webhook : o.alert_webhook;
  if (auto ok = CheckAlertSignals(prometheus, query, webhook); !ok) {
    return Fail(ErrorCode::kInvalidArgument,
                "alert signals (--prometheus, --alert-query, "
                "--alert-webhook or the scenario's): {}",
                ok.error().message);
  }
  // Every step's safety first: nothing is injected when any step would be refused. Whether a
  // node is drained is checked again just before its step (it may change meanwhile).
  const auto facts_of = [&](const Step& step) {
    // The runner asks the scheduler it watches whether the node is known and in service.
    inject::TargetFacts facts = inject::GatherFacts(step.node, *io.fs, *io.runner,
                                                    /*ask_slurm=*/o.scheduler.scheduler == "slurm");
    facts.drained = false;  // the runner reports a drained node instead of refusing the run
    return facts;
  };
  const StepSafety safety{.dry_run = o.dry_run,
                          .yes = o.yes,
                          .force = o.force,
                          .allow_destructive = o.allow_destructive};
  size_t refused = 0;
  for (const Step& step : scenario->steps) {
    const inject::TargetFacts facts = facts_of(step);
    Out(io, fmt::format("{}: {} {} on {}{}: {}", step.name, InjectKindName(step.inject), step.code,
                        step.node, facts.lab ? " (lab)" : "",
                        SanitizeUtf8(StepRecord(step).value_or(""))));
    for (const std::string& why : StepRefusals(step, facts, safety, *io.fs)) {
      if (io.refused) io.refused(step.name + ": refused: " + why);
      ++refused;
    }
  }
  Out(io, fmt::format("pass bars: detected within {}, out of service within {}{}{}; watched up "
                      "to {} per step, looked at every {}",
                      FormatDuration(scenario->bars.detect),
                      FormatDuration(scenario->bars.out_of_service),
                      scenario->bars.replace
                          ? ", a spare in service within " + FormatDuration(*scenario->bars.replace)
                          : "",
                      scenario->bars.back
                          ? ", back in service within " + FormatDuration(*scenario->bars.back)
                          : "",
                      FormatDuration(scenario->timeout), FormatDuration(scenario->poll)));
  if (refused > 0) {
    return Fail(ErrorCode::kInvalidArgument, "nothing injected: {} refusal{} above", refused,
                refused == 1 ? "" : "s");
  }
  if (o.dry_run) return ReliabilityReport{};

  remediate::ControllerSettings watching = o.scheduler;
  watching.observe_maintenance = true;
  auto scheduler =
      remediate::MakeScheduler(watching, *io.runner, *io.clock, remediate::KubeEnvironment());
  if (!scheduler) return Fail(ErrorCode::kInvalidArgument, "{}", scheduler.error().message);
  const WallTime started = io.clock->Now();
  auto recorded =
      Record(io, "scenario/" + (scenario->name.empty() ? o.scenario_path : scenario->name));
  if (!recorded) return SystemFailure(recorded.error());
  store::RunWriter& writer = recorded->writer;
  RunHooks hooks;
  StepInjector injector(*io.fs, *io.runner, o.kmsg, [&](const Step& step) {
    return StepRefusals(step, facts_of(step), safety, *io.fs);  // the same rules, asked again
  });
  hooks.inject = [&](const Step& step, const std::string& record) -> Result<void> {
    if (auto may = injector.MayInjectNow(step); !may) return may;
    // Recorded before it is done, so that no injection goes unrecorded.
    const nlohmann::json payload = {{"step", step.name}, {"record", record}, {"path", o.kmsg}};
    if (auto ok = recorded->store->SaveConditions(
            {}, {{io.clock->Now(), step.node, "inject", std::string(InjectKindName(step.inject)),
                  payload.dump()}});
        !ok) {
      return ok;
    }
    return injector.Inject(step, record);
  };
  hooks.progress = [&](std::string_view line) {
    Out(io, FormatIso8601(io.clock->Now()) + " " + SanitizeUtf8(line));
  };
  hooks.stop = io.stop;
  hooks.step_done = [&writer](const StepResult& r) {
    return writer.Add({{"reliability." + r.step.name + ".timeline", TimelineJson(r).dump()}},
                      ScenarioFindings({r}), ScenarioMetrics({r}));
  };
  sys::CurlHttpClient http;
  std::optional<PrometheusAlerts> prometheus_alerts;
  std::unique_ptr<WebhookAlerts> webhook_alerts;
  AnyAlerts alerts;
  if (!prometheus.empty() && !query.empty()) {
    prometheus_alerts.emplace(http, prometheus, query, scenario->alert_node_label);
    alerts.Add(&*prometheus_alerts);
  }
  if (!webhook.empty()) {
    auto listening = WebhookAlerts::Listen(webhook, scenario->alert_node_label);
    if (!listening) {
      (void)writer.FinishWithError(2, io.clock->Now());
      return Fail(ErrorCode::kInvalidArgument, "alert webhook: {}", listening.error().message);
    }
    webhook_alerts = std::move(*listening);
    Out(io, fmt::format("alert webhook: POST Alertmanager-style alerts to http://{}:{}/",
                        webhook.substr(0, webhook.rfind(':')), webhook_alerts->Port()));
    alerts.Add(webhook_alerts.get());
  }
  if (!alerts.Empty()) hooks.alerts = &alerts;
  auto results = RunScenario(*scenario, *(*scheduler)->scheduler, *io.clock, hooks);
  // Restore what can be restored: the simulated GPUs.
  const StepInjector::Restored restored = injector.Restore();
  for (const std::string& path : restored.paths) {
    Out(io, "restored the simulated NVML state " + path);
  }
  for (const Error& failure : restored.failures) log::Warn("cannot restore {}", failure.message);
  if (!results) {
    (void)writer.FinishWithError(store::kRunError, io.clock->Now());
    return SystemFailure(Error{results.error().code,
                               fmt::format("{} (the steps judged before are recorded in run {})",
                                           results.error().message, writer.RunId())});
  }
  auto outcome = writer.Finish(InterruptSignal(io), io.clock->Now());
  if (!outcome) return SystemFailure(outcome.error());
  bool all_pass = true;
  for (const StepResult& r : *results) all_pass = all_pass && r.judgement.verdict == Verdict::kPass;
  ReliabilityReport report;
  report.run_id = writer.RunId();
  report.exit_code = outcome->exit_code != 0 ? outcome->exit_code : (all_pass ? 0 : 1);
  report.text = VerdictTable(*results) +
                fmt::format(
                    "run {} in {}; `cmax reliability report {} -o FILE.html` draws the "
                    "timeline\n",
                    writer.RunId(), FormatDuration(io.clock->Now() - started), writer.RunId());
  return report;
}

Result<ReliabilityReport> RebootAndTime(const RebootOptions& o, const ReliabilityIo& io) {
  if (!std::isfinite(o.timeout_s) || o.timeout_s <= 0 || !std::isfinite(o.poll_s) ||
      o.poll_s <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "--timeout and --poll must be positive");
  }
  inject::TargetFacts facts =
      inject::GatherFacts(o.node, *io.fs, *io.runner, /*ask_slurm=*/o.scheduler == "slurm");
  // The scheduler reboots it, wherever it is. A node out of service is refused: the reboot's
  // reason would replace an operator's (or a repair's), and the resume after it would put back
  // in service a node someone else took out.
  facts.local = true;
  const auto refusals = inject::Refusals(facts, {.yes = o.yes,
                                                 .force = o.force,
                                                 .allow_destructive = o.allow_destructive,
                                                 .destructive = true});
  for (const std::string& why : refusals) {
    if (io.refused) io.refused("refused: " + why);
  }
  if (!refusals.empty()) return Fail(ErrorCode::kInvalidArgument, "nothing rebooted");
  remediate::ControllerSettings settings;
  settings.scheduler = o.scheduler;
  auto scheduler =
      remediate::MakeScheduler(settings, *io.runner, *io.clock, remediate::KubeEnvironment());
  if (!scheduler) return Fail(ErrorCode::kInvalidArgument, "{}", scheduler.error().message);
  auto recorded = Record(io, "reboot/" + facts.node);
  if (!recorded) return SystemFailure(recorded.error());
  store::RunWriter& writer = recorded->writer;
  const std::string check = ReplaceAll(o.gpu_check, "{node}", ShellQuote(facts.node));
  RebootHooks hooks;
  hooks.gpu_check = [&]() -> Result<std::string> {
    sys::ProcessSpec spec{.argv = {check}, .use_shell = true};
    spec.timeout = std::chrono::seconds(120);
    auto r = io.runner->Run(spec);
    if (!r) return tl::unexpected(r.error());
    if (!r->Succeeded()) {
      return Fail(ErrorCode::kIo, "{}: {}", r->Describe(),
                  std::string(Trim(r->stderr_text)).substr(0, 200));
    }
    return std::string(Trim(r->stdout_text));
  };
  hooks.stop = io.stop;
  Out(io, "rebooting " + facts.node + " through the scheduler; GPU query: " + check);
  // Before it is asked: should cmax be killed meanwhile, this is the one place that says it.
  Out(io, "if cmax stops before it puts the node back in service: " + RebootUndo(facts.node));
  const auto seconds = [](double s) { return SecondsAsDuration(s); };
  auto timing = TimeReboot(*(*scheduler)->scheduler, *io.clock, facts.node, seconds(o.poll_s),
                           seconds(o.timeout_s), hooks);
  if (!timing) {
    (void)writer.FinishWithError(store::kRunError, io.clock->Now());
    return SystemFailure(timing.error());
  }
  Finding f;
  f.check_id = "reliability.reboot";
  f.status = timing->failure.empty() ? CheckStatus::kPass : CheckStatus::kFail;
  f.severity = timing->failure.empty() ? Severity::kInfo : Severity::kHigh;
  f.message = timing->failure.empty()
                  ? fmt::format("{} rebooted in {}; GPUs answered after {}", facts.node,
                                FormatDuration(*timing->booted), FormatDuration(*timing->gpu_ready))
                  : facts.node + ": " + timing->failure;
  f.observed = timing->gpu_output;
  f.expected = "back with working GPUs within " + FormatDuration(seconds(o.timeout_s));
  f.remediation = timing->undo;
  std::vector<Metric> metrics;
  const std::map<std::string, std::string> labels = {{"node", facts.node}};
  const auto secs = [](Duration d) { return std::chrono::duration<double>(d).count(); };
  if (timing->booted) {
    metrics.push_back({"reliability.reboot.booted", labels, secs(*timing->booted), "s"});
  }
  if (timing->gpu_ready) {
    metrics.push_back({"reliability.reboot.gpu_ready", labels, secs(*timing->gpu_ready), "s"});
  }
  if (auto ok = writer.Add({{"reliability.reboot.boot_times",
                             nlohmann::json({timing->boot_before, timing->boot_after}).dump()}},
                           {f}, metrics);
      !ok) {
    return SystemFailure(ok.error());
  }
  auto outcome = writer.Finish(InterruptSignal(io), io.clock->Now());
  if (!outcome) return SystemFailure(outcome.error());
  return ReliabilityReport{
      writer.RunId(), outcome->exit_code,
      fmt::format("  {}: {}\n{}", StatusName(f.status), SanitizeUtf8(f.message),
                  f.remediation.empty() ? "" : "  undo: " + SanitizeUtf8(f.remediation) + "\n")};
}

}  // namespace cmax::reliability
