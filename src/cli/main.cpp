// cmax: one binary, one subcommand per file in src/cli/.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

int main(int argc, char** argv) {
  cmax::sys::InstallInterruptHandlers();
  std::ios::sync_with_stdio(true);
  const std::vector<std::string> args(argv + 1, argv + argc);
  // What was asked for must have reached stdout (a full disk, /dev/full): see how it went.
  cmax::cli::FailureRecordingBuffer out_buffer(std::cout.rdbuf());
  std::cout.rdbuf(&out_buffer);
  const auto finish = [&out_buffer](int code, std::ostream& err) {
    std::cout.flush();
    std::cout.rdbuf(out_buffer.Sink());  // before out_buffer goes: cout outlives main
    return cmax::cli::ExitCodeAfterOutput(code, out_buffer, err);
  };
  // The one-shot that scripts run most, answered before any command tree is built.
  if (args.size() == 1 && args[0] == "--version") {
    std::cout << cmax::cli::VersionLine() << "\n";
    return finish(0, std::cerr);
  }
  cmax::cli::ControlCharacterFilter err_filter(std::cerr.rdbuf());
  std::ostream err(&err_filter);
  const int code = cmax::cli::RunCli(args, std::cout, err, cmax::sys::StdoutIsTerminal());
  err.flush();
  return finish(code, err);
}
