#include "sys/host_root.hpp"

#include <unistd.h>

#include <optional>
#include <string_view>
#include <vector>

namespace cmax::sys {
namespace {

bool Under(std::string_view path, std::string_view folder) {
  return path == folder || (path.starts_with(folder) && path[folder.size()] == '/');
}

// With the host's PID namespace and a privileged container these are the host's already.
bool KernelsOwn(std::string_view path) {
  return Under(path, "/proc") || Under(path, "/sys") || Under(path, "/dev");
}

// Whether paths under `root` differ from the process's own at all.
bool Rooted(const std::string& root, const std::string& path) {
  return !root.empty() && root != "/" && !path.empty() && path.front() == '/';
}

Result<void> ReadOnly(const std::string& path) {
  return Fail(ErrorCode::kPermissionDenied,
              "{}: the host is only read through its root folder, never written", path);
}

}  // namespace

std::string HostRootPath(const std::string& root, const std::string& path) {
  if (!Rooted(root, path)) return path;
  // The mount table of "self" is the container's; the host's init has the host's.
  for (std::string_view self : {"/proc/self/mounts", "/proc/self/mountinfo", "/proc/mounts"}) {
    if (path == self) return "/proc/1/" + path.substr(path.rfind('/') + 1);
  }
  if (KernelsOwn(path)) return path;
  std::string rooted = root;
  while (rooted.size() > 1 && rooted.back() == '/') rooted.pop_back();
  return rooted + path;
}

std::string HostRootFileSystem::InRoot(const std::string& path, bool follow_last) const {
  if (!Rooted(root_, path) || KernelsOwn(path)) return HostRootPath(root_, path);
  // The components left to walk, the next one last.
  std::vector<std::string> left;
  const auto push = [&left](std::string_view text) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= text.size()) {
      const size_t slash = text.find('/', start);
      const std::string_view part = text.substr(start, slash - start);
      if (!part.empty() && part != ".") parts.emplace_back(part);
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
    left.insert(left.end(), parts.rbegin(), parts.rend());
  };
  push(path);
  std::string done;  // the host's path walked so far; empty: its "/"
  int links = 0;
  while (!left.empty()) {
    const std::string name = std::move(left.back());
    left.pop_back();
    if (name == "..") {
      done.erase(done.empty() ? 0 : done.rfind('/'));  // never above the host's "/"
      continue;
    }
    const std::string next = done + "/" + name;
    if (KernelsOwn(next)) {
      // Into the kernel's own files (/proc, /sys, /dev): the rest is read as it is.
      std::string rest = next;
      for (auto it = left.rbegin(); it != left.rend(); ++it) rest += "/" + *it;
      return HostRootPath(root_, rest);
    }
    std::optional<std::string> target;
    if (!left.empty() || follow_last) {
      if (auto link = inner_.ReadLink(HostRootPath(root_, next)); link && !link->empty()) {
        target = std::move(*link);
      }
    }
    if (!target) {
      done = next;
      continue;
    }
    // As the kernel gives up (ELOOP): the path as it is, which then fails as the host's would.
    if (++links > 40) return HostRootPath(root_, path);
    if (target->front() == '/') done.clear();
    push(*target);
  }
  return HostRootPath(root_, done.empty() ? "/" : done);
}

Result<std::string> HostRootFileSystem::ReadFile(const std::string& path, size_t max_bytes) const {
  const std::string real = InRoot(path);
  // A FIFO in the root (etc/os-release) blocked the audit until SIGTERM, and a link into /dev
  // opened the real host's device as root: what the audit reads of a host is a regular file.
  if (!inner_.IsRegularFile(real) && inner_.Exists(real) && !inner_.IsDirectory(real)) {
    return Fail(ErrorCode::kInvalidArgument,
                "{} is not a regular file (a FIFO, socket or device under the host root): not "
                "read",
                path);
  }
  return inner_.ReadFile(real, max_bytes);
}
bool HostRootFileSystem::Exists(const std::string& path) const {
  return inner_.Exists(InRoot(path));
}
bool HostRootFileSystem::IsDirectory(const std::string& path) const {
  return inner_.IsDirectory(InRoot(path));
}
bool HostRootFileSystem::IsRegularFile(const std::string& path) const {
  return inner_.IsRegularFile(InRoot(path));
}
Result<std::vector<std::string>> HostRootFileSystem::ListDir(const std::string& path) const {
  return inner_.ListDir(InRoot(path));
}
// A link's target is the host's path ("/usr/bin/runc" -> "/usr/sbin/runc"): not rooted, so
// that it reads as the host has it; a caller that follows it goes through this file system.
Result<std::string> HostRootFileSystem::ReadLink(const std::string& path) const {
  return inner_.ReadLink(InRoot(path, /*follow_last=*/false));
}
Result<void> HostRootFileSystem::WriteFileAtomic(const std::string& path, std::string_view,
                                                 mode_t) {
  return ReadOnly(path);
}
Result<void> HostRootFileSystem::WriteOutputFile(const std::string& path, std::string_view,
                                                 mode_t) {
  return ReadOnly(path);
}
Result<void> HostRootFileSystem::CreateDirs(const std::string& path, mode_t) {
  return ReadOnly(path);
}
Result<void> HostRootFileSystem::RemoveFile(const std::string& path) {
  return ReadOnly(path);
}

ProcessSpec HostRootProcessRunner::Rooted(const ProcessSpec& spec, const std::string& root,
                                          const std::vector<std::string>& environment) {
  ProcessSpec rooted = spec;
  if (root.empty() || root == "/") return rooted;
  // The host's programs with the host's search path and libraries, not the image's (a CUDA
  // image sets LD_LIBRARY_PATH to its own folders), and none of the loader's other settings
  // (LD_AUDIT, LD_BIND_NOW ...) the image's environment may carry.
  std::vector<std::string> host_env = {"PATH=" + std::string(kHostPath),
                                       "HOME=" + std::string(kHostHome),
                                       "LD_LIBRARY_PATH=", "LD_PRELOAD="};
  // The container's own, removed (an empty SLURM_CONF would be a file of no name to Slurm).
  host_env.insert(host_env.end(), std::begin(kContainersOwnVariables),
                  std::end(kContainersOwnVariables));
  for (const std::string& variable : environment) {
    const std::string name = variable.substr(0, variable.find('='));
    if (name.starts_with("LD_") && name != "LD_LIBRARY_PATH" && name != "LD_PRELOAD") {
      host_env.push_back(name + "=");
    }
  }
  rooted.env_add.insert(rooted.env_add.begin(), host_env.begin(), host_env.end());
  rooted.use_shell = false;
  rooted.argv = {"chroot", root};
  if (spec.use_shell) {
    rooted.argv.insert(rooted.argv.end(), {"/bin/sh", "-c"});
  }
  rooted.argv.insert(rooted.argv.end(), spec.argv.begin(), spec.argv.end());
  // A working folder is the host's: chroot(8) starts in its "/", so it is asked of a shell.
  if (!spec.cwd.empty()) {
    rooted.cwd.clear();
    std::vector<std::string> in_folder{"chroot", root, "/bin/sh", "-c", R"(cd "$0" && exec "$@")",
                                       spec.cwd};
    if (spec.use_shell) in_folder.insert(in_folder.end(), {"/bin/sh", "-c"});
    in_folder.insert(in_folder.end(), spec.argv.begin(), spec.argv.end());
    rooted.argv = std::move(in_folder);
  }
  return rooted;
}

HostRootProcessRunner::HostRootProcessRunner(ProcessRunner& inner, std::string root)
    : inner_(inner), root_(std::move(root)) {
  for (char** variable = environ; *variable != nullptr; ++variable) {
    if (std::string_view(*variable).starts_with("LD_")) loader_env_.emplace_back(*variable);
  }
}

Result<ProcessResult> HostRootProcessRunner::Run(const ProcessSpec& spec) {
  return inner_.Run(Rooted(spec, root_, loader_env_));
}

}  // namespace cmax::sys
