#include "store/run_writer.hpp"

#include <unistd.h>

#include "core/strings.hpp"
#include "sys/host.hpp"
#include "sys/process_runner.hpp"

namespace cmax::store {

Result<RunWriter> RunWriter::Begin(Store& store, const RunStart& start) {
  auto id = store.BeginRun(start);
  if (!id) return tl::unexpected(id.error());
  return RunWriter(&store, *id);
}

Result<void> RunWriter::Add(const std::vector<EvidenceItem>& evidence,
                            const std::vector<Finding>& findings,
                            const std::vector<Metric>& metrics) {
  if (auto ok = store_->AddToRun(run_id_, evidence, findings, metrics); !ok) return ok;
  const StatusCounts counts = CountStatuses(findings);
  failures_ += counts.fail;
  unknowns_ += counts.unknown;
  return {};
}

Result<void> RunWriter::SetTarget(const std::string& target) {
  return store_->SetRunTarget(run_id_, target);
}

RunWriter::Outcome RunWriter::Decide(int interrupt_signal) const {
  if (interrupt_signal != 0) return {RunState::kInterrupted, 128 + interrupt_signal};
  if (failures_ > 0) return {RunState::kChecksFailed, kRunChecksFailed};
  // A check that could not read what it judges: the run could not do its job (never a pass).
  if (unknowns_ > 0) return {RunState::kError, kRunError};
  return {RunState::kOk, 0};
}

Result<RunWriter::Outcome> RunWriter::Finish(int interrupt_signal, WallTime ended_at) {
  const Outcome outcome = Decide(interrupt_signal);
  if (auto ok = store_->FinishRun(run_id_, outcome.state, outcome.exit_code, ended_at); !ok) {
    return tl::unexpected(ok.error());
  }
  return outcome;
}

Result<void> RunWriter::FinishWithError(int exit_code, WallTime ended_at) {
  return store_->FinishRun(run_id_, RunState::kError, exit_code, ended_at);
}

Result<RecordedRun> BeginRecordedRun(const std::string& db_path, const RunStart& start) {
  auto store = Store::Open({.path = db_path});
  if (!store) return tl::unexpected(store.error());
  auto owned = std::make_unique<Store>(std::move(*store));
  RunStart filled = start;
  if (filled.host.empty()) filled.host = sys::Hostname();
  if (filled.pid == 0) filled.pid = ::getpid();
  // Every command records the provider it evaluates the same way: the global --provider flag
  // sets CMAX_PROVIDER for the process (cli.cpp), so no command has to pass it down.
  if (filled.provider.empty()) filled.provider = sys::GetEnv("CMAX_PROVIDER");
  auto writer = RunWriter::Begin(*owned, filled);
  if (!writer) return tl::unexpected(writer.error());
  return RecordedRun{std::move(owned), *writer};
}

Result<RecordedWhole> RecordWholeRun(const std::string& db_path, const RunStart& start,
                                     const std::vector<EvidenceItem>& evidence,
                                     const std::vector<Finding>& findings,
                                     const std::vector<Metric>& metrics, WallTime ended_at) {
  auto recorded = BeginRecordedRun(db_path, start);
  if (!recorded) return tl::unexpected(recorded.error());
  RunWriter& writer = recorded->writer;
  if (auto ok = writer.Add(evidence, findings, metrics); !ok) {
    (void)writer.FinishWithError(kRunError, ended_at);
    return tl::unexpected(ok.error());
  }
  auto outcome = writer.Finish(0, ended_at);
  if (!outcome) return tl::unexpected(outcome.error());
  auto record = recorded->store->LoadRun(writer.RunId());
  if (!record) return tl::unexpected(record.error());
  return RecordedWhole{.record = std::move(*record), .exit_code = outcome->exit_code};
}

Result<int64_t> ResolveRunId(Store& store, const std::string& text, const std::string& command) {
  // An empty word is a script's unset variable, not a wish for the newest run.
  if (text == "latest") return store.LatestRunId(command);
  // Any whole number: cmax numbers runs from 1, but a store handed over may hold others, and
  // `rate` names the newest run of each kind by its id, whatever it is.
  const std::optional<int64_t> id = ParseWhole<int64_t>(text);
  if (!id) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is not a run id (a number, or 'latest')", text);
  }
  return *id;
}

Result<RunRecord> LoadStoredRun(const std::string& db_path, const std::string& run_text,
                                const std::string& command) {
  auto store = Store::Open({.path = db_path, .create = false, .read_only = true});
  if (!store) {
    // Exit 3, as for every command: the store cannot be read (a folder, a device, corrupt).
    return Fail(ErrorCode::kUnavailable, "{}", store.error().message);
  }
  auto id = ResolveRunId(*store, run_text, command);
  if (!id) {
    return Fail(id.error().code == ErrorCode::kInvalidArgument ? ErrorCode::kInvalidArgument
                                                               : ErrorCode::kUnavailable,
                "{}", id.error().message);
  }
  auto record = store->LoadRun(*id);
  if (!record) {
    return Fail(record.error().code == ErrorCode::kNotFound ? ErrorCode::kInvalidArgument
                                                            : record.error().code,
                "{}", record.error().message);
  }
  if (!command.empty() && record->run.command != command) {
    return Fail(ErrorCode::kInvalidArgument, "run {} was made by `cmax {}`, not `cmax {}`", *id,
                record->run.command, command);
  }
  return record;
}

std::string DisplayState(const RunInfo& run) {
  if (run.state == RunState::kRunning && run.host == sys::Hostname() && run.pid > 0 &&
      !sys::ProcessAlive(static_cast<int>(run.pid))) {
    return "abandoned";
  }
  return std::string(RunStateName(run.state));
}

}  // namespace cmax::store
