// `cmax reliability run --scenario FILE`: injects each step's fault where the provider's health
// checks read it, watches the scheduler until the pass bars are met or missed, and records one
// run with a finding per step (PASS, FAIL, or WARN for UNKNOWN) and the timeline as metrics.
// It measures any provider's system: it only writes the fault and reads the scheduler.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "inject/target_facts.hpp"
#include "reliability/alerts.hpp"
#include "reliability/injector.hpp"
#include "reliability/reboot.hpp"
#include "reliability/scenario.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::cli {
namespace {

struct ReliabilityOptions {
  CLI::App* run = nullptr;
  CLI::App* report = nullptr;
  CLI::App* reboot = nullptr;
  std::string node;
  bool allow_destructive = false;
  bool force = false;
  std::string gpu_check = "srun -w {node} -N1 --overlap -t 1 nvidia-smi -L";
  double timeout_s = 1800;
  double poll_s = 5;
  std::string run_id = "latest";
  std::string output;
  std::string scenario;
  bool dry_run = false;
  bool yes = false;
  std::string kmsg = "/dev/kmsg";
  ControllerFlags scheduler;  // --scheduler and the --kube-* flags only
  std::string prometheus;
  std::string alert_query;
  std::string alert_webhook;
};

std::string Took(const std::optional<Duration>& d) {
  return d ? FormatDuration(*d) : "-";
}

nlohmann::json TimelineJson(const reliability::StepResult& r) {
  nlohmann::json seen = nlohmann::json::array();
  for (const reliability::Observation& o : r.observations) {
    seen.push_back({{"at", FormatIso8601(o.at)},
                    {"after_s", std::chrono::duration<double>(o.at - r.timeline.injected).count()},
                    {"kind", reliability::ObservationKindName(o.kind)},
                    {"node", o.node},
                    {"detail", o.detail}});
  }
  return {{"step", r.step.name},
          {"node", r.step.node},
          {"record", r.record},
          {"injected", FormatIso8601(r.timeline.injected)},
          {"not_injected", r.not_injected},
          {"verdict", reliability::VerdictName(r.judgement.verdict)},
          {"reasons", r.judgement.reasons},
          {"observations", seen}};
}

int Run(const ReliabilityOptions& o, Context& ctx) {
  sys::LocalFileSystem fs;
  auto text = fs.ReadFile(o.scenario, size_t{1} << 20);
  if (!text) {
    ctx.err << "cmax reliability run: " << text.error().message << "\n";
    return kExitUsage;
  }
  auto scenario = reliability::ParseScenario(*text);
  if (!scenario) {
    ctx.err << "cmax reliability run: " << o.scenario << ": " << scenario.error().message << "\n";
    return kExitUsage;
  }
  // Every step's safety first: nothing is injected when any step would be refused. Whether a
  // node is drained is checked again just before its step (it may change meanwhile).
  sys::PosixProcessRunner runner;
  bool refused = false;
  for (const reliability::Step& step : scenario->steps) {
    // The runner asks the scheduler it watches whether the node is known and in service.
    inject::TargetFacts facts =
        inject::GatherFacts(step.node, fs, runner, /*ask_slurm=*/o.scheduler.scheduler == "slurm");
    facts.drained = false;  // the runner reports a drained node instead of refusing the run
    ctx.out << fmt::format("{}: {} {} on {}{}: {}\n", step.name,
                           reliability::InjectKindName(step.inject), step.code, step.node,
                           facts.lab ? " (lab)" : "",
                           SanitizeUtf8(reliability::StepRecord(step).value_or("")));
    for (const std::string& why :
         reliability::StepRefusals(step, facts,
                                   {.dry_run = o.dry_run,
                                   .yes = o.yes,
                                   .force = o.force,
                                   .allow_destructive = o.allow_destructive},
                                   fs)) {
      ctx.err << "cmax reliability run: " << step.name << ": refused: " << why << "\n";
      refused = true;
    }
  }
  ctx.out << fmt::format(
      "pass bars: detected within {}, out of service within {}{}; watched up "
      "to {} per step, looked at every {}\n",
      FormatDuration(scenario->bars.detect), FormatDuration(scenario->bars.out_of_service),
      scenario->bars.replace
          ? ", a spare in service within " + FormatDuration(*scenario->bars.replace)
          : "",
      FormatDuration(scenario->timeout), FormatDuration(scenario->poll));
  if (refused) return kExitUsage;
  if (o.dry_run) return kExitOk;

  SystemClock clock;
  ControllerFlags watching = o.scheduler;
  watching.observe_maintenance = true;
  auto scheduler = remediate::MakeScheduler(watching, runner, clock, remediate::KubeEnvironment());
  if (!scheduler) {
    ctx.err << "cmax reliability run: " << scheduler.error().message << "\n";
    return kExitUsage;
  }
  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) {
    ctx.err << "cmax reliability run: " << store.error().message << "\n";
    return kExitError;
  }
  const WallTime started = clock.Now();
  auto writer = store::RunWriter::Begin(
      *store, {.command = "reliability",
               .target = "scenario/" + (scenario->name.empty() ? o.scenario : scenario->name),
               .host = sys::Hostname(),
               .started_at = started,
               .cmax_version = VersionString(),
               .pid = ::getpid()});
  if (!writer) {
    ctx.err << "cmax reliability run: " << writer.error().message << "\n";
    return kExitError;
  }
  reliability::RunHooks hooks;
  reliability::StepInjector injector(fs, runner, o.kmsg);
  hooks.inject = [&](const reliability::Step& step, const std::string& record) -> Result<void> {
    // Recorded before it is done, so that no injection goes unrecorded.
    const nlohmann::json payload = {{"step", step.name}, {"record", record}, {"path", o.kmsg}};
    if (auto ok = store->SaveConditions(
            {}, {{clock.Now(), step.node, "inject",
                  std::string(reliability::InjectKindName(step.inject)), payload.dump()}});
        !ok) {
      return ok;
    }
    return injector.Inject(step, record);
  };
  hooks.progress = [&](std::string_view line) {
    ctx.out << FormatIso8601(clock.Now()) << " " << SanitizeUtf8(line) << std::endl;
  };
  hooks.stop = [] { return sys::Interrupted(); };
  const std::string prometheus = o.prometheus.empty() ? scenario->prometheus : o.prometheus;
  const std::string query = o.alert_query.empty() ? scenario->alert_query : o.alert_query;
  const std::string webhook = o.alert_webhook.empty() ? scenario->alert_webhook : o.alert_webhook;
  sys::CurlHttpClient http;
  std::optional<reliability::PrometheusAlerts> prometheus_alerts;
  std::unique_ptr<reliability::WebhookAlerts> webhook_alerts;
  reliability::AnyAlerts alerts;
  if (!prometheus.empty() && !query.empty()) {
    prometheus_alerts.emplace(http, prometheus, query, scenario->alert_node_label);
    alerts.Add(&*prometheus_alerts);
  }
  if (!webhook.empty()) {
    auto listening = reliability::WebhookAlerts::Listen(webhook, scenario->alert_node_label);
    if (!listening) {
      ctx.err << "cmax reliability run: alert webhook: " << listening.error().message << "\n";
      (void)writer->FinishWithError(kExitUsage, clock.Now());
      return kExitUsage;
    }
    webhook_alerts = std::move(*listening);
    ctx.out << "alert webhook: POST Alertmanager-style alerts to http://"
            << webhook.substr(0, webhook.rfind(':')) << ":" << webhook_alerts->Port() << "/"
            << std::endl;
    alerts.Add(webhook_alerts.get());
  }
  if (!alerts.Empty()) hooks.alerts = &alerts;
  auto results = reliability::RunScenario(*scenario, *(*scheduler)->scheduler, clock, hooks);
  // Restore what can be restored: the simulated GPUs.
  const reliability::StepInjector::Restored restored = injector.Restore();
  for (const std::string& path : restored.paths)
    ctx.out << "restored the simulated NVML state " << path << "\n";
  for (const Error& failure : restored.failures) log::Warn("cannot restore {}", failure.message);
  if (!results) {
    ctx.err << "cmax reliability run: " << results.error().message << "\n";
    (void)writer->FinishWithError(kExitError, clock.Now());
    return kExitError;
  }
  std::vector<EvidenceItem> evidence;
  for (const reliability::StepResult& r : *results) {
    evidence.push_back({"reliability." + r.step.name + ".timeline", TimelineJson(r).dump()});
  }
  if (auto ok = writer->Add(evidence, reliability::ScenarioFindings(*results),
                            reliability::ScenarioMetrics(*results));
      !ok) {
    ctx.err << "cmax reliability run: " << ok.error().message << "\n";
    return kExitError;
  }
  auto outcome = writer->Finish(sys::InterruptSignal(), clock.Now());
  if (!outcome) {
    ctx.err << "cmax reliability run: " << outcome.error().message << "\n";
    return kExitError;
  }

  ctx.out << fmt::format("\n{:<24} {:<10} {:<8} {:>10} {:>14} {:>10} {:>10}\n", "STEP", "NODE",
                         "VERDICT", "DETECTED", "OUT OF SERVICE", "SPARE IN", "BACK");
  bool all_pass = true;
  for (const reliability::StepResult& r : *results) {
    all_pass = all_pass && r.judgement.verdict == reliability::Verdict::kPass;
    ctx.out << fmt::format("{:<24} {:<10} {:<8} {:>10} {:>14} {:>10} {:>10}\n",
                           SanitizeUtf8(r.step.name), SanitizeUtf8(r.step.node),
                           reliability::VerdictName(r.judgement.verdict), Took(r.timeline.detected),
                           Took(r.timeline.out_of_service), Took(r.timeline.replaced),
                           Took(r.timeline.back));
    for (const std::string& why : r.judgement.reasons)
      ctx.out << "    " << SanitizeUtf8(why) << "\n";
  }
  ctx.out << fmt::format(
      "run {} in {}; `cmax reliability report {} -o FILE.html` draws the "
      "timeline\n",
      writer->RunId(), FormatDuration(clock.Now() - started), writer->RunId());
  if (outcome->exit_code != kExitOk) return outcome->exit_code;
  return all_pass ? kExitOk : kExitChecksFailed;
}

// Reboots a node through the scheduler and times its return until a GPU query works.
int Reboot(const ReliabilityOptions& o, Context& ctx) {
  const std::string name = "cmax reliability reboot";
  if (!std::isfinite(o.timeout_s) || o.timeout_s <= 0 || !std::isfinite(o.poll_s) ||
      o.poll_s <= 0) {
    ctx.err << name << ": --timeout and --poll must be positive\n";
    return kExitUsage;
  }
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  inject::TargetFacts facts =
      inject::GatherFacts(o.node, fs, runner, /*ask_slurm=*/o.scheduler.scheduler == "slurm");
  facts.local = true;     // the scheduler reboots it, wherever it is
  facts.drained = false;  // a drained node may be rebooted; it is put back in service after
  const auto refusals = inject::Refusals(facts, {.yes = o.yes,
                                                 .force = o.force,
                                                 .allow_destructive = o.allow_destructive,
                                                 .destructive = true});
  for (const std::string& why : refusals) ctx.err << name << ": refused: " << why << "\n";
  if (!refusals.empty()) return kExitUsage;
  SystemClock clock;
  auto scheduler =
      remediate::MakeScheduler(o.scheduler, runner, clock, remediate::KubeEnvironment());
  if (!scheduler) {
    ctx.err << name << ": " << scheduler.error().message << "\n";
    return kExitUsage;
  }
  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) {
    ctx.err << name << ": " << store.error().message << "\n";
    return kExitError;
  }
  const WallTime started = clock.Now();
  auto writer = store::RunWriter::Begin(*store, {.command = "reliability",
                                                 .target = "reboot/" + facts.node,
                                                 .host = sys::Hostname(),
                                                 .started_at = started,
                                                 .cmax_version = VersionString(),
                                                 .pid = ::getpid()});
  if (!writer) {
    ctx.err << name << ": " << writer.error().message << "\n";
    return kExitError;
  }
  const std::string check = ReplaceAll(o.gpu_check, "{node}", ShellQuote(facts.node));
  reliability::RebootHooks hooks;
  hooks.gpu_check = [&]() -> Result<std::string> {
    sys::ProcessSpec spec{.argv = {check}, .use_shell = true};
    spec.timeout = std::chrono::seconds(120);
    auto r = runner.Run(spec);
    if (!r) return tl::unexpected(r.error());
    if (!r->Succeeded()) {
      return Fail(ErrorCode::kIo, "{}: {}", r->Describe(),
                  std::string(Trim(r->stderr_text)).substr(0, 200));
    }
    return std::string(Trim(r->stdout_text));
  };
  hooks.stop = [] { return sys::Interrupted(); };
  ctx.out << name << ": rebooting " << facts.node << " through the scheduler; GPU query: " << check
          << "\n";
  auto timing = reliability::TimeReboot(*(*scheduler)->scheduler, clock, facts.node,
                                        Seconds(o.poll_s), Seconds(o.timeout_s), hooks);
  if (!timing) {
    ctx.err << name << ": " << timing.error().message << "\n";
    (void)writer->FinishWithError(kExitError, clock.Now());
    return kExitError;
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
  f.expected = "back with working GPUs within " + FormatDuration(Seconds(o.timeout_s));
  std::vector<Metric> metrics;
  const std::map<std::string, std::string> labels = {{"node", facts.node}};
  const auto secs = [](Duration d) { return std::chrono::duration<double>(d).count(); };
  if (timing->booted)
    metrics.push_back({"reliability.reboot.booted", labels, secs(*timing->booted), "s"});
  if (timing->gpu_ready) {
    metrics.push_back({"reliability.reboot.gpu_ready", labels, secs(*timing->gpu_ready), "s"});
  }
  if (auto ok = writer->Add({{"reliability.reboot.boot_times",
                              nlohmann::json({timing->boot_before, timing->boot_after}).dump()}},
                            {f}, metrics);
      !ok) {
    ctx.err << name << ": " << ok.error().message << "\n";
    return kExitError;
  }
  auto outcome = writer->Finish(sys::InterruptSignal(), clock.Now());
  ctx.out << "  " << StatusName(f.status) << ": " << SanitizeUtf8(f.message) << "\n";
  return outcome ? outcome->exit_code : kExitError;
}

// The HTML report of a reliability run, with its timeline chart.
int Report(const ReliabilityOptions& o, Context& ctx) {
  auto store = OpenExistingStore(ctx);
  if (!store) {
    ctx.err << "cmax reliability report: " << store.error().message << "\n";
    return kExitError;
  }
  const Result<int64_t> id = ResolveRunId(*store, o.run_id, "reliability");
  if (!id && id.error().code == ErrorCode::kInvalidArgument) {
    ctx.err << "cmax reliability report: " << id.error().message << "\n";
    return kExitUsage;
  }
  auto record = id ? store->LoadRun(*id) : tl::unexpected(id.error());
  if (!record || record->run.command != "reliability") {
    ctx.err << "cmax reliability report: "
            << (record ? "run " + o.run_id + " is not a reliability run" : record.error().message)
            << "\n";
    return kExitUsage;
  }
  const std::string html = report::RenderHtml(*record);
  if (o.output.empty()) {
    ctx.out << html;
    return kExitOk;
  }
  if (auto ok = WriteOutput(ctx, o.output, html); !ok) {
    ctx.err << "cmax reliability report: " << ok.error().message << "\n";
    return ExitCodeOf(ok.error());
  }
  ctx.out << "wrote " << o.output << "\n";
  return kExitOk;
}

}  // namespace

Command SetupReliabilityCommand(CLI::App& parent) {
  auto o = std::make_shared<ReliabilityOptions>();
  CLI::App* app = parent.add_subcommand(
      "reliability",
      "Inject GPU faults and time the provider's response: detection, drain, replacement,\n"
      "return to service, judged against pass bars that depend on the architecture.");
  app->require_subcommand(1);
  o->run = app->add_subcommand("run", "Run a scenario: inject each step, watch, judge, record");
  o->run->add_option("--scenario", o->scenario, "Scenario file (YAML or JSON)")->required();
  o->run->add_flag("--dry-run", o->dry_run,
                   "Print each step's record and the bars; inject nothing");
  o->run->add_flag("--yes", o->yes, "Inject into nodes that are not a lab's");
  o->run->add_flag("--allow-destructive", o->allow_destructive,
                   "Allow pcie-sbr steps (a real bus reset)");
  o->run->add_flag("--force", o->force, "pcie-sbr steps even on nodes with jobs");
  o->run->add_option("--kmsg", o->kmsg, "Where records are written")->capture_default_str();
  o->run->add_option("--prometheus", o->prometheus,
                     "Prometheus URL for an alert signal (with --alert-query)");
  o->run->add_option("--alert-query", o->alert_query,
                     "Instant query whose series name alerting nodes (label node, else instance)");
  o->run->add_option("--alert-webhook", o->alert_webhook,
                     "HOST:PORT to receive Alertmanager-style alert webhooks on (port 0: any)");
  o->run->add_option("--scheduler", o->scheduler.scheduler, "slurm or kubernetes")
      ->check(CLI::IsMember({"slurm", "kubernetes"}))
      ->capture_default_str();
  o->run->add_option("--kube-api", o->scheduler.kube.api_server, "Kubernetes API server URL");
  o->run->add_option("--kube-token-file", o->scheduler.kube.token_file, "Bearer token file");
  o->run->add_option("--kube-ca", o->scheduler.kube.ca_file, "CA of the API server");
  o->run->add_option("--kubeconfig", o->scheduler.kube.kubeconfig, "kubeconfig file");
  o->run->add_option("--kube-context", o->scheduler.kube.context, "kubeconfig context");
  o->report = app->add_subcommand("report", "The HTML report of a run, with its timeline chart");
  o->report->add_option("RUN", o->run_id, "Run id, or 'latest' (default)");
  o->report->add_option("-o,--output", o->output, "Write to this file instead of stdout");
  o->reboot = app->add_subcommand(
      "reboot", "Reboot a node through its scheduler and time its return until a GPU query works");
  o->reboot->add_option("NODE", o->node, "The node")->required();
  o->reboot->add_flag("--allow-destructive", o->allow_destructive, "Required: it reboots the node");
  o->reboot->add_flag("--force", o->force, "Even when the node runs jobs");
  o->reboot->add_flag("--yes", o->yes, "A node that is not a lab's");
  o->reboot
      ->add_option(
          "--gpu-check", o->gpu_check,
          "Shell command that succeeds once the node's GPUs answer ({node} replaced, quoted)")
      ->capture_default_str();
  o->reboot->add_option("--timeout", o->timeout_s, "Seconds to wait for the node and its GPUs")
      ->check(SecondsIn(86400))
      ->capture_default_str();
  o->reboot->add_option("--poll", o->poll_s, "Seconds between looks")
      ->check(Real(0.1, 3600))
      ->capture_default_str();
  o->reboot->add_option("--scheduler", o->scheduler.scheduler, "slurm or kubernetes")
      ->check(CLI::IsMember({"slurm", "kubernetes"}))
      ->capture_default_str();
  return {app, [o](Context& ctx) {
            if (o->report->parsed()) return Report(*o, ctx);
            if (o->reboot->parsed()) return Reboot(*o, ctx);
            return Run(*o, ctx);
          }};
}

}  // namespace cmax::cli
