#include "train/train_figures.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "core/strings.hpp"

namespace cmax::train {
namespace {

using nlohmann::json;

std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::ranges::sort(values);
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Coefficient of variation in percent; none below two values or at a zero mean.
std::optional<double> SpreadPct(const std::vector<double>& values) {
  if (values.size() < 2) return std::nullopt;
  if (!std::ranges::all_of(values, [](double v) { return std::isfinite(v); })) return std::nullopt;
  double sum = 0;
  for (double v : values) sum += v;
  const double mean = sum / static_cast<double>(values.size());
  if (mean <= 0) return std::nullopt;
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return 100 * std::sqrt(squares / static_cast<double>(values.size() - 1)) / mean;
}

template <typename Field>
std::optional<double> MedianOf(const std::vector<const TrainStep*>& steps, Field field) {
  std::vector<double> values;
  for (const TrainStep* s : steps) {
    if (const std::optional<double> v = field(*s); v && std::isfinite(*v)) values.push_back(*v);
  }
  return Median(std::move(values));
}

std::string Thousands(double value) {
  // Past what a whole number holds (or not a number), as it is: llround would overflow.
  if (!std::isfinite(value) || std::fabs(value) >= 1e15) return fmt::format("{:.3g}", value);
  const auto whole = static_cast<int64_t>(std::llround(value));
  std::string digits = std::to_string(whole < 0 ? -whole : whole);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return whole < 0 ? "-" + out : out;
}

std::string StepList(const std::vector<int64_t>& steps) {
  std::vector<std::string> parts;
  for (int64_t s : steps) parts.push_back(std::to_string(s));
  if (parts.size() > 6) {
    return fmt::format("{} ... {} ({} steps)", Join({parts.begin(), parts.begin() + 3}, ", "),
                       parts.back(), parts.size());
  }
  return Join(parts, ", ");
}

void LossTrendOf(const std::vector<const TrainStep*>& series, TrainFigures& out) {
  std::vector<std::pair<int64_t, double>> losses;
  for (const TrainStep* s : series) {
    if (!s->loss) continue;
    if (!std::isfinite(*s->loss)) {
      out.loss_trend = LossTrend::kNotANumber;
      out.loss_detail = fmt::format("{} at step {}", std::isnan(*s->loss) ? "nan" : "inf", s->step);
      return;
    }
    losses.emplace_back(s->step, *s->loss);
  }
  if (losses.size() < 3) {
    out.loss_trend = LossTrend::kUnknown;
    out.loss_detail = fmt::format("{} loss value(s): too few for a trend", losses.size());
    return;
  }
  const size_t k = std::max<size_t>(1, losses.size() / 4);
  double first = 0;
  double last = 0;
  double low = losses.front().second;
  int64_t low_step = losses.front().first;
  for (size_t i = 0; i < k; ++i) first += losses[i].second / static_cast<double>(k);
  for (size_t i = losses.size() - k; i < losses.size(); ++i) {
    last += losses[i].second / static_cast<double>(k);
  }
  for (const auto& [step, loss] : losses) {
    if (loss < low) {
      low = loss;
      low_step = step;
    }
  }
  const std::string span = fmt::format("{:.4g} -> {:.4g} over steps {}-{}", first, last,
                                       losses.front().first, losses.back().first);
  if (last > first * 1.02) {
    out.loss_trend = LossTrend::kDiverged;
    out.loss_detail = span + ": above where it started";
  } else if (low > 0 && last > low * 1.5) {
    out.loss_trend = LossTrend::kDiverged;
    out.loss_detail =
        fmt::format("{}: back up from its low of {:.4g} at step {}", span, low, low_step);
  } else if (last < first * 0.98) {
    out.loss_trend = LossTrend::kDecreasing;
    out.loss_detail = span;
  } else {
    out.loss_trend = LossTrend::kFlat;
    out.loss_detail = span + ": within 2%";
  }
}

// The failure that explains the run: torchrun's root cause names a rank; that rank's first
// exception says why. Without the report, the first failure seen.
std::optional<TrainFailure> FirstError(const std::vector<TrainFailure>& failures) {
  const TrainFailure* root = nullptr;
  for (const TrainFailure& f : failures) {
    if (f.kind == FailureKind::kProcessExit) root = &f;
  }
  const TrainFailure* first = nullptr;
  for (const TrainFailure& f : failures) {
    if (f.kind == FailureKind::kProcessExit) continue;
    if (root != nullptr && root->rank && f.rank == root->rank) {
      first = &f;
      break;
    }
    if (first == nullptr) first = &f;
  }
  // A first exception from another rank than the root cause's: the root cause's rank printed
  // nothing of its own (killed by a signal), and the first exception seen is still the clue.
  if (first == nullptr) return root == nullptr ? std::nullopt : std::optional(*root);
  TrainFailure out = *first;
  if (root != nullptr && root->rank == out.rank) {
    out.host = root->host;
    out.exit_code = root->exit_code;
    out.signal = root->signal;
  }
  return out;
}

std::string FailureWords(const TrainFailure& f) {
  std::string who = f.rank ? fmt::format("rank {}", *f.rank) : std::string("a rank");
  if (!f.host.empty()) who += " on " + f.host;
  if (f.kind == FailureKind::kProcessExit) return f.message;
  return fmt::format("{}: {}", who, f.message);
}

}  // namespace

std::string_view LossTrendName(LossTrend trend) {
  switch (trend) {
    case LossTrend::kUnknown: return "unknown";
    case LossTrend::kDecreasing: return "decreasing";
    case LossTrend::kFlat: return "flat";
    case LossTrend::kDiverged: return "diverged";
    case LossTrend::kNotANumber: return "nan";
  }
  return "?";
}

std::string_view TrainStateName(TrainState state) {
  switch (state) {
    case TrainState::kSteady: return "steady";
    case TrainState::kFailed: return "failed";
    case TrainState::kWarmUpOnly: return "warm-up-only";
    case TrainState::kNoSteps: return "no-steps";
  }
  return "?";
}

TrainFigures AnalyzeTrainLog(const TrainLog& log, const TrainFiguresOptions& options) {
  TrainFigures out;
  std::set<int> ranks;
  for (const TrainStep& s : log.steps) {
    if (s.rank) ranks.insert(*s.rank);
  }
  out.ranks.assign(ranks.begin(), ranks.end());
  if (!ranks.empty()) out.rank = *ranks.begin();
  // The chosen rank's lines (or every line when none carries a rank), from the last start.
  std::vector<const TrainStep*> series;
  for (const TrainStep& s : log.steps) {
    if (s.rank != out.rank && out.rank) continue;
    if (!series.empty() && s.step <= series.back()->step) {
      out.restarted = true;
      out.notes.push_back(fmt::format(
          "the step count went back from {} to {} (line {}): a restart; figures from there",
          series.back()->step, s.step, s.line));
      series.clear();
    }
    series.push_back(&s);
  }
  if (ranks.size() > 1) {
    out.notes.push_back(fmt::format("{} ranks printed metric lines; the figures are rank {}'s",
                                    ranks.size(), *out.rank));
  }
  out.steps_logged = series.size();
  out.first_error = FirstError(log.failures);
  if (out.first_error) {
    for (const TrainStep& s : log.steps) {
      if (s.line < out.first_error->line) out.error_after_step = s.step;
    }
  }
  if (series.empty()) {
    out.state = out.first_error ? TrainState::kFailed : TrainState::kNoSteps;
    out.verdict = out.first_error ? fmt::format("failed before any step was logged: {}",
                                                FailureWords(*out.first_error))
                                  : "no TorchTitan metric line in the log";
    return out;
  }
  out.first_step = series.front()->step;
  out.last_step = series.back()->step;

  // Warm-up: the steps named, else the first logged one and the slow ones after it.
  size_t warm = 0;
  if (options.warmup_steps) {
    while (warm < series.size() && series[warm]->step <= *options.warmup_steps) ++warm;
  } else if (series.size() >= 2) {
    std::vector<double> late;
    for (size_t i = series.size() / 2; i < series.size(); ++i) {
      if (series[i]->tps) late.push_back(*series[i]->tps);
    }
    const std::optional<double> reference = Median(late);
    warm = 1;
    const double floor = reference.value_or(0) * (1 - options.warmup_tolerance_pct / 100);
    while (warm < series.size() && reference && series[warm]->tps && *series[warm]->tps < floor) {
      ++warm;
    }
  } else {
    warm = 1;  // one logged step: the start-up's
  }
  std::vector<const TrainStep*> steady(series.begin() + static_cast<std::ptrdiff_t>(warm),
                                       series.end());
  for (size_t i = 0; i < warm; ++i) out.warmup.push_back(series[i]->step);
  for (const TrainStep* s : steady) out.steady.push_back(s->step);

  out.tokens_per_s_per_gpu = MedianOf(steady, [](const TrainStep& s) { return s.tps; });
  out.tflops_per_gpu = MedianOf(steady, [](const TrainStep& s) { return s.tflops; });
  out.mfu_pct = MedianOf(steady, [](const TrainStep& s) { return s.mfu_pct; });
  out.mfu_not_available =
      std::ranges::any_of(series, [](const TrainStep* s) { return s->mfu_not_available; });
  for (const TrainStep* s : series) {
    if (s->memory_gib && (!out.peak_memory_gib || *s->memory_gib > *out.peak_memory_gib)) {
      out.peak_memory_gib = s->memory_gib;
    }
    if (s->memory_pct && (!out.peak_memory_pct || *s->memory_pct > *out.peak_memory_pct)) {
      out.peak_memory_pct = s->memory_pct;
    }
  }
  LossTrendOf(series, out);

  // Time per step between consecutive steady lines (dated logs), else 1/tps.
  std::vector<double> per_step;
  for (size_t i = 1; i < steady.size(); ++i) {
    const TrainStep& a = *steady[i - 1];
    const TrainStep& b = *steady[i];
    if (a.time_s && b.time_s && b.step > a.step && *b.time_s >= *a.time_s) {
      per_step.push_back((*b.time_s - *a.time_s) / static_cast<double>(b.step - a.step));
    }
  }
  if (!per_step.empty()) {
    out.step_time_s = Median(per_step);
    out.jitter_pct = SpreadPct(per_step);
    out.jitter_source = "dates";
  } else {
    std::vector<double> inverse;
    for (const TrainStep* s : steady) {
      if (s->tps && *s->tps > 0) inverse.push_back(1 / *s->tps);
    }
    out.jitter_pct = SpreadPct(inverse);
    if (out.jitter_pct) out.jitter_source = "tps";
  }

  if (out.first_error) {
    out.state = TrainState::kFailed;
  } else if (steady.empty()) {
    out.state = TrainState::kWarmUpOnly;
  } else {
    out.state = TrainState::kSteady;
  }
  std::string throughput;
  if (out.tokens_per_s_per_gpu) {
    throughput = fmt::format("{} tokens/s/GPU", Thousands(*out.tokens_per_s_per_gpu));
    if (out.mfu_pct) throughput += fmt::format(", MFU {:.1f}%", *out.mfu_pct);
    throughput +=
        fmt::format(" in steady state (steps {}-{})", steady.front()->step, steady.back()->step);
  }
  const bool loss_bad =
      out.loss_trend == LossTrend::kNotANumber || out.loss_trend == LossTrend::kDiverged;
  const std::string loss_words = out.loss_trend == LossTrend::kNotANumber
                                     ? "loss " + out.loss_detail
                                 : out.loss_trend == LossTrend::kDiverged
                                     ? "loss diverged: " + out.loss_detail
                                     : fmt::format("loss {}", LossTrendName(out.loss_trend));
  switch (out.state) {
    case TrainState::kSteady: out.verdict = fmt::format("{}; {}", throughput, loss_words); break;
    case TrainState::kWarmUpOnly:
      out.verdict = fmt::format("never got past warm-up: {} step(s) logged ({}), none steady",
                                series.size(), StepList(out.warmup));
      break;
    case TrainState::kFailed:
      out.verdict = fmt::format(
          "failed{}: {}",
          out.error_after_step ? fmt::format(" after step {}", *out.error_after_step) : "",
          FailureWords(*out.first_error));
      if (!throughput.empty()) out.verdict += "; before it " + throughput;
      break;
    case TrainState::kNoSteps: break;
  }
  if (loss_bad && out.state != TrainState::kSteady) out.verdict += "; " + loss_words;
  // TorchTitan divides by the peak of the GPU it recognises, and by an A100's (312 TFLOPS)
  // when it does not: a newer GPU then shows an MFU no GPU can reach.
  if (out.mfu_pct && *out.mfu_pct > 100) {
    out.notes.push_back(fmt::format(
        "MFU {:.1f}% is above 100%: the peak FLOPS TorchTitan divided by is not this GPU's (an "
        "unknown GPU is taken for an A100); read TFLOPS instead",
        *out.mfu_pct));
  }
  return out;
}

nlohmann::json TrainFiguresJson(const TrainFigures& f, const TrainLog& log) {
  const auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json failures = json::array();
  const auto failure_json = [&](const TrainFailure& x) {
    return json{{"kind", FailureKindName(x.kind)},
                {"message", x.message},
                {"rank", opt(x.rank)},
                {"host", x.host.empty() ? json(nullptr) : json(x.host)},
                {"exit_code", opt(x.exit_code)},
                {"signal", x.signal.empty() ? json(nullptr) : json(x.signal)},
                {"line", x.line}};
  };
  for (const TrainFailure& x : log.failures) failures.push_back(failure_json(x));
  // Every step up to kMaxListedSteps; past that every k-th (and the last), so that a log of
  // millions of lines is not held as millions of JSON objects (gigabytes) for a curve that a
  // chart draws from a few thousand points. The figures above are from every step.
  std::vector<const TrainStep*> of_rank;
  for (const TrainStep& s : log.steps) {
    if (!f.rank || s.rank == f.rank) of_rank.push_back(&s);
  }
  // Indices 0, k, 2k ... and the last: at most kMaxListedSteps with k = ceil((n-1) / (max-1)).
  const size_t every = of_rank.size() <= kMaxListedSteps
                           ? 1
                           : (of_rank.size() - 1 + kMaxListedSteps - 2) / (kMaxListedSteps - 1);
  json steps = json::array();
  for (size_t at = 0; at < of_rank.size(); ++at) {
    if (at % every != 0 && at + 1 != of_rank.size()) continue;
    const TrainStep& s = *of_rank[at];
    json other = json::object();
    for (const auto& [k, v] : s.other) other[k] = std::isfinite(v) ? json(v) : json(nullptr);
    const auto finite = [](const std::optional<double>& v) {
      return v && std::isfinite(*v) ? json(*v) : json(nullptr);
    };
    steps.push_back({{"step", s.step},
                     {"loss", s.loss ? (std::isfinite(*s.loss) ? json(*s.loss)
                                                               : json(fmt::format("{}", *s.loss)))
                                     : json(nullptr)},
                     {"grad_norm", finite(s.grad_norm)},
                     {"memory_gib", finite(s.memory_gib)},
                     {"memory_pct", finite(s.memory_pct)},
                     {"tps", finite(s.tps)},
                     {"tflops", finite(s.tflops)},
                     {"mfu_pct", finite(s.mfu_pct)},
                     {"time_s", finite(s.time_s)},
                     {"other", other},
                     {"line", s.line}});
  }
  const TrainRunInfo& i = log.info;
  return {
      {"schema", "cmax.train-log/v1"},
      {"state", TrainStateName(f.state)},
      {"verdict", f.verdict},
      {"rank", opt(f.rank)},
      {"ranks", f.ranks},
      {"steps_logged", f.steps_logged},
      {"first_step", opt(f.first_step)},
      {"last_step", opt(f.last_step)},
      {"warmup_steps", f.warmup},
      {"steady_steps", f.steady},
      {"tokens_per_s_per_gpu", opt(f.tokens_per_s_per_gpu)},
      {"tflops_per_gpu", opt(f.tflops_per_gpu)},
      {"mfu_pct", opt(f.mfu_pct)},
      {"mfu_not_available", f.mfu_not_available},
      {"loss", {{"trend", LossTrendName(f.loss_trend)}, {"detail", f.loss_detail}}},
      {"peak_memory_gib", opt(f.peak_memory_gib)},
      {"peak_memory_pct", opt(f.peak_memory_pct)},
      {"step_time_s", opt(f.step_time_s)},
      {"jitter_pct", opt(f.jitter_pct)},
      {"jitter_source", f.jitter_source.empty() ? json(nullptr) : json(f.jitter_source)},
      {"first_error", f.first_error ? failure_json(*f.first_error) : json(nullptr)},
      {"error_after_step", opt(f.error_after_step)},
      {"restarted", f.restarted},
      {"run",
       {{"model", i.model.empty() ? json(nullptr) : json(i.model)},
        {"parameters", opt(i.parameters)},
        {"gpu", i.gpu.empty() ? json(nullptr) : json(i.gpu)},
        {"peak_flops", opt(i.peak_flops)},
        {"world_size", opt(i.world_size)},
        {"start_step", opt(i.start_step)},
        {"total_steps", opt(i.total_steps)},
        {"global_batch", opt(i.global_batch)},
        {"seq_len", opt(i.seq_len)},
        {"completed", i.completed}}},
      {"failures", failures},
      {"steps", steps},
      {"steps_listed_every", every},
      {"validation_steps", log.validation.size()},
      {"nccl_warnings", log.nccl_warnings},
      {"lines", log.lines},
      {"notes",
       [&] {
         std::vector<std::string> all = log.notes;
         all.insert(all.end(), f.notes.begin(), f.notes.end());
         return all;
       }()},
  };
}

std::string TrainFiguresText(const TrainFigures& f, const TrainLog& log) {
  std::string out = fmt::format("{}: {}\n", TrainStateName(f.state), f.verdict);
  const TrainRunInfo& i = log.info;
  if (!i.model.empty() || !i.gpu.empty()) {
    out += fmt::format("  run: {}{}{}\n", i.model.empty() ? "model ?" : i.model,
                       i.gpu.empty() ? "" : " on " + i.gpu,
                       i.world_size ? fmt::format(", {} GPUs", *i.world_size) : "");
  }
  if (f.steps_logged > 0) {
    out += fmt::format("  steps: {} logged ({}-{}); warm-up: {}\n", f.steps_logged, *f.first_step,
                       *f.last_step, f.warmup.empty() ? "none" : StepList(f.warmup));
  }
  if (f.tokens_per_s_per_gpu) {
    out += fmt::format("  throughput: {} tokens/s/GPU", Thousands(*f.tokens_per_s_per_gpu));
    if (f.tflops_per_gpu) out += fmt::format(", {:.1f} TFLOPS/GPU", *f.tflops_per_gpu);
    if (f.mfu_pct) out += fmt::format(", MFU {:.2f}%", *f.mfu_pct);
    if (f.mfu_not_available) out += ", MFU N/A (FP8/MX)";
    out += " (median of the steady steps)\n";
  }
  if (f.steps_logged > 0) {
    out += fmt::format("  loss: {} ({})\n", LossTrendName(f.loss_trend), f.loss_detail);
  }
  if (f.peak_memory_gib) {
    out += fmt::format("  peak memory: {:.2f} GiB", *f.peak_memory_gib);
    if (f.peak_memory_pct) out += fmt::format(" ({:.2f}%)", *f.peak_memory_pct);
    out += "\n";
  }
  if (f.step_time_s) out += fmt::format("  step time: {:.3f} s (median)\n", *f.step_time_s);
  if (f.jitter_pct) {
    out += fmt::format("  jitter: {:.1f}% (from the {})\n", *f.jitter_pct,
                       f.jitter_source == "dates" ? "log's dates" : "tps");
  }
  for (const TrainFailure& x : log.failures) {
    out += fmt::format("  {} line {}: {}\n", FailureKindName(x.kind), x.line, FailureWords(x));
  }
  for (const std::string& note : log.notes) out += "  note: " + note + "\n";
  for (const std::string& note : f.notes) out += "  note: " + note + "\n";
  return out;
}

}  // namespace cmax::train
