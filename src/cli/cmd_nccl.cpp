// `cmax nccl`: the network, through NCCL's own benchmark.
//   analyze    nccl-tests logs a user already has: each table's bus-bandwidth curve, its dips,
//              cliffs and switch-point kinks, drops as nodes are added, and the platform's
//              figures; recorded as a run
//   sweep      runs nccl-tests (or its CPU stand-in) over 1, 2, 4 ... N nodes, each step with a
//              deadline, keeps every log and analyses them as `analyze` would
//   find-bad-node  the node that drags a group down, by halves and pairs
//   recipe     this node's NCCL settings against a platform's golden recipe
//   platforms  the platforms' expected figures and what they rest on
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "net/nccl_analyze_run.hpp"
#include "net/nccl_recipe.hpp"
#include "net/nccl_sweep.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

// Where the ranks run and what runs, for sweep and find-bad-node alike.
struct HostFlags {
  net::NcclSweepRequest request;
  double step_timeout_s = 600;
  std::string launcher = "mpirun";
};

struct NcclFlags {
  CLI::App* analyze = nullptr;
  CLI::App* sweep = nullptr;
  CLI::App* find = nullptr;
  CLI::App* recipe = nullptr;
  CLI::App* platforms = nullptr;
  net::NcclRecipeOptions recipe_options;
  bool list_recipes = false;
  net::NcclAnalyzeOptions options;
  HostFlags sweep_hosts;
  HostFlags find_hosts;
  double finder_tolerance_pct = 10;
  double reference_gbs = 0;
  int max_measurements = 64;
  bool json = false;
};

// The request as the library takes it: the deadline, the launcher, the stand-in beside cmax.
net::NcclSweepRequest Request(const HostFlags& h, const Context& ctx, const Clock& clock,
                              std::string_view kind) {
  net::NcclSweepRequest request = h.request;
  request.sweep.step_timeout = SecondsAsDuration(h.step_timeout_s);
  request.sweep.launcher =
      h.launcher == "srun" ? net::NcclLauncher::kSrun : net::NcclLauncher::kMpirun;
  net::PlaceNcclRequest(request, kind,
                        {.cpu_perf = net::CpuStandInBeside(sys::SelfExecutable()),
                         .db_path = ctx.DbPath(),
                         .own_job = sys::GetEnv("SLURM_JOB_ID"),
                         .now = clock.Now()});
  return request;
}

struct Shell {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  net::NcclSweepIo Io(Context& ctx, std::string command) {
    return {.analyze = {.db_path = ctx.DbPath(),
                        .cmax_version = VersionString(),
                        .fs = &fs,
                        .clock = &clock},
            .fs = &fs,
            .runner = &runner,
            .interrupted = sys::Interrupted,
            .progress = [&ctx, command = std::move(command)](std::string_view line) {
              if (!ctx.global.quiet) ctx.err << command << ": " << line << std::endl;
            }};
  }
};

int Sweep(const NcclFlags& o, Context& ctx) {
  Shell shell;
  net::NcclSweepRequest request = Request(o.sweep_hosts, ctx, shell.clock, "nccl-sweep");
  request.analysis = o.options;
  const std::string out_dir = request.out_dir;
  auto report = net::SweepNccl(std::move(request), shell.Io(ctx, "cmax nccl sweep"));
  if (!report) return PrintError(ctx, "cmax nccl sweep", report.error());
  return PrintRecorded(ctx, "cmax nccl sweep",
                       o.json ? JsonText(net::NcclSweepJson(*report))
                              : net::NcclSweepText(*report, ctx.global.verbosity > 0),
                       report->analyzed.record.run.id,
                       ExitCodeUnlessInterrupted(report->interrupted, report->analyzed.exit_code),
                       "logs in " + out_dir);
}

int FindBadNode(const NcclFlags& o, Context& ctx) {
  Shell shell;
  net::NcclSweepRequest request = Request(o.find_hosts, ctx, shell.clock, "nccl-find");
  const std::string out_dir = request.out_dir;
  net::BadNodeOptions finder{.tolerance = o.finder_tolerance_pct / 100,
                             .max_measurements = static_cast<size_t>(o.max_measurements)};
  if (o.reference_gbs > 0) finder.reference_gbs = o.reference_gbs;
  auto report =
      net::FindNcclBadNodes(std::move(request), finder, shell.Io(ctx, "cmax nccl find-bad-node"));
  if (!report) return PrintError(ctx, "cmax nccl find-bad-node", report.error());
  return PrintRecorded(
      ctx, "cmax nccl find-bad-node",
      o.json ? JsonText(net::NcclBadNodeJson(*report)) : net::NcclBadNodeText(*report),
      report->record.run.id, ExitCodeUnlessInterrupted(report->interrupted, report->exit_code),
      "logs in " + out_dir);
}

void AddHostFlags(CLI::App* sub, HostFlags& h, const std::string& what) {
  net::NcclSweepRequest& r = h.request;
  net::NcclSweepOptions& w = r.sweep;
  CLI::Option* hosts =
      Opt(sub, "--hosts", w.hosts, "Hosts, in order (comma-separated)" + what)->delimiter(',');
  CLI::Option* hostfile = Opt(sub, "--hostfile", r.hostfile,
                              "Hosts from this file: one per line, the first word (mpirun's "
                              "'node7 slots=8' too), '#' comments");
  CLI::Option* lab = Num(sub, "--netns-lab", r.lab_hosts, Whole(2, 200),
                         "Make this many hosts on this machine as network namespaces on a bridge "
                         "(root; 198.18.0.0/15), h1 ... hN, and run the CPU stand-in over them: "
                         "a test of cmax itself, and a lab to learn it in");
  lab->excludes(hosts)->excludes(hostfile);
  Repeated(sub, "--slow-link", r.slow_links,
           "HOST:RATE: slow that lab host's link to RATE with tc's token bucket (h5:200mbit) "
           "(repeatable)")
      ->needs(lab);
  Opt(sub, "--nccl-tests", r.nccl_tests_dir,
      "nccl-tests' build folder (all_reduce_perf ..., or *_perf_mpi); without it the CPU "
      "stand-in runs");
  Choice(sub, "--launcher", h.launcher, {"mpirun", "srun"},
         "How ranks start: OpenMPI's mpirun (--host), or Slurm's srun --mpi=pmix inside an "
         "allocation (--nodelist)");
  Flag(sub, "--force", r.force,
       "With mpirun: run on hosts where Slurm's squeue shows others' jobs (those other than "
       "--own-job's) too; without it such a run is refused. The run records a WARN: their "
       "traffic is in its figures");
  Opt(sub, "--own-job", r.own_job,
      "With mpirun: the Slurm job the sweep runs for, whose hosts are not others' (default "
      "$SLURM_JOB_ID; give it in an ssh session that pam_slurm_adopt put in your job)")
      ->check(Whole(1, 4294967295));
  Opt(sub, "--srun-mpi", w.srun_mpi,
      "srun's MPI plugin (--mpi=): pmix, pmix_v4, pmi2 ... as srun --mpi=list names them");
  Opt(sub, "-b,--min-bytes", w.min_bytes, "Smallest message (nccl-tests' -b: 8, 64K, 1M)");
  Opt(sub, "-e,--max-bytes", w.max_bytes, "Largest message (nccl-tests' -e: 16G)");
  Num(sub, "-n,--iters", w.iters, Whole(1, 1000000), "Timed iterations per size");
  Num(sub, "-w,--warmup", w.warmup, Whole(0, 1000000), "Warm-up iterations per size");
  Num(sub, "--gpus-per-node", w.gpus_per_node, Whole(1, 72),
      "Ranks per node with nccl-tests, one GPU each");
  Num(sub, "--step-timeout", h.step_timeout_s, SecondsIn(86400),
      "Seconds one run may take before it is killed as hung");
  Repeated(sub, "--env", w.env,
           "NAME=VALUE for every run (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=TUNING, NCCL_IB_HCA=...) "
           "(repeatable)")
      ->check(EnvSetting());
  Opt(sub, "--out", r.out_dir,
      "Keep the logs in this folder (default: a folder named by the UTC time beside the store)");
}

int Recipe(const NcclFlags& o, Context& ctx) {
  Shell shell;
  if (o.list_recipes) {
    auto recipes = net::LoadNcclRecipes(o.recipe_options.recipes_file, shell.fs);
    if (!recipes) return PrintError(ctx, "cmax nccl recipe", recipes.error());
    for (const net::NcclRecipe& r : recipes->All()) ctx.out << r.name << "  " << r.title << "\n";
    return kExitOk;
  }
  auto report = net::CheckNcclRecipe(o.recipe_options,
                                     {.db_path = ctx.DbPath(),
                                      .cmax_version = VersionString(),
                                      .fs = &shell.fs,
                                      .clock = &shell.clock},
                                     sys::EnvironmentValue);
  if (!report) return PrintError(ctx, "cmax nccl recipe", report.error());
  return PrintRecorded(ctx, "cmax nccl recipe",
                       o.json ? JsonText(net::RecipeVerdictJson(report->verdict, report->node))
                              : net::RecipeVerdictText(report->verdict, report->node),
                       report->record.run.id, report->exit_code);
}

int Nccl(const NcclFlags& o, Context& ctx) {
  if (o.sweep->parsed()) return Sweep(o, ctx);
  if (o.recipe->parsed()) return Recipe(o, ctx);
  if (o.find->parsed()) return FindBadNode(o, ctx);
  sys::LocalFileSystem fs;
  if (o.platforms->parsed()) {
    auto platforms = net::LoadNcclPlatforms(o.options.platforms_file, fs);
    if (!platforms) return PrintError(ctx, "cmax nccl platforms", platforms.error());
    ctx.out << platforms->Text();
    return kExitOk;
  }
  SystemClock clock;
  net::NcclAnalyzeIo io{.db_path = ctx.DbPath(),
                        .cmax_version = VersionString(),
                        .fs = &fs,
                        .clock = &clock,
                        .interrupted = sys::Interrupted};
  io.stdin_text = StdinIfNamed(o.options.files);
  auto report = net::AnalyzeNcclFiles(o.options, io);
  if (!report) return PrintError(ctx, "cmax nccl analyze", report.error());
  return PrintRecorded(ctx, "cmax nccl analyze",
                       o.json ? JsonText(net::NcclAnalysisJson(report->analysis))
                              : net::NcclAnalysisText(report->analysis, ctx.global.verbosity > 0),
                       report->record.run.id, report->exit_code);
}

}  // namespace

Command SetupNcclCommand(CLI::App& parent) {
  auto o = std::make_shared<NcclFlags>();
  CLI::App* app = parent.add_subcommand(
      "nccl",
      "The network through NCCL's own benchmark (nccl-tests): bus-bandwidth curves, their\n"
      "dips, drops as nodes are added, and what a healthy platform reaches");
  app->require_subcommand(1);
  net::NcclAnalyzeOptions& a = o->options;
  o->analyze = app->add_subcommand(
      "analyze",
      "Read nccl-tests logs you already have (all_reduce_perf and the others, any version, with\n"
      "srun -l or mpirun --tag-output prefixes and NCCL's INFO lines) and judge each table's\n"
      "bus-bandwidth curve: dips, cliffs, kinks at NCCL's algorithm switches (told apart when\n"
      "NCCL_DEBUG_SUBSYS=TUNING lines are in the log), drops as nodes are added, and, with\n"
      "--platform, the figure a healthy platform reaches. Recorded as a run (cmax report).\n"
      "Exit 0 clean, 1 wrong results, a dip, cliff, drop or shortfall, 2 a file that cannot be\n"
      "read or an unknown platform, 3 nothing to analyse or a curve that could not be judged");
  Opt(o->analyze, "FILE", a.files, "nccl-tests output files ('-': standard input)")->required();
  Flag(o->analyze, "--json", o->json, "Print the analysis as JSON (schema cmax.nccl-analysis/v1)");
  o->sweep = app->add_subcommand(
      "sweep",
      "Run nccl-tests over the first 1, 2, 4 ... N of the hosts given, every collective and\n"
      "message size, through mpirun or srun --mpi=pmix, and judge the curves as analyze does.\n"
      "Each step has a deadline: one that hangs is killed, reported, and the sweep goes on.\n"
      "Without --nccl-tests, cmax-mpi-perf (the CPU stand-in built beside cmax) runs one rank per\n"
      "host over OpenMPI instead. Every step's log is kept (--out). Recorded as a run.\n"
      "Exit 0 clean, 1 a failed step, dip, cliff, drop or shortfall, 2 usage, 3 could not run");
  AddHostFlags(o->sweep, o->sweep_hosts, "; steps take the first 1, 2, 4 ... of them");
  net::NcclSweepOptions& w = o->sweep_hosts.request.sweep;
  Opt(o->sweep, "--collectives", w.collectives,
      "Collectives to run (all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, "
      "broadcast); default: every one the benchmark has")
      ->delimiter(',');
  Opt(o->sweep, "--variants", w.variants,
      "Comma-separated (default: default): default; nvlink (one node only); network "
      "(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: every byte through the NICs); no-nvls "
      "(NCCL_NVLS_ENABLE=0)")
      ->delimiter(',');
  Opt(o->sweep, "--nodes", w.node_counts,
      "Node counts to run (comma-separated); default 1 (2 for the stand-in), 2, 4 ... and all")
      ->delimiter(',')
      ->check(Whole(1, 100000));
  Num(o->sweep, "-f,--factor", w.factor, Whole(2, 1024), "Each size this many times the last");
  Flag(o->sweep, "--json", o->json,
       "Print the steps and the analysis as JSON (schema cmax.nccl-sweep/v1)");

  o->find = app->add_subcommand(
      "find-bad-node",
      "Name the node or link that drags a group's collective bandwidth down: all_reduce over\n"
      "every host, then over halves, narrowing into each slow half, then each suspect paired\n"
      "with a node already seen fast, and named only when it is slow beside two fast nodes of\n"
      "different halves. Each run's log is kept (--out). Recorded as a run.\n"
      "Exit 0 none found, 1 a node named, 2 usage, 3 could not run");
  net::UseBadNodeSearchSizes(o->find_hosts.request.sweep);
  AddHostFlags(o->find, o->find_hosts, "");
  Num(o->find, "--tolerance", o->finder_tolerance_pct, Real(1, 95),
      "Percent below the reference that makes a group slow");
  Num(o->find, "--reference", o->reference_gbs, Positive(1e6),
      "A healthy group's busbw in GB/s, a figure you give (a platform's published one, say); "
      "default: the best measured");
  Num(o->find, "--max-measurements", o->max_measurements, Whole(2, 10000),
      "Runs the search may make, whatever the answers");
  Flag(o->find, "--json", o->json, "Print the verdict as JSON (schema cmax.nccl-bad-nodes/v1)");
  o->recipe = app->add_subcommand(
      "recipe",
      "Judge this node's NCCL settings (NCCL_CONF_FILE, else ~/.nccl.conf and /etc/nccl.conf,\n"
      "then the environment)\n"
      "against a platform's golden recipe and the rules that hold everywhere: no NCCL_ALGO,\n"
      "NCCL_PROTO or NCCL_MIN_NCHANNELS defeating NCCL's tuning, NCCL_IB_HCA and\n"
      "NCCL_SOCKET_IFNAME selecting devices that are here, RoCE's GID index, a topology file\n"
      "where the platform needs one; then print the /etc/nccl.conf it recommends. Recorded as\n"
      "a run. Exit 0 nothing to change, 1 something to change");
  Opt(o->recipe, "--recipe", o->recipe_options.recipe, "The platform's recipe (--list shows them)");
  Opt(o->recipe, "--recipes", o->recipe_options.recipes_file,
      "Recipes from this file (JSON, cmax.nccl-recipes/v1, like data/nccl_recipes.json)");
  Flag(o->recipe, "--list", o->list_recipes, "List the recipes and stop");
  Flag(o->recipe, "--json", o->json, "Print the verdict as JSON (schema cmax.nccl-recipe/v1)");
  Flag(o->recipe, "--exit-zero", o->recipe_options.exit_zero,
       "Exit 0 even when something should change");
  for (CLI::App* sub : {o->analyze, o->sweep}) {
    Opt(sub, "--platform", a.platform,
        "Compare each curve's best busbw with this platform's figure (cmax nccl platforms "
        "lists them)");
    Num(sub, "--tolerance", a.tolerance_pct, Real(0.1, 90),
        "Percent a size's busbw may fall below a smaller size's, a larger node count's below a "
        "smaller one's, or a curve's best below the platform's figure");
    Num(sub, "--floor", a.floor_pct, Real(0, 90),
        "Percent of a curve's peak under which sizes are latency-bound: their wobbles are not "
        "dips");
    Flag(sub, "--exit-zero", a.exit_zero, "Exit 0 even when a fault is found");
  }
  o->platforms = app->add_subcommand(
      "platforms",
      "The platforms' expected bus bandwidth by collective and node count, and the "
      "public measurements each figure rests on");
  // Not find-bad-node's: it judges groups against each other (or --reference), no platform.
  for (CLI::App* sub : {o->analyze, o->sweep, o->platforms}) {
    Opt(sub, "--platforms", a.platforms_file,
        "Platforms' figures from this file (JSON, cmax.nccl-platforms/v1, like "
        "data/nccl_platforms.json) instead of the built-in ones");
  }
  return {app, [o](Context& ctx) { return Nccl(*o, ctx); }};
}

}  // namespace cmax::cli
