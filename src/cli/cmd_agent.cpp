// `cmax agent`: the node daemon. Watches the kernel log and NVML, keeps the node's conditions
// in the store, and serves Prometheus metrics; bounded in memory and CPU by its own watchdog.
#include <CLI/CLI.hpp>
#include <cmath>
#include <memory>
#include <ostream>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "cli/remediate_flags.hpp"
#include "core/log.hpp"
#include "health/agent.hpp"
#include "remediate/agent_hooks.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/metrics_server.hpp"

namespace cmax::cli {
namespace {

struct AgentCliOptions {
  std::string node;
  std::string metrics_listen = "127.0.0.1:9470";
  bool from_boot = false;
  bool no_nvml = false;
  std::string nvml_lib;
  double nvml_interval_s = 10.0;
  double max_rss_mb = 64.0;
  double max_cpu_percent = 25.0;
  std::string xid_catalog;
  bool remediate = false;
  bool remediate_dry_run = false;
  bool publish_conditions = false;
  std::vector<std::string> devices;
  ControllerFlags controller;
};

int RunAgent(const AgentCliOptions& options, Context& ctx) {
  for (double value : {options.nvml_interval_s, options.max_rss_mb, options.max_cpu_percent}) {
    if (!std::isfinite(value) || value <= 0) {
      ctx.err << "cmax agent: intervals and limits must be positive numbers\n";
      return kExitUsage;
    }
  }
  const health::XidCatalog* catalog = &health::XidCatalog::Builtin();
  std::optional<health::XidCatalog> custom;
  if (!options.xid_catalog.empty()) {
    auto text = sys::LocalFileSystem().ReadFile(options.xid_catalog, 16 << 20);
    auto parsed = text ? health::XidCatalog::Parse(*text) : tl::unexpected(text.error());
    if (!parsed) {
      ctx.err << "cmax agent: " << options.xid_catalog << ": " << parsed.error().message << "\n";
      return kExitUsage;
    }
    custom = std::move(*parsed);
    catalog = &*custom;
  }
  // A short busy timeout: when another process holds the store the agent keeps its changes
  // and tries again at the next flush instead of stalling its loop for seconds.
  auto store = store::Store::Open({.path = ctx.DbPath(), .busy_timeout_ms = 200});
  if (!store) {
    ctx.err << "cmax agent: " << store.error().message << "\n";
    return kExitError;
  }
  std::optional<sys::MetricsServer> server;
  if (options.metrics_listen != "none") {
    auto listening = sys::MetricsServer::Listen(options.metrics_listen);
    if (!listening) {
      ctx.err << "cmax agent: " << listening.error().message << "\n";
      return kExitError;
    }
    server.emplace(std::move(*listening));
  }
  health::AgentOptions agent_options;
  agent_options.node = options.node.empty() ? sys::Hostname() : options.node;
  agent_options.from_boot = options.from_boot;
  agent_options.devices = options.devices;
  agent_options.nvml = !options.no_nvml;
  agent_options.nvml_lib = options.nvml_lib;
  agent_options.nvml_interval =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options.nvml_interval_s));
  agent_options.limits.max_rss_bytes = static_cast<uint64_t>(options.max_rss_mb * 1048576.0);
  agent_options.limits.max_cpu_fraction = options.max_cpu_percent / 100.0;
  // --remediate and --publish-conditions: run after every flush that stored a change.
  sys::PosixProcessRunner runner;
  sys::LocalFileSystem fs;
  SystemClock clock;
  auto hooks = remediate::AgentHooks::Make({.node = agent_options.node,
                                            .remediate = options.remediate,
                                            .remediate_dry_run = options.remediate_dry_run,
                                            .publish_conditions = options.publish_conditions,
                                            .controller = options.controller},
                                           ctx.DbPath(), *store, fs, runner, clock);
  if (!hooks) {
    ctx.err << "cmax agent: " << hooks.error().message << "\n";
    return ExitCodeOf(hooks.error());
  }
  if (!(*hooks)->Empty()) agent_options.after_flush = [h = hooks->get()] { h->AfterFlush(); };
  // The ready line, once the sources are open: a fault written after it is seen.
  agent_options.on_ready = [&ctx, nvml = agent_options.nvml](const health::AgentReadiness& r) {
    ctx.out << health::ReadyLine(r, nvml) << std::endl;
  };
  health::Agent agent(agent_options, *catalog, *store);
  if (server) {
    // The port, once, on stdout: a test or a script that asked for port 0 learns which it got.
    ctx.out << "metrics on http://"
            << options.metrics_listen.substr(0, options.metrics_listen.rfind(':')) << ":"
            << server->Port() << "/metrics" << std::endl;
  }
  return agent.Run(server ? &*server : nullptr);
}

}  // namespace

Command SetupAgentCommand(CLI::App& parent) {
  auto options = std::make_shared<AgentCliOptions>();
  CLI::App* app = parent.add_subcommand(
      "agent",
      "Run the node agent: watch the kernel log (Xid, SXid, lockups, AER, NIC and filesystem\n"
      "faults) and NVML, keep the node's conditions in the store, serve Prometheus metrics.\n"
      "Stops cleanly on SIGTERM or SIGINT (exit 0); exits 75 when its watchdog finds it over\n"
      "its memory or CPU limit, for the service manager to restart it.");
  app->add_option("--node", options->node, "Node name in the store and metrics (default hostname)");
  app->add_option("--metrics-listen", options->metrics_listen,
                  "Prometheus endpoint HOST:PORT (default 127.0.0.1:9470; 'none' for no server)");
  app->add_flag("--from-boot", options->from_boot,
                "Also read what the kernel log holds from before the agent started");
  app->add_flag("--no-nvml", options->no_nvml, "Do not load NVML");
  app->add_option("--nvml-lib", options->nvml_lib,
                  "NVML library (default $CMAX_NVML_LIB, else libnvidia-ml.so.1)");
  app->add_option("--nvml-interval", options->nvml_interval_s, "Seconds between NVML snapshots")
      ->check(SecondsIn(86400));
  app->add_option("--max-rss-mb", options->max_rss_mb, "Watchdog: resident memory limit in MiB")
      ->check(Positive(1 << 20));
  app->add_option("--max-cpu-percent", options->max_cpu_percent,
                  "Watchdog: CPU limit in percent of one core, sustained over 3 intervals of 10 s")
      ->check(Positive(100));
  app->add_option("--xid-catalog", options->xid_catalog, "Use this XID catalogue (JSON)");
  app->add_option("--devices", options->devices,
                  "Only kernel events for these PCI devices are this node's (for nodes that "
                  "share one kernel, as lab nodes do)")
      ->delimiter(',');
  app->add_flag("--remediate", options->remediate,
                "Act on this node's faults through the scheduler (drain, requeue, reset, validate, "
                "resume), as `cmax remediate run` does for one node; needs "
                "--validation-command");
  app->add_flag("--remediate-dry-run", options->remediate_dry_run,
                "Decide and record remediation for this node; touch nothing");
  app->add_flag("--publish-conditions", options->publish_conditions,
                "Write this node's conditions onto its Kubernetes Node (annotation "
                "cmax.dev/conditions, condition CmaxFault) for a central `cmax remediate run "
                "--conditions-from kubernetes`; uses the --kube-* flags or the pod's account");
  AddControllerFlags(*app, options->controller);
  return {app, [options](Context& ctx) { return RunAgent(*options, ctx); }};
}

}  // namespace cmax::cli
