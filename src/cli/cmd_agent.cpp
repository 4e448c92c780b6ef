// `cmax agent`: the node daemon. Watches the kernel log and NVML, keeps the node's conditions
// in the store, and serves Prometheus metrics; bounded in memory and CPU by its own watchdog.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
#include "health/agent_service.hpp"
#include "remediate/agent_hooks.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct AgentFlags {
  health::AgentServiceOptions agent;
  bool no_nvml = false;
  remediate::AgentHookOptions hooks;  // its node is the agent's
};

int RunAgent(const AgentFlags& o, Context& ctx) {
  health::AgentServiceOptions agent = o.agent;
  agent.nvml = !o.no_nvml;
  sys::PosixProcessRunner runner;
  sys::LocalFileSystem fs;
  SystemClock clock;
  auto code = health::RunAgentService(
      agent, {.db_path = ctx.DbPath(),
              // --remediate and --publish-conditions: run after every flush that stored a change.
              .make_hooks = [&](store::Store& store,
                                const std::string& node) -> Result<std::function<void()>> {
                remediate::AgentHookOptions options = o.hooks;
                options.node = node;
                auto made =
                    remediate::AgentHooks::Make(options, ctx.DbPath(), store, fs, runner, clock);
                if (!made) return tl::unexpected(made.error());
                if ((*made)->Empty()) return std::function<void()>();
                // The function owns the hooks: they go with the agent, before the store they use.
                std::shared_ptr<remediate::AgentHooks> hooks = std::move(*made);
                return std::function<void()>([hooks] { hooks->AfterFlush(); });
              },
              .out = [&ctx](std::string_view line) { ctx.out << line << std::endl; }});
  return code ? *code : PrintError(ctx, "cmax agent", code.error());
}

}  // namespace

Command SetupAgentCommand(CLI::App& parent) {
  auto options = std::make_shared<AgentFlags>();
  CLI::App* app = parent.add_subcommand(
      "agent",
      "Run the node agent: watch the kernel log (Xid, SXid, lockups, AER, NIC and filesystem\n"
      "faults) and NVML, keep the node's conditions in the store, serve Prometheus metrics.\n"
      "Stops cleanly on SIGTERM or SIGINT (exit 0); exits 75 when its watchdog finds it over\n"
      "its memory or CPU limit, for the service manager to restart it.");
  Opt(app, "--node", options->agent.node, "Node name in the store and metrics (default hostname)");
  Opt(app, "--metrics-listen", options->agent.metrics_listen,
      "Prometheus endpoint HOST:PORT (default 127.0.0.1:9470; 'none' for no server)");
  Flag(app, "--from-boot", options->agent.from_boot,
       "Also read what the kernel log holds from before the agent started");
  Flag(app, "--no-nvml", options->no_nvml, "Do not load NVML");
  Opt(app, "--nvml-lib", options->agent.nvml_lib,
      "NVML library (default $CMAX_NVML_LIB, else libnvidia-ml.so.1)");
  Num(app, "--nvml-interval", options->agent.nvml_interval_s, SecondsIn(86400),
      "Seconds between NVML snapshots");
  Num(app, "--max-rss-mb", options->agent.max_rss_mb, Positive(1 << 20),
      "Watchdog: resident memory limit in MiB");
  Num(app, "--max-cpu-percent", options->agent.max_cpu_percent, Positive(100),
      "Watchdog: CPU limit in percent of one core, sustained over 3 intervals of 10 s");
  Opt(app, "--xid-catalog", options->agent.xid_catalog, "Use this XID catalogue (JSON)");
  Opt(app, "--devices", options->agent.devices,
      "Only kernel events for these PCI devices are this node's, comma-separated (for nodes "
      "that share one kernel, as lab nodes do)")
      ->delimiter(',');
  Flag(app, "--remediate", options->hooks.remediate,
       "Act on this node's faults through the scheduler (drain, requeue, reset, validate, "
       "resume), as `cmax remediate run` does for one node; needs "
       "--validation-command");
  Flag(app, "--remediate-dry-run", options->hooks.remediate_dry_run,
       "Decide and record remediation for this node; touch nothing");
  Flag(app, "--publish-conditions", options->hooks.publish_conditions,
       "Write this node's conditions onto its Kubernetes Node (annotation "
       "cmax.dev/conditions, condition CmaxFault) for a central `cmax remediate run "
       "--conditions-from kubernetes`; uses the --kube-* flags or the pod's account");
  AddControllerFlags(*app, options->hooks.controller);
  return {app, [options](Context& ctx) { return RunAgent(*options, ctx); }};
}

}  // namespace cmax::cli
