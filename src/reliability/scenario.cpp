#include "reliability/scenario.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "core/keys.hpp"
#include "core/strings.hpp"
#include "core/yaml_document.hpp"
#include "health/xid_catalog.hpp"
#include "inject/dcgm.hpp"
#include "inject/kernel_lines.hpp"
#include "inject/nvml_sim.hpp"

namespace cmax::reliability {
namespace {

// The 1-based line of a node in the file, 0 when yaml-cpp does not know it.
int LineOf(const YAML::Node& node) {
  return node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

// Every key of a map must be one the reader knows: a misspelt one is an error, never ignored.
Result<void> OnlyKeys(const YAML::Node& map, const std::vector<std::string_view>& known,
                      std::string_view what) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return tl::unexpected(UnknownKey(what, key, LineOf(it->first), known));
    }
    // YAML reads the first of two equal keys: `code: 79, code: 80` would inject 79 unsaid.
    if (!seen.insert(key).second) {
      return Fail(ErrorCode::kInvalidArgument, "{} line {}: \"{}\" appears twice", what,
                  LineOf(it->first), SanitizeUtf8(key));
    }
  }
  return {};
}

// Seconds in [min_s, max_s]; a key that is not there is `fallback` (not checked).
Result<Duration> SecondsField(const YAML::Node& node, const char* key, double fallback,
                              double min_s = 0, double max_s = 7 * 24 * 3600.0) {
  if (!node[key]) {
    return SecondsAsDuration(fallback);
  }
  double value = 0;
  try {
    value = node[key].as<double>();
  } catch (const YAML::Exception&) {
    value = std::nan("");
  }
  if (!std::isfinite(value) || value <= 0 || value < min_s || value > max_s) {
    return Fail(ErrorCode::kInvalidArgument,
                "scenario line {}: {} must be a number of seconds in [{}, {}]", LineOf(node[key]),
                key, min_s > 0 ? min_s : 0, max_s);
  }
  return SecondsAsDuration(value);
}

// A whole number in [min, max]; a key that is not there is 0.
Result<int64_t> WholeField(const YAML::Node& node, const char* key, int64_t min, int64_t max,
                           size_t step) {
  if (!node[key]) return 0;
  int64_t value = 0;
  bool ok = node[key].IsScalar();
  try {
    if (ok) value = node[key].as<int64_t>();
  } catch (const YAML::Exception&) {
    ok = false;
  }
  if (!ok || value < min || value > max) {
    return Fail(ErrorCode::kInvalidArgument,
                "scenario line {}: step {}: {} must be a whole number in [{}, {}]",
                LineOf(node[key]), step, key, min, max);
  }
  return value;
}

std::string Text(const YAML::Node& node, const char* key) {
  return node[key] && node[key].IsScalar() ? node[key].as<std::string>() : std::string();
}

double Secs(Duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Result<void> CheckAlertSignals(std::string_view prometheus, std::string_view query,
                               std::string_view webhook) {
  if (prometheus.empty() != query.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "{} is needed with {}",
                prometheus.empty() ? "prometheus (a URL)" : "query",
                prometheus.empty() ? "query" : "prometheus");
  }
  if (!prometheus.empty() && !prometheus.starts_with("http://") &&
      !prometheus.starts_with("https://")) {
    return Fail(ErrorCode::kInvalidArgument, "prometheus must be an http:// or https:// URL");
  }
  if (!webhook.empty()) {
    const size_t colon = webhook.rfind(':');
    const auto port = colon == std::string_view::npos
                          ? std::nullopt
                          : ParseWhole<unsigned>(webhook.substr(colon + 1));
    if (colon == 0 || !port || *port > 65535) {
      return Fail(ErrorCode::kInvalidArgument,
                  "webhook must be HOST:PORT to listen on (port 0-65535, 0 for any)");
    }
  }
  return {};
}

Result<Scenario> ParseScenario(std::string_view text) {
  YAML::Node root;
  try {
    auto one = LoadOneYamlDocument(text, "scenario");
    if (!one) return tl::unexpected(one.error());
    root = *one;
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "scenario is not YAML or JSON: {}", e.what());
  }
  if (!root.IsMap()) return Fail(ErrorCode::kInvalidArgument, "scenario: not a map");
  try {
    if (auto ok = OnlyKeys(root,
                           {"name", "architecture", "bars", "poll_s", "timeout_s",
                            "service_partition", "signals", "steps"},
                           "scenario");
        !ok) {
      return tl::unexpected(ok.error());
    }
    Scenario s;
    s.name = Text(root, "name");
    if (root["bars"]) {
      const YAML::Node b = root["bars"];
      if (!b.IsMap()) return Fail(ErrorCode::kInvalidArgument, "scenario: bars is a map");
      if (auto ok =
              OnlyKeys(b, {"detect_s", "out_of_service_s", "replace_s", "back_s"}, "scenario bars");
          !ok) {
        return tl::unexpected(ok.error());
      }
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
      if (b["back_s"]) {
        auto back = SecondsField(b, "back_s", -1);
        if (!back) return tl::unexpected(back.error());
        s.bars.back = *back;
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
    // Polls faster than 10 ms would only load the scheduler; slower than an hour miss the bars.
    auto poll = SecondsField(root, "poll_s", 1.0, 0.01, 3600);
    if (!poll) return tl::unexpected(poll.error());
    s.poll = *poll;
    const Duration largest =
        std::max({s.bars.detect, s.bars.out_of_service, s.bars.replace.value_or(Duration{}),
                  s.bars.back.value_or(Duration{})});
    auto timeout = SecondsField(root, "timeout_s", Secs(largest));
    if (!timeout) return tl::unexpected(timeout.error());
    s.timeout = *timeout;
    if (!Text(root, "service_partition").empty())
      s.service_partition = Text(root, "service_partition");
    if (const YAML::Node signals = root["signals"]; signals) {
      if (!signals.IsMap()) return Fail(ErrorCode::kInvalidArgument, "scenario: signals is a map");
      if (auto ok = OnlyKeys(signals, {"prometheus", "query", "node_label", "webhook"},
                             "scenario signals");
          !ok) {
        return tl::unexpected(ok.error());
      }
      s.prometheus = Text(signals, "prometheus");
      s.alert_query = Text(signals, "query");
      if (!Text(signals, "node_label").empty()) s.alert_node_label = Text(signals, "node_label");
      s.alert_webhook = Text(signals, "webhook");
      if (auto ok = CheckAlertSignals(s.prometheus, s.alert_query, s.alert_webhook); !ok) {
        const std::string& why = ok.error().message;
        const YAML::Node at = signals[why.substr(0, why.find(' '))];
        return Fail(ErrorCode::kInvalidArgument, "scenario line {}: signals {}",
                    LineOf(at ? at : signals), why);
      }
    }
    const YAML::Node steps = root["steps"];
    if (!steps || !steps.IsSequence() || steps.size() == 0) {
      return Fail(ErrorCode::kInvalidArgument, "scenario: no steps");
    }
    std::set<std::string> names;
    std::map<std::string, int> next_number;  // by default name: the number its next repeat takes
    for (size_t i = 0; i < steps.size(); ++i) {
      const YAML::Node n = steps[i];
      if (!n.IsMap())
        return Fail(ErrorCode::kInvalidArgument, "scenario step {}: not a map", i + 1);
      Step step;
      const std::string inject = Text(n, "inject");
      // The keys each kind of step takes: one that belongs to another kind is an error too.
      static const std::map<InjectKind, std::vector<std::string_view>> kStepKeys = {
          {InjectKind::kXid, {"name", "inject", "node", "gpu", "code"}},
          {InjectKind::kSxid,
           {"name", "inject", "node", "switch_pci", "code", "switch", "link", "fatal"}},
          {InjectKind::kNvmlSim, {"name", "inject", "node", "gpu", "fault", "value", "state"}},
          {InjectKind::kDcgm, {"name", "inject", "node", "gpu", "field", "value"}},
          {InjectKind::kPcieSbr, {"name", "inject", "node", "gpu"}}};
      const std::optional<InjectKind> kind = ParseInjectKind(inject);
      if (!kind) {
        return Fail(ErrorCode::kInvalidArgument,
                    "scenario line {}: step {}: inject must be xid, sxid, nvml-sim, dcgm or "
                    "pcie-sbr, got '{}'",
                    LineOf(n), i + 1, SanitizeUtf8(inject.substr(0, 40)));
      }
      step.inject = *kind;
      if (auto ok =
              OnlyKeys(n, kStepKeys.at(*kind), fmt::format("scenario step {} ({})", i + 1, inject));
          !ok) {
        return tl::unexpected(ok.error());
      }
      step.node = Text(n, "node");
      step.pci = step.inject == InjectKind::kSxid ? Text(n, "switch_pci") : Text(n, "gpu");
      auto code = WholeField(n, "code", 0, 1'000'000, i + 1);
      auto value = WholeField(n, "value", 0, INT64_MAX, i + 1);
      auto switch_index = WholeField(n, "switch", 0, 255, i + 1);
      auto link = WholeField(n, "link", 0, 255, i + 1);
      for (const auto* field : {&code, &value, &switch_index, &link}) {
        if (!*field) return tl::unexpected(field->error());
      }
      step.code = static_cast<int>(*code);
      step.fault = step.inject == InjectKind::kDcgm ? Text(n, "field") : Text(n, "fault");
      step.value = *value;
      step.state = Text(n, "state");
      step.switch_index = static_cast<int>(*switch_index);
      step.link = static_cast<int>(*link);
      step.fatal = n["fatal"] && n["fatal"].as<bool>();
      const bool by_code = step.inject == InjectKind::kXid || step.inject == InjectKind::kSxid;
      step.name =
          Text(n, "name").empty()
              ? (step.inject == InjectKind::kPcieSbr
                     ? fmt::format("pcie-sbr-{}", step.node)
                     : fmt::format("{}-{}-{}", inject,
                                   by_code ? std::to_string(step.code) : step.fault, step.node))
              : Text(n, "name");
      if (step.node.empty()) {
        return Fail(ErrorCode::kInvalidArgument, "scenario step {}: no node", i + 1);
      }
      // Names and nodes are printed and stored: one printable line each (a terminal would obey
      // a control character), and short enough to read.
      for (const std::string* shown : {&step.name, &step.node}) {
        if (!IsOneLine(*shown, 200)) {
          return Fail(ErrorCode::kInvalidArgument,
                      "scenario line {}: step {}: names and nodes must be at most 200 "
                      "printable characters on one line",
                      LineOf(n), i + 1);
        }
      }
      // A node is a host's name (Slurm's, Kubernetes'): it goes into commands and the hints
      // people copy, where `;` or `$(...)` would be a command of their own.
      if (!std::ranges::all_of(step.node, [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' ||
                   c == '_';
          })) {
        return Fail(ErrorCode::kInvalidArgument,
                    "scenario line {}: step {}: the node must be a host name (letters, digits, "
                    "'-', '.', '_')",
                    LineOf(n), i + 1);
      }
      if (auto record = StepRecord(step); !record) {
        return Fail(ErrorCode::kInvalidArgument, "scenario step {}: {}", i + 1,
                    record.error().message);
      }
      // A step's name labels its results: two of one name could not be told apart. A repeated
      // default name (the same injection again, on purpose) is numbered instead.
      // (A set of the names, and the next number of each default: 2,000 steps of one default
      // name were numbered by scanning every step for every number, for 45 s.)
      if (names.contains(step.name) && !Text(n, "name").empty()) {
        return Fail(ErrorCode::kInvalidArgument,
                    "scenario line {}: step {}: the name {} is already a step's", LineOf(n), i + 1,
                    step.name);
      }
      const std::string base = step.name;
      int& k = next_number[base];
      k = std::max(k, 2);
      while (names.contains(step.name)) step.name = fmt::format("{}-{}", base, k++);
      names.insert(step.name);
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
  switch (step.inject) {
    case InjectKind::kPcieSbr: {
      auto pci = inject::FullPciAddress(step.pci);
      if (!pci) return tl::unexpected(pci.error());
      return "secondary bus reset above GPU " + *pci;
    }
    case InjectKind::kNvmlSim: {
      const auto names = inject::SimFaultNames();
      if (std::find(names.begin(), names.end(), step.fault) == names.end()) {
        return Fail(ErrorCode::kInvalidArgument, "unknown simulated fault '{}'", step.fault);
      }
      if (step.pci.empty()) return Fail(ErrorCode::kInvalidArgument, "nvml-sim needs gpu");
      // An index of the simulated GPUs (as nvidia-smi numbers them) or a PCI address.
      if (const auto index = ParseWhole<unsigned>(step.pci);
          !(index && *index < 64) && !inject::FullPciAddress(step.pci)) {
        return Fail(ErrorCode::kInvalidArgument,
                    "nvml-sim gpu '{}' is neither a GPU index (0-63) nor a PCI address",
                    SanitizeUtf8(step.pci));
      }
      return fmt::format("simulated NVML: {} on GPU {}{}", step.fault, step.pci,
                         step.value != 0 ? fmt::format(" (value {})", step.value) : "");
    }
    case InjectKind::kDcgm: {
      auto argv = StepDcgmArgv(step);
      if (!argv) return tl::unexpected(argv.error());
      return fmt::format("{}", fmt::join(*argv, " "));
    }
    case InjectKind::kXid:
      return inject::XidRecord({.code = step.code, .pci = step.pci}, health::XidCatalog::Builtin());
    case InjectKind::kSxid:
      return inject::SxidRecord({.code = step.code,
                                 .pci = step.pci,
                                 .switch_index = step.switch_index,
                                 .fatal = step.fatal,
                                 .link = step.link});
  }
  return Fail(ErrorCode::kInternal, "unknown injection kind");
}

std::string_view InjectKindName(InjectKind kind) {
  switch (kind) {
    case InjectKind::kXid: return "xid";
    case InjectKind::kSxid: return "sxid";
    case InjectKind::kNvmlSim: return "nvml-sim";
    case InjectKind::kDcgm: return "dcgm";
    case InjectKind::kPcieSbr: return "pcie-sbr";
  }
  return "?";
}

std::optional<InjectKind> ParseInjectKind(std::string_view name) {
  for (InjectKind kind : {InjectKind::kXid, InjectKind::kSxid, InjectKind::kNvmlSim,
                          InjectKind::kDcgm, InjectKind::kPcieSbr}) {
    if (InjectKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

Result<std::vector<StepResult>> RunScenario(const Scenario& scenario,
                                            remediate::Scheduler& scheduler, Clock& clock,
                                            const RunHooks& hooks) {
  const auto say = [&hooks](std::string_view line) {
    if (hooks.progress) hooks.progress(line);
  };
  const auto stopping = [&hooks] { return hooks.stop && hooks.stop(); };
  std::vector<StepResult> results;
  const auto done = [&](StepResult r) -> Result<void> {
    results.push_back(std::move(r));
    return hooks.step_done ? hooks.step_done(results.back()) : Result<void>{};
  };
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
        // kBusy: the step's own safety rules, asked again just before it, said no.
        r.not_injected = ok.error().code == ErrorCode::kBusy
                             ? ok.error().message
                             : "injection failed: " + ok.error().message;
      }
    }
    if (!r.not_injected.empty()) {
      say(fmt::format("{}: {}", step.name, r.not_injected));
      r.timeline = BuildTimeline(step.node, injected, {}, injected);
      r.judgement = {Verdict::kUnknown, {r.not_injected}};
      if (auto ok = done(std::move(r)); !ok) return tl::unexpected(ok.error());
      continue;
    }
    say(fmt::format("{}: injected {} {} on {}", step.name, InjectKindName(step.inject), step.code,
                    step.node));
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
    if (auto ok = done(std::move(r)); !ok) return tl::unexpected(ok.error());
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
    f.message = fmt::format("{} {} on {} ({}): {}", InjectKindName(r.step.inject), r.step.code,
                            r.step.node, r.step.pci, VerdictName(r.judgement.verdict));
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
