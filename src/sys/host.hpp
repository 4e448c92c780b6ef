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
bool StdinIsTerminal();
// The absolute path of this process's own program (/proc/self/exe), or empty.
std::string SelfExecutable();
// Raises the soft limit on open files to the hard one: a load run holds a socket per stream, and
// the usual soft limit (1024) would cap its concurrency.
void RaiseOpenFileLimit();

}  // namespace cmax::sys
