// Scenarios: parsing (YAML and JSON, bars from data or inline, bad input) and the runner over a
// stand-in provider on a clock the test moves: a provider that drains in time passes, one that
// never does fails with "no drain", one whose scheduler goes away is UNKNOWN, and a node already
// drained is not injected.
#include "reliability/scenario.hpp"

#include <gtest/gtest.h>
#include <map>

#include "support/read_only_scheduler.hpp"

namespace cmax::reliability {
namespace {

using namespace std::chrono_literals;
using remediate::SchedulerNode;

const WallTime kT0{std::chrono::milliseconds(1'800'000'000'000)};

constexpr const char* kScenario = R"(
name: three faults
bars: {detect_s: 30, out_of_service_s: 30}
poll_s: 0.5
service_partition: gpu
steps:
  - {name: fallen-off, inject: xid, code: 79, node: gpu1, gpu: "0000:17:00.0"}
  - {inject: xid, code: 48, node: gpu2, gpu: "3b:00.0"}
  - {inject: sxid, code: 12028, node: gpu3, switch_pci: "0000:05:00.0", switch: 2, link: 7, fatal: true}
)";

TEST(Scenario, ParsesStepsAndBars) {
  auto s = ParseScenario(kScenario);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->name, "three faults");
  EXPECT_EQ(s->bars.detect, 30s);
  EXPECT_FALSE(s->bars.replace);
  EXPECT_EQ(s->poll, 500ms);
  EXPECT_EQ(s->timeout, 30s);  // the largest bar
  ASSERT_EQ(s->steps.size(), 3U);
  EXPECT_EQ(s->steps[0].name, "fallen-off");
  EXPECT_EQ(s->steps[1].name, "xid-48-gpu2");
  EXPECT_EQ(s->steps[2].pci, "0000:05:00.0");
  EXPECT_TRUE(s->steps[2].fatal);
  EXPECT_EQ(StepRecord(s->steps[2]).value(),
            "<3>nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Fatal, Link 7 egress "
            "non-posted PRIV error (First)");
  // JSON is YAML; bars from the data file by architecture.
  auto j = ParseScenario(R"({"architecture": "hgx", "steps": [{"inject": "xid", "code": 79,
                             "node": "n1", "gpu": "0000:17:00.0"}]})");
  ASSERT_TRUE(j) << j.error().message;
  EXPECT_EQ(j->bars.replace, Duration(3600s));
  EXPECT_EQ(j->timeout, 3600s);
}

TEST(Scenario, NvmlSimAndDcgmSteps) {
  auto s = ParseScenario(R"(steps:
  - {inject: nvml-sim, fault: row-remap-failure, node: gpu4, gpu: 0, state: /lab/gpu4.json}
  - {inject: dcgm, field: xid, value: 79, node: gpu5, gpu: 2}
)");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->steps[0].name, "nvml-sim-row-remap-failure-gpu4");
  EXPECT_EQ(s->steps[0].state, "/lab/gpu4.json");
  EXPECT_EQ(StepRecord(s->steps[0]).value(), "simulated NVML: row-remap-failure on GPU 0");
  EXPECT_EQ(StepRecord(s->steps[1]).value(), "dcgmi test --inject --gpuid 2 -f 230 -v 79");
  auto sbr = ParseScenario("steps: [{inject: pcie-sbr, node: gpu6, gpu: '17:00.0'}]");
  ASSERT_TRUE(sbr) << sbr.error().message;
  EXPECT_EQ(sbr->steps[0].name, "pcie-sbr-gpu6");
  EXPECT_EQ(StepRecord(sbr->steps[0]).value(), "secondary bus reset above GPU 0000:17:00.0");
  EXPECT_FALSE(ParseScenario("steps: [{inject: pcie-sbr, node: gpu6, gpu: 'gpu0'}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: nvml-sim, fault: melt, node: n, gpu: 0}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: nvml-sim, fault: lost, node: n}]"));
  // The GPU is an index or a PCI address: -1 read as "GPU -1" in the dry run before.
  EXPECT_FALSE(ParseScenario("steps: [{inject: nvml-sim, fault: lost, node: n, gpu: -1}]"));
  EXPECT_TRUE(ParseScenario("steps: [{inject: nvml-sim, fault: lost, node: n, gpu: '17:00.0'}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: dcgm, field: nope, value: 1, node: n, gpu: 0}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: dcgm, field: xid, value: 1, node: n, gpu: x}]"));
}

TEST(Scenario, SignalsNeedAServerAndAQuery) {
  auto s =
      ParseScenario(R"(signals: {prometheus: "http://prom:9090", query: "up == 0", node_label: host}
steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}])");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->prometheus, "http://prom:9090");
  EXPECT_EQ(s->alert_query, "up == 0");
  EXPECT_EQ(s->alert_node_label, "host");
  auto alone = ParseScenario(R"(signals: {prometheus: "http://prom:9090"}
steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}])");
  ASSERT_FALSE(alone);
  EXPECT_EQ(alone.error().message, "scenario line 1: signals query is needed with prometheus");
  // Said before anything is injected, by a dry run too, at the line of the bad one.
  auto file = ParseScenario(R"(name: x
signals:
  query: up
  prometheus: "file:///etc/shadow"
steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}])");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message,
            "scenario line 4: signals prometheus must be an http:// or https:// URL");
  for (const char* webhook : {"999.1.1.1:99999", "nocolon", ":9099", "h:port"}) {
    EXPECT_FALSE(ParseScenario(std::string("signals: {webhook: \"") + webhook +
                               "\"}\nsteps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}]"))
        << webhook;
  }
  EXPECT_TRUE(ParseScenario(R"(signals: {webhook: "0.0.0.0:9099"}
steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}])"));
}

// The same rules hold for --prometheus, --alert-query and --alert-webhook given as flags.
TEST(Scenario, AlertSignalsAreCheckedWhereverTheyComeFrom) {
  struct Case {
    const char* prometheus;
    const char* query;
    const char* webhook;
    const char* error;  // "" when accepted
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "", "", ""},
           {"http://prom:9090", "up == 0", "", ""},
           {"https://prom.example/", "up", "[::1]:0", ""},
           {"", "", "0.0.0.0:9099", ""},
           {"http://prom:9090", "", "", "query is needed with prometheus"},
           {"", "up", "", "prometheus (a URL) is needed with query"},
           {"gopher://prom", "up", "", "prometheus must be an http:// or https:// URL"},
           {"prom:9090", "up", "", "prometheus must be an http:// or https:// URL"},
           {"", "", "nocolon", "webhook must be HOST:PORT"},
           {"", "", ":9099", "webhook must be HOST:PORT"},
           {"", "", "h:65536", "webhook must be HOST:PORT"},
           {"", "", "h:-1", "webhook must be HOST:PORT"},
       }) {
    auto ok = CheckAlertSignals(c.prometheus, c.query, c.webhook);
    if (*c.error == '\0') {
      EXPECT_TRUE(ok) << c.prometheus << " " << c.query << " " << c.webhook << ": "
                      << ok.error().message;
    } else {
      ASSERT_FALSE(ok) << c.prometheus << " " << c.query << " " << c.webhook;
      EXPECT_EQ(ok.error().message.rfind(c.error, 0), 0U) << ok.error().message;
    }
  }
}

TEST(Scenario, RefusesWhatCannotRun) {
  EXPECT_FALSE(ParseScenario("steps: ["));
  EXPECT_FALSE(ParseScenario("- a list"));
  EXPECT_FALSE(ParseScenario("name: nothing to do"));
  EXPECT_FALSE(
      ParseScenario("architecture: tpu\nsteps: [{inject: xid, code: 1, node: n, gpu: '17:00.0'}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: reboot, code: 1, node: n}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: xid, code: 79, gpu: '17:00.0'}]"));  // no node
  EXPECT_FALSE(ParseScenario("steps: [{inject: xid, code: 79, node: n, gpu: 'gpu0'}]"));
  EXPECT_FALSE(ParseScenario("steps: [{inject: xid, code: x, node: n, gpu: '17:00.0'}]"));
  EXPECT_FALSE(
      ParseScenario("bars: {detect_s: 0, out_of_service_s: 1}\n"
                    "steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}]"));
  EXPECT_FALSE(
      ParseScenario("poll_s: -1\nsteps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}]"));
  // A step's name labels its results: a name given twice is refused; the same injection twice
  // without names is numbered.
  const auto twice = ParseScenario(
      "steps: [{name: a, inject: xid, code: 79, node: n, gpu: '17:00.0'},\n"
      "        {name: a, inject: xid, code: 48, node: n, gpu: '17:00.0'}]");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("the name a is already a step's"), std::string::npos)
      << twice.error().message;
  // A node is a host name: it goes into commands and hints people copy.
  const auto shell =
      ParseScenario("steps: [{inject: xid, code: 79, node: 'n; id', gpu: '17:00.0'}]");
  ASSERT_FALSE(shell);
  EXPECT_NE(shell.error().message.find("the node must be a host name"), std::string::npos)
      << shell.error().message;
  // YAML keeps the first of two equal keys: the step would inject Xid 79 and say nothing.
  const auto two_codes =
      ParseScenario("steps: [{inject: xid, code: 79, code: 80, node: n, gpu: '17:00.0'}]");
  ASSERT_FALSE(two_codes);
  EXPECT_NE(two_codes.error().message.find("\"code\" appears twice"), std::string::npos)
      << two_codes.error().message;
  const auto again = ParseScenario(
      "steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'},\n"
      "        {inject: xid, code: 79, node: n, gpu: '17:00.0'}]");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->steps[0].name, "xid-79-n");
  EXPECT_EQ(again->steps[1].name, "xid-79-n-2");
  // A name given that a repeat's number would take is skipped by the next repeat.
  const auto around = ParseScenario(
      "steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'},\n"
      "        {inject: xid, code: 79, node: n, gpu: '17:00.0'},\n"
      "        {name: xid-79-n-3, inject: xid, code: 48, node: n, gpu: '17:00.0'},\n"
      "        {inject: xid, code: 79, node: n, gpu: '17:00.0'}]");
  ASSERT_TRUE(around) << around.error().message;
  std::vector<std::string> names;
  for (const Step& step : around->steps) names.push_back(step.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"xid-79-n", "xid-79-n-2", "xid-79-n-3", "xid-79-n-4"}));
}

// A provider in miniature: drains a node `delay` after a fault is injected for it (or never),
// and can lose its scheduler.
class StandInProvider final : public testing::ReadOnlyScheduler {
 public:
  StandInProvider(ManualClock& clock, std::optional<Duration> delay)
      : clock_(clock), delay_(delay) {
    for (const char* n : {"gpu1", "gpu2", "gpu3"}) nodes_[n] = {};
  }
  struct NodeState {
    std::optional<WallTime> fault;
    bool drained = false;
  };
  void Fault(const std::string& node) { nodes_.at(node).fault = clock_.Now(); }
  Result<std::vector<SchedulerNode>> Nodes() override {
    if (away) return Fail(ErrorCode::kUnavailable, "slurmctld does not answer");
    std::vector<SchedulerNode> out;
    for (auto& [name, s] : nodes_) {
      if (delay_ && s.fault && clock_.Now() >= *s.fault + *delay_) s.drained = true;
      out.push_back(
          {name, s.drained ? "drained" : "idle", s.drained, s.drained ? "cmax: Xid" : "", {"gpu"}});
    }
    return out;
  }

  std::map<std::string, NodeState> nodes_;
  bool away = false;

 private:
  ManualClock& clock_;
  std::optional<Duration> delay_;
};

TEST(Scenario, AProviderThatDrainsInTimePassesEveryStep) {
  ManualClock clock(kT0);
  StandInProvider provider(clock, 2s);
  std::vector<std::string> written;
  std::vector<std::string> progress;
  RunHooks hooks{[&](const Step& step, const std::string& record) -> Result<void> {
                   written.push_back(record);
                   provider.Fault(step.node);
                   return {};
                 },
                 [&](std::string_view line) { progress.emplace_back(line); }};
  auto results = RunScenario(ParseScenario(kScenario).value(), provider, clock, hooks);
  ASSERT_TRUE(results) << results.error().message;
  ASSERT_EQ(results->size(), 3U);
  for (const StepResult& r : *results) {
    EXPECT_EQ(r.judgement.verdict, Verdict::kPass) << r.step.name;
    EXPECT_EQ(r.timeline.detected, Duration(2s)) << r.step.name;  // within one poll (0.5 s)
  }
  EXPECT_EQ(written.size(), 3U);
  EXPECT_EQ(written[0].substr(0, 30), "<3>NVRM: Xid (PCI:0000:17:00):");
  const auto findings = ScenarioFindings(*results);
  EXPECT_EQ(findings[0].check_id, "reliability.fallen-off");
  EXPECT_EQ(findings[0].status, CheckStatus::kPass);
  const auto metrics = ScenarioMetrics(*results);
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(metrics[0].name, "reliability.detect");
  EXPECT_DOUBLE_EQ(metrics[0].value, 2.0);
  EXPECT_NE(std::find(progress.begin(), progress.end(), "fallen-off: PASS"), progress.end());
}

TEST(Scenario, NoDrainFailsEveryStepWithNoDrain) {
  ManualClock clock(kT0);
  StandInProvider provider(clock, std::nullopt);  // the controller is switched off
  RunHooks hooks{[&](const Step&, const std::string&) -> Result<void> { return {}; }, {}};
  auto results = RunScenario(ParseScenario(kScenario).value(), provider, clock, hooks);
  ASSERT_TRUE(results);
  for (const StepResult& r : *results) {
    EXPECT_EQ(r.judgement.verdict, Verdict::kFail);
    EXPECT_EQ(r.judgement.reasons[1], "no drain within 30.00s");
    EXPECT_GE(r.timeline.watched_until - r.timeline.injected, 30s);
  }
  EXPECT_EQ(ScenarioFindings(*results)[0].status, CheckStatus::kFail);
}

TEST(Scenario, LosingTheSchedulerIsUnknownAndADrainedNodeIsNotInjected) {
  ManualClock clock(kT0);
  StandInProvider provider(clock, std::nullopt);
  provider.nodes_["gpu2"].drained = true;
  int injected = 0;
  RunHooks hooks{[&](const Step&, const std::string&) -> Result<void> {
                   ++injected;
                   provider.away = true;  // the observer loses contact right after
                   return {};
                 },
                 {}};
  Scenario s = ParseScenario(kScenario).value();
  s.steps.resize(1);
  s.steps.push_back(ParseScenario(kScenario).value().steps[1]);
  auto results = RunScenario(s, provider, clock, hooks);
  // The second step cannot even take its baseline: the scheduler is away.
  ASSERT_FALSE(results);
  provider.away = false;
  s.steps.erase(s.steps.begin());
  results = RunScenario(s, provider, clock, hooks);
  ASSERT_TRUE(results);
  EXPECT_EQ((*results)[0].judgement.verdict, Verdict::kUnknown);
  EXPECT_NE((*results)[0].not_injected.find("already out of service"), std::string::npos);
  EXPECT_EQ(injected, 1);  // only the first run's first step
}

// Each step is handed on as soon as it is judged, before the next is injected: a scenario cut
// short (killed, or its scheduler lost) keeps the steps before. A step that cannot be handed on
// (the store is full) ends the scenario before another fault goes in.
TEST(Scenario, EachStepIsHandedOnBeforeTheNextIsInjected) {
  ManualClock clock(kT0);
  StandInProvider provider(clock, 2s);
  std::vector<std::string> events;
  RunHooks hooks;
  hooks.inject = [&](const Step& step, const std::string&) -> Result<void> {
    events.push_back("inject " + step.name);
    provider.Fault(step.node);
    return {};
  };
  hooks.step_done = [&](const StepResult& r) -> Result<void> {
    events.push_back(fmt::format("done {} {}", r.step.name, VerdictName(r.judgement.verdict)));
    if (r.step.name == "fallen-off") provider.away = true;  // the next baseline fails
    return {};
  };
  auto results = RunScenario(ParseScenario(kScenario).value(), provider, clock, hooks);
  ASSERT_FALSE(results);
  EXPECT_EQ(events, (std::vector<std::string>{"inject fallen-off", "done fallen-off PASS"}));

  StandInProvider fresh(clock, 2s);
  events.clear();
  hooks.inject = [&](const Step& step, const std::string&) -> Result<void> {
    events.push_back("inject " + step.name);
    fresh.Fault(step.node);
    return {};
  };
  hooks.step_done = [&](const StepResult& r) -> Result<void> {
    events.push_back("done " + r.step.name);
    return Fail(ErrorCode::kIo, "database or disk is full");
  };
  results = RunScenario(ParseScenario(kScenario).value(), fresh, clock, hooks);
  ASSERT_FALSE(results);
  EXPECT_EQ(results.error().message, "database or disk is full");
  EXPECT_EQ(events, (std::vector<std::string>{"inject fallen-off", "done fallen-off"}));
}

TEST(Scenario, LostContactAfterInjectionIsUnknown) {
  ManualClock clock(kT0);
  StandInProvider provider(clock, std::nullopt);
  RunHooks hooks{[&](const Step&, const std::string&) -> Result<void> {
                   provider.away = true;
                   return {};
                 },
                 {}};
  Scenario s = ParseScenario(kScenario).value();
  s.steps.resize(1);
  auto results = RunScenario(s, provider, clock, hooks);
  ASSERT_TRUE(results);
  EXPECT_EQ((*results)[0].judgement.verdict, Verdict::kUnknown);
  EXPECT_EQ(ScenarioFindings(*results)[0].status, CheckStatus::kWarn);
}

}  // namespace
}  // namespace cmax::reliability
