// `cmax health --passive`: a one-shot node check from what the node already says - the kernel
// log (or a saved one), PCIe link widths, InfiniBand ports, network filesystems - recorded in
// the store. `--slurm-healthcheck` makes it Slurm's HealthCheckProgram.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "health/log_scanner.hpp"
#include "health/node_facts.hpp"
#include "health/nvml_checks.hpp"
#include "health/passive_check.hpp"
#include "remediate/slurm.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/kmsg_reader.hpp"
#include "sys/nvml.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct HealthOptions {
  bool passive = false;
  std::string from_file;
  std::string since;
  std::string xid_catalog;
  double mount_timeout_s = 2.0;
  bool json = false;
  bool slurm_healthcheck = false;
  bool drain = false;
  std::string node;
  std::string nvml_lib;
};

Result<health::XidCatalog> LoadCatalog(const std::string& path) {
  if (path.empty()) return health::XidCatalog::Builtin();
  sys::LocalFileSystem fs;
  auto text = fs.ReadFile(path, 16 << 20);
  if (!text) return tl::unexpected(text.error());
  auto catalog = health::XidCatalog::Parse(*text);
  if (!catalog) return Wrap(catalog.error(), path);
  return catalog;
}

// Reads the kernel log (live or saved) into facts; a log that cannot be read, or not to its
// end, is a fact (the finding is UNKNOWN), not an error.
void ReadKernelLog(const HealthOptions& options, std::optional<sys::LineReader>& saved,
                   const health::XidCatalog& catalog, const health::SinceFilter& since,
                   health::PassiveFacts& facts) {
  SystemClock clock;
  const WallTime now = clock.Now();
  if (saved) {
    health::LogScanner scanner(catalog, since, std::nullopt);
    scanner.Summary().source = options.from_file;
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    if (auto ok = health::ScanLines(*saved, scanner, tm.tm_year + 1900); !ok) {
      facts.log_error = ok.error().message;
    }
    facts.log = scanner.Summary();
    facts.conditions = scanner.Tracker().Conditions();
    return;
  }
  const WallTime boot = BootTime(now);
  health::LogScanner scanner(catalog, since, boot);
  scanner.Summary().source = "/dev/kmsg";
  auto reader = sys::KmsgReader::Open("/dev/kmsg", sys::KmsgReader::Start::kBeginning);
  if (!reader) {
    facts.log_error = reader.error().message;
  } else if (auto ok = health::ScanKmsg(*reader, scanner); !ok) {
    facts.log_error = ok.error().message;
  }
  facts.log = scanner.Summary();
  facts.conditions = scanner.Tracker().Conditions();
}

health::NvmlFacts ReadNvml(const HealthOptions& options) {
  health::NvmlFacts facts;
  auto nvml = sys::Nvml::Load(options.nvml_lib);
  if (!nvml) {
    facts.unavailable = nvml.error().message;
    return facts;
  }
  auto snapshot = (*nvml)->Snapshot();
  if (!snapshot) {
    facts.unavailable = snapshot.error().message;
    return facts;
  }
  facts.snapshot = std::move(*snapshot);
  return facts;
}

health::PassiveFacts Collect(const HealthOptions& options, std::optional<sys::LineReader>& saved,
                             const health::XidCatalog& catalog, const health::SinceFilter& since,
                             Duration mount_timeout) {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  health::PassiveFacts facts;
  ReadKernelLog(options, saved, catalog, since, facts);
  facts.links = health::CollectPcieLinks(fs);
  facts.ports = health::CollectIbPorts(fs);
  if (auto mounts = fs.ReadFile("/proc/mounts", 16 << 20); mounts) {
    for (const health::Mount& mount : health::ParseProbeMounts(*mounts)) {
      if (sys::Interrupted()) break;
      facts.mounts.push_back(health::ProbeMount(runner, mount, mount_timeout));
    }
  }
  return facts;
}

std::string NodeName(const HealthOptions& options) {
  if (!options.node.empty()) return options.node;
  if (std::string env = sys::GetEnv("SLURMD_NODENAME"); !env.empty()) return env;
  std::string host = sys::Hostname();
  return host.substr(0, host.find('.'));
}

// Drains the node with a "cmax:" reason, unless someone else drained it first: an operator's
// drain and its reason are never overwritten.
int DrainNode(const std::string& node, const std::string& reason, Context& ctx) {
  // The remediation adapter's drain: it never overwrites a drain someone else set.
  sys::PosixProcessRunner runner;
  remediate::SlurmScheduler slurm(runner, {});
  const std::string full_reason = "cmax: " + reason.substr(0, 200);
  auto done = slurm.Drain(node, full_reason);
  if (!done) {
    ctx.err << "cmax: could not drain " << node << ": " << done.error().message << "\n";
    return kExitError;
  }
  if (done->starts_with("already drained by someone else")) {
    ctx.out << "cmax: " << node << " is " << *done << "\n";
    return kExitChecksFailed;
  }
  log::Warn("drained {} (reason \"{}\"); undo with: scontrol update nodename={} state=resume", node,
            full_reason, node);
  return kExitChecksFailed;
}

int RunHealth(const HealthOptions& options, Context& ctx) {
  if (!std::isfinite(options.mount_timeout_s) || options.mount_timeout_s <= 0) {
    ctx.err << "cmax health: --mount-timeout must be a positive number of seconds\n";
    return kExitUsage;
  }
  if (options.drain && !options.slurm_healthcheck) {
    ctx.err << "cmax health: --drain works with --slurm-healthcheck only\n";
    return kExitUsage;
  }
  auto catalog = LoadCatalog(options.xid_catalog);
  if (!catalog) {
    ctx.err << "cmax health: " << catalog.error().message << "\n";
    return kExitUsage;
  }
  SystemClock clock;
  // A health check run by Slurm every few minutes looks at the recent past by default, so a
  // fault that was repaired does not fail the node until it reboots.
  const std::string since_text =
      options.since.empty() && options.slurm_healthcheck ? "2h" : options.since;
  health::SinceFilter since;
  if (!since_text.empty()) {
    auto parsed = health::ParseSince(since_text, clock.Now(), MonotonicNanos() / 1000);
    if (!parsed) {
      ctx.err << "cmax health: " << parsed.error().message << "\n";
      return kExitUsage;
    }
    since = *parsed;
  }
  const auto mount_timeout =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options.mount_timeout_s));
  // A saved log that is missing or a directory is a wrong path (exit 2), found before anything.
  std::optional<sys::LineReader> saved;
  if (!options.from_file.empty()) {
    auto opened = health::OpenSavedLog(options.from_file, sys::Interrupted);
    if (!opened) {
      ctx.err << "cmax health: --from-file: " << opened.error().message << "\n";
      return ExitCodeOf(opened.error());
    }
    saved.emplace(std::move(*opened));
  }

  const WallTime started = clock.Now();
  const health::PassiveFacts facts = Collect(options, saved, *catalog, since, mount_timeout);
  const health::NvmlFacts nvml = ReadNvml(options);
  std::vector<Finding> findings = health::PassiveFindings(facts, {});
  for (Finding& f : health::NvmlFindings(nvml)) findings.push_back(std::move(f));

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
  if (options.slurm_healthcheck && worst == nullptr && unknown == nullptr) return kExitOk;

  auto store = store::Store::Open({.path = ctx.DbPath()});
  if (!store) {
    ctx.err << "cmax health: " << store.error().message << "\n";
    if (!options.slurm_healthcheck) return kExitError;
  }
  int64_t run_id = 0;
  int exit_code = worst != nullptr ? kExitChecksFailed : unknown != nullptr ? kExitError : kExitOk;
  if (store) {
    auto writer = store::RunWriter::Begin(*store, {.command = "health",
                                                   .target = "node/" + NodeName(options),
                                                   .host = sys::Hostname(),
                                                   .started_at = started,
                                                   .cmax_version = VersionString(),
                                                   .pid = ::getpid()});
    if (!writer) {
      ctx.err << "cmax health: " << writer.error().message << "\n";
      return kExitError;
    }
    run_id = writer->RunId();
    std::vector<EvidenceItem> evidence = health::PassiveEvidence(facts);
    for (EvidenceItem& e : health::NvmlEvidence(nvml)) evidence.push_back(std::move(e));
    std::vector<Metric> metrics = health::PassiveMetrics(facts);
    for (Metric& m : health::NvmlMetrics(nvml)) metrics.push_back(std::move(m));
    if (auto ok = writer->Add(evidence, findings, metrics); !ok) {
      ctx.err << "cmax health: " << ok.error().message << "\n";
      (void)writer->FinishWithError(kExitError, clock.Now());
      return kExitError;
    }
    auto outcome = writer->Finish(sys::InterruptSignal(), clock.Now());
    if (outcome) exit_code = outcome->exit_code;
  }

  if (options.slurm_healthcheck && worst == nullptr) {
    // Stopped (Slurm's own timeout sends SIGTERM): the log was not read to its end, and the
    // exit says why.
    if (sys::Interrupted()) return 128 + sys::InterruptSignal();
    const std::string why = SanitizeUtf8(unknown->message.substr(0, unknown->message.find('\n')));
    ctx.out << "cmax: health unknown: " << why.substr(0, 300) << "\n";
    return kExitError;
  }
  if (options.slurm_healthcheck) {
    const std::string reason = SanitizeUtf8(worst->message.substr(0, worst->message.find('\n')));
    ctx.out << "cmax: " << reason.substr(0, 300) << "\n";
    if (options.drain) return DrainNode(NodeName(options), reason, ctx);
    return kExitChecksFailed;
  }
  if (!store) return kExitError;
  auto record = store->LoadRun(run_id);
  if (!record) {
    ctx.err << "cmax health: " << record.error().message << "\n";
    return kExitError;
  }
  ctx.out << (options.json ? report::RenderJson(*record)
                           : report::RenderText(*record, {.color = ctx.Color()}));
  return exit_code;
}

}  // namespace

Command SetupHealthCommand(CLI::App& parent) {
  auto options = std::make_shared<HealthOptions>();
  CLI::App* app = parent.add_subcommand(
      "health",
      "Check this node's health from what it already reports: kernel log (NVIDIA Xid and\n"
      "NVSwitch SXid errors, GPUs fallen off the bus, lockups, hung tasks, PCIe AER, NIC and\n"
      "filesystem faults, OOM kills, machine checks), PCIe link widths, InfiniBand ports and\n"
      "network filesystems. Records one run in the store.");
  app->add_flag("--passive", options->passive, "Passive checks only (nothing is exercised)")
      ->required();
  app->add_option("--from-file", options->from_file,
                  "Replay a saved kernel log (raw kmsg, dmesg [-T], journalctl -k, syslog)");
  app->add_option("--since", options->since,
                  "Only records since: a duration (15m, 2h, 3d) or a UTC time");
  app->add_option("--xid-catalog", options->xid_catalog,
                  "Use this XID catalogue (JSON, like data/xid_catalog.json)");
  app->add_option("--mount-timeout", options->mount_timeout_s,
                  "Seconds a network filesystem may take to answer statfs")
      ->check(SecondsIn(600))
      ->capture_default_str();
  app->add_flag("--json", options->json, "Print the JSON report (schema cmax.report/v1)");
  app->add_flag("--slurm-healthcheck", options->slurm_healthcheck,
                "Run as Slurm's HealthCheckProgram: silent on success, one line and exit 1 on "
                "failure; looks at the last 2h unless --since says otherwise");
  app->add_flag("--drain", options->drain,
                "With --slurm-healthcheck: drain the node on failure, reason prefixed 'cmax:' "
                "(never overwrites someone else's drain)");
  app->add_option("--nvml-lib", options->nvml_lib,
                  "NVML library to load (default $CMAX_NVML_LIB, else libnvidia-ml.so.1); "
                  "without one the NVML checks are a SKIP finding");
  app->add_option("--node", options->node,
                  "Slurm node name (default $SLURMD_NODENAME, else the short hostname)");
  return {app, [options](Context& ctx) { return RunHealth(*options, ctx); }};
}

}  // namespace cmax::cli
