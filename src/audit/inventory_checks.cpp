#include "audit/inventory_checks.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.hpp"

namespace cmax::audit {
namespace {

using Json = nlohmann::ordered_json;

EvidenceItem Evidence(std::string key, const Json& value) {
  return {std::move(key), value.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

Finding Make(std::string id, CheckStatus status, Severity severity, std::string observed,
             std::string message) {
  Finding f;
  f.check_id = std::move(id);
  f.status = status;
  f.severity = severity;
  f.observed = std::move(observed);
  f.message = std::move(message);
  return f;
}

std::string Gib(uint64_t kib) {
  return fmt::format("{:.1f} GiB", static_cast<double>(kib) / (1024.0 * 1024.0));
}

std::string Hex(uint32_t value, int width) {
  return fmt::format("0x{:0{}x}", value, width);
}

}  // namespace

Target DetectEnvironment(const HostFacts& host) {
  const Virtualization& v = host.virtualization;
  Target target{"bare-metal", "standalone"};
  if (v.container) {
    target.environment = "container";
  } else if (v.hypervisor) {
    target.environment = "vm";
  } else if (std::find(v.signals.begin(), v.signals.end(), "/.dockerenv present") !=
             v.signals.end()) {
    // /.dockerenv alone is weak (images built by Docker keep it), so it decides only when
    // nothing says "virtual machine".
    target.environment = "container";
  }
  return target;
}

std::string DetectScheduler(const SchedulerFacts& scheduler) {
  std::vector<std::string> kinds;
  if (!scheduler.slurm.sinfo_path.empty() && !scheduler.slurm.conf_path.empty()) {
    kinds.emplace_back("slurm-client");
  }
  if (scheduler.kubernetes.in_cluster || !scheduler.kubernetes.context.empty()) {
    kinds.emplace_back("kubernetes");
  }
  return kinds.empty() ? "standalone" : Join(kinds, "+");
}

std::vector<Finding> HostFindings(const HostFacts& host, const Target& target) {
  std::vector<Finding> findings;
  if (host.os.pretty_name.empty()) {
    findings.push_back(Make("host.os", CheckStatus::kWarn, Severity::kLow, "unknown",
                            "the OS does not identify itself (no /etc/os-release)"));
  } else {
    findings.push_back(Make("host.os", CheckStatus::kPass, Severity::kInfo, host.os.pretty_name,
                            host.os.pretty_name));
  }
  const std::string kernel =
      host.arch.empty() ? host.kernel_release : host.kernel_release + " (" + host.arch + ")";
  findings.push_back(
      Make("host.kernel", host.kernel_release.empty() ? CheckStatus::kWarn : CheckStatus::kPass,
           Severity::kInfo, kernel.empty() ? "unknown" : kernel,
           "Linux " + (kernel.empty() ? std::string("(release unreadable)") : kernel)));
  const CpuInfo& cpu = host.cpu;
  const std::string cpu_text = fmt::format(
      "{} · {} logical CPUs, {} socket{}", cpu.model.empty() ? "unknown model" : cpu.model,
      cpu.logical_cpus, cpu.sockets, cpu.sockets == 1 ? "" : "s");
  findings.push_back(Make("host.cpu",
                          cpu.logical_cpus > 0 ? CheckStatus::kPass : CheckStatus::kWarn,
                          Severity::kInfo, cpu_text, cpu_text));
  const std::string memory = fmt::format("{} total, {} available", Gib(host.memory.total_kib),
                                         Gib(host.memory.available_kib));
  findings.push_back(Make("host.memory",
                          host.memory.total_kib > 0 ? CheckStatus::kPass : CheckStatus::kWarn,
                          Severity::kInfo, memory, memory));
  std::string numa =
      fmt::format("{} NUMA node{}", host.numa.size(), host.numa.size() == 1 ? "" : "s");
  for (const NumaNode& node : host.numa) {
    numa += fmt::format("{}node{}: {} CPUs, {}", &node == &host.numa.front() ? " (" : "; ", node.id,
                        node.cpus, Gib(node.mem_total_kib));
  }
  if (!host.numa.empty()) numa += ")";
  findings.push_back(Make("host.numa", host.numa.empty() ? CheckStatus::kSkip : CheckStatus::kPass,
                          Severity::kInfo, numa,
                          host.numa.empty() ? "the kernel exposes no NUMA topology" : numa));
  int gpus = 0;
  int nics = 0;
  for (const PciDevice& device : host.pci) {
    gpus += IsNvidiaGpu(device) ? 1 : 0;
    nics += IsNetworkDevice(device) ? 1 : 0;
  }
  const std::string pci =
      fmt::format("{} PCI devices: {} NVIDIA GPU, {} network", host.pci.size(), gpus, nics);
  findings.push_back(Make("host.pci", host.pci.empty() ? CheckStatus::kSkip : CheckStatus::kPass,
                          Severity::kInfo, pci,
                          host.pci.empty() ? "no PCI bus is visible (/sys/bus/pci)" : pci));
  std::string why = Join(host.virtualization.signals, ", ");
  findings.push_back(Make("host.environment", CheckStatus::kPass, Severity::kInfo,
                          target.environment,
                          why.empty() ? target.environment + " (no virtualisation signal)"
                                      : target.environment + " (" + why + ")"));
  return findings;
}

std::vector<EvidenceItem> HostEvidence(const HostFacts& host) {
  std::vector<EvidenceItem> items;
  items.push_back(Evidence("host.hostname", host.hostname));
  items.push_back(Evidence("host.os", {{"id", host.os.id},
                                       {"version_id", host.os.version_id},
                                       {"pretty_name", host.os.pretty_name}}));
  items.push_back(Evidence(
      "host.kernel",
      {{"release", host.kernel_release}, {"version", host.kernel_version}, {"arch", host.arch}}));
  items.push_back(Evidence("host.cpu", {{"vendor", host.cpu.vendor},
                                        {"model", host.cpu.model},
                                        {"logical_cpus", host.cpu.logical_cpus},
                                        {"sockets", host.cpu.sockets},
                                        {"cores", host.cpu.cores},
                                        {"hypervisor_flag", host.cpu.hypervisor_flag}}));
  items.push_back(Evidence("host.memory", {{"total_kib", host.memory.total_kib},
                                           {"available_kib", host.memory.available_kib},
                                           {"hugepages_total", host.memory.hugepages_total},
                                           {"hugepage_size_kib", host.memory.hugepage_size_kib}}));
  Json numa = Json::array();
  for (const NumaNode& node : host.numa) {
    numa.push_back({{"id", node.id}, {"cpus", node.cpus}, {"mem_total_kib", node.mem_total_kib}});
  }
  items.push_back(Evidence("host.numa", numa));
  Json pci = Json::array();
  for (const PciDevice& d : host.pci) {
    pci.push_back({{"address", d.address},
                   {"vendor", Hex(d.vendor, 4)},
                   {"device", Hex(d.device, 4)},
                   {"class", Hex(d.class_code, 6)},
                   {"driver", d.driver},
                   {"numa_node", d.numa_node}});
  }
  items.push_back(Evidence("host.pci", pci));
  items.push_back(
      Evidence("host.environment", {{"hypervisor", host.virtualization.hypervisor},
                                    {"hypervisor_vendor", host.virtualization.hypervisor_vendor},
                                    {"container", host.virtualization.container},
                                    {"signals", host.virtualization.signals}}));
  if (!host.problems.empty()) items.push_back(Evidence("host.problems", host.problems));
  return items;
}

std::vector<Finding> GpuFindings(const GpuFacts& gpu) {
  std::vector<Finding> findings;
  const size_t on_bus = gpu.nvidia_pci.size();
  if (on_bus > 0) {
    findings.push_back(
        Make("gpu.devices", CheckStatus::kPass, Severity::kInfo, std::to_string(on_bus),
             fmt::format("{} NVIDIA GPU{} on the PCI bus", on_bus, on_bus == 1 ? "" : "s")));
  } else {
    findings.push_back(Make("gpu.devices", CheckStatus::kSkip, Severity::kInfo, "0",
                            "no NVIDIA GPU on the PCI bus (vendor 0x10de, class 0x03); GPU "
                            "checks are skipped on this host"));
  }

  const NvidiaDriver& driver = gpu.driver;
  if (driver.loaded) {
    findings.push_back(Make("gpu.driver", CheckStatus::kPass, Severity::kInfo, driver.version,
                            fmt::format("NVIDIA driver {} ({} kernel module)", driver.version,
                                        driver.open_kernel_module ? "open" : "proprietary")));
  } else if (on_bus > 0) {
    Finding f = Make(
        "gpu.driver", CheckStatus::kFail, Severity::kHigh, "not loaded",
        fmt::format("{} NVIDIA GPUs are on the PCI bus but no NVIDIA driver is loaded", on_bus));
    f.expected = "a loaded NVIDIA driver (/proc/driver/nvidia/version)";
    f.remediation =
        "Install the NVIDIA driver or load it (modprobe nvidia), then look for NVRM errors in "
        "the kernel log.";
    findings.push_back(std::move(f));
  } else {
    findings.push_back(Make("gpu.driver", CheckStatus::kSkip, Severity::kInfo, "not loaded",
                            "no NVIDIA driver is loaded (/proc/driver/nvidia/version is absent)"));
  }

  if (!driver.loaded || on_bus == 0) {
    findings.push_back(Make("gpu.visible", CheckStatus::kSkip, Severity::kInfo, "",
                            "comparing the PCI bus with the driver's GPU list needs both GPUs "
                            "and a loaded driver"));
    return findings;
  }
  std::vector<std::string> missing;
  for (const PciDevice& device : gpu.nvidia_pci) {
    const bool known = std::any_of(driver.gpus.begin(), driver.gpus.end(), [&](const auto& bus) {
      return ToLower(bus) == ToLower(device.address);
    });
    if (!known) missing.push_back(device.address);
  }
  const size_t visible = on_bus - missing.size();
  if (missing.empty()) {
    findings.push_back(
        Make("gpu.visible", CheckStatus::kPass, Severity::kInfo,
             fmt::format("{} of {}", visible, on_bus),
             fmt::format("all {} GPUs on the PCI bus are known to the driver", on_bus)));
  } else {
    Finding f = Make("gpu.visible", CheckStatus::kFail, Severity::kCritical,
                     fmt::format("{} of {}", visible, on_bus),
                     fmt::format("{} GPU{} on the PCI bus {} unknown to the driver: {}",
                                 missing.size(), missing.size() == 1 ? "" : "s",
                                 missing.size() == 1 ? "is" : "are", Join(missing, ", ")));
    f.expected = fmt::format("{} of {}", on_bus, on_bus);
    f.remediation =
        "A GPU the bus lists but the driver lost has usually fallen off the bus (XID 79): "
        "drain the node, reset the GPU or reboot, and send it for repair if it recurs.";
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<EvidenceItem> GpuEvidence(const GpuFacts& gpu) {
  Json bus = Json::array();
  for (const PciDevice& d : gpu.nvidia_pci) bus.push_back(d.address);
  Json known = Json::array();
  for (const std::string& b : gpu.driver.gpus) {
    auto model = gpu.driver.models.find(b);
    known.push_back({{"bus", b}, {"model", model == gpu.driver.models.end() ? "" : model->second}});
  }
  return {Evidence("gpu.pci", bus),
          Evidence("gpu.driver", {{"loaded", gpu.driver.loaded},
                                  {"version", gpu.driver.version},
                                  {"open_kernel_module", gpu.driver.open_kernel_module},
                                  {"gpus", known}})};
}

std::vector<Finding> SchedulerFindings(const SchedulerFacts& scheduler) {
  std::vector<Finding> findings;
  const SlurmPresence& slurm = scheduler.slurm;
  if (slurm.sinfo_path.empty()) {
    findings.push_back(Make("scheduler.slurm", CheckStatus::kSkip, Severity::kInfo, "absent",
                            "no Slurm client on this host (sinfo is not on PATH)"));
  } else if (slurm.conf_path.empty()) {
    findings.push_back(Make("scheduler.slurm", CheckStatus::kSkip, Severity::kInfo,
                            slurm.version.empty()
                                ? "client, no configuration"
                                : "client " + slurm.version + ", no configuration",
                            "Slurm commands are installed but no slurm.conf was found "
                            "(SLURM_CONF, /etc/slurm/slurm.conf)"));
  } else if (slurm.controller_up) {
    findings.push_back(Make("scheduler.slurm", CheckStatus::kPass, Severity::kInfo,
                            "Slurm " + slurm.version + ", controller up",
                            fmt::format("Slurm {} client ({}): {}", slurm.version, slurm.conf_path,
                                        slurm.controller_detail)));
  } else {
    Finding f =
        Make("scheduler.slurm", CheckStatus::kWarn, Severity::kMedium, "controller not answering",
             fmt::format("slurm.conf {} names a controller that does not answer: {}",
                         slurm.conf_path, slurm.controller_detail));
    f.expected = "scontrol ping: UP";
    f.remediation = "Check that slurmctld runs and that SlurmctldHost in slurm.conf is reachable.";
    findings.push_back(std::move(f));
  }
  const KubernetesPresence& k8s = scheduler.kubernetes;
  if (k8s.in_cluster) {
    findings.push_back(Make("scheduler.kubernetes", CheckStatus::kPass, Severity::kInfo,
                            "in-cluster", "running in a Kubernetes pod with a service account"));
  } else if (!k8s.context.empty()) {
    findings.push_back(
        Make("scheduler.kubernetes", CheckStatus::kPass, Severity::kInfo, k8s.context,
             fmt::format("kubeconfig {} with context '{}'", k8s.kubeconfig, k8s.context)));
  } else {
    findings.push_back(Make("scheduler.kubernetes", CheckStatus::kSkip, Severity::kInfo, "absent",
                            k8s.kubeconfig.empty()
                                ? "no Kubernetes context (no service account, no kubeconfig)"
                                : "kubeconfig " + k8s.kubeconfig + " has no current-context"));
  }
  return findings;
}

std::vector<EvidenceItem> SchedulerEvidence(const SchedulerFacts& scheduler, const Target& target) {
  const SlurmPresence& s = scheduler.slurm;
  const KubernetesPresence& k = scheduler.kubernetes;
  return {Evidence("scheduler.slurm", {{"sinfo", s.sinfo_path},
                                       {"conf", s.conf_path},
                                       {"version", s.version},
                                       {"controller_checked", s.controller_checked},
                                       {"controller_up", s.controller_up},
                                       {"controller_detail", s.controller_detail}}),
          Evidence(
              "scheduler.kubernetes",
              {{"in_cluster", k.in_cluster}, {"kubeconfig", k.kubeconfig}, {"context", k.context}}),
          Evidence("target", {{"environment", target.environment},
                              {"scheduler", target.scheduler},
                              {"name", target.Name()}})};
}

}  // namespace cmax::audit
