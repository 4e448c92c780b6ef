// Facts about the process's own host and environment that several commands need.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cmax::sys {

std::string Hostname();
// The Slurm node this runs as: `given` when set, else $SLURMD_NODENAME (inside a job), else the
// short hostname.
std::string ThisNodeName(const std::string& given = "");
// $XDG_DATA_HOME/cmax, else $HOME/.local/share/cmax, else /var/lib/cmax.
std::string DataDir();
// The value of an environment variable, or empty.
std::string GetEnv(const char* name);
// The same, in the shape the libraries' `env` functions take (a std::string name).
std::string EnvironmentValue(const std::string& name);
bool IsRoot();
// The cores this process may run on (its affinity: `taskset -c 0` makes it 1), at least 1.
unsigned UsableCores();
bool StdoutIsTerminal();
bool StderrIsTerminal();
bool StdinIsTerminal();
// The absolute path of this process's own program (/proc/self/exe), or empty.
std::string SelfExecutable();
// This process's working folder, or empty when it cannot be read.
std::string CurrentDirectory();
// `path` taken from the working folder when relative, without "." or ".." parts: a path to print
// or to hand to another process.
std::string AbsolutePath(const std::string& path);
// The first of `files` that names the same file as one before it: the same device and inode
// (a link, "./x" and "x", a hard link), or the same AbsolutePath for a file that is not there;
// "-" (standard input) twice is a repeat too. Empty when each is named once.
std::string FirstRepeatedFile(const std::vector<std::string>& files);

// Sets an environment variable for a scope (an empty value leaves it as it is) and puts back
// what was there. Not for threads that read the environment meanwhile.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};
// Raises the soft limit on open files to the hard one: a load run holds a socket per stream, and
// the usual soft limit (1024) would cap its concurrency.
void RaiseOpenFileLimit();

}  // namespace cmax::sys
