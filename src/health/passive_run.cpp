#include "health/passive_run.hpp"

#include <unistd.h>

#include <cmath>
#include <ctime>
#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "health/log_scanner.hpp"
#include "health/node_facts.hpp"
#include "health/nvml_checks.hpp"
#include "health/passive_check.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/kmsg_reader.hpp"
#include "sys/nvml.hpp"
#include "sys/process_runner.hpp"

namespace cmax::health {
namespace {

// The exit codes a health run ends with, as RunWriter's.
constexpr int kChecksFailed = store::kRunChecksFailed;
constexpr int kError = store::kRunError;

Result<XidCatalog> LoadCatalog(const std::string& path) {
  if (path.empty()) return XidCatalog::Builtin();
  sys::LocalFileSystem fs;
  auto text = fs.ReadFile(path, 16 << 20);
  if (!text) return tl::unexpected(text.error());
  auto catalog = XidCatalog::Parse(*text);
  if (!catalog) return Wrap(catalog.error(), path);
  return catalog;
}

// Reads the kernel log (live or saved) into facts; a log that cannot be read, or not to its
// end, is a fact (the finding is UNKNOWN), not an error.
void ReadKernelLog(const PassiveRunOptions& options, std::optional<sys::LineReader>& saved,
                   const XidCatalog& catalog, const SinceFilter& since, PassiveFacts& facts) {
  SystemClock clock;
  const WallTime now = clock.Now();
  if (saved) {
    LogScanner scanner(catalog, since, std::nullopt);
    scanner.Summary().source = options.from_file;
    scanner.Summary().saved = true;
    if (auto ok = ScanLines(*saved, scanner, UtcYear(now)); !ok) {
      facts.log_error = ok.error().message;
    }
    facts.log = scanner.Summary();
    facts.conditions = scanner.Tracker().Conditions();
    return;
  }
  const WallTime boot = BootTime(now);
  LogScanner scanner(catalog, since, boot);
  scanner.Summary().source = "/dev/kmsg";
  auto reader = sys::KmsgReader::Open("/dev/kmsg", sys::KmsgReader::Start::kBeginning);
  if (!reader) {
    facts.log_error = reader.error().message;
  } else if (auto ok = ScanKmsg(*reader, scanner); !ok) {
    facts.log_error = ok.error().message;
  }
  facts.log = scanner.Summary();
  facts.conditions = scanner.Tracker().Conditions();
}

NvmlFacts ReadNvml(const PassiveRunOptions& options) {
  NvmlFacts facts;
  auto snapshot = sys::ReadNvmlSnapshot(options.nvml_lib);
  if (!snapshot) {
    facts.unavailable = snapshot.error().message;
    return facts;
  }
  facts.snapshot = std::move(*snapshot);
  return facts;
}

PassiveFacts Collect(const PassiveRunOptions& options, std::optional<sys::LineReader>& saved,
                     const XidCatalog& catalog, const SinceFilter& since, Duration mount_timeout,
                     const std::function<bool()>& interrupted) {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  PassiveFacts facts;
  ReadKernelLog(options, saved, catalog, since, facts);
  facts.links = CollectPcieLinks(fs);
  facts.ports = CollectIbPorts(fs);
  if (auto mounts = fs.ReadFile("/proc/mounts", 16 << 20); mounts) {
    for (const Mount& mount : ParseProbeMounts(*mounts)) {
      if (interrupted && interrupted()) break;
      facts.mounts.push_back(ProbeMount(runner, mount, mount_timeout));
    }
  }
  return facts;
}

std::string NodeName(const PassiveRunOptions& options) {
  return sys::ThisNodeName(options.node);
}

// Drains the node with a "cmax:" reason, unless someone else drained it first: an operator's
// drain and its reason are never overwritten.
int DrainNode(const std::string& node, const std::string& reason, const PassiveRunIo& io,
              PassiveRunReport& report) {
  const std::string full_reason = "cmax: " + reason.substr(0, 200);
  auto done = io.drain(node, full_reason);
  if (!done) {
    report.notes.push_back("cmax: could not drain " + node + ": " + done.error().message);
    return kError;
  }
  if (done->starts_with("already drained by someone else")) {
    report.line += "cmax: " + node + " is " + *done + "\n";
    return kChecksFailed;
  }
  log::Warn("drained {} (reason \"{}\"); undo with: scontrol update nodename={} state=resume", node,
            full_reason, node);
  return kChecksFailed;
}

}  // namespace

Result<PassiveRunReport> RunPassiveHealth(const PassiveRunOptions& options,
                                          const PassiveRunIo& io) {
  if (!std::isfinite(options.mount_timeout_s) || options.mount_timeout_s <= 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "--mount-timeout must be a positive number of seconds");
  }
  if (options.drain && !options.slurm_healthcheck) {
    return Fail(ErrorCode::kInvalidArgument, "--drain works with --slurm-healthcheck only");
  }
  auto catalog = LoadCatalog(options.xid_catalog);
  if (!catalog) return Fail(ErrorCode::kInvalidArgument, "{}", catalog.error().message);
  SystemClock clock;
  // A health check run by Slurm every few minutes looks at the recent past by default, so a
  // fault that was repaired does not fail the node until it reboots.
  const std::string since_text =
      options.since.empty() && options.slurm_healthcheck ? "2h" : options.since;
  SinceFilter since;
  if (!since_text.empty()) {
    auto parsed = ParseSince(since_text, clock.Now(), MonotonicNanos() / 1000);
    if (!parsed) return Fail(ErrorCode::kInvalidArgument, "{}", parsed.error().message);
    since = *parsed;
  }
  const auto mount_timeout = SecondsAsDuration(options.mount_timeout_s);
  // A saved log that is missing or a directory is a wrong path (exit 2), found before anything.
  std::optional<sys::LineReader> saved;
  if (!options.from_file.empty()) {
    auto opened = OpenSavedLog(options.from_file, io.interrupted);
    if (!opened) return Wrap(opened.error(), "--from-file");
    saved.emplace(std::move(*opened));
  }

  const WallTime started = clock.Now();
  const PassiveFacts facts =
      Collect(options, saved, *catalog, since, mount_timeout, io.interrupted);
  const NvmlFacts nvml = ReadNvml(options);
  std::vector<Finding> findings = PassiveFindings(facts, {});
  for (Finding& f : NvmlFindings(nvml)) findings.push_back(std::move(f));

  const Finding* worst = nullptr;
  const Finding* unknown = nullptr;  // a check that could not read what it judges
  for (const Finding& f : findings) {
    if (f.status == CheckStatus::kFail && (worst == nullptr || f.severity > worst->severity)) {
      worst = &f;
    }
    if (f.status == CheckStatus::kUnknown && unknown == nullptr) unknown = &f;
  }
  // As HealthCheckProgram: silent and quick on success; one line and a drain on failure, and
  // only then a run in the store, so that the reason for a drain is kept. A node whose health
  // is unknown is never reported healthy (one line, exit 3) nor drained for it.
  PassiveRunReport report;
  if (options.slurm_healthcheck && worst == nullptr && unknown == nullptr) return report;

  auto store = store::Store::Open({.path = io.db_path});
  if (!store) {
    if (!options.slurm_healthcheck) return SystemFailure(store.error());
    report.notes.push_back("cmax health: " + store.error().message);
  }
  int64_t run_id = 0;
  int exit_code = worst != nullptr ? kChecksFailed : unknown != nullptr ? kError : 0;
  if (store) {
    auto writer = store::RunWriter::Begin(
        *store, {.command = "health",
                 .target = "node/" + NodeName(options),
                 .host = sys::Hostname(),
                 .started_at = started,
                 .cmax_version = io.cmax_version,
                 .pid = ::getpid(),
                 .provider = io.provider.empty() ? sys::GetEnv("CMAX_PROVIDER") : io.provider});
    if (!writer) return SystemFailure(writer.error());
    run_id = writer->RunId();
    std::vector<EvidenceItem> evidence = PassiveEvidence(facts);
    for (EvidenceItem& e : NvmlEvidence(nvml)) evidence.push_back(std::move(e));
    std::vector<Metric> metrics = PassiveMetrics(facts);
    for (Metric& m : NvmlMetrics(nvml)) metrics.push_back(std::move(m));
    if (auto ok = writer->Add(evidence, findings, metrics); !ok) {
      (void)writer->FinishWithError(kError, clock.Now());
      return SystemFailure(ok.error());
    }
    auto outcome = writer->Finish(io.interrupt_signal ? io.interrupt_signal() : 0, clock.Now());
    if (outcome) exit_code = outcome->exit_code;
  }

  if (options.slurm_healthcheck && worst == nullptr) {
    // Stopped (Slurm's own timeout sends SIGTERM): the log was not read to its end, and the
    // exit says why.
    if (io.interrupted && io.interrupted()) {
      report.exit_code = 128 + (io.interrupt_signal ? io.interrupt_signal() : 0);
      return report;
    }
    const std::string why = SanitizeUtf8(unknown->message.substr(0, unknown->message.find('\n')));
    report.line = "cmax: health unknown: " + why.substr(0, 300) + "\n";
    report.exit_code = kError;
    return report;
  }
  if (options.slurm_healthcheck) {
    const std::string reason = SanitizeUtf8(worst->message.substr(0, worst->message.find('\n')));
    report.line = "cmax: " + reason.substr(0, 300) + "\n";
    report.exit_code =
        options.drain ? DrainNode(NodeName(options), reason, io, report) : kChecksFailed;
    return report;
  }
  auto record = store->LoadRun(run_id);
  if (!record) return SystemFailure(record.error());
  report.record = std::move(*record);
  report.exit_code = exit_code;
  return report;
}

}  // namespace cmax::health
