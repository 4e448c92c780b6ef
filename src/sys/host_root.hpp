// The host seen from inside a container that has the host's root mounted at a folder (a
// Kubernetes pod with a hostPath volume of "/", hostPID, hostNetwork and privileged): files are
// read below that folder and programs run with chroot(8) into it, so that what the audit reports
// is the host's (its OS, packages, runc, nvidia-smi with the host's driver) and never the
// image's. The kernel's own files stay as they are: with the host's PID namespace and a
// privileged container, /proc, /sys and /dev are the host's already; the mount table of
// /proc/self is the container's, so it is read from the host's init (/proc/1) instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {

// This process's variables that, in a container reading its host through a mounted root,
// describe the container and not the host: NVIDIA_VISIBLE_DEVICES is there for the container
// toolkit to give it NVML, not what a tenant's job gets; SLURM_CONF and KUBECONFIG name files of
// the container's tree, which below the root would be the wrong files or none;
// KUBERNETES_SERVICE_HOST is the audit pod's. The host's programs run without them (so that
// Slurm's read the host's /etc/slurm/slurm.conf), and HOME is the host's root's, kHostHome.
inline constexpr std::string_view kContainersOwnVariables[] = {
    "NVIDIA_VISIBLE_DEVICES", "SLURM_CONF", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"};
inline constexpr std::string_view kHostHome = "/root";

// The search path programs of the host are found in and run with (Debian's and most
// distributions' default for root), in place of the image's.
inline constexpr std::string_view kHostPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Where `path` (absolute) is found with the host's root at `root`. Pure.
std::string HostRootPath(const std::string& root, const std::string& path);

// Reads (and lists) through HostRootPath, following links inside the root; every write is
// refused: what reads a host through a container only reads.
class HostRootFileSystem final : public FileSystem {
 public:
  HostRootFileSystem(const FileSystem& inner, std::string root)
      : inner_(inner), root_(std::move(root)) {}
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override;
  bool Exists(const std::string& path) const override;
  bool IsDirectory(const std::string& path) const override;
  bool IsRegularFile(const std::string& path) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<std::string> ReadLink(const std::string& path) const override;
  Result<void> WriteFileAtomic(const std::string& path, std::string_view data,
                               mode_t mode) override;
  Result<void> WriteOutputFile(const std::string& path, std::string_view data,
                               mode_t mode) override;
  Result<void> CreateDirs(const std::string& path, mode_t mode) override;
  Result<void> RemoveFile(const std::string& path) override;

 private:
  // The path below the root with each link in it followed as the host would: an absolute
  // target ("/etc/alternatives/x") starts again at the host's "/", never the container's, and
  // ".." stops at it. The last component is followed too unless `follow_last` is false.
  std::string InRoot(const std::string& path, bool follow_last = true) const;

  const FileSystem& inner_;
  std::string root_;
};

// Runs each program as `chroot ROOT PROGRAM ARGS...` (a shell script as `chroot ROOT /bin/sh -c
// SCRIPT`), in the host's "/": its libraries, its configuration, kHostPath and every LD_
// variable blanked (the loader reads an empty one as unset).
class HostRootProcessRunner final : public ProcessRunner {
 public:
  // Reads this process's LD_ variables once, for every program it runs.
  HostRootProcessRunner(ProcessRunner& inner, std::string root);
  Result<ProcessResult> Run(const ProcessSpec& spec) override;

  // The spec the inner runner is given, for a process whose environment is `environment`
  // ("NAME=VALUE" each: its LD_ variables are blanked too). Pure.
  static ProcessSpec Rooted(const ProcessSpec& spec, const std::string& root,
                            const std::vector<std::string>& environment = {});

 private:
  ProcessRunner& inner_;
  std::string root_;
  std::vector<std::string> loader_env_;  // this process's LD_ variables, "NAME=VALUE"
};

}  // namespace cmax::sys
