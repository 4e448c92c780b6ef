// RunWriter: how a measuring command records its run. It opens the run at once and writes
// each batch of evidence and findings as it comes, so a run cut short by Ctrl-C, a timeout
// or a crash keeps everything it had; Finish closes it with the state its findings earned.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "store/store.hpp"

namespace cmax::store {

// The exit codes a recorded run ends with besides 0 and 128+signal.
inline constexpr int kRunChecksFailed = 1;  // a FAIL finding
inline constexpr int kRunError = 3;         // it could not do its job

class RunWriter {
 public:
  static Result<RunWriter> Begin(Store& store, const RunStart& start);

  int64_t RunId() const { return run_id_; }
  Result<void> Add(const std::vector<EvidenceItem>& evidence, const std::vector<Finding>& findings,
                   const std::vector<Metric>& metrics = {});
  Result<void> SetTarget(const std::string& target);

  // The state and exit code a run ends with: interrupted wins; then any FAIL finding; then any
  // UNKNOWN one (error). Exit codes: 0 ok, 1 checks failed, 3 a check could not read what it
  // judges, 128+signal when interrupted.
  struct Outcome {
    RunState state;
    int exit_code;
  };
  Outcome Decide(int interrupt_signal) const;
  Result<Outcome> Finish(int interrupt_signal, WallTime ended_at);
  // For a command that failed for a reason other than its findings.
  Result<void> FinishWithError(int exit_code, WallTime ended_at);

 private:
  RunWriter(Store* store, int64_t run_id) : store_(store), run_id_(run_id) {}
  Store* store_;
  int64_t run_id_;
  int failures_ = 0;
  int unknowns_ = 0;  // findings with CheckStatus::kUnknown
};

// A run being recorded with the store it writes to, for a command that opens both at once. The
// store is on the heap: the writer points at it, and the pair may move. A start without a host
// or a pid is this host's and this process's.
struct RecordedRun {
  std::unique_ptr<Store> store;
  RunWriter writer;
};
Result<RecordedRun> BeginRecordedRun(const std::string& db_path, const RunStart& start);

// A run whose evidence, findings and metrics are all known at once (an analysis of files, a
// finished job): begun, written, finished at `ended_at` and read back as stored, with the exit
// code its findings give (RunWriter::Decide). A write that fails ends the run as an error.
struct RecordedWhole {
  RunRecord record;
  int exit_code = 0;
};
Result<RecordedWhole> RecordWholeRun(const std::string& db_path, const RunStart& start,
                                     const std::vector<EvidenceItem>& evidence,
                                     const std::vector<Finding>& findings,
                                     const std::vector<Metric>& metrics, WallTime ended_at);

// A run named by a person: "latest" for the newest, of `command` when one is given, or its id.
// kInvalidArgument when the text is neither (an empty one too).
Result<int64_t> ResolveRunId(Store& store, const std::string& text,
                             const std::string& command = "");
// The stored run `run_text` names, from the store at `db_path`, which must exist. Errors:
// kInvalidArgument for what the person gave (not a run id, no such run, a run of another
// command than `command`); kUnavailable when there is no store, or no run yet.
Result<RunRecord> LoadStoredRun(const std::string& db_path, const std::string& run_text,
                                const std::string& command = "");
// The state to show: a run still "running" whose process is gone on this host is "abandoned".
std::string DisplayState(const RunInfo& run);

}  // namespace cmax::store
