#include <algorithm>
#include <cstdlib>

#include "audit/host_inventory.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"

namespace cmax::audit {
namespace {

std::string ReadTrimmed(const sys::FileSystem& fs, const std::string& path) {
  auto text = fs.ReadFile(path, 1 << 20);
  return text ? std::string(Trim(*text)) : std::string();
}

template <class Int>
Int ParseHex(std::string_view text) {
  text = Trim(text);
  if (text.substr(0, 2) == "0x") text.remove_prefix(2);
  return ParseWhole<Int>(text, 16).value_or(0);
}

std::vector<NumaNode> CollectNuma(const sys::FileSystem& fs) {
  std::vector<NumaNode> nodes;
  const std::string root = "/sys/devices/system/node";
  auto entries = fs.ListDir(root);
  if (!entries) return nodes;
  for (const std::string& name : *entries) {
    if (name.rfind("node", 0) != 0 || name.size() == 4) continue;
    NumaNode node;
    const std::string_view digits = std::string_view(name).substr(4);
    const std::optional<int> id = ParseWhole<int>(digits);
    if (!id) continue;
    node.id = *id;
    node.cpus = CountCpuList(ReadTrimmed(fs, root + "/" + name + "/cpulist")).value_or(0);
    // "Node 0 MemTotal:       24683312 kB"
    auto meminfo = fs.ReadFile(root + "/" + name + "/meminfo", 1 << 20);
    if (meminfo) {
      for (std::string_view line : Split(*meminfo, '\n')) {
        const auto fields = SplitFields(line);
        if (fields.size() >= 4 && fields[2] == "MemTotal:") {
          node.mem_total_kib = ParseWhole<uint64_t>(fields[3]).value_or(0);
        }
      }
    }
    nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return nodes;
}

std::vector<PciDevice> CollectPci(const sys::FileSystem& fs) {
  std::vector<PciDevice> devices;
  const std::string root = "/sys/bus/pci/devices";
  auto entries = fs.ListDir(root);
  if (!entries) return devices;
  for (const std::string& address : *entries) {
    const std::string dir = root + "/" + address;
    PciDevice device;
    device.address = address;
    device.vendor = ParseHex<uint16_t>(ReadTrimmed(fs, dir + "/vendor"));
    device.device = ParseHex<uint16_t>(ReadTrimmed(fs, dir + "/device"));
    device.class_code = ParseHex<uint32_t>(ReadTrimmed(fs, dir + "/class"));
    if (auto link = fs.ReadLink(dir + "/driver"); link) {
      device.driver = link->substr(link->rfind('/') + 1);
    }
    const std::string numa = ReadTrimmed(fs, dir + "/numa_node");
    device.numa_node = ParseWhole<int>(numa).value_or(-1);
    devices.push_back(std::move(device));
  }
  return devices;
}

Virtualization CollectVirtualization(const sys::FileSystem& fs, const CpuInfo& cpu) {
  Virtualization virt;
  if (cpu.hypervisor_flag) {
    virt.hypervisor = true;
    virt.signals.push_back("cpu flag 'hypervisor'");
  }
  const std::string vendor = ReadTrimmed(fs, "/sys/class/dmi/id/sys_vendor");
  const std::string product = ReadTrimmed(fs, "/sys/class/dmi/id/product_name");
  static constexpr const char* kVmVendors[] = {"QEMU",
                                               "KVM",
                                               "VMware",
                                               "Xen",
                                               "innotek",
                                               "Amazon EC2",
                                               "Google",
                                               "OpenStack",
                                               "Parallels",
                                               "Bochs",
                                               "Microsoft Corporation"};
  for (const char* known : kVmVendors) {
    const bool hit =
        vendor.find(known) != std::string::npos || product.find(known) != std::string::npos;
    // Microsoft sells hardware too: only its "Virtual Machine" product is a VM.
    const bool microsoft = std::string_view(known) == "Microsoft Corporation";
    if (hit && (!microsoft || product.find("Virtual Machine") != std::string::npos)) {
      virt.hypervisor = true;
      virt.hypervisor_vendor = vendor.empty() ? product : vendor;
      virt.signals.push_back("DMI vendor '" + virt.hypervisor_vendor + "'");
      break;
    }
  }
  if (fs.Exists("/run/.containerenv")) {
    virt.container = true;
    virt.signals.push_back("/run/.containerenv present");
  }
  if (auto cgroup = fs.ReadFile("/proc/1/cgroup", 1 << 20); cgroup) {
    for (const char* marker : {"docker", "kubepods", "containerd", "libpod", "lxc"}) {
      if (cgroup->find(marker) != std::string::npos) {
        virt.container = true;
        virt.signals.push_back(std::string("/proc/1/cgroup mentions '") + marker + "'");
        break;
      }
    }
  }
  if (fs.Exists("/.dockerenv")) virt.signals.push_back("/.dockerenv present");
  return virt;
}

std::string Which(const sys::FileSystem& fs, const HostEnvironment& env, const std::string& name) {
  std::string path = env.Get("PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  for (std::string_view dir : Split(path, ':')) {
    if (dir.empty()) continue;
    std::string candidate = std::string(dir) + "/" + name;
    if (fs.Exists(candidate) && !fs.IsDirectory(candidate)) return candidate;
  }
  return {};
}

SlurmPresence CollectSlurm(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                           const HostEnvironment& env, Duration timeout) {
  SlurmPresence slurm;
  slurm.sinfo_path = Which(fs, env, "sinfo");
  std::vector<std::string> candidates;
  if (!env.Get("SLURM_CONF").empty()) candidates.push_back(env.Get("SLURM_CONF"));
  candidates.insert(candidates.end(), {"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf",
                                       "/run/slurm/conf/slurm.conf"});
  for (const std::string& candidate : candidates) {
    if (fs.Exists(candidate)) {
      slurm.conf_path = candidate;
      break;
    }
  }
  if (slurm.sinfo_path.empty()) return slurm;

  std::vector<std::string> env_add;
  if (!slurm.conf_path.empty()) env_add.push_back("SLURM_CONF=" + slurm.conf_path);
  sys::ProcessSpec version_spec{.argv = {slurm.sinfo_path, "--version"}, .env_add = env_add};
  version_spec.timeout = timeout;
  if (auto result = runner.Run(version_spec); result && result->Succeeded()) {
    slurm.version = ParseSlurmVersion(result->stdout_text);
  }
  if (slurm.conf_path.empty()) return slurm;

  const std::string scontrol = Which(fs, env, "scontrol");
  if (scontrol.empty()) return slurm;
  slurm.controller_checked = true;
  sys::ProcessSpec ping{.argv = {scontrol, "ping"}, .env_add = env_add};
  ping.timeout = timeout;
  auto result = runner.Run(ping);
  if (!result) {
    slurm.controller_detail = result.error().message;
  } else if (result->timed_out) {
    slurm.controller_detail = "scontrol ping gave no answer within " + FormatDuration(timeout);
  } else {
    const std::string answer(Trim(result->stdout_text + result->stderr_text));
    slurm.controller_up = answer.find(" is UP") != std::string::npos;
    slurm.controller_detail = answer.empty() ? result->Describe() : answer;
  }
  return slurm;
}

KubernetesPresence CollectKubernetes(const sys::FileSystem& fs, const HostEnvironment& env) {
  KubernetesPresence k8s;
  k8s.in_cluster = !env.Get("KUBERNETES_SERVICE_HOST").empty() &&
                   fs.Exists("/var/run/secrets/kubernetes.io/serviceaccount/token");
  std::vector<std::string> configs;
  for (std::string_view part : Split(env.Get("KUBECONFIG"), ':')) {
    if (!part.empty()) configs.emplace_back(part);
  }
  if (configs.empty() && !env.Get("HOME").empty())
    configs.push_back(env.Get("HOME") + "/.kube/config");
  for (const std::string& path : configs) {
    auto text = fs.ReadFile(path, 8 << 20);
    if (!text) continue;
    k8s.kubeconfig = path;
    k8s.context = ParseKubeconfigContext(*text);
    break;
  }
  return k8s;
}

}  // namespace

std::string HostEnvironment::Get(const std::string& name) const {
  auto it = vars.find(name);
  return it == vars.end() ? std::string() : it->second;
}

HostEnvironment CurrentEnvironment() {
  HostEnvironment env;
  for (const char* name :
       {"PATH", "HOME", "SLURM_CONF", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "container"}) {
    if (const char* value = std::getenv(name); value != nullptr) env.vars[name] = value;
  }
  return env;
}

HostFacts CollectHost(const sys::FileSystem& fs, std::string hostname) {
  HostFacts host;
  host.hostname = std::move(hostname);
  auto os = fs.ReadFile("/etc/os-release", 1 << 20);
  if (!os) os = fs.ReadFile("/usr/lib/os-release", 1 << 20);
  if (os) {
    host.os = ParseOsRelease(*os);
  } else {
    host.problems.push_back("no /etc/os-release: " + os.error().message);
  }
  host.kernel_release = ReadTrimmed(fs, "/proc/sys/kernel/osrelease");
  host.kernel_version = ReadTrimmed(fs, "/proc/sys/kernel/version");
  host.arch = ReadTrimmed(fs, "/proc/sys/kernel/arch");
  if (auto cpuinfo = fs.ReadFile("/proc/cpuinfo", 16 << 20); cpuinfo) {
    host.cpu = ParseCpuInfo(*cpuinfo);
  } else {
    host.problems.push_back(cpuinfo.error().message);
  }
  if (auto meminfo = fs.ReadFile("/proc/meminfo", 1 << 20); meminfo) {
    host.memory = ParseMemInfo(*meminfo);
  } else {
    host.problems.push_back(meminfo.error().message);
  }
  host.numa = CollectNuma(fs);
  host.pci = CollectPci(fs);
  host.virtualization = CollectVirtualization(fs, host.cpu);
  for (const std::string& problem : host.problems) log::Debug("inventory: {}", problem);
  return host;
}

GpuFacts CollectGpu(const sys::FileSystem& fs, const HostFacts& host) {
  GpuFacts gpu;
  for (const PciDevice& device : host.pci) {
    if (IsNvidiaGpu(device)) gpu.nvidia_pci.push_back(device);
  }
  if (auto version = fs.ReadFile("/proc/driver/nvidia/version", 1 << 16); version) {
    if (auto driver = ParseNvidiaVersion(*version)) gpu.driver = std::move(*driver);
  }
  if (gpu.driver.loaded) {
    const std::string root = "/proc/driver/nvidia/gpus";
    if (auto entries = fs.ListDir(root); entries) {
      for (const std::string& bus : *entries) {
        gpu.driver.gpus.push_back(bus);
        if (auto info = fs.ReadFile(root + "/" + bus + "/information", 1 << 16); info) {
          gpu.driver.models[bus] = ParseNvidiaModel(*info);
        }
      }
    }
  }
  return gpu;
}

SchedulerFacts CollectScheduler(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                const HostEnvironment& env, Duration timeout) {
  return SchedulerFacts{CollectSlurm(fs, runner, env, timeout), CollectKubernetes(fs, env)};
}

}  // namespace cmax::audit
