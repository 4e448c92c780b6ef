// AMD's Linux GPU driver as a node runs it, for `versions.amd-driver`: which Instinct models are
// here (sysfs, named by the device's product_name or the PCI ID database), and which of AMD's
// driver releases the loaded amdgpu module provably is. AMD's bulletins name fixed releases of
// the driver package ("31.40"), not the module's own version, so the release is read from the
// one place that binds them on Debian and Ubuntu: the package that owns the module (or, for a
// DKMS build, its source) and the AMD repository that package came from. Each link of the chain
// is checked (loaded module = installed module = the package's build); a broken link leaves the
// release unknown with the reason, never guessed. Read-only: files, modinfo, dpkg-query and
// apt-cache, and only where an AMD GPU is.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/grading.hpp"
#include "core/clock.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::audit {

// The Instinct models a device name gives: "Aldebaran/MI200 [Instinct MI250X/MI250]" ->
// {MI250X, MI250} (the marketing name in brackets when there is one, as the PCI ID database
// writes it), "AMD Instinct MI300X OAM" -> {MI300X}; none for a Radeon.
std::vector<std::string> InstinctModels(std::string_view name);

// A device's name in the PCI ID database (pci.ids): the line of `device` below the line of
// `vendor` (both four lowercase hex digits); empty when absent.
std::string PciIdsDeviceName(std::string_view pci_ids, std::string_view vendor,
                             std::string_view device);

// `modinfo amdgpu`'s fields.
struct ModuleInfo {
  std::string filename;
  std::string version;
  std::string srcversion;
};
ModuleInfo ParseModinfo(std::string_view output);

// `dpkg-query -S PATH`: the package that owns the path ("amdgpu-dkms: /usr/src/..."); empty
// when none, or when several packages share it (a diversion: not one owner).
std::string ParseDpkgOwner(std::string_view output);

// `apt-cache policy PACKAGE`: the repositories the installed version ("***") is offered by
// (their URLs with suite and component, "https://repo.radeon.com/amdgpu/31.40/ubuntu
// noble/main"), without dpkg's own status file. nullopt when no installed version is listed.
std::optional<std::vector<std::string>> InstalledOrigins(std::string_view policy);

// The release in an AMD repository URL: "https://repo.radeon.com/amdgpu/31.40/ubuntu noble/main"
// -> "31.40"; empty for any other origin.
std::string AmdRepositoryRelease(std::string_view origin);

// Adds gpu.nvidia.devices and gpu.amd.devices (each vendor's display and accelerator functions:
// whether a node without a driver has GPUs at all) and gpu.amd.models; where there
// is one, gpu.amd.driver (the chain as read) and gpu.amd.driver.version (the release, null with
// gpu.amd.driver's "problem" when it cannot be proved). Left out when /sys/bus/pci cannot be
// listed.
void CollectAmdDriver(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                      const std::string& path, Duration timeout, AuditEvidence& out);

}  // namespace cmax::audit
