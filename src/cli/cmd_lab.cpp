// `cmax lab`: a real Slurm cluster on this host (own munged, slurmctld, N slurmd on loopback)
// for tests and demos: up, status, down, env.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "core/log.hpp"
#include "lab/lab.hpp"
#include "lab/views.hpp"
#include "sys/host.hpp"

namespace cmax::cli {
namespace {

struct LabOptions {
  CLI::App* up = nullptr;
  CLI::App* status = nullptr;
  CLI::App* down = nullptr;
  std::string dir;
  lab::LabSpec spec;  // its nodes, spares, GPUs and controller port as given
  double timeout_s = 30.0;
  bool json = false;
};

lab::LabView Up(const LabOptions& options, lab::LabContext& lab_ctx, const std::string& dir) {
  lab::LabSpec spec = options.spec;
  spec.dir = dir;
  spec.first_node_port = spec.controller_port + 1;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  spec.cpus_per_node = cpus > 0 ? static_cast<int>(cpus) : 1;
  // --timeout is finite: cli/numbers' Real refuses nan and inf.
  const auto timeout = SecondsAsDuration(options.timeout_s);
  return lab::UpView(spec, lab::Up(spec, lab_ctx, timeout), options.json);
}

int RunLab(const LabOptions& options, Context& ctx) {
  SystemClock clock;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  lab::LabContext lab_ctx{fs, runner, clock, [](std::string_view line) { log::Info("{}", line); }};
  const std::string dir = lab::LabDir(options.dir, sys::CurrentDirectory(), sys::DataDir());
  lab::LabView view;
  if (options.up->parsed()) {
    view = Up(options, lab_ctx, dir);
  } else if (options.status->parsed()) {
    view = lab::StatusView(dir, lab::Status(dir, lab_ctx), options.json);
  } else if (options.down->parsed()) {
    view = lab::DownView(dir, lab::Down(dir, lab_ctx), options.json);
  } else {
    view.out = lab::EnvLine(dir) + "\n";
  }
  ctx.out << view.out;
  ctx.err << view.err;
  return view.exit_code;
}

}  // namespace

Command SetupLabCommand(CLI::App& parent) {
  auto options = std::make_shared<LabOptions>();
  CLI::App* app = parent.add_subcommand(
      "lab",
      "A real Slurm cluster on this host for tests: its own munged, slurmctld and N slurmd on\n"
      "loopback ports, nodes gpu[1-N] with GRES gpu:8 (empty files stand in for /dev/nvidiaN).\n"
      "Needs root. State, config and logs live in --dir.");
  app->require_subcommand(1);
  auto add_dir = [&](CLI::App* sub) {
    Opt(sub, "--dir", options->dir, "Lab folder (default $XDG_DATA_HOME/cmax/lab)");
    return sub;
  };
  options->up = add_dir(app->add_subcommand(
      "up",
      "Start the lab and wait until every node is idle; a running lab is reported, not "
      "restarted"));
  CLI::App* up = options->up;
  lab::LabSpec& spec = options->spec;
  Num(up, "-n,--nodes", spec.nodes, Whole(1, 64), "Compute nodes in partition gpu");
  Num(up, "--spares", spec.spares, Whole(0, 16), "Hot-spare nodes in partition spare");
  Num(up, "--gpus", spec.gpus_per_node, Whole(1, 16), "GPUs (GRES gpu) per node");
  Num(up, "--port-base", spec.controller_port, Whole(1024, 65000),
      "slurmctld port; node i listens on port-base + i");
  Num(up, "--timeout", options->timeout_s, Real(1.0, 600.0), "Seconds to wait for idle nodes");
  Flag(options->up, "--json", options->json, "Machine-readable result");
  options->status = add_dir(app->add_subcommand(
      "status", "Daemons and node states; exit 0 when every daemon runs, 1 otherwise"));
  Flag(options->status, "--json", options->json, "Machine-readable result");
  options->down = add_dir(
      app->add_subcommand("down", "Cancel lab jobs and stop exactly the daemons the lab started"));
  Flag(options->down, "--json", options->json, "Machine-readable result");
  add_dir(app->add_subcommand("env",
                              "Print the SLURM_CONF line for a shell: eval \"$(cmax lab env)\""));
  return {app, [options](Context& ctx) { return RunLab(*options, ctx); }};
}

}  // namespace cmax::cli
