#include "inject/target.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "core/strings.hpp"
#include "inject/kernel_lines.hpp"

namespace cmax::inject {

std::vector<std::string> Refusals(const TargetFacts& t, const SafetyFlags& f) {
  std::vector<std::string> why;
  if (!t.local) {
    why.push_back(fmt::format(
        "{} is not this host: run cmax inject on it (for example `srun -w {} --overlap cmax "
        "inject ...`)",
        t.node, ShellWord(t.node)));
  }
  if (t.scheduler_known && !t.in_scheduler) {
    why.push_back(fmt::format("{} is not a node the scheduler knows", t.node));
  }
  if (t.drained) {
    why.push_back(fmt::format(
        "{} is already out of service ({}): a fault now would stack on the one being handled; "
        "resume it first",
        t.node, t.drain_reason.empty() ? "drained" : t.drain_reason));
  }
  if (t.lab && f.resets_gpu) {
    why.push_back(fmt::format(
        "{} is a lab node: it has no GPU of its own, and the bus reset would be this host's",
        t.node));
  }
  if (f.destructive && !f.allow_destructive) {
    why.push_back("this injector changes the hardware's state: say --allow-destructive");
  }
  // A fault in the log only still hits the node's jobs: the provider's checks drain the node
  // and requeue them, as they are meant to.
  if (t.runs_jobs && !f.force) {
    why.push_back(fmt::format(
        "{} runs jobs, which the provider's answer to the fault (a drain, a requeue) would end: "
        "say --force to inject anyway",
        t.node));
  }
  if (f.destructive && !t.scheduler_known && !f.force) {
    // Unknown is not idle: a destructive fault on a node whose jobs no one could see would hit
    // them.
    why.push_back(fmt::format(
        "no scheduler said whether {} runs jobs (no Slurm here, or it did not answer; cmax does "
        "not ask Kubernetes): say --force to inject anyway",
        t.node));
  }
  if (!f.dry_run) {
    if (!t.root) why.push_back("must run as root (writing /dev/kmsg needs it)");
    if (t.lab_beside_gpus && !f.yes) {
      why.push_back(fmt::format(
          "{} is a lab node, but this host has NVIDIA GPUs: the fault goes to the kernel log "
          "they share, where this host's own health checks read it as real; say --yes to "
          "inject anyway",
          t.node));
    }
    if (!t.lab && !f.yes) {
      why.push_back(fmt::format(
          "{} is not a lab node: say --yes to inject a real fault, which the provider's health "
          "checks will act on",
          t.node));
    }
  }
  // The node's name and its drain reason come from the user and the scheduler.
  for (std::string& reason : why) reason = SanitizeUtf8(reason);
  return why;
}

Result<std::string> ResolveGpu(std::string_view gpu, const std::vector<std::string>& node_gpus,
                               const sys::FileSystem& fs, bool lab, bool force) {
  const std::string text(Trim(gpu));
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      })) {
    const size_t index = std::stoul(text);
    if (node_gpus.empty()) {
      return Fail(ErrorCode::kNotFound,
                  "GPU {} by index needs NVML, which is not available here; give its PCI address",
                  text);
    }
    if (index >= node_gpus.size()) {
      return Fail(ErrorCode::kNotFound, "there is no GPU {} (this node has {})", text,
                  node_gpus.size());
    }
    return FullPciAddress(node_gpus[index]);
  }
  auto pci = FullPciAddress(text);
  if (!pci) return pci;
  if (!node_gpus.empty()) {
    for (const std::string& have : node_gpus) {
      auto normal = FullPciAddress(have);
      if (normal && *normal == *pci) return pci;
    }
    if (!force) {
      return Fail(ErrorCode::kNotFound, "{} is not one of this node's GPUs ({})", *pci,
                  Join(node_gpus, ", "));
    }
    return pci;
  }
  if (lab || force) return pci;
  const std::string vendor = "/sys/bus/pci/devices/" + *pci + "/vendor";
  auto v = fs.ReadFile(vendor, 64);
  if (!v || Trim(*v) != "0x10de") {
    return Fail(ErrorCode::kNotFound,
                "no NVIDIA device at {} on this host (and no NVML to ask); --force to inject "
                "anyway",
                *pci);
  }
  return pci;
}

}  // namespace cmax::inject
