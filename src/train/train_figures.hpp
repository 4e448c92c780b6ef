// A training run's figures from its log: tokens/s per GPU, TFLOPS and MFU in steady state (the
// warm-up steps named and left out), the loss trend, peak memory, step-time jitter, and the first
// error with the rank it came from. Pure: a parsed log (torchtitan_log.hpp) in, figures out.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "train/torchtitan_log.hpp"

namespace cmax::train {

enum class LossTrend {
  kUnknown,     // fewer than 3 losses
  kDecreasing,  // the last quarter's mean at least 2% below the first quarter's
  kFlat,        // within 2%
  kDiverged,    // above where it started, or back up 50% over its low
  kNotANumber,  // a NaN or an infinity
};

struct TrainFiguresOptions {
  // Logged steps up to this one are warm-up; none: found from the curve (the first logged step,
  // which carries the start-up, and the leading steps more than `warmup_tolerance_pct` below
  // the steady throughput).
  std::optional<int64_t> warmup_steps;
  double warmup_tolerance_pct = 10;
};

enum class TrainState {
  kSteady,      // steady-state figures exist and no failure was seen
  kFailed,      // a failure was seen (the figures up to it are kept)
  kWarmUpOnly,  // steps were logged, none past warm-up
  kNoSteps,     // no metric line at all
};

struct TrainFigures {
  TrainState state = TrainState::kNoSteps;
  std::optional<int> rank;  // whose metric lines the figures are from: the lowest printing rank
  std::vector<int> ranks;   // every rank that printed metric lines
  size_t steps_logged = 0;  // that rank's, of the last start
  std::optional<int64_t> first_step;
  std::optional<int64_t> last_step;
  std::vector<int64_t> warmup;                 // logged steps counted as warm-up
  std::vector<int64_t> steady;                 // the rest
  std::optional<double> tokens_per_s_per_gpu;  // median over the steady steps
  std::optional<double> tflops_per_gpu;
  std::optional<double> mfu_pct;
  bool mfu_not_available = false;  // TorchTitan printed N/A (FP8/MX)
  LossTrend loss_trend = LossTrend::kUnknown;
  std::string loss_detail;  // "10.83 -> 6.14 over steps 1-200", "nan at step 140"
  std::optional<double> peak_memory_gib;
  std::optional<double> peak_memory_pct;
  // Seconds per step between consecutive steady metric lines, from the log's dates; none in an
  // undated log.
  std::optional<double> step_time_s;
  // The spread of the steady steps' time per step (coefficient of variation, %): from the dates
  // where there are, else from 1/tps (tokens per step being fixed).
  std::optional<double> jitter_pct;
  std::string jitter_source;  // "dates" or "tps"
  std::optional<TrainFailure> first_error;
  std::optional<int64_t> error_after_step;  // the last step logged before it
  bool restarted = false;                   // the step count went back: figures of the last start
  std::string verdict;                      // one line, in words
  std::vector<std::string> notes;
};

TrainFigures AnalyzeTrainLog(const TrainLog& log, const TrainFiguresOptions& options = {});

std::string_view LossTrendName(
    LossTrend trend);  // "decreasing", "flat", "diverged", "nan", "unknown"
std::string_view TrainStateName(
    TrainState state);  // "steady", "failed", "warm-up-only", "no-steps"

// The most steps TrainFiguresJson lists one by one; past it, every k-th ("steps_listed_every").
inline constexpr size_t kMaxListedSteps = 10'000;
// cmax.train-log/v1: the figures, the run's facts, the failures and the steps.
nlohmann::json TrainFiguresJson(const TrainFigures& figures, const TrainLog& log);
// The figures as a terminal reads them.
std::string TrainFiguresText(const TrainFigures& figures, const TrainLog& log);

}  // namespace cmax::train
