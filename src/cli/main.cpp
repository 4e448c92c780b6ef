// cmax: one binary, one subcommand per file in src/cli/.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace {

// What was asked for must have reached stdout: a full disk, /dev/full or a pipe's EPIPE (SIGPIPE
// ignored) lost it, and a script must not take the exit code for success (as coreutils does).
// The command's own error code, when it has one, is kept.
int StdoutWritten(int code, std::ostream& err) {
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return code;
  err << "cmax: cannot write to standard output: " << std::strerror(errno) << "\n";
  err.flush();
  return code == cmax::cli::kExitOk || code == cmax::cli::kExitChecksFailed ? cmax::cli::kExitError
                                                                            : code;
}

}  // namespace

int main(int argc, char** argv) {
  cmax::sys::InstallInterruptHandlers();
  std::ios::sync_with_stdio(true);
  const std::vector<std::string> args(argv + 1, argv + argc);
  // The one-shot that scripts run most, answered before any command tree is built.
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << cmax::cli::VersionLine() << "\n";
    return StdoutWritten(0, std::cerr);
  }
  cmax::cli::ControlCharacterFilter err_filter(std::cerr.rdbuf());
  std::ostream err(&err_filter);
  const int code = cmax::cli::RunCli(args, std::cout, err, cmax::sys::StdoutIsTerminal());
  err.flush();
  return StdoutWritten(code, err);
}
