// TorchTitan's training log read into its steps and its failures, in the shapes people have on
// disk: the metric line of every release (`wps` before `tps`; `grad_norm` and `tflops` added
// later; `mfu: N/A` under FP8 or MX quantisation; fields cmax does not know kept by name), with
// TorchTitan's ANSI colours, torchrun's `[rank0]:` prefix, srun -l's `3: `, the logger's date;
// Python tracebacks, NCCL watchdog timeouts and torchrun's failure report (its root cause: rank,
// host, exit code or signal). Pure: lines in, values out; fed one line at a time by the runner
// as the job prints, or a whole file at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::train {

// One metric line ("step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856 ...").
struct TrainStep {
  int64_t step = 0;
  std::optional<int> rank;     // the printing rank, from a torchrun or srun -l prefix
  std::optional<double> loss;  // NaN and infinities kept as printed
  std::optional<double> grad_norm;
  std::optional<double> memory_gib;  // peak reserved since the last line
  std::optional<double> memory_pct;
  std::optional<double> tps;       // tokens/s per GPU (`wps` in TorchTitan's 2024 releases)
  std::optional<double> tflops;    // per GPU
  std::optional<double> mfu_pct;   // none where it was N/A or not printed
  bool mfu_not_available = false;  // printed "N/A" (FP8/MX: TorchTitan knows no peak)
  // Seconds since the log's first dated line, where the line carries the logger's date.
  std::optional<double> time_s;
  std::map<std::string, double> other;  // fields cmax does not know, by name: "end_to_end(s)"
  size_t line = 0;                      // 1-based
};

enum class FailureKind {
  kOutOfMemory,  // CUDA out of memory
  kNccl,         // an NCCL error raised in Python
  kNcclTimeout,  // the NCCL watchdog's collective timeout (a hang, ended by the watchdog)
  kCuda,         // another CUDA error (illegal address, ECC, launch failure)
  kException,    // any other Python exception
  kProcessExit,  // torchrun's root cause: a rank that exited non-zero or by a signal
};

struct TrainFailure {
  FailureKind kind = FailureKind::kException;
  std::string message;  // the exception line, or torchrun's words, valid UTF-8, at most 500 bytes
  std::optional<int> rank;
  std::string host;              // torchrun's root cause only
  std::optional<int> exit_code;  // torchrun's root cause only: negative for a signal
  std::string signal;            // "SIGABRT", where torchrun names one
  size_t line = 0;
};

// What the log says of the run around the steps.
struct TrainRunInfo {
  std::optional<int64_t> start_step;    // "Training starts at step 1"
  std::optional<int64_t> total_steps;   // older releases say it on the same line
  std::optional<int64_t> warmup_steps;  // the learning-rate warm-up, where said (not throughput)
  std::optional<int64_t> global_batch;
  std::optional<int64_t> seq_len;
  std::string model;  // "llama3 8B", from "Model llama3 8B size: ..."
  std::optional<int64_t> parameters;
  std::string gpu;                    // "NVIDIA H100 80GB HBM3", from "GPU capacity: ..."
  std::optional<double> peak_flops;   // "Peak FLOPS used for computing MFU: 9.890e+14"
  std::optional<int64_t> world_size;  // the device mesh's size, where it is printed
  bool completed = false;             // "Training completed"
};

struct TrainLog {
  TrainRunInfo info;
  std::vector<TrainStep> steps;        // in the order printed, every rank's
  std::vector<TrainStep> validation;   // "validate step: ..." lines
  std::vector<TrainFailure> failures;  // in the order seen; the launcher's report last
  std::vector<std::string> notes;      // what was odd: a metric line cmax could not read ...
  size_t lines = 0;
  size_t nccl_warnings = 0;  // "NCCL WARN" lines
};

class TorchTitanLogReader {
 public:
  // One line, without its newline (a trailing '\r' is dropped).
  void Feed(std::string_view line);
  // At the end of the log: a launcher report cut short is kept with what it said.
  void Finish();
  const TrainLog& Log() const { return log_; }
  TrainLog Take() { return std::move(log_); }

 private:
  struct Source {  // per printing rank (-1: none)
    bool in_traceback = false;
  };
  void Message(std::string_view message, std::optional<int> rank, std::optional<int64_t> time);
  void LauncherReport(std::string_view text);

  TrainLog log_;
  std::map<int, Source> sources_;
  std::optional<int64_t> first_time_;  // the first dated line's, in ms since the epoch
  bool in_root_cause_ = false;
  std::optional<TrainFailure> root_cause_;
};

TrainLog ParseTorchTitanLog(std::string_view text);

// "oom", "nccl", "nccl-timeout", "cuda", "exception", "process-exit".
std::string_view FailureKindName(FailureKind kind);

}  // namespace cmax::train
