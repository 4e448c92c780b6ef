// `cmax audit`: the yes/no audit, check by check (data/audit_catalogue.json), of this host
// (--local, the default), of every node of a Slurm cluster (--slurm: one srun step in which
// each node runs `cmax audit --node-evidence`), or of a Kubernetes cluster through its API
// server (--kubernetes: GET requests only).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <ostream>

#include "audit/audit_run.hpp"
#include "audit/catalogue.hpp"
#include "audit/catalogue_views.hpp"
#include "audit/kube_audit.hpp"
#include "audit/minimums_build.hpp"
#include "audit/review.hpp"
#include "audit/slurm_audit.hpp"
#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
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
  bool slurm_target = false;
  bool kube_target = false;
  bool node_evidence = false;
  bool yes = false;
  bool json = false;
  audit::ShowOptions listing;
  audit::AuditOptions run;
  audit::SlurmAuditOptions slurm;
  audit::KubeAuditOptions kube;
  CLI::Option* budget = nullptr;
  CLI::Option* yes_option = nullptr;
  CLI::Option* node_evidence_option = nullptr;
  CLI::App* app = nullptr;
  CLI::App* review_app = nullptr;
  CLI::App* build_app = nullptr;
  std::vector<std::string> advisories;
  std::string build_out;
  std::string build_base;
  audit::ReviewOptions review;
};

// Work on other machines goes ahead with --yes, or with a "y" from the person at the terminal.
bool Confirm(const AuditFlags& o, Context& ctx, const std::string& plan) {
  if (o.yes) return true;
  if (!sys::StdinIsTerminal()) {
    ctx.err << "cmax audit: would " << plan << "; not on a terminal, so --yes is needed\n";
    return false;
  }
  ctx.err << "cmax audit: " << plan << ". Go ahead? [y/N] " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

// `cmax audit minimums build`: the table on stdout or in --output, what set each minimum on
// stderr.
int BuildMinimums(const AuditFlags& o, Context& ctx, sys::FileSystem& fs, const Clock& clock) {
  auto built = audit::BuildMinimumsFromFiles(o.advisories, o.build_base, clock.Now(), fs);
  if (!built) return PrintError(ctx, "cmax audit minimums build", built.error());
  if (!ctx.global.quiet) {
    for (const std::string& line : built->used) ctx.err << "cmax audit: minimum " << line << "\n";
    for (const std::string& line : built->ignored)
      ctx.err << "cmax audit: ignored " << line << "\n";
  }
  return WriteOrPrint(ctx, "cmax audit minimums build", o.build_out, JsonText(built->table));
}

// The audit's own options mean nothing to `review` and `minimums build`: one given with them is
// refused rather than ignored (--minimums is the table `review --regrade` grades with too).
std::string AuditOptionBeside(const CLI::App& audit, bool regrading) {
  for (const CLI::Option* option : audit.get_options()) {
    const std::string name = option->get_name();
    if (option->count() == 0 || name == "--help") continue;
    if (name == "--minimums" && regrading) continue;
    return name;
  }
  return {};
}

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
                          .interrupted = sys::Interrupted,
                          .interrupt_signal = sys::InterruptSignal,
                          .env = sys::EnvironmentValue,
                          .self_path = sys::SelfExecutable(),
                          .confirm = [&](const std::string& plan) { return Confirm(o, ctx, plan); },
                          .note =
                              [&](std::string_view line) {
                                if (!ctx.global.quiet) ctx.err << "cmax audit: " << line << "\n";
                              }};
  // Alone they would do nothing, or audit this host instead of the cluster meant.
  if (!o.slurm_target && !o.kube_target && (o.budget->count() > 0 || o.yes_option->count() > 0)) {
    ctx.err << "cmax audit: --budget and --yes go with --slurm or --kubernetes\n";
    return kExitUsage;
  }
  for (const CLI::App* sub : {o.review_app, o.build_app}) {
    if (!sub->parsed()) continue;
    const bool regrading = sub == o.review_app && o.review.regrade;
    if (const std::string beside = AuditOptionBeside(*o.app, regrading); !beside.empty()) {
      ctx.err << "cmax audit: " << beside << " is an option of the audit itself, not of "
              << (sub == o.review_app ? "review" : "minimums build") << "\n";
      return kExitUsage;
    }
  }
  if (o.build_app->parsed()) return BuildMinimums(o, ctx, fs, clock);
  if (o.review_app->parsed()) {
    o.review.minimums = o.run.minimums;
    auto review = audit::ReviewAudit(o.review, io);
    if (!review) return PrintError(ctx, "cmax audit review", review.error());
    if (review->regrade) {
      ctx.out << (o.json ? audit::RegradeJson(review->record, *review->regrade)
                         : audit::RegradeText(review->record, *review->regrade));
    } else {
      PrintRunRecord(ctx, review->record, o.json, DetailedText(ctx));
    }
    return kExitOk;
  }
  if (o.show_minimums) {
    return PrintText(ctx, "cmax audit", audit::ShowMinimums(o.run.minimums, io));
  }
  if (o.show) {
    o.listing.verbose = ctx.global.verbosity > 0;
    return PrintText(ctx, "cmax audit",
                     audit::ShowCatalogue(audit::AuditCatalogue::Builtin(), o.listing));
  }
  o.run.profile = o.listing.profile;
  if (o.node_evidence) {
    return PrintText(ctx, "cmax audit --node-evidence",
                     audit::NodeEvidenceFrames(o.run, o.slurm.node_timeout_s, io));
  }
  o.kube.budget_s = o.slurm.budget_s;
  o.kube.node_timeout_s = o.slurm.node_timeout_s;
  auto report = o.slurm_target  ? audit::RunSlurmAudit(o.run, o.slurm, io)
                : o.kube_target ? audit::RunKubeAudit(o.run, o.kube, io)
                                : audit::RunLocalAudit(o.run, io);
  if (!report) return PrintError(ctx, "cmax audit", report.error());
  if (!report->notice.empty()) ctx.err << "cmax audit: NOTE: " << report->notice << "\n";
  if (!report->summary.empty() && !ctx.global.quiet) {
    ctx.err << "cmax audit: " << report->summary << "\n";
  }
  PrintRunRecord(ctx, report->record, o.json, DetailedText(ctx));
  return report->exit_code;
}

}  // namespace

Command SetupAuditCommand(CLI::App& parent) {
  auto o = std::make_shared<AuditFlags>();
  CLI::App* app = parent.add_subcommand(
      "audit",
      "The yes/no audit, check by check: component versions against a minimum-version table,\n"
      "tenant isolation, hardware, software, containers, orchestration, networking, storage,\n"
      "health checks and access. Read-only. Audits this host (--local, the default), every\n"
      "node of a Slurm cluster (--slurm), or a Kubernetes cluster through its API server\n"
      "(--kubernetes); on a cluster the worst node decides each check.");
  o->app = app;
  Opt(app, "PROFILE", o->listing.profile,
      "Only this profile's checks: security (versions and isolation), versions, "
      "isolation, hardware, software, containers, orchestration, networking, "
      "storage, health or access");
  CLI::Option* local = Flag(app, "--local", o->local, "Audit this host (the default)");
  CLI::Option* slurm =
      Flag(app, "--slurm", o->slurm_target,
           "Audit every node of the partition or node list through one srun job step (cmax must "
           "be at the same path on the nodes: --remote-cmax)")
          ->excludes(local);
  Flag(app, "--kubernetes", o->kube_target,
       "Audit a Kubernetes cluster through its API server: GET requests only, no pod is "
       "started (what only a pod on a node could read is UNKNOWN; --allow-side-effects "
       "--image IMAGE reads each node in a pod of its own)")
      ->excludes(local)
      ->excludes(slurm);
  Flag(app, "--json", o->json, "Print the JSON report (schema cmax.report/v1)");
  Flag(app, "--exit-zero", o->run.exit_zero,
       "Exit 0 even when a check fails or cannot be read (errors still exit 2 or 3)");
  Num(app, "--probe-timeout", o->run.probe_timeout_s, Real(0.1, 600.0),
      "Seconds a program a probe runs may take (nvcc, runc, docker, dcgmi ...)");
  audit::SideEffectOptions& side = o->run.side_effects;
  CLI::Option* allow =
      Flag(app, "--allow-side-effects", side.allowed,
           "Also run the checks that act on a node (without it they are N/A): "
           "health.dcgm-diag runs dcgmi diag -r 1 (seconds of load on every GPU) on nodes whose "
           "GPUs are idle; networking.outbound-internet opens one TCP connection to "
           "--egress-target; containers.enroot-import (Slurm) imports docker://hello-world "
           "with enroot and removes the image; on Kubernetes with --image, a pod on each node "
           "reads it and is deleted. Each one taken is recorded in the run with how to undo it");
  Group("Side effects (--allow-side-effects)",
        {allow,
         Flag(app, "--force", side.force,
              "Run the GPU diagnostic on nodes whose GPUs are busy too (it slows their jobs "
              "and its figures are not to be trusted)")
             ->needs(allow),
         Opt(app, "--egress-target", side.egress_target,
             "HOST[:PORT] (port 443 unless given; [ADDRESS]:PORT for IPv6) each audited node "
             "opens one TCP connection to, sending nothing: reached is a WARN for the provider "
             "to say whether it raised an alert")
             ->needs(allow)});
  Flag(app, "-s,--show", o->show,
       "List the checks, one per line under their profile, without running anything "
       "(-v: each check's rule, evidence, reproduce line and references)");
  Choice(app, "--format", o->listing.format, {"text", "markdown", "json", "coverage"},
         "With --show: text, markdown (the README's check table), json (a catalogue) or "
         "coverage (how each of the public audit's 61 checks is covered: "
         "docs/AUDIT_COVERAGE.md)");
  Flag(app, "--show-minimums", o->show_minimums,
       "Print the minimum-version table the versions checks grade against: its date, "
       "age and SHA-256, each component's minimums by branch, its advisories")
      ->excludes("--show");
  Opt(app, "--minimums", o->run.minimums,
      "A minimum-version table to use instead of the built-in one (JSON, schema "
      "cmax.audit-minimums/v1, like data/audit_minimums.json)");
  audit::SlurmAuditOptions& s = o->slurm;
  // These mean something only with --slurm: alone they would audit this host instead.
  const std::initializer_list<CLI::Option*> slurm_only = {
      Opt(app, "-p,--partition", s.partition,
          "Only these partitions' nodes (srun -p; a comma list)"),
      Opt(app, "-w,--nodelist", s.nodelist, "Only these nodes, a hostlist (gpu[1-4],gpu7)"),
      Repeated(app, "--srun-arg", s.srun_args,
               "Passed to srun as it is, e.g. --srun-arg=--account=ops (repeatable)"),
      Opt(app, "--remote-cmax", s.remote_cmax,
          "The cmax the nodes run (default: this one's path)")};
  for (CLI::Option* option : slurm_only) option->needs(slurm);
  Group("Slurm (--slurm)", slurm_only);
  Group("Slurm (--slurm)",
        {Num(app, "--node-timeout", s.node_timeout_s, Real(0.1, 3600),
             "Seconds a node may take for its evidence (shorter than --budget); then it says "
             "so and stops (a Kubernetes audit pod's too)"),
         o->node_evidence_option =
             Flag(app, "--node-evidence", o->node_evidence,
                  "What each node runs under --slurm (and in a Kubernetes audit pod): print this "
                  "host's evidence framed for the fan-out; writes nothing")
                 ->excludes(slurm)
                 ->excludes("--kubernetes")});
  Opt(app, "--host-root", o->run.host_root,
      "Audit the host whose / is mounted at this folder, from a container (docker run "
      "--privileged --pid=host --net=host --uts=host -v /:/host:ro IMAGE cmax audit "
      "--host-root /host; an audit pod's /host): its files below the folder, its programs run "
      "with chroot, /proc /sys /dev as they are; --minimums and the store stay this one's")
      ->excludes(slurm)
      ->excludes("--kubernetes")
      ->excludes("--show")
      ->excludes("--show-minimums");
  // Either cluster target.
  o->budget = Num(app, "--budget", s.budget_s, SecondsIn(86400),
                  "Seconds the audit's work on the cluster may take in all (the srun steps; "
                  "the kubelets' reads); nodes not heard by then are UNKNOWN");
  o->yes_option = Flag(app, "-y,--yes", o->yes, "Go ahead without asking (needed off a terminal)");
  Group("Slurm or Kubernetes", {o->budget, o->yes_option});
  audit::KubeAuditOptions& k = o->kube;
  AddKubeFlags(*app, k.connection);
  CLI::Option* selector =
      Opt(app, "-l,--selector", k.selector,
          "Only the nodes this label selector picks (as kubectl -l; default: the nodes with "
          "GPUs, or all when none has one)");
  CLI::Option* image =
      Opt(app, "--image", k.image,
          "With --allow-side-effects: an image holding this cmax (as `cmax` on its PATH, with "
          "chroot) to start on each node in a pod of its own (privileged, host PID and network, "
          "the host's / read-only) that reads what the API cannot tell; each pod is deleted "
          "when done")
          ->needs(allow);
  Group("Kubernetes",
        {selector, image,
         Opt(app, "--pod-namespace", k.pod_namespace, "The audit pods' namespace")->needs(image)});
  for (CLI::Option* option : app->get_options()) {
    if (option->get_group() == "Kubernetes") option->needs("--kubernetes");
  }
  o->review_app = app->add_subcommand(
      "review",
      "A stored audit as it was graded; with --regrade, graded again from its evidence with "
      "today's rules and minimum table, and what changed. Collects and records nothing");
  Opt(o->review_app, "RUN", o->review.run, "Run id, or 'latest' (the newest audit)");
  CLI::Option* regrade =
      Flag(o->review_app, "--regrade", o->review.regrade,
           "Grade the stored evidence with today's rules and table (--minimums FILE: that one)");
  Flag(o->review_app, "--json", o->json,
       "The run as JSON (cmax.report/v1), or the regrade (cmax.audit-regrade/v1)");
  Opt(o->review_app, "--minimums", o->run.minimums, "The table to regrade with")->needs(regrade);
  CLI::App* minimums = app->add_subcommand(
      "minimums", "Minimum-version tables: build one from security advisories you have mirrored");
  minimums->require_subcommand(1);
  o->build_app = minimums->add_subcommand(
      "build",
      "A minimum-version table (cmax.audit-minimums/v1) from NVIDIA CSAF 2.0 documents and OSV\n"
      "records: per component and release line, the highest version an advisory calls fixed,\n"
      "available from that advisory's date. Reads only the files given; use it with\n"
      "`cmax audit --minimums FILE`");
  Opt(o->build_app, "ADVISORY", o->advisories,
      "CSAF or OSV JSON files, or folders of them (their *.json)")
      ->required();
  Opt(o->build_app, "-o,--output", o->build_out, "Write the table here instead of stdout");
  Opt(o->build_app, "--base", o->build_base,
      "Start from this table: its minimums stay unless an advisory raises them");
  return {app, [o](Context& ctx) { return Audit(*o, ctx); }};
}

}  // namespace cmax::cli
