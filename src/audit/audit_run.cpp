#include "audit/audit_run.hpp"

#include <algorithm>
#include <cmath>

#include "audit/catalogue.hpp"
#include "audit/grading.hpp"
#include "audit/host_inventory.hpp"
#include "audit/inventory_checks.hpp"
#include "audit/local_evidence.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/tcp_connect.hpp"

namespace cmax::audit {
namespace {

// The public table is refused above 4 MB too; ours is 3 KB.
constexpr size_t kMaxTableBytes = size_t{4} << 20;

// A host that is a cluster's client is more often meant as the cluster: say how to audit it.
std::string ClusterHint(const std::vector<EvidenceItem>& evidence, const AuditIo& io) {
  const auto env = [&](const char* name) { return io.env ? io.env(name) : std::string(); };
  std::vector<std::string> hints;
  for (const EvidenceItem& item : evidence) {
    if (item.key != "scheduler.slurm.commands") continue;
    const auto commands = nlohmann::json::parse(item.value_json, nullptr, false);
    const bool sinfo =
        commands.is_object() && commands.contains("sinfo") && commands["sinfo"].is_string();
    const std::string conf =
        env("SLURM_CONF").empty() ? "/etc/slurm/slurm.conf" : env("SLURM_CONF");
    if (sinfo && io.fs->Exists(conf)) {
      hints.emplace_back("this host is a Slurm client: `cmax audit --slurm` audits every node");
    }
  }
  const std::string home = env("HOME");
  if (!env("KUBERNETES_SERVICE_HOST").empty() || !env("KUBECONFIG").empty() ||
      (!home.empty() && io.fs->Exists(home + "/.kube/config"))) {
    hints.emplace_back("a Kubernetes cluster is configured: `cmax audit --kubernetes` audits it");
  }
  return Join(hints, "; ");
}

}  // namespace

AuditTarget LocalAuditTarget(const Target& target) {
  if (target.environment == "container") return AuditTarget::kContainer;
  if (target.environment == "vm") return AuditTarget::kVm;
  return AuditTarget::kStandalone;
}

std::vector<EvidenceItem> AuditBookkeeping(const AuditOptions& options, const MinimumTable& table) {
  std::vector<EvidenceItem> items = {
      {"audit.profile", nlohmann::json(options.profile.empty() ? "all" : options.profile).dump()},
      {"audit.minimums.generated", nlohmann::json(FormatIso8601(table.Generated())).dump()},
      {"audit.minimums.sha256", nlohmann::json(table.Sha256()).dump()}};
  // So that `review --regrade` grades the side-effect checks as this run could.
  if (options.side_effects.allowed) items.push_back({"audit.side_effects_allowed", "true"});
  return items;
}

SideEffectIo SideEffectIoFor(const AuditIo& io, std::optional<WallTime> deadline) {
  return {.connect = sys::TcpConnect,
          .now = [&io] { return io.clock->Now(); },
          .deadline = deadline,
          .make_scratch_dir =
              [&io] {
                const std::string tmpdir = io.env ? io.env("TMPDIR") : "";
                return sys::MakeTempDir(tmpdir.empty() ? "/tmp" : tmpdir, "cmax-audit-enroot-");
              },
          .remove_file = [&io](const std::string& path) { return io.fs->RemoveFile(path); },
          .remove_dir = sys::RemoveEmptyDir,
          .interrupted = io.interrupted};
}

std::map<std::string, std::string> AuditEnvironment(const AuditIo& io) {
  std::map<std::string, std::string> environment;
  if (!io.env) return environment;
  for (const char* name : kAuditEnvironment) {
    if (std::string value = io.env(name); !value.empty()) environment[name] = std::move(value);
  }
  return environment;
}

SideEffectOptions AuditSideEffects(const AuditOptions& options,
                                   const std::vector<const CheckSpec*>& checks) {
  SideEffectOptions side_effects = ForChecks(options.side_effects, checks);
  if (!options.host_root.empty()) {
    side_effects.checks.erase("containers.enroot-import");
    side_effects.checks.erase("access.ssh-between-nodes");
  }
  return side_effects;
}

Result<AuditIo> ThroughHostRoot(const std::string& host_root, const AuditIo& io,
                                HostRootView& view) {
  if (host_root.empty()) return io;
  if (host_root.front() != '/' || !io.fs->IsDirectory(host_root)) {
    return Fail(ErrorCode::kInvalidArgument, "--host-root {}: not a folder (an absolute path)",
                host_root);
  }
  AuditIo through = io;
  through.fs = &view.fs.emplace(*io.fs, host_root);
  through.runner = &view.runner.emplace(*io.runner, host_root);
  through.path = std::string(sys::kHostPath);
  through.env = [env = io.env](const std::string& name) -> std::string {
    if (name == "HOME") return std::string(sys::kHostHome);
    if (!env || std::ranges::count(sys::kContainersOwnVariables, name) > 0) return {};
    return env(name);
  };
  return through;
}

namespace {

// What a container that reads its host through a mounted root reads for itself and not for a
// tenant of the host: it runs as root, where sudo's policy does not apply, and its resource
// limits are its runtime's. (A Kubernetes audit pod's limits are kept: a tenant's pod gets the
// same.)
std::map<std::string, std::string> ContainerCannotTell() {
  const std::string root =
      "read from a container that runs as root, which cannot tell what a tenant may do with sudo "
      "or nvidia-smi";
  const std::string limits =
      "read from a container, whose resource limits are its runtime's, not a tenant's";
  return {{"access.sudo_noninteractive", root},
          {"gpu.controls.vboost", root},
          {"host.limits.memlock", limits},
          {"host.limits.nofile", limits}};
}

}  // namespace

GradedAudit AuditThisHost(const AuditOptions& options, const PreparedAudit& prepared,
                          const HostFacts& host, AuditTarget target, const AuditIo& io) {
  log::Info("auditing this host ({}): {} checks", TargetName(target), prepared.checks.size());
  AuditEvidence evidence =
      CollectLocalEvidence(*io.fs, *io.runner,
                           {.path = io.path,
                            .timeout = SecondsAsDuration(options.probe_timeout_s),
                            .now = io.clock->Now(),
                            .slurm_conf = io.env ? io.env("SLURM_CONF") : "",
                            .nvml = SnapshotNvml,
                            .nvml_named = io.env && !io.env("CMAX_NVML_LIB").empty(),
                            .environment = AuditEnvironment(io),
                            .host = &host,
                            .side_effects = AuditSideEffects(options, prepared.checks),
                            .side_effect_io = SideEffectIoFor(io, std::nullopt)});
  std::map<std::string, std::string> unread;
  if (!options.host_root.empty()) {
    unread = ContainerCannotTell();
    for (const auto& [key, why] : unread) evidence.erase(key);
  }
  GradedAudit graded{.target = "local/" + std::string(TargetName(target)), .host = sys::Hostname()};
  for (const auto& [key, value] : evidence) graded.evidence.push_back({key, value.dump()});
  graded.evidence.push_back({"audit.target", nlohmann::json(TargetName(target)).dump()});
  if (!options.host_root.empty()) {
    // So that `review --regrade` says why as this run did.
    graded.evidence.push_back({"audit.host_root", nlohmann::json(options.host_root).dump()});
    graded.evidence.push_back({"audit.unread", nlohmann::json(unread).dump()});
  }
  // A probe cut short by Ctrl-C proves nothing: the grades are kept only when it finished.
  if (!(io.interrupted && io.interrupted())) {
    graded.findings = GradeChecks(prepared.checks, evidence,
                                  {.target = target,
                                   .minimums = &prepared.table,
                                   .now = io.clock->Now(),
                                   .allow_side_effects = options.side_effects.allowed,
                                   .unread = unread.empty() ? nullptr : &unread});
  }
  if (const std::string taken = SideEffectsSummary({&evidence}); !taken.empty()) {
    graded.summary = "side effects taken: " + taken;
  }
  return graded;
}

Result<MinimumTable> LoadMinimums(const std::string& path, const AuditIo& io) {
  if (path.empty()) return MinimumTable::Builtin();
  auto text = io.fs->ReadFile(path, kMaxTableBytes);
  if (!text) return tl::unexpected(text.error());
  auto table = MinimumTable::Parse(*text);
  if (!table) return Wrap(table.error(), path);
  return table;
}

Result<std::string> ShowMinimums(const std::string& path, const AuditIo& io) {
  auto table = LoadMinimums(path, io);
  if (!table) return tl::unexpected(table.error());
  return MinimumTableText(*table, io.clock->Now());
}

Result<PreparedAudit> PrepareAudit(const AuditOptions& options, const AuditIo& io) {
  if (!std::isfinite(options.probe_timeout_s) || options.probe_timeout_s <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "--probe-timeout must be a number of seconds");
  }
  const SideEffectOptions& side = options.side_effects;
  if (!side.allowed && (side.force || !side.egress_target.empty())) {
    return Fail(ErrorCode::kInvalidArgument,
                "--force and --egress-target act only with --allow-side-effects");
  }
  if (!side.egress_target.empty()) {
    if (auto target = ParseEgressTarget(side.egress_target); !target) {
      return tl::unexpected(target.error());
    }
  }
  auto table = LoadMinimums(options.minimums, io);
  if (!table) return tl::unexpected(table.error());
  auto checks = AuditCatalogue::Builtin().Select(options.profile);
  if (!checks) return tl::unexpected(checks.error());
  return PreparedAudit{std::move(*table), std::move(*checks)};
}

Result<AuditReport> RecordAudit(const AuditOptions& options, const PreparedAudit& prepared,
                                GradedAudit graded, const AuditIo& io) {
  auto recorded = store::BeginRecordedRun(
      io.db_path, {.command = "audit",
                   .target = graded.target,
                   .host = graded.host,
                   .started_at = graded.started == WallTime{} ? io.clock->Now() : graded.started,
                   .cmax_version = io.cmax_version});
  if (!recorded) return SystemFailure(recorded.error());
  store::RunWriter& writer = recorded->writer;
  const auto fail = [&](const Error& error) -> Result<AuditReport> {
    (void)writer.FinishWithError(store::kRunError, io.clock->Now());
    return SystemFailure(error);
  };
  const MinimumTable& table = prepared.table;
  std::vector<EvidenceItem>& items = graded.evidence;
  for (EvidenceItem& item : AuditBookkeeping(options, table)) items.push_back(std::move(item));
  if (auto ok = writer.Add(items, graded.findings); !ok) return fail(ok.error());
  const int signal = io.interrupt_signal ? io.interrupt_signal() : 0;
  auto outcome = writer.Finish(signal, io.clock->Now());
  if (!outcome) return fail(outcome.error());
  auto record = recorded->store->LoadRun(writer.RunId());
  if (!record) return SystemFailure(record.error());
  AuditReport report;
  report.exit_code = outcome->exit_code;
  if (options.exit_zero && signal == 0) report.exit_code = 0;
  report.record = std::move(*record);
  report.notice = table.AgeNotice(io.clock->Now());
  report.summary = std::move(graded.summary);
  return report;
}

Result<AuditReport> RunLocalAudit(const AuditOptions& options, const AuditIo& own_io) {
  const WallTime started = own_io.clock->Now();
  // Everything the user gave is checked before the run is opened; their files are this
  // process's, whatever host is read.
  auto prepared = PrepareAudit(options, own_io);
  if (!prepared) return tl::unexpected(prepared.error());
  HostRootView view;
  auto io = ThroughHostRoot(options.host_root, own_io, view);
  if (!io) return tl::unexpected(io.error());
  const HostFacts host = CollectHost(*io->fs, sys::Hostname());
  GradedAudit graded =
      AuditThisHost(options, *prepared, host, LocalAuditTarget(DetectEnvironment(host)), *io);
  graded.host = host.hostname;
  graded.started = started;
  if (std::string hint = ClusterHint(graded.evidence, *io); !hint.empty()) {
    graded.summary = graded.summary.empty() ? hint : hint + "; " + graded.summary;
  }
  return RecordAudit(options, *prepared, std::move(graded), own_io);
}

}  // namespace cmax::audit
