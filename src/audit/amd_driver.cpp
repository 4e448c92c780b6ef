#include "audit/amd_driver.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <regex>
#include <set>

#include "audit/local_evidence.hpp"
#include "core/strings.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

constexpr size_t kSmallFile = size_t{64} << 10;
// pci.ids is about 1.5 MB today.
constexpr size_t kPciIds = size_t{8} << 20;
constexpr const char* kPciDevices = "/sys/bus/pci/devices";
constexpr const char* kDkmsTree = "/var/lib/dkms/amdgpu";

std::string ReadTrimmed(const sys::FileSystem& fs, const std::string& path) {
  auto text = fs.ReadFile(path, kSmallFile);
  return text ? std::string(Trim(*text)) : std::string();
}

// A program's standard output when it ran and succeeded in time; nothing otherwise.
std::optional<std::string> Answer(sys::ProcessRunner& runner, std::vector<std::string> argv,
                                  Duration timeout) {
  sys::ProcessSpec spec{.argv = std::move(argv), .env_add = {"LC_ALL=C"}, .timeout = timeout};
  spec.output_cap = size_t{256} << 10;
  auto ran = runner.Run(spec);
  if (!ran || !ran->Succeeded()) return std::nullopt;
  return std::move(ran->stdout_text);
}

struct InstalledPolicy {
  std::string version;
  std::vector<std::string> origins;
};

std::optional<InstalledPolicy> ParsePolicy(std::string_view policy) {
  std::optional<InstalledPolicy> out;
  bool in_installed = false;
  for (std::string_view line : SplitLines(policy)) {
    const std::vector<std::string_view> fields = SplitFields(line);
    if (fields.empty()) continue;
    if (fields[0] == "***" && fields.size() >= 2) {
      out = InstalledPolicy{.version = std::string(fields[1])};
      in_installed = true;
      continue;
    }
    const bool origin =
        fields.size() >= 2 &&
        std::all_of(fields[0].begin(), fields[0].end(),
                    [](char c) { return c >= '0' && c <= '9'; }) &&
        (fields[1].starts_with("/") || fields[1].find("://") != std::string_view::npos ||
         fields[1].starts_with("file:"));
    if (!origin) {
      in_installed = false;  // another version's line: the installed one's origins are over
      continue;
    }
    if (in_installed && fields[1] != "/var/lib/dpkg/status") {
      std::string where(fields[1]);
      if (fields.size() >= 3) where += " " + std::string(fields[2]);
      where = SanitizeUtf8(where);
      // The same repository once per architecture is still one origin.
      if (std::ranges::find(out->origins, where) == out->origins.end()) {
        out->origins.push_back(std::move(where));
      }
    }
  }
  return out;
}

// Where the chain breaks: the release stays unknown, and why is kept beside what was read.
void Unproved(AuditEvidence& out, json driver, std::string why) {
  driver["problem"] = std::move(why);
  out["gpu.amd.driver"] = std::move(driver);
  out["gpu.amd.driver.version"] = nullptr;
}

// The module file DKMS built for `kernel` from source `version` (amdgpu.ko, .ko.xz, .ko.zst).
std::string DkmsBuiltModule(const sys::FileSystem& fs, const std::string& version,
                            const std::string& kernel) {
  const std::string base = std::string(kDkmsTree) + "/" + version + "/" + kernel;
  const auto arches = fs.ListDir(base);
  if (!arches) return {};
  for (const std::string& arch : *arches) {
    const auto files = fs.ListDir(base + "/" + arch + "/module");
    if (!files) continue;
    for (const std::string& file : *files) {
      if (file.starts_with("amdgpu.ko")) return base + "/" + arch + "/module/" + file;
    }
  }
  return {};
}

void CollectBinding(const sys::FileSystem& fs, sys::ProcessRunner& runner, const std::string& path,
                    Duration timeout, AuditEvidence& out) {
  json driver = json::object();
  if (!fs.IsDirectory("/sys/module/amdgpu")) {
    return Unproved(out, driver, "the amdgpu module is not loaded");
  }
  const std::string loaded_version = ReadTrimmed(fs, "/sys/module/amdgpu/version");
  const std::string loaded_src = ReadTrimmed(fs, "/sys/module/amdgpu/srcversion");
  driver["loaded"] = {{"version", loaded_version.empty() ? json() : json(loaded_version)},
                      {"srcversion", loaded_src.empty() ? json() : json(loaded_src)}};
  const auto modinfo = FindProgram(fs, path, "modinfo", {"/usr/sbin", "/sbin"});
  if (!modinfo) return Unproved(out, driver, "modinfo is not here: the installed module is unread");
  const auto info_text = Answer(runner, {*modinfo, "amdgpu"}, timeout);
  if (!info_text) return Unproved(out, driver, "modinfo amdgpu did not answer");
  const ModuleInfo installed = ParseModinfo(*info_text);
  driver["installed"] = {{"file", installed.filename},
                         {"version", installed.version},
                         {"srcversion", installed.srcversion}};
  if (installed.filename.empty()) {
    return Unproved(out, driver, "modinfo names no file for amdgpu");
  }
  if (installed.filename == "(builtin)") {
    return Unproved(out, driver,
                    "amdgpu is built into the kernel: a distribution's build, for which AMD's "
                    "bulletins give no status");
  }
  if (loaded_src.empty() || installed.srcversion.empty()) {
    return Unproved(out, driver, "no srcversion ties the loaded module to a file");
  }
  if (loaded_src != installed.srcversion) {
    return Unproved(out, driver,
                    fmt::format("the loaded amdgpu (srcversion {}) is not the installed {} ({}): "
                                "an update not loaded yet; reload the module or reboot",
                                loaded_src, installed.filename, installed.srcversion));
  }
  // A DKMS build belongs to no package: its source does, and DKMS's record says which source
  // it was built from for the running kernel.
  std::string owned = installed.filename;
  const bool dkms = installed.filename.find("/updates/dkms/") != std::string::npos;
  if (dkms) {
    const std::string kernel = ReadTrimmed(fs, "/proc/sys/kernel/osrelease");
    std::vector<std::string> built;
    if (const auto versions = fs.ListDir(kDkmsTree); versions && !kernel.empty()) {
      for (const std::string& version : *versions) {
        // Source versions start with a digit; DKMS keeps other folders beside them
        // (original_module).
        if (version.empty() || version[0] < '0' || version[0] > '9') continue;
        if (fs.IsDirectory(std::string(kDkmsTree) + "/" + version + "/" + kernel)) {
          built.push_back(version);
        }
      }
    }
    if (built.size() != 1) {
      return Unproved(out, driver,
                      built.empty()
                          ? fmt::format("DKMS records no amdgpu build for kernel {}", kernel)
                          : fmt::format("DKMS records {} amdgpu builds for kernel {}: {}",
                                        built.size(), kernel, Join(built, ", ")));
    }
    driver["dkms"] = built[0];
    const std::string module = DkmsBuiltModule(fs, built[0], kernel);
    const auto built_src = module.empty()
                               ? std::nullopt
                               : Answer(runner, {*modinfo, "-F", "srcversion", module}, timeout);
    if (!built_src || std::string(Trim(*built_src)) != installed.srcversion) {
      return Unproved(out, driver,
                      fmt::format("the installed module is not DKMS's build of amdgpu {}{}",
                                  built[0], module.empty() ? " (its module file is gone)" : ""));
    }
    owned = "/usr/src/amdgpu-" + built[0] + "/dkms.conf";
  }
  const auto dpkg_query = FindProgram(fs, path, "dpkg-query");
  if (!dpkg_query) {
    return Unproved(out, driver,
                    "dpkg-query is not here: cmax reads Debian and Ubuntu packages only (an RPM "
                    "install needs the provider's evidence)");
  }
  const auto owner_text = Answer(runner, {*dpkg_query, "-S", owned}, timeout);
  const std::string owner = owner_text ? ParseDpkgOwner(*owner_text) : std::string();
  if (owner.empty()) {
    return Unproved(out, driver, fmt::format("no one package owns {}", owned));
  }
  driver["package"] = owner;
  if (dkms && owner != "amdgpu-dkms") {
    return Unproved(out, driver,
                    fmt::format("the DKMS source {} belongs to {}, not amdgpu-dkms", owned, owner));
  }
  const auto version_text = Answer(runner, {*dpkg_query, "-W", "-f=${Version}", owner}, timeout);
  const std::string version = version_text ? std::string(Trim(*version_text)) : std::string();
  if (version.empty()) {
    return Unproved(out, driver, fmt::format("dpkg gives no installed version of {}", owner));
  }
  driver["package_version"] = version;
  const auto apt_cache = FindProgram(fs, path, "apt-cache");
  // Run as root with a stale cache, apt-cache would rewrite /var/cache/apt/*.bin: empty cache
  // file names keep the cache it builds in memory.
  const auto policy_text = apt_cache ? Answer(runner,
                                              {*apt_cache, "-o", "Dir::Cache::pkgcache=", "-o",
                                               "Dir::Cache::srcpkgcache=", "policy", owner},
                                              timeout)
                                     : std::nullopt;
  const auto policy = policy_text ? ParsePolicy(*policy_text) : std::nullopt;
  if (!policy || policy->version != version) {
    return Unproved(out, driver,
                    fmt::format("apt's metadata does not list {} {} as installed", owner, version));
  }
  driver["origins"] = policy->origins;
  if (policy->origins.size() != 1) {
    return Unproved(
        out, driver,
        policy->origins.empty()
            ? fmt::format("{} {} is in no repository apt knows: its release cannot be read", owner,
                          version)
            : fmt::format("{} {} is offered by {} repositories: not one release", owner, version,
                          policy->origins.size()));
  }
  const std::string release = AmdRepositoryRelease(policy->origins[0]);
  if (release.empty()) {
    const bool amds = policy->origins[0].find("repo.radeon.com/amdgpu/") != std::string::npos;
    return Unproved(
        out, driver,
        amds ? fmt::format("{} {} comes from {}, which names no numbered release (latest moves)",
                           owner, version, policy->origins[0])
             : fmt::format("{} {} comes from {}, not AMD's repository: AMD's bulletins give "
                           "no status for other builds",
                           owner, version, policy->origins[0]));
  }
  driver["release"] = release;
  out["gpu.amd.driver"] = std::move(driver);
  out["gpu.amd.driver.version"] = release;
}

}  // namespace

std::vector<std::string> InstinctModels(std::string_view name) {
  // The PCI ID database puts the marketing name in brackets after the code name.
  const size_t open = name.rfind('[');
  const size_t close = name.rfind(']');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
    name = name.substr(open + 1, close - open - 1);
  }
  static const std::regex kModel(R"((^|[^A-Za-z0-9])(MI[0-9]{3}[A-Z]?)(?![A-Za-z0-9]))");
  std::vector<std::string> out;
  const std::string text(name.substr(0, 512));
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kModel);
       it != std::sregex_iterator(); ++it) {
    std::string model = (*it)[2].str();
    if (std::ranges::find(out, model) == out.end()) out.push_back(std::move(model));
  }
  return out;
}

std::string PciIdsDeviceName(std::string_view pci_ids, std::string_view vendor,
                             std::string_view device) {
  bool in_vendor = false;
  for (std::string_view line : SplitLines(pci_ids)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != '\t') {  // a vendor's line, or the device classes at the end
      if (in_vendor) return {};
      in_vendor =
          line.starts_with(vendor) && line.size() > vendor.size() && line[vendor.size()] == ' ';
      continue;
    }
    if (!in_vendor || line.size() < 2 || line[1] == '\t') continue;  // a subsystem's line
    const std::string_view entry = line.substr(1);
    if (entry.starts_with(device) && entry.size() > device.size() && entry[device.size()] == ' ') {
      return std::string(Trim(entry.substr(device.size())));
    }
  }
  return {};
}

ModuleInfo ParseModinfo(std::string_view output) {
  ModuleInfo info;
  for (std::string_view line : SplitLines(output)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string value(Trim(line.substr(colon + 1)));
    // The first of each: the module's own fields come before its dependencies' and parameters.
    if (key == "filename" && info.filename.empty()) info.filename = SanitizeUtf8(value);
    if (key == "version" && info.version.empty()) info.version = SanitizeUtf8(value);
    if (key == "srcversion" && info.srcversion.empty()) info.srcversion = SanitizeUtf8(value);
  }
  return info;
}

std::string ParseDpkgOwner(std::string_view output) {
  std::string owner;
  for (std::string_view line : SplitLines(output)) {
    if (line.starts_with("diversion ")) return {};
    const size_t colon = line.find(": /");  // "package: /path"; dpkg's own words are not
    if (colon == std::string_view::npos) continue;
    const std::string_view packages = line.substr(0, colon);
    if (packages.find(',') != std::string_view::npos || !owner.empty()) return {};
    // "amdgpu-dkms:amd64" names the architecture too.
    owner = std::string(packages.substr(0, packages.find(':')));
  }
  return SanitizeUtf8(owner);
}

std::optional<std::vector<std::string>> InstalledOrigins(std::string_view policy) {
  auto parsed = ParsePolicy(policy);
  if (!parsed) return std::nullopt;
  return std::move(parsed->origins);
}

std::string AmdRepositoryRelease(std::string_view origin) {
  static const std::regex kRepository(
      R"(^https?://repo\.radeon\.com/amdgpu/([0-9]+(?:\.[0-9]+){0,3})/ubuntu/?(?:\s|$))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(origin.begin(), origin.end(), m, kRepository)) return {};
  return m[1].str();
}

void CollectAmdDriver(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                      const std::string& path, Duration timeout, AuditEvidence& out) {
  const auto addresses = fs.ListDir(kPciDevices);
  if (!addresses) return;
  int64_t devices = 0;
  int64_t nvidia = 0;
  std::set<std::string> models;
  std::optional<std::string> pci_ids;
  bool pci_ids_tried = false;
  for (const std::string& address : *addresses) {
    const std::string dir = std::string(kPciDevices) + "/" + address;
    const std::string vendor = ReadTrimmed(fs, dir + "/vendor");
    if (vendor != "0x1002" && vendor != "0x10de") continue;
    const std::string pci_class = ReadTrimmed(fs, dir + "/class");
    // Display controllers (NVIDIA's; Instinct up to MI250X) and processing accelerators (MI300
    // on).
    if (!pci_class.starts_with("0x03") && !pci_class.starts_with("0x12")) continue;
    if (vendor == "0x10de") {
      ++nvidia;
      continue;
    }
    ++devices;
    std::vector<std::string> named = InstinctModels(ReadTrimmed(fs, dir + "/product_name"));
    if (named.empty()) {
      if (!pci_ids_tried) {
        pci_ids_tried = true;
        for (const char* file : {"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"}) {
          if (auto text = fs.ReadFile(file, kPciIds)) {
            pci_ids = std::move(*text);
            break;
          }
        }
      }
      const std::string device = ReadTrimmed(fs, dir + "/device");
      if (pci_ids && device.starts_with("0x")) {
        named = InstinctModels(PciIdsDeviceName(*pci_ids, "1002", device.substr(2)));
      }
    }
    models.insert(named.begin(), named.end());
  }
  out["gpu.nvidia.devices"] = nvidia;
  out["gpu.amd.devices"] = devices;
  out["gpu.amd.models"] = std::vector<std::string>(models.begin(), models.end());
  if (devices > 0) CollectBinding(fs, runner, path, timeout, out);
}

}  // namespace cmax::audit
