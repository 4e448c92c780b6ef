// The host inventory `cmax run` starts from: OS, kernel, CPU, memory, NUMA, PCI devices,
// NVIDIA driver, and which scheduler this host is a client of. Parsers are pure functions
// over file text; the collectors read through a FileSystem and a ProcessRunner.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {

struct OsRelease {
  std::string id;  // "debian"
  std::string version_id;
  std::string pretty_name;
};

struct CpuInfo {
  std::string vendor;
  std::string model;
  int logical_cpus = 0;
  int sockets = 0;
  int cores = 0;  // physical cores over all sockets; 0 when the kernel does not say
  bool hypervisor_flag = false;
};

struct MemInfo {
  uint64_t total_kib = 0;
  uint64_t available_kib = 0;
  uint64_t hugepages_total = 0;
  uint64_t hugepage_size_kib = 0;
};

struct NumaNode {
  int id = 0;
  int cpus = 0;
  uint64_t mem_total_kib = 0;
};

struct PciDevice {
  std::string address;  // "0000:17:00.0"
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint32_t class_code = 0;  // 24 bits: class, subclass, prog-if
  std::string driver;       // bound driver, empty when none
  int numa_node = -1;
};

// PCI class 0x03 (display: VGA 0x0300, 3D controller 0x0302) from NVIDIA (0x10de).
bool IsNvidiaGpu(const PciDevice& device);
// PCI class 0x02 (network) or 0x0207 (InfiniBand).
bool IsNetworkDevice(const PciDevice& device);

struct NvidiaDriver {
  bool loaded = false;
  std::string version;  // "570.86.15"
  bool open_kernel_module = false;
  std::vector<std::string> gpus;  // bus ids the driver knows, /proc/driver/nvidia/gpus/*
  std::map<std::string, std::string> models;  // bus id -> "NVIDIA H200"
};

struct Virtualization {
  bool hypervisor = false;           // CPU flag, DMI vendor
  std::string hypervisor_vendor;     // from DMI when the VM exposes it
  bool container = false;            // strong container signals
  std::vector<std::string> signals;  // what was seen, for the evidence
};

struct SlurmPresence {
  std::string sinfo_path;  // empty: no Slurm client
  std::string conf_path;   // slurm.conf in use, empty when none was found
  std::string version;     // "22.05.8"
  bool controller_checked = false;
  bool controller_up = false;
  std::string controller_detail;  // what scontrol ping said, or why it did not
};

struct KubernetesPresence {
  bool in_cluster = false;  // a service account is mounted
  std::string kubeconfig;   // path of the kubeconfig found
  std::string context;      // its current-context
};

struct HostFacts {
  std::string hostname;
  OsRelease os;
  std::string kernel_release;
  std::string kernel_version;
  std::string arch;
  CpuInfo cpu;
  MemInfo memory;
  std::vector<NumaNode> numa;
  std::vector<PciDevice> pci;
  Virtualization virtualization;
  std::vector<std::string> problems;  // what could not be read, in words
};

struct GpuFacts {
  std::vector<PciDevice> nvidia_pci;
  NvidiaDriver driver;
};

struct SchedulerFacts {
  SlurmPresence slurm;
  KubernetesPresence kubernetes;
};

// Pure parsers, table-tested.
OsRelease ParseOsRelease(std::string_view text);
CpuInfo ParseCpuInfo(std::string_view text);
MemInfo ParseMemInfo(std::string_view text);
// "0-3,8-11" -> 8. Fails on malformed text.
Result<int> CountCpuList(std::string_view text);
// /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15 ..."
// or "... Open Kernel Module for x86_64  570.86.15 ...".
std::optional<NvidiaDriver> ParseNvidiaVersion(std::string_view text);
// /proc/driver/nvidia/gpus/<bus>/information: the "Model:" line.
std::string ParseNvidiaModel(std::string_view information);
// "slurm 22.05.8" -> "22.05.8".
std::string ParseSlurmVersion(std::string_view sinfo_version_output);
// current-context of a kubeconfig (YAML, read line by line: the key is top-level).
std::string ParseKubeconfigContext(std::string_view text);

// The variables the collectors read, passed in so tests control them.
struct HostEnvironment {
  std::map<std::string, std::string> vars;  // SLURM_CONF, KUBECONFIG, HOME, ...
  std::string Get(const std::string& name) const;
};
HostEnvironment CurrentEnvironment();

HostFacts CollectHost(const sys::FileSystem& fs, std::string hostname);
GpuFacts CollectGpu(const sys::FileSystem& fs, const HostFacts& host);
SchedulerFacts CollectScheduler(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                const HostEnvironment& env, Duration timeout);

}  // namespace cmax::audit
