#include "inject/pcie_sbr.hpp"

#include <fmt/format.h>
#include <thread>

#include "core/strings.hpp"
#include "inject/kernel_lines.hpp"

namespace cmax::inject {
namespace {

constexpr const char* kDevices = "/sys/bus/pci/devices/";

std::string Attribute(const sys::FileSystem& fs, const std::string& device, const char* name) {
  auto text = fs.ReadFile(kDevices + device + "/" + name, 64);
  return text ? ToLower(Trim(*text)) : std::string();
}

// "0000:17:00.0" -> "0000:17:00": the functions of one device share it.
std::string Slot(std::string_view pci) {
  return std::string(pci.substr(0, pci.rfind('.')));
}

bool LooksLikePci(std::string_view name) {
  return FullPciAddress(name).has_value() && name.size() == 12;
}

}  // namespace

bool IsNvidiaGpu(const sys::FileSystem& fs, const std::string& address) {
  const std::string cls = Attribute(fs, address, "class");
  return Attribute(fs, address, "vendor") == "0x10de" &&
         (cls.starts_with("0x0300") || cls.starts_with("0x0302"));
}

Result<SbrPlan> PlanSecondaryBusReset(const sys::FileSystem& fs, std::string_view gpu_pci) {
  auto gpu = FullPciAddress(gpu_pci);
  if (!gpu) return tl::unexpected(gpu.error());
  const std::string vendor = Attribute(fs, *gpu, "vendor");
  const std::string cls = Attribute(fs, *gpu, "class");
  if (vendor.empty()) {
    return Fail(ErrorCode::kNotFound, "no PCI device {} on this host", *gpu);
  }
  if (!IsNvidiaGpu(fs, *gpu)) {
    return Fail(ErrorCode::kPermissionDenied,
                "{} is not an NVIDIA GPU (vendor {}, class {}): refusing to reset its bus", *gpu,
                vendor, cls);
  }
  // sysfs links each device into the tree: .../pci0000:00/0000:00:01.0/0000:01:00.0
  auto link = fs.ReadLink(kDevices + *gpu);
  if (!link)
    return Fail(ErrorCode::kNotFound, "cannot find where {} sits: {}", *gpu, link.error().message);
  const std::vector<std::string_view> path = Split(*link, '/');
  if (path.size() < 2 || path.back() != *gpu || !LooksLikePci(path[path.size() - 2])) {
    return Fail(ErrorCode::kPermissionDenied,
                "{} has no PCI bridge above it (it sits on a root bus): no secondary bus to reset",
                *gpu);
  }
  SbrPlan plan;
  plan.gpu = *gpu;
  plan.bridge = std::string(path[path.size() - 2]);
  if (!Attribute(fs, plan.bridge, "class").starts_with("0x0604")) {
    return Fail(ErrorCode::kPermissionDenied, "{} above {} is not a PCI bridge: refusing",
                plan.bridge, *gpu);
  }
  // Everything below the bridge is reset with it: only this GPU's own functions may be there.
  auto below = fs.ListDir(kDevices + plan.bridge);
  if (!below) return tl::unexpected(below.error());
  std::vector<std::string> others;
  for (const std::string& name : *below) {
    if (LooksLikePci(name) && Slot(name) != Slot(*gpu)) others.push_back(name);
  }
  if (!others.empty()) {
    return Fail(ErrorCode::kPermissionDenied,
                "the bridge {} above {} also has {} below it: a bus reset would hit them too",
                plan.bridge, *gpu, Join(others, ", "));
  }
  plan.assert_reset = {"setpci", "-s", plan.bridge, "BRIDGE_CONTROL=0x40:0x40"};
  plan.release_reset = {"setpci", "-s", plan.bridge, "BRIDGE_CONTROL=0x00:0x40"};
  return plan;
}

Result<void> RunSecondaryBusReset(sys::ProcessRunner& runner, const SbrPlan& plan) {
  const auto run = [&runner](const std::vector<std::string>& argv) -> Result<void> {
    auto r = runner.Run({.argv = argv});
    if (!r) return tl::unexpected(r.error());
    if (!r->Succeeded()) {
      return Fail(ErrorCode::kIo, "{}: {}: {}", Join(argv, " "), r->Describe(),
                  std::string(Trim(r->stderr_text)));
    }
    return {};
  };
  if (auto ok = run(plan.assert_reset); !ok) return ok;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (auto ok = run(plan.release_reset); !ok) {
    return Fail(ErrorCode::kIo, "{}\n  the bridge may still hold the bus in reset: run `{}` now",
                ok.error().message, Join(plan.release_reset, " "));
  }
  return {};
}

}  // namespace cmax::inject
