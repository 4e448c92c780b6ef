// cmax: one binary, one subcommand per file in src/cli/.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

int main(int argc, char** argv) {
  cmax::sys::InstallInterruptHandlers();
  std::ios::sync_with_stdio(true);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code = cmax::cli::RunCli(args, std::cout, std::cerr, cmax::sys::StdoutIsTerminal());
  std::cout.flush();
  return code;
}
