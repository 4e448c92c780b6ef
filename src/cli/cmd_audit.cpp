// `cmax audit`: the yes/no audit of a cluster, check by check (data/audit_catalogue.json).
// This version lists the checks (--show); running them on the target comes next.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "audit/audit_run.hpp"
#include "audit/catalogue.hpp"
#include "audit/catalogue_views.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "sys/file_system.hpp"

namespace cmax::cli {
namespace {

struct AuditFlags {
  bool show = false;
  bool show_minimums = false;
  std::string minimums;  // empty: the built-in table
  audit::ShowOptions listing;
};

}  // namespace

Command SetupAuditCommand(CLI::App& parent) {
  auto o = std::make_shared<AuditFlags>();
  CLI::App* app = parent.add_subcommand(
      "audit",
      "The audit's checks: component versions against a minimum-version table, tenant\n"
      "isolation, hardware, software, containers, orchestration, networking, storage, health\n"
      "checks and access. This version lists them (--show); running them comes next.");
  app->add_option("PROFILE", o->listing.profile,
                  "Only this profile's checks: security (versions and isolation), versions, "
                  "isolation, hardware, software, containers, orchestration, networking, "
                  "storage, health or access");
  app->add_flag("-s,--show", o->show,
                "List the checks, one per line under their profile, without running anything "
                "(-v: each check's predicate, evidence, reproduce line and references)");
  app->add_option("--format", o->listing.format,
                  "With --show: text, markdown (the README's check table) or json (a catalogue)")
      ->check(CLI::IsMember({"text", "markdown", "json"}))
      ->capture_default_str();
  app->add_flag("--show-minimums", o->show_minimums,
                "Print the minimum-version table the versions checks grade against: its date, "
                "age and SHA-256, each component's minimums by branch, its advisories");
  app->add_option("--minimums", o->minimums,
                  "A minimum-version table to use instead of the built-in one (JSON, schema "
                  "cmax.audit-minimums/v1, like data/audit_minimums.json)");
  return {app, [o](Context& ctx) {
            if (o->show_minimums) {
              sys::LocalFileSystem fs;
              SystemClock clock;
              return PrintText(ctx, "cmax audit",
                               audit::ShowMinimums(o->minimums, {.fs = &fs, .clock = &clock}));
            }
            if (!o->show) {
              ctx.err << "cmax audit: this version lists the audit's checks (cmax audit --show) "
                         "but does not run them yet\n";
              return kExitUsage;
            }
            o->listing.verbose = ctx.global.verbosity > 0;
            return PrintText(ctx, "cmax audit",
                             audit::ShowCatalogue(audit::AuditCatalogue::Builtin(), o->listing));
          }};
}

}  // namespace cmax::cli
