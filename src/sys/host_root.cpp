#include "sys/host_root.hpp"

#include <string_view>

namespace cmax::sys {
namespace {

bool Under(std::string_view path, std::string_view folder) {
  return path == folder || (path.starts_with(folder) && path[folder.size()] == '/');
}

Result<void> ReadOnly(const std::string& path) {
  return Fail(ErrorCode::kPermissionDenied,
              "{}: the host is only read through its root folder, never written", path);
}

}  // namespace

std::string HostRootPath(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/" || path.empty() || path.front() != '/') return path;
  // The mount table of "self" is the container's; the host's init has the host's.
  for (std::string_view self : {"/proc/self/mounts", "/proc/self/mountinfo", "/proc/mounts"}) {
    if (path == self) return "/proc/1/" + path.substr(path.rfind('/') + 1);
  }
  for (std::string_view kernel : {"/proc", "/sys", "/dev"}) {
    if (Under(path, kernel)) return path;
  }
  std::string rooted = root;
  while (rooted.size() > 1 && rooted.back() == '/') rooted.pop_back();
  return rooted + path;
}

Result<std::string> HostRootFileSystem::ReadFile(const std::string& path, size_t max_bytes) const {
  return inner_.ReadFile(HostRootPath(root_, path), max_bytes);
}
bool HostRootFileSystem::Exists(const std::string& path) const {
  return inner_.Exists(HostRootPath(root_, path));
}
bool HostRootFileSystem::IsDirectory(const std::string& path) const {
  return inner_.IsDirectory(HostRootPath(root_, path));
}
bool HostRootFileSystem::IsRegularFile(const std::string& path) const {
  return inner_.IsRegularFile(HostRootPath(root_, path));
}
Result<std::vector<std::string>> HostRootFileSystem::ListDir(const std::string& path) const {
  return inner_.ListDir(HostRootPath(root_, path));
}
// A link's target is the host's path ("/usr/bin/runc" -> "/usr/sbin/runc"): not rooted, so
// that it reads as the host has it; a caller that follows it goes through this file system.
Result<std::string> HostRootFileSystem::ReadLink(const std::string& path) const {
  return inner_.ReadLink(HostRootPath(root_, path));
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

ProcessSpec HostRootProcessRunner::Rooted(const ProcessSpec& spec, const std::string& root) {
  ProcessSpec rooted = spec;
  if (root.empty() || root == "/") return rooted;
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

Result<ProcessResult> HostRootProcessRunner::Run(const ProcessSpec& spec) {
  return inner_.Run(Rooted(spec, root_));
}

}  // namespace cmax::sys
