// The non-log facts a passive health check reads: PCIe link width and speed of GPUs and NICs,
// InfiniBand port states, and whether network and parallel filesystems still answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::health {

struct PcieLink {
  std::string address;
  bool gpu = false;  // else a NIC
  int current_width = 0;
  int max_width = 0;
  std::string current_speed;  // "32.0 GT/s PCIe"
  std::string max_speed;
};
// NVIDIA GPUs and network devices that expose link width in sysfs.
std::vector<PcieLink> CollectPcieLinks(const sys::FileSystem& fs);

struct IbPort {
  std::string device;  // "mlx5_0"
  int port = 0;
  std::string state;       // "ACTIVE", "DOWN", "INIT", "ARMED"
  std::string phys_state;  // "LinkUp", "Disabled", "Polling"
  std::string rate;        // "400 Gb/sec (4X NDR)"
  std::string link_layer;  // "InfiniBand", "Ethernet"
};
std::vector<IbPort> CollectIbPorts(const sys::FileSystem& fs);
// "4: ACTIVE" -> "ACTIVE"
std::string_view SysfsStateName(std::string_view text);

struct Mount {
  std::string source;
  std::string mount_point;
  std::string fs_type;
};
// The filesystems worth probing in /proc/mounts text: network and parallel ones (nfs, lustre,
// cifs, beegfs, gpfs, wekafs, ceph, glusterfs, fuse.sshfs ...), which hang when their server
// does, and local disks (ext4, xfs, btrfs, zfs, f2fs), which hang when the disk does. Pseudo
// filesystems (proc, sysfs, tmpfs, overlay ...) are left out. Octal escapes are decoded.
std::vector<Mount> ParseProbeMounts(std::string_view proc_mounts);
bool IsNetworkFilesystem(std::string_view fs_type);

struct MountProbe {
  Mount mount;
  bool answered = false;
  Duration took{0};
  std::string detail;  // why it did not answer
};
// statfs through a child process with a timeout, so that a hung mount (whose callers sleep
// uninterruptibly in the kernel) can only cost the timeout, never hang the check.
MountProbe ProbeMount(sys::ProcessRunner& runner, const Mount& mount, Duration timeout);

}  // namespace cmax::health
