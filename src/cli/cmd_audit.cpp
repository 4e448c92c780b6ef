// `cmax audit`: the yes/no audit, check by check (data/audit_catalogue.json). This version
// audits this host (the local target); the Slurm and Kubernetes fan-out comes next.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "audit/audit_run.hpp"
#include "audit/catalogue.hpp"
#include "audit/catalogue_views.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "report/render.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct AuditFlags {
  bool show = false;
  bool show_minimums = false;
  bool local = false;
  bool json = false;
  audit::ShowOptions listing;
  audit::AuditOptions run;
};

int Audit(AuditFlags& o, Context& ctx) {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  const audit::AuditIo io{.db_path = ctx.DbPath(),
                          .cmax_version = VersionString(),
                          .fs = &fs,
                          .runner = &runner,
                          .clock = &clock,
                          .path = sys::GetEnv("PATH"),
                          .interrupted = [] { return sys::Interrupted(); },
                          .interrupt_signal = [] { return sys::InterruptSignal(); }};
  if (o.show_minimums) {
    return PrintText(ctx, "cmax audit", audit::ShowMinimums(o.run.minimums, io));
  }
  if (o.show) {
    o.listing.verbose = ctx.global.verbosity > 0;
    return PrintText(ctx, "cmax audit",
                     audit::ShowCatalogue(audit::AuditCatalogue::Builtin(), o.listing));
  }
  o.run.profile = o.listing.profile;
  auto report = audit::RunLocalAudit(o.run, io);
  if (!report) return PrintError(ctx, "cmax audit", report.error());
  if (!report->notice.empty()) ctx.err << "cmax audit: NOTE: " << report->notice << "\n";
  ctx.out << (o.json ? report::RenderJson(report->record)
                     : report::RenderText(report->record, {.color = ctx.Color()}));
  return report->exit_code;
}

}  // namespace

Command SetupAuditCommand(CLI::App& parent) {
  auto o = std::make_shared<AuditFlags>();
  CLI::App* app = parent.add_subcommand(
      "audit",
      "The yes/no audit, check by check: component versions against a minimum-version table,\n"
      "tenant isolation, hardware, software, containers, orchestration, networking, storage,\n"
      "health checks and access. Read-only. This version audits this host (--local); the\n"
      "Slurm and Kubernetes targets come next.");
  app->add_option("PROFILE", o->listing.profile,
                  "Only this profile's checks: security (versions and isolation), versions, "
                  "isolation, hardware, software, containers, orchestration, networking, "
                  "storage, health or access");
  app->add_flag("--local", o->local, "Audit this host (the only target of this version)");
  app->add_flag("--json", o->json, "Print the JSON report (schema cmax.report/v1)");
  app->add_flag("--exit-zero", o->run.exit_zero,
                "Exit 0 even when a check fails or cannot be read (errors still exit 2 or 3)");
  app->add_option("--probe-timeout", o->run.probe_timeout_s,
                  "Seconds a program a probe runs may take (nvcc, runc, docker, dcgmi ...)")
      ->check(Real(0.1, 600.0))
      ->capture_default_str();
  app->add_flag("-s,--show", o->show,
                "List the checks, one per line under their profile, without running anything "
                "(-v: each check's rule, evidence, reproduce line and references)");
  app->add_option("--format", o->listing.format,
                  "With --show: text, markdown (the README's check table) or json (a catalogue)")
      ->check(CLI::IsMember({"text", "markdown", "json"}))
      ->capture_default_str();
  app->add_flag("--show-minimums", o->show_minimums,
                "Print the minimum-version table the versions checks grade against: its date, "
                "age and SHA-256, each component's minimums by branch, its advisories");
  app->add_option("--minimums", o->run.minimums,
                  "A minimum-version table to use instead of the built-in one (JSON, schema "
                  "cmax.audit-minimums/v1, like data/audit_minimums.json)");
  return {app, [o](Context& ctx) { return Audit(*o, ctx); }};
}

}  // namespace cmax::cli
