#include "reliability/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "health/xid_catalog.hpp"
#include "inject/dcgm.hpp"
#include "inject/kernel_lines.hpp"
#include "inject/nvml_sim.hpp"

namespace cmax::reliability {
namespace {

Result<Duration> SecondsField(const YAML::Node& node, const char* key, double fallback) {
  if (!node[key]) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(fallback));
  }
  double value = 0;
  try {
    value = node[key].as<double>();
  } catch (const YAML::Exception&) {
    return Fail(ErrorCode::kInvalidArgument, "scenario: {} must be a number of seconds", key);
  }
  if (!std::isfinite(value) || value <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "scenario: {} must be positive", key);
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(value));
}

std::string Text(const YAML::Node& node, const char* key) {
  return node[key] && node[key].IsScalar() ? node[key].as<std::string>() : std::string();
}

double Secs(Duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Result<Scenario> ParseScenario(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "scenario is not YAML or JSON: {}", e.what());
  }
  if (!root.IsMap()) return Fail(ErrorCode::kInvalidArgument, "scenario: not a map");
  try {
    Scenario s;
    s.name = Text(root, "name");
    if (root["bars"]) {
      const YAML::Node b = root["bars"];
      auto detect = SecondsField(b, "detect_s", -1);
      auto out = SecondsField(b, "out_of_service_s", -1);
      if (!b["detect_s"] || !b["out_of_service_s"] || !detect || !out) {
        return Fail(ErrorCode::kInvalidArgument,
                    "scenario: bars need positive detect_s and out_of_service_s");
      }
      s.bars = {"custom", *detect, *out, std::nullopt};
      if (b["replace_s"]) {
        auto replace = SecondsField(b, "replace_s", -1);
        if (!replace) return tl::unexpected(replace.error());
        s.bars.replace = *replace;
      }
    } else {
      const std::string arch =
          Text(root, "architecture").empty() ? "hgx" : Text(root, "architecture");
      const auto& builtin = BuiltinPassBars();
      const auto it = builtin.find(arch);
      if (it == builtin.end()) {
        return Fail(ErrorCode::kInvalidArgument, "scenario: no pass bars for architecture '{}'",
                    arch);
      }
      s.bars = it->second;
    }
    auto poll = SecondsField(root, "poll_s", 1.0);
    if (!poll) return tl::unexpected(poll.error());
    s.poll = *poll;
    const Duration largest =
        std::max({s.bars.detect, s.bars.out_of_service, s.bars.replace.value_or(Duration{})});
    auto timeout = SecondsField(root, "timeout_s", Secs(largest));
    if (!timeout) return tl::unexpected(timeout.error());
    s.timeout = *timeout;
    if (!Text(root, "service_partition").empty())
      s.service_partition = Text(root, "service_partition");
    if (const YAML::Node signals = root["signals"]; signals) {
      if (!signals.IsMap()) return Fail(ErrorCode::kInvalidArgument, "scenario: signals is a map");
      s.prometheus = Text(signals, "prometheus");
      s.alert_query = Text(signals, "query");
      if (!Text(signals, "node_label").empty()) s.alert_node_label = Text(signals, "node_label");
      s.alert_webhook = Text(signals, "webhook");
      if (s.prometheus.empty() != s.alert_query.empty()) {
        return Fail(ErrorCode::kInvalidArgument,
                    "scenario: signals need both prometheus (a URL) and query");
      }
    }
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0) {
      return Fail(ErrorCode::kInvalidArgument, "scenario: no steps");
    }
    for (size_t i = 0; i < steps.size(); ++i) {
      const YAML::Node n = steps[i];
      if (!n.IsMap())
        return Fail(ErrorCode::kInvalidArgument, "scenario step {}: not a map", i + 1);
      Step step;
      step.inject = Text(n, "inject");
      step.node = Text(n, "node");
      step.pci = step.inject == "sxid" ? Text(n, "switch_pci") : Text(n, "gpu");
      step.code = n["code"] ? n["code"].as<int>() : 0;
      step.fault = step.inject == "dcgm" ? Text(n, "field") : Text(n, "fault");
      step.value = n["value"] ? n["value"].as<long long>() : 0;
      step.state = Text(n, "state");
      step.switch_index = n["switch"] ? n["switch"].as<int>() : 0;
      step.link = n["link"] ? n["link"].as<int>() : 0;
      step.fatal = n["fatal"] && n["fatal"].as<bool>();
      const bool by_code = step.inject == "xid" || step.inject == "sxid";
      step.name =
          Text(n, "name").empty()
              ? (step.inject == "pcie-sbr"
                     ? fmt::format("pcie-sbr-{}", step.node)
                     : fmt::format("{}-{}-{}", step.inject,
                                   by_code ? std::to_string(step.code) : step.fault, step.node))
              : Text(n, "name");
      if (!by_code && step.inject != "nvml-sim" && step.inject != "dcgm" &&
          step.inject != "pcie-sbr") {
        return Fail(ErrorCode::kInvalidArgument,
                    "scenario step {}: inject must be xid, sxid, nvml-sim, dcgm or pcie-sbr, got "
                    "'{}'",
                    i + 1, step.inject);
      }
      if (step.node.empty()) {
        return Fail(ErrorCode::kInvalidArgument, "scenario step {}: no node", i + 1);
      }
      if (auto record = StepRecord(step); !record) {
        return Fail(ErrorCode::kInvalidArgument, "scenario step {}: {}", i + 1,
                    record.error().message);
      }
      s.steps.push_back(std::move(step));
    }
    return s;
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "scenario: {}", e.what());
  }
}

Result<std::vector<std::string>> StepDcgmArgv(const Step& step) {
  auto gpu = inject::DcgmGpuId(step.pci);
  if (!gpu) return Fail(ErrorCode::kInvalidArgument, "dcgm needs gpu: {}", gpu.error().message);
  return inject::DcgmInjectArgv(step.fault, step.value, *gpu, std::nullopt);
}

Result<std::string> StepRecord(const Step& step) {
  if (step.inject == "pcie-sbr") {
    auto pci = inject::FullPciAddress(step.pci);
    if (!pci) return tl::unexpected(pci.error());
    return "secondary bus reset above GPU " + *pci;
  }
  if (step.inject == "nvml-sim") {
    const auto names = inject::SimFaultNames();
    if (std::find(names.begin(), names.end(), step.fault) == names.end()) {
      return Fail(ErrorCode::kInvalidArgument, "unknown simulated fault '{}'", step.fault);
    }
    if (step.pci.empty()) return Fail(ErrorCode::kInvalidArgument, "nvml-sim needs gpu");
    return fmt::format("simulated NVML: {} on GPU {}{}", step.fault, step.pci,
                       step.value != 0 ? fmt::format(" (value {})", step.value) : "");
  }
  if (step.inject == "dcgm") {
    auto argv = StepDcgmArgv(step);
    if (!argv) return tl::unexpected(argv.error());
    return fmt::format("{}", fmt::join(*argv, " "));
  }
  if (step.inject == "xid") {
    return inject::XidRecord({.code = step.code, .pci = step.pci}, health::XidCatalog::Builtin());
  }
  return inject::SxidRecord({.code = step.code,
                             .pci = step.pci,
                             .switch_index = step.switch_index,
                             .fatal = step.fatal,
                             .link = step.link});
}

Result<std::vector<StepResult>> RunScenario(const Scenario& scenario,
                                            remediate::Scheduler& scheduler, Clock& clock,
                                            const RunHooks& hooks) {
  const auto say = [&hooks](std::string_view line) {
    if (hooks.progress) hooks.progress(line);
  };
  const auto stopping = [&hooks] { return hooks.stop && hooks.stop(); };
  std::vector<StepResult> results;
  for (const Step& step : scenario.steps) {
    if (stopping()) break;
    StepResult r;
    r.step = step;
    r.record = StepRecord(step).value_or("");
    Watcher watcher(scheduler, clock, scenario.service_partition, hooks.alerts);
    auto baseline = watcher.Baseline();
    if (!baseline) return tl::unexpected(baseline.error());
    const auto node = baseline->find(step.node);
    if (node == baseline->end()) {
      r.not_injected = fmt::format("{} is not a node the scheduler knows", step.node);
    } else if (node->second.drain) {
      r.not_injected = fmt::format(
          "{} is already out of service ({}); not injected, so as not "
          "to stack faults",
          step.node, node->second.reason);
    }
    const WallTime injected = clock.Now();
    if (r.not_injected.empty()) {
      if (auto ok = hooks.inject(step, r.record); !ok) {
        r.not_injected = "injection failed: " + ok.error().message;
      }
    }
    if (!r.not_injected.empty()) {
      say(fmt::format("{}: {}", step.name, r.not_injected));
      r.timeline = BuildTimeline(step.node, injected, {}, injected);
      r.judgement = {Verdict::kUnknown, {r.not_injected}};
      results.push_back(std::move(r));
      continue;
    }
    say(fmt::format("{}: injected {} {} on {}", step.name, step.inject, step.code, step.node));
    const auto deadline =
        injected + std::chrono::duration_cast<std::chrono::milliseconds>(scenario.timeout);
    for (;;) {
      clock.Sleep(scenario.poll);
      for (Observation& o : watcher.Poll()) {
        say(fmt::format("{}: +{} {} {}{}", step.name, FormatDuration(o.at - injected),
                        ObservationKindName(o.kind), o.node,
                        o.detail.empty() ? "" : " (" + o.detail + ")"));
        r.observations.push_back(std::move(o));
      }
      const WallTime now = clock.Now();
      r.timeline = BuildTimeline(step.node, injected, r.observations, now);
      if (Decided(r.timeline, scenario.bars) || now >= deadline || stopping()) break;
    }
    r.judgement = Judge(r.timeline, scenario.bars);
    say(fmt::format("{}: {}", step.name, VerdictName(r.judgement.verdict)));
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<Finding> ScenarioFindings(const std::vector<StepResult>& results) {
  std::vector<Finding> findings;
  for (const StepResult& r : results) {
    Finding f;
    f.check_id = "reliability." + r.step.name;
    f.status = r.judgement.verdict == Verdict::kPass   ? CheckStatus::kPass
               : r.judgement.verdict == Verdict::kFail ? CheckStatus::kFail
                                                       : CheckStatus::kWarn;
    f.severity = r.judgement.verdict == Verdict::kPass ? Severity::kInfo : Severity::kHigh;
    f.observed = fmt::format("{}", fmt::join(r.judgement.reasons, "; "));
    f.expected = "drained or cordoned in time, and replaced where the architecture asks";
    f.message = fmt::format("{} {} on {} ({}): {}", r.step.inject, r.step.code, r.step.node,
                            r.step.pci, VerdictName(r.judgement.verdict));
    if (r.judgement.verdict == Verdict::kFail) {
      f.remediation =
          "the provider's health checks did not take the node out in time: check that they read "
          "the kernel log and that something acts on what they find";
    }
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<Metric> ScenarioMetrics(const std::vector<StepResult>& results) {
  std::vector<Metric> metrics;
  for (const StepResult& r : results) {
    const std::map<std::string, std::string> labels = {{"step", r.step.name},
                                                       {"node", r.step.node}};
    const auto add = [&](const char* name, const std::optional<Duration>& d) {
      if (d) metrics.push_back({name, labels, Secs(*d), "s"});
    };
    add("reliability.detect", r.timeline.detected);
    add("reliability.out_of_service", r.timeline.out_of_service);
    add("reliability.replaced", r.timeline.replaced);
    add("reliability.back_in_service", r.timeline.back);
    if (r.not_injected.empty()) {
      metrics.push_back({"reliability.watched", labels,
                         Secs(r.timeline.watched_until - r.timeline.injected), "s"});
    }
  }
  return metrics;
}

}  // namespace cmax::reliability
