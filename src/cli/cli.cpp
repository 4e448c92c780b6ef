#include "cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <optional>
#include <ostream>
#include <string_view>
#include <utility>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "sys/host.hpp"

namespace cmax::cli {

std::string Context::DbPath() const {
  return global.db.empty() ? sys::DataDir() + "/cmax.db" : global.db;
}

bool Context::Color() const {
  return out_is_terminal && !global.no_color && sys::GetEnv("NO_COLOR").empty();
}

namespace {

using CommandSetup = Command (*)(CLI::App&);

// Every subcommand, in the order --help lists them.
constexpr std::pair<std::string_view, CommandSetup> kCommands[] = {
    {"run", SetupRunCommand},
    {"audit", SetupAuditCommand},
    {"db", SetupDbCommand},
    {"report", SetupReportCommand},
    {"lab", SetupLabCommand},
    {"health", SetupHealthCommand},
    {"agent", SetupAgentCommand},
    {"remediate", SetupRemediateCommand},
    {"inject", SetupInjectCommand},
    {"reliability", SetupReliabilityCommand},
    {"endpoint", SetupEndpointCommand},
    {"rate", SetupRateCommand},
    {"compare", SetupCompareCommand},
    {"nccl", SetupNcclCommand},
    {"train", SetupTrainCommand},
};

}  // namespace

TreeNeeded TreeFor(const std::vector<std::string>& args) {
  bool version = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--db" || a == "--provider") {
      ++i;  // its value, whatever it looks like
      continue;
    }
    if (a == "--version") version = true;
    if (a == "--help" || a == "--") return {};
    // -h, alone or in a cluster of short flags (-vh): the help of the whole tree.
    if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find('h') != std::string::npos) return {};
    if (a.empty() || a[0] == '-') continue;
    for (const auto& [name, setup] : kCommands) {
      if (a == name) return {.all = false, .command = a};
    }
    return {};  // not a command: CLI11 says so, with the whole tree to suggest from
  }
  if (version) return {.all = false, .command = ""};
  return {};
}

std::vector<Command> SetupCli(CLI::App& app, Context& ctx, const TreeNeeded& needed) {
  app.description(
      "cmax evaluates GPU clouds the way the ClusterMAX rating does: it inventories and audits\n"
      "hosts and clusters, records the evidence in a SQLite store, and reports findings.");
  app.name("cmax");
  app.set_version_flag("--version", VersionLine());
  app.require_subcommand(1);
  app.fallthrough();
  app.footer(
      "Exit codes: 0 ok, 1 checks failed, 2 usage error, 3 error (could not do the job),\n"
      "128+N interrupted by signal N. `cmax COMMAND --help` explains each command.");
  app.add_option("--db", ctx.global.db,
                 "SQLite store (default $XDG_DATA_HOME/cmax/cmax.db; also CMAX_DB, where an "
                 "empty value means the default)")
      ->envname("CMAX_DB")
      // `--db "$DIR/x.db"` with DIR unset still names a file; `--db "$UNSET"` would otherwise
      // write into the default store unasked.
      ->check([](const std::string& path) -> std::string {
        return path.empty() ? "must name the store's file (leave --db out for the default)" : "";
      });
  app.add_option("--provider", ctx.global.provider,
                 "The provider this evaluates, recorded with every run (also CMAX_PROVIDER); "
                 "for `cmax rate`, the provider to rate")
      ->envname("CMAX_PROVIDER")
      ->check([](const std::string& name) -> std::string {
        if (!IsOneLine(name, 128)) {
          return "a provider's name: 1 to 128 printable characters";
        }
        return "";
      });
  app.add_flag(
      "-v,--verbose", ctx.global.verbosity,
      "More detail: on stderr (-v info, -vv debug, -vvv trace), and in the reports of audit, "
      "rate and nccl analyze (up to -vvv)");
  app.add_flag("-q,--quiet", ctx.global.quiet, "Errors only on stderr");
  app.add_flag("--no-color", ctx.global.no_color, "No colours even on a terminal (also NO_COLOR)");
  std::vector<Command> commands;
  for (const auto& [name, setup] : kCommands) {
    if (needed.all || needed.command == name) commands.push_back(setup(app));
  }
  return commands;
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           bool out_is_terminal) {
  CLI::App app;
  Context ctx{out, err, {}, out_is_terminal};
  const std::vector<Command> commands = SetupCli(app, ctx, TreeFor(args));

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  ctx.global.provider_flag = std::ranges::any_of(
      args, [](const std::string& a) { return a == "--provider" || a.starts_with("--provider="); });
  log::SetLevel(log::LevelFor(ctx.global.verbosity, ctx.global.quiet, sys::StderrIsTerminal()));
  // The store records each run's provider from CMAX_PROVIDER (store/run_writer.cpp), so the
  // flag is handed on that way, and taken back when the command is done (tests run many
  // commands in one process).
  const sys::ScopedEnv provider("CMAX_PROVIDER", ctx.global.provider);
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    try {
      return command.run(ctx);
    } catch (const std::exception& e) {
      err << "cmax: internal error: " << e.what() << "\n";
      return kExitError;
    }
  }
  err << "cmax: no command given (see cmax --help)\n";
  return kExitUsage;
}

}  // namespace cmax::cli
