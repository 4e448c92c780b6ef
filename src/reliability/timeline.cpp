#include "reliability/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"

namespace cmax::reliability {

extern const char* const kBuiltinPassBars;

namespace {

bool TakesOut(ObservationKind kind) {
  return kind == ObservationKind::kDrained || kind == ObservationKind::kTainted;
}

// One bar: met in time, met late, not met yet, or not met and out of time.
void JudgeBar(std::string_view what, std::string_view missing, const std::optional<Duration>& took,
              Duration bar, const Timeline& t, Verdict& verdict, std::vector<std::string>& reasons,
              const std::string& by = "") {
  const auto worse = [&verdict](Verdict v) {
    if (v == Verdict::kFail || (v == Verdict::kUnknown && verdict == Verdict::kPass)) verdict = v;
  };
  if (took) {
    if (*took <= bar) {
      reasons.push_back(fmt::format("{} in {} (bar {}){}", what, FormatDuration(*took),
                                    FormatDuration(bar), by.empty() ? "" : ": " + by));
    } else {
      worse(Verdict::kFail);
      reasons.push_back(fmt::format("{} only after {} (bar {})", what, FormatDuration(*took),
                                    FormatDuration(bar)));
    }
    return;
  }
  const WallTime deadline = t.injected + std::chrono::duration_cast<std::chrono::milliseconds>(bar);
  if (t.contact_lost && *t.contact_lost <= deadline) {
    worse(Verdict::kUnknown);
    reasons.push_back(
        fmt::format("{}: unknown, the observer lost contact with the scheduler {} "
                    "after the injection",
                    what, FormatDuration(*t.contact_lost - t.injected)));
  } else if (t.watched_until >= deadline) {
    worse(Verdict::kFail);
    reasons.push_back(fmt::format("{} within {}", missing, FormatDuration(bar)));
  } else {
    worse(Verdict::kUnknown);
    reasons.push_back(fmt::format("{}: unknown, watched only {} of {}", what,
                                  FormatDuration(t.watched_until - t.injected),
                                  FormatDuration(bar)));
  }
}

Result<Duration> Seconds(const nlohmann::json& j, const char* key, const std::string& arch) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
      it->get<double>() <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "pass bars for {}: {} must be a positive number", arch,
                key);
  }
  return SecondsAsDuration(it->get<double>());
}

}  // namespace

std::string_view ObservationKindName(ObservationKind kind) {
  switch (kind) {
    case ObservationKind::kDrained: return "drained";
    case ObservationKind::kTainted: return "tainted";
    case ObservationKind::kAlert: return "alert";
    case ObservationKind::kResumed: return "resumed";
    case ObservationKind::kSpareIn: return "spare-in";
    case ObservationKind::kContactLost: return "contact-lost";
    case ObservationKind::kContactBack: return "contact-back";
  }
  return "?";
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kUnknown: return "UNKNOWN";
  }
  return "?";
}

Result<std::map<std::string, PassBars>> ParsePassBars(std::string_view text) {
  auto parsed = ParseJsonObject(text);  // a repeated bar refused, not one of the two kept
  if (!parsed) return Fail(ErrorCode::kInvalidArgument, "pass bars: {}", parsed.error().message);
  const nlohmann::json& root = *parsed;
  if (TextOf(root, "schema") != "cmax.reliability-bars/v1") {
    return Fail(ErrorCode::kInvalidArgument,
                "pass bars: not a cmax.reliability-bars/v1 JSON document");
  }
  const auto archs = root.find("architectures");
  if (archs == root.end() || !archs->is_object() || archs->empty()) {
    return Fail(ErrorCode::kInvalidArgument, "pass bars: no architectures");
  }
  std::map<std::string, PassBars> out;
  for (const auto& [name, value] : archs->items()) {
    if (!value.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "pass bars for {}: not an object", name);
    }
    PassBars bars;
    bars.architecture = name;
    auto detect = Seconds(value, "detect_s", name);
    if (!detect) return tl::unexpected(detect.error());
    bars.detect = *detect;
    auto out_of_service = Seconds(value, "out_of_service_s", name);
    if (!out_of_service) return tl::unexpected(out_of_service.error());
    bars.out_of_service = *out_of_service;
    if (value.contains("replace_s")) {
      auto replace = Seconds(value, "replace_s", name);
      if (!replace) return tl::unexpected(replace.error());
      bars.replace = *replace;
    }
    out[name] = bars;
  }
  return out;
}

const std::map<std::string, PassBars>& BuiltinPassBars() {
  static const std::map<std::string, PassBars> kBars = ParsePassBars(kBuiltinPassBars).value();
  return kBars;
}

Timeline BuildTimeline(const std::string& node, WallTime injected,
                       std::span<const Observation> observations, WallTime watched_until) {
  std::vector<const Observation*> order;
  for (const Observation& o : observations) {
    if (o.at >= injected) order.push_back(&o);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Observation* a, const Observation* b) { return a->at < b->at; });
  Timeline t;
  t.node = node;
  t.injected = injected;
  t.watched_until = watched_until;
  for (const Observation* o : order) {
    const Duration since = o->at - injected;
    if (o->kind == ObservationKind::kContactLost) {
      if (!t.contact_lost) t.contact_lost = o->at;
      continue;
    }
    if (o->kind == ObservationKind::kSpareIn) {
      if (!t.replaced) {
        t.replaced = since;
        t.spare = o->node;
      }
      continue;
    }
    if (o->node != node) continue;
    if ((TakesOut(o->kind) || o->kind == ObservationKind::kAlert) && !t.detected) {
      t.detected = since;
      t.detected_by =
          std::string(ObservationKindName(o->kind)) + (o->detail.empty() ? "" : ": " + o->detail);
    }
    if (TakesOut(o->kind) && !t.out_of_service) t.out_of_service = since;
    if (o->kind == ObservationKind::kResumed && t.out_of_service && !t.back) t.back = since;
  }
  return t;
}

Judgement Judge(const Timeline& t, const PassBars& bars) {
  Judgement j;
  j.verdict = Verdict::kPass;
  JudgeBar("detected", "no drain, cordon, taint or alert", t.detected, bars.detect, t, j.verdict,
           j.reasons, t.detected_by);
  JudgeBar("out of service", "no drain", t.out_of_service, bars.out_of_service, t, j.verdict,
           j.reasons);
  if (bars.replace) {
    JudgeBar("spare in service", "no spare in service", t.replaced, *bars.replace, t, j.verdict,
             j.reasons, t.spare);
  }
  if (bars.back) {
    JudgeBar("back in service", "not back in service", t.back, *bars.back, t, j.verdict, j.reasons);
  }
  return j;
}

bool Decided(const Timeline& t, const PassBars& bars) {
  const auto settled = [&t](const std::optional<Duration>& took, Duration bar) {
    return took.has_value() ||
           t.watched_until >=
               t.injected + std::chrono::duration_cast<std::chrono::milliseconds>(bar);
  };
  return settled(t.detected, bars.detect) && settled(t.out_of_service, bars.out_of_service) &&
         (!bars.replace || settled(t.replaced, *bars.replace)) &&
         (!bars.back || settled(t.back, *bars.back));
}

}  // namespace cmax::reliability
