// `cmax lab`: a real Slurm cluster on this host (own munged, slurmctld, N slurmd on loopback)
// for tests and demos: up, status, down, env.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/numbers.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "lab/lab.hpp"
#include "sys/host.hpp"

namespace cmax::cli {
namespace {

using Json = nlohmann::ordered_json;

struct LabOptions {
  CLI::App* up = nullptr;
  CLI::App* status = nullptr;
  CLI::App* down = nullptr;
  CLI::App* env = nullptr;
  std::string dir;
  int nodes = 4;
  int spares = 0;
  int gpus = 8;
  int port_base = 16817;
  double timeout_s = 30.0;
  bool json = false;
};

std::string AbsoluteDir(const std::string& dir) {
  if (dir.empty()) return sys::DataDir() + "/lab";
  if (dir[0] == '/') return dir;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return dir;
  std::string out = std::string(cwd) + "/" + dir;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// Node names and sinfo's messages come from outside: invalid UTF-8 is replaced, not thrown.
std::string Dump(const Json& value) {
  return value.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Json DaemonsJson(const std::vector<lab::Daemon>& daemons) {
  Json list = Json::array();
  for (const lab::Daemon& d : daemons) list.push_back({{"name", d.name}, {"pid", d.pid}});
  return list;
}

int Up(const LabOptions& options, Context& ctx, lab::LabContext& lab_ctx) {
  lab::LabSpec spec;
  spec.dir = AbsoluteDir(options.dir);
  spec.nodes = options.nodes;
  spec.spares = options.spares;
  spec.gpus_per_node = options.gpus;
  spec.controller_port = options.port_base;
  spec.first_node_port = options.port_base + 1;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  spec.cpus_per_node = cpus > 0 ? static_cast<int>(cpus) : 1;
  // CLI11's range check lets NaN through, and NaN cannot become a duration.
  if (!std::isfinite(options.timeout_s)) {
    ctx.err << "cmax lab up: --timeout must be a number of seconds\n";
    return kExitUsage;
  }
  const auto timeout =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options.timeout_s));
  auto result = lab::Up(spec, lab_ctx, timeout);
  if (!result) {
    ctx.err << "cmax lab up: " << result.error().message << "\n";
    return result.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  const lab::LabSpec& running = result->state.spec;
  const std::string nodes = lab::NodeRange(1, running.nodes + running.spares);
  if (options.json) {
    Json out = {{"schema", "cmax.lab/v1"},
                {"dir", running.dir},
                {"already_running", result->already_running},
                {"took_s", std::chrono::duration<double>(result->took).count()},
                {"nodes", lab::NodeNames(running)},
                {"spares", running.spares},
                {"gpus_per_node", running.gpus_per_node},
                {"controller_port", running.controller_port},
                {"slurm_conf", lab::PathsFor(running.dir).slurm_conf},
                {"daemons", DaemonsJson(result->state.daemons)}};
    ctx.out << Dump(out);
    return kExitOk;
  }
  if (result->already_running) {
    ctx.out << fmt::format(
        "a lab is already running in {} (started {}): {} with {} GPUs each; nothing started.\n"
        "`cmax lab down --dir {}` stops it.\n",
        running.dir, FormatIso8601(result->state.started_at), nodes, running.gpus_per_node,
        running.dir);
    if (running.nodes != spec.nodes || running.spares != spec.spares) {
      ctx.err << fmt::format("note: it has {} nodes and {} spares, not the {} and {} asked for\n",
                             running.nodes, running.spares, spec.nodes, spec.spares);
    }
  } else {
    ctx.out << fmt::format(
        "lab up in {}: {} idle ({} in partition gpu{}), {} GPUs each, controller "
        "127.0.0.1:{}; took {}\n",
        running.dir, nodes, running.nodes,
        running.spares > 0 ? fmt::format(", {} in partition spare", running.spares) : "",
        running.gpus_per_node, running.controller_port, FormatDuration(result->took));
  }
  ctx.out << lab::EnvLine(running.dir) << "\n";
  return kExitOk;
}

int Status(const LabOptions& options, Context& ctx, lab::LabContext& lab_ctx) {
  const std::string dir = AbsoluteDir(options.dir);
  auto status = lab::Status(dir, lab_ctx);
  if (!status) {
    if (options.json && status.error().code == ErrorCode::kNotFound) {
      ctx.out << Dump({{"schema", "cmax.lab/v1"}, {"dir", dir}, {"running", false}});
      return kExitChecksFailed;
    }
    ctx.err << "cmax lab status: " << status.error().message << "\n";
    return status.error().code == ErrorCode::kNotFound ? kExitChecksFailed : kExitError;
  }
  const bool all_alive = std::all_of(status->daemons.begin(), status->daemons.end(),
                                     [](const lab::DaemonStatus& d) { return d.alive; });
  if (options.json) {
    Json daemons = Json::array();
    for (const lab::DaemonStatus& d : status->daemons) {
      daemons.push_back({{"name", d.daemon.name}, {"pid", d.daemon.pid}, {"alive", d.alive}});
    }
    Json out = {{"schema", "cmax.lab/v1"},
                {"dir", dir},
                {"running", status->Running()},
                {"healthy", all_alive},
                {"started_at", FormatIso8601(status->state.started_at)},
                {"slurm_conf", lab::PathsFor(dir).slurm_conf},
                {"daemons", daemons},
                {"nodes", status->nodes},
                {"nodes_error", status->nodes_error}};
    ctx.out << Dump(out);
  } else {
    ctx.out << fmt::format("lab in {}: {} (started {})\n", dir,
                           all_alive ? "running" : (status->Running() ? "degraded" : "stopped"),
                           FormatIso8601(status->state.started_at));
    for (const lab::DaemonStatus& d : status->daemons) {
      ctx.out << fmt::format("  {:<14} pid {:<8} {}\n", d.daemon.name, d.daemon.pid,
                             d.alive ? "running" : "gone");
    }
    if (!status->nodes_error.empty())
      ctx.out << "  nodes: unknown (" << status->nodes_error << ")\n";
    for (const auto& [node, state] : status->nodes) {
      ctx.out << fmt::format("  node {:<9} {}\n", node, SanitizeUtf8(state));
    }
    ctx.out << lab::EnvLine(dir) << "\n";
  }
  return all_alive ? kExitOk : kExitChecksFailed;
}

int Down(const LabOptions& options, Context& ctx, lab::LabContext& lab_ctx) {
  const std::string dir = AbsoluteDir(options.dir);
  auto result = lab::Down(dir, lab_ctx);
  if (!result) {
    if (result.error().code == ErrorCode::kNotFound) {
      if (options.json) {
        ctx.out << Dump({{"schema", "cmax.lab/v1"}, {"dir", dir}, {"stopped", Json::array()}});
      } else {
        ctx.out << "no lab in " << dir << "; nothing to stop\n";
      }
      return kExitOk;
    }
    ctx.err << "cmax lab down: " << result.error().message << "\n";
    return kExitError;
  }
  if (options.json) {
    ctx.out << Dump({{"schema", "cmax.lab/v1"},
                     {"dir", dir},
                     {"stopped", result->stopped},
                     {"already_gone", result->already_gone},
                     {"not_ours", result->not_ours},
                     {"stray_processes_killed", result->stray_processes_killed}});
  } else {
    ctx.out << fmt::format(
        "lab in {} stopped: {}\n", dir,
        result->stopped.empty() ? "nothing was running" : Join(result->stopped, ", "));
    if (!result->already_gone.empty()) {
      ctx.out << "  already gone: " << Join(result->already_gone, ", ") << "\n";
    }
    if (!result->not_ours.empty()) {
      ctx.out << "  left alone (pid reused by another process): " << Join(result->not_ours, ", ")
              << "\n";
    }
    if (result->stray_processes_killed > 0) {
      ctx.out << "  also ended " << result->stray_processes_killed << " leftover job processes\n";
    }
  }
  return kExitOk;
}

int RunLab(const LabOptions& options, Context& ctx) {
  SystemClock clock;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  lab::LabContext lab_ctx{fs, runner, clock, [](std::string_view line) { log::Info("{}", line); }};
  if (options.up->parsed()) return Up(options, ctx, lab_ctx);
  if (options.status->parsed()) return Status(options, ctx, lab_ctx);
  if (options.down->parsed()) return Down(options, ctx, lab_ctx);
  ctx.out << lab::EnvLine(AbsoluteDir(options.dir)) << "\n";
  return kExitOk;
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
    sub->add_option("--dir", options->dir, "Lab folder (default $XDG_DATA_HOME/cmax/lab)");
    return sub;
  };
  options->up = add_dir(app->add_subcommand(
      "up",
      "Start the lab and wait until every node is idle; a running lab is reported, not "
      "restarted"));
  options->up->add_option("-n,--nodes", options->nodes, "Compute nodes in partition gpu")
      ->check(Whole(1, 64));
  options->up->add_option("--spares", options->spares, "Hot-spare nodes in partition spare")
      ->check(Whole(0, 16));
  options->up->add_option("--gpus", options->gpus, "GPUs (GRES gpu) per node")->check(Whole(1, 16));
  options->up
      ->add_option("--port-base", options->port_base,
                   "slurmctld port; node i listens on port-base + i")
      ->check(Whole(1024, 65000));
  options->up->add_option("--timeout", options->timeout_s, "Seconds to wait for idle nodes")
      ->check(Real(1.0, 600.0));
  options->up->add_flag("--json", options->json, "Machine-readable result");
  options->status = add_dir(app->add_subcommand(
      "status", "Daemons and node states; exit 0 when every daemon runs, 1 otherwise"));
  options->status->add_flag("--json", options->json, "Machine-readable result");
  options->down = add_dir(
      app->add_subcommand("down", "Cancel lab jobs and stop exactly the daemons the lab started"));
  options->down->add_flag("--json", options->json, "Machine-readable result");
  options->env = add_dir(app->add_subcommand(
      "env", "Print the SLURM_CONF line for a shell: eval \"$(cmax lab env)\""));
  return {app, [options](Context& ctx) { return RunLab(*options, ctx); }};
}

}  // namespace cmax::cli
