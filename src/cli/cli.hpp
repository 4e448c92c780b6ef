// The command line: RunCli parses arguments and runs one subcommand. main() calls it with the
// real streams; tests call it with string streams and assert on exit codes and stored runs.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's own name
class App;
}

namespace cmax::cli {

// Exit codes of every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitChecksFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitError = 3;  // could not do its job: store unreadable, lab failed, bug

struct GlobalOptions {
  std::string db;  // --db or CMAX_DB; empty: the default under the data folder
  // --provider or CMAX_PROVIDER: the provider the runs of this command evaluate (recorded with
  // each run) or, for `cmax rate`, the provider to rate.
  std::string provider;
  bool provider_flag = false;  // given as --provider, not only through CMAX_PROVIDER
  int verbosity = 0;
  bool quiet = false;
  bool no_color = false;
};

struct Context {
  std::ostream& out;
  std::ostream& err;
  GlobalOptions global;
  bool out_is_terminal = false;
  std::string DbPath() const;
  bool Color() const;
};

// One subcommand: Setup binds its flags on the parent and returns the function that runs it.
struct Command {
  CLI::App* app = nullptr;
  std::function<int(Context&)> run;
};

// The explicit list of subcommands: one place to read what exists.
Command SetupRunCommand(CLI::App& parent);
Command SetupAuditCommand(CLI::App& parent);
Command SetupDbCommand(CLI::App& parent);
Command SetupReportCommand(CLI::App& parent);
Command SetupLabCommand(CLI::App& parent);
Command SetupHealthCommand(CLI::App& parent);
Command SetupHealthScheduleCommand(CLI::App& health);  // `cmax health schedule`
Command SetupAgentCommand(CLI::App& parent);
Command SetupRemediateCommand(CLI::App& parent);
Command SetupInjectCommand(CLI::App& parent);
Command SetupReliabilityCommand(CLI::App& parent);
Command SetupEndpointCommand(CLI::App& parent);
Command SetupRateCommand(CLI::App& parent);
Command SetupCompareCommand(CLI::App& parent);
Command SetupNcclCommand(CLI::App& parent);
Command SetupTrainCommand(CLI::App& parent);

// What of the tree a command line needs: every command (help, an unknown word, no arguments),
// the one it names, or none (--version alone).
struct TreeNeeded {
  bool all = true;
  std::string command;  // when !all: the one command to build, or "" for none
};
// Reads the command word past the global options (--db takes a value) without parsing.
TreeNeeded TreeFor(const std::vector<std::string>& args);

// The command tree on `app`: the global options and every subcommand (or only those `needed`
// names), bound to ctx. RunCli builds only what the command line needs: building all of it was
// most of a one-shot command's start-up. The tests walk the whole tree to hold every option to
// the rules. The commands own the values their options are bound to: keep them while `app`
// parses.
std::vector<Command> SetupCli(CLI::App& app, Context& ctx, const TreeNeeded& needed = {});

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           bool out_is_terminal = false);

std::string VersionString();
// What `cmax --version` prints: one line, the same from the fast path in main and from CLI11.
std::string VersionLine();

}  // namespace cmax::cli
