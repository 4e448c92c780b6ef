// Facts about the process's own host and environment that several commands need.
#pragma once

#include <cstdint>
#include <string>

namespace cmax::sys {

std::string Hostname();
// $XDG_DATA_HOME/cmax, else $HOME/.local/share/cmax, else /var/lib/cmax.
std::string DataDir();
// The value of an environment variable, or empty.
std::string GetEnv(const char* name);
bool IsRoot();
bool StdoutIsTerminal();
bool StderrIsTerminal();

}  // namespace cmax::sys
