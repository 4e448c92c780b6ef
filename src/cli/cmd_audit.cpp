// `cmax audit`: the yes/no audit of a cluster, check by check (data/audit_catalogue.json).
// This version lists the checks (--show); running them on the target comes next.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "audit/catalogue.hpp"
#include "audit/catalogue_views.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"

namespace cmax::cli {
namespace {

struct AuditFlags {
  bool show = false;
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
  return {app, [o](Context& ctx) {
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
