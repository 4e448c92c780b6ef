#include "sys/host.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sys/resource.h>
#include <sys/stat.h>

namespace cmax::sys {

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string EnvironmentValue(const std::string& name) {
  return GetEnv(name.c_str());
}

std::string ThisNodeName(const std::string& given) {
  if (!given.empty()) return given;
  if (std::string env = GetEnv("SLURMD_NODENAME"); !env.empty()) return env;
  std::string host = Hostname();
  return host.substr(0, host.find('.'));
}

std::string DataDir() {
  if (std::string xdg = GetEnv("XDG_DATA_HOME"); !xdg.empty() && xdg[0] == '/') {
    return xdg + "/cmax";
  }
  if (std::string home = GetEnv("HOME"); !home.empty()) return home + "/.local/share/cmax";
  return "/var/lib/cmax";
}

unsigned UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

bool IsRoot() {
  return ::geteuid() == 0;
}
bool StdoutIsTerminal() {
  return ::isatty(STDOUT_FILENO) == 1;
}
bool StderrIsTerminal() {
  return ::isatty(STDERR_FILENO) == 1;
}
bool StdinIsTerminal() {
  return ::isatty(STDIN_FILENO) == 1;
}

std::string CurrentDirectory() {
  char cwd[4096];
  return ::getcwd(cwd, sizeof(cwd)) != nullptr ? std::string(cwd) : std::string();
}

std::string FirstRepeatedFile(const std::vector<std::string>& files) {
  std::set<std::string> seen;
  for (const std::string& file : files) {
    struct stat st {};
    const std::string key = file == "-" ? "-"
                            : ::stat(file.c_str(), &st) == 0
                                ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)
                                : AbsolutePath(file);
    if (!seen.insert(key).second) return file;
  }
  return {};
}

std::string AbsolutePath(const std::string& path) {
  const std::string whole =
      path.empty() || path.front() == '/' ? path : CurrentDirectory() + "/" + path;
  return std::filesystem::path(whole).lexically_normal().string();
}

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (!value.empty()) ::setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_, old_->c_str(), 1);
  } else {
    ::unsetenv(name_);
  }
}

std::string SelfExecutable() {
  std::error_code error;
  const std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : path.string();
}

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace cmax::sys
