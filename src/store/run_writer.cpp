#include "store/run_writer.hpp"

namespace cmax::store {

Result<RunWriter> RunWriter::Begin(Store& store, const RunStart& start) {
  auto id = store.BeginRun(start);
  if (!id) return tl::unexpected(id.error());
  return RunWriter(&store, *id);
}

Result<void> RunWriter::Add(const std::vector<EvidenceItem>& evidence,
                            const std::vector<Finding>& findings,
                            const std::vector<Metric>& metrics) {
  if (!evidence.empty()) {
    if (auto ok = store_->AddEvidence(run_id_, evidence); !ok) return ok;
  }
  if (!findings.empty()) {
    if (auto ok = store_->AddFindings(run_id_, findings); !ok) return ok;
    const StatusCounts counts = CountStatuses(findings);
    failures_ += counts.fail;
    unknowns_ += counts.unknown;
  }
  if (!metrics.empty()) {
    if (auto ok = store_->AddMetrics(run_id_, metrics); !ok) return ok;
  }
  return {};
}

Result<void> RunWriter::SetTarget(const std::string& target) {
  return store_->SetRunTarget(run_id_, target);
}

RunWriter::Outcome RunWriter::Decide(int interrupt_signal) const {
  if (interrupt_signal != 0) return {RunState::kInterrupted, 128 + interrupt_signal};
  if (failures_ > 0) return {RunState::kChecksFailed, 1};
  // A check that could not read what it judges: the run could not do its job (never a pass).
  if (unknowns_ > 0) return {RunState::kError, 3};
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
  auto writer = RunWriter::Begin(*owned, start);
  if (!writer) return tl::unexpected(writer.error());
  return RecordedRun{std::move(owned), *writer};
}

}  // namespace cmax::store
