#include "audit/host_run.hpp"

#include <cmath>

#include "audit/audit_run.hpp"
#include "audit/host_inventory.hpp"
#include "audit/inventory_checks.hpp"
#include "core/log.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {

Result<HostRunReport> EvaluateHost(double probe_timeout_s, const HostRunIo& io,
                                   const LaterPhases& later) {
  // A range check on the command line lets NaN through, and NaN cannot become a duration.
  if (!std::isfinite(probe_timeout_s) || probe_timeout_s <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "--probe-timeout must be a number of seconds");
  }
  const auto probe_timeout = SecondsAsDuration(probe_timeout_s);
  const auto interrupted = [&] { return io.interrupted && io.interrupted(); };

  // The host facts come from files only and are quick; the run opens as soon as it knows the
  // environment, so that anything slower (scheduler probes) is inside a recorded run.
  log::Info("collecting the host inventory");
  const HostFacts host = CollectHost(*io.fs, sys::Hostname());
  Target target = DetectEnvironment(host);
  auto recorded = store::BeginRecordedRun(io.db_path, {.command = "run",
                                                       .target = target.Name(),
                                                       .host = host.hostname,
                                                       .started_at = io.clock->Now(),
                                                       .cmax_version = io.cmax_version,
                                                       .provider = io.provider});
  if (!recorded) return SystemFailure(recorded.error());
  store::RunWriter& writer = recorded->writer;
  const auto fail = [&](const Error& error) -> Result<HostRunReport> {
    (void)writer.FinishWithError(store::kRunError, io.clock->Now());
    return SystemFailure(error);
  };

  if (auto ok = writer.Add(HostEvidence(host), HostFindings(host, target)); !ok) {
    return fail(ok.error());
  }
  if (!interrupted()) {
    log::Info("looking for NVIDIA GPUs and driver");
    const GpuFacts gpu = CollectGpu(*io.fs, host);
    if (auto ok = writer.Add(GpuEvidence(gpu), GpuFindings(gpu)); !ok) return fail(ok.error());
  }
  if (!interrupted()) {
    log::Info("looking for a scheduler (Slurm, Kubernetes)");
    const SchedulerFacts scheduler =
        CollectScheduler(*io.fs, *io.runner, CurrentEnvironment(), probe_timeout);
    target.scheduler = DetectScheduler(scheduler);
    if (auto ok = writer.SetTarget(target.Name()); !ok) return fail(ok.error());
    // A probe cut short by Ctrl-C proves nothing: record the scheduler only when it finished.
    if (!interrupted()) {
      if (auto ok = writer.Add(SchedulerEvidence(scheduler, target), SchedulerFindings(scheduler));
          !ok) {
        return fail(ok.error());
      }
    }
  }
  if (!interrupted()) {
    // The audit as a phase: its checks, evidence and minimum table recorded in this run.
    const AuditOptions options{.probe_timeout_s = probe_timeout_s};
    const AuditIo audit_io{.fs = io.fs,
                           .runner = io.runner,
                           .clock = io.clock,
                           .path = io.path,
                           .interrupted = io.interrupted,
                           .env = io.env};
    auto prepared = PrepareAudit(options, audit_io);
    if (!prepared) return fail(prepared.error());
    GradedAudit graded =
        AuditThisHost(options, *prepared, host, LocalAuditTarget(target), audit_io);
    for (EvidenceItem& item : AuditBookkeeping(options, prepared->table)) {
      graded.evidence.push_back(std::move(item));
    }
    if (auto ok = writer.Add(graded.evidence, graded.findings); !ok) return fail(ok.error());
  }
  if (later && !interrupted()) {
    if (auto ok = later(writer); !ok) return fail(ok.error());
  }
  const int signal = io.interrupt_signal ? io.interrupt_signal() : 0;
  auto outcome = writer.Finish(signal, io.clock->Now());
  if (!outcome) return fail(outcome.error());
  auto record = recorded->store->LoadRun(writer.RunId());
  if (!record) return SystemFailure(record.error());
  return HostRunReport{outcome->exit_code, signal != 0, std::move(*record)};
}

}  // namespace cmax::audit
