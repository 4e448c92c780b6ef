#include "audit/pci_evidence.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

constexpr size_t kExtendedStart = 0x100;
constexpr size_t kConfigSize = 4096;
constexpr uint16_t kAcsCapability = 0x000D;

uint32_t Dword(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return value;
}

bool IsPciAddress(std::string_view part) {
  // dddd:bb:dd.f, hexadecimal.
  if (part.size() != 12 || part[4] != ':' || part[7] != ':' || part[10] != '.') return false;
  for (size_t i = 0; i < part.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (std::isxdigit(static_cast<unsigned char>(part[i])) == 0) return false;
  }
  return true;
}

std::optional<std::string> Read(const sys::FileSystem& fs, const std::string& path) {
  auto text = fs.ReadFile(path, kConfigSize + 1);
  if (!text) return std::nullopt;
  return std::move(*text);
}

std::string Word(const sys::FileSystem& fs, const std::string& path) {
  const auto text = Read(fs, path);
  return text ? ToLower(Trim(*text)) : std::string();
}

const std::string kDevices = "/sys/bus/pci/devices";

// A device's chain of addresses from its root port, from where its sysfs entry points; itself
// alone when the entry is not a link.
std::vector<std::string> ChainOf(const sys::FileSystem& fs, const std::string& address) {
  auto link = fs.ReadLink(kDevices + "/" + address);
  std::vector<std::string> chain = link ? PciPath(*link) : std::vector<std::string>{};
  if (chain.empty() || chain.back() != address) chain = {address};
  return chain;
}

// One bridge's ACS as the evidence holds it: null when its registers could not be read.
json BridgeAcs(const sys::FileSystem& fs, const std::string& bridge) {
  const auto config = Read(fs, kDevices + "/" + bridge + "/config");
  const auto acs = config ? ParseAcsControl(*config) : std::nullopt;
  json out = {{"bridge", bridge}};
  if (!acs) {
    out["acsctl"] = nullptr;
  } else if (!acs->present) {
    out["acsctl"] = "";  // no ACS capability: nothing to redirect
    out["redirects"] = false;
  } else {
    out["acsctl"] = AcsControlText(acs->bits);
    out["redirects"] = AcsRedirects(acs->bits);
  }
  return out;
}

struct Endpoint {
  std::string name;  // the GPU's address, or the RDMA device's name
  std::vector<std::string> chain;
};

void AcsPaths(const sys::FileSystem& fs, const std::vector<std::string>& devices,
              AuditEvidence& out) {
  std::vector<Endpoint> gpus;
  for (const std::string& address : devices) {
    const std::string vendor = Word(fs, kDevices + "/" + address + "/vendor");
    const std::string klass = Word(fs, kDevices + "/" + address + "/class");
    const bool display = klass.starts_with("0x0300") || klass.starts_with("0x0302");
    if (display && (vendor == "0x10de" || vendor == "0x1002")) {
      gpus.push_back({address, ChainOf(fs, address)});
    }
  }
  std::vector<Endpoint> nics;
  if (const auto names = fs.ListDir("/sys/class/infiniband")) {
    for (const std::string& name : *names) {
      const auto link = fs.ReadLink("/sys/class/infiniband/" + name + "/device");
      const std::vector<std::string> own = link ? PciPath(*link) : std::vector<std::string>{};
      if (own.empty()) continue;  // not a PCI device (a software RDMA device such as rxe)
      nics.push_back({SanitizeUtf8(name) + " (" + own.back() + ")", ChainOf(fs, own.back())});
    }
  }
  std::map<std::string, json> bridges;  // read once however many pairs share them
  json pairs = json::array();
  for (const Endpoint& gpu : gpus) {
    for (const Endpoint& nic : nics) {
      // The bridges above each device (its own address, last, is not one of them).
      const std::vector<std::string> up_gpu(gpu.chain.begin(), gpu.chain.end() - 1);
      const std::vector<std::string> up_nic(nic.chain.begin(), nic.chain.end() - 1);
      size_t common = 0;
      while (common < up_gpu.size() && common < up_nic.size() && up_gpu[common] == up_nic[common]) {
        ++common;
      }
      json pair = {{"gpu", gpu.name}, {"nic", nic.name}, {"shared", nullptr}};
      json path = json::array();
      if (common > 0) {
        pair["shared"] = up_gpu[common - 1];
        std::vector<std::string> on_path = {up_gpu[common - 1]};
        on_path.insert(on_path.end(), up_gpu.begin() + static_cast<ptrdiff_t>(common),
                       up_gpu.end());
        on_path.insert(on_path.end(), up_nic.begin() + static_cast<ptrdiff_t>(common),
                       up_nic.end());
        for (const std::string& bridge : on_path) {
          auto [it, added] = bridges.try_emplace(bridge);
          if (added) it->second = BridgeAcs(fs, bridge);
          path.push_back(it->second);
        }
      }
      pair["bridges"] = path;
      pairs.push_back(std::move(pair));
    }
  }
  out["pci.acs.path_bridges"] = pairs;
}

void BlueField(const sys::FileSystem& fs, const std::vector<std::string>& devices,
               AuditEvidence& out) {
  json found = json::array();
  for (const std::string& address : devices) {
    // BlueField-3's integrated ConnectX (DPU and SuperNIC).
    const std::string device = Word(fs, kDevices + "/" + address + "/device");
    if (Word(fs, kDevices + "/" + address + "/vendor") == "0x15b3" &&
        (device == "0xa2dc" || device == "0xa2d9")) {
      found.push_back(address);
    }
  }
  out["network.bluefield.devices"] = found;
  // Any RShim instance (/dev/rshim0, /dev/rshim1 ...) and any tmfifo interface.
  const auto any_named = [&](const char* dir, std::string_view prefix) {
    const auto names = fs.ListDir(dir);
    return names && std::ranges::any_of(
                        *names, [&](const std::string& name) { return name.starts_with(prefix); });
  };
  out["network.bluefield.rshim"] = any_named("/dev", "rshim");
  out["network.bluefield.tmfifo"] = any_named("/sys/class/net", "tmfifo_net");
}

}  // namespace

std::optional<AcsControl> ParseAcsControl(std::string_view config) {
  // 64 bytes: not root. 256: the extended space cannot be reached (a bridge always has one,
  // but without MMCONFIG the kernel reads only the first 256 bytes). Neither says "no ACS".
  if (config.size() < kExtendedStart + 4) return std::nullopt;
  std::set<size_t> seen;
  for (size_t at = kExtendedStart; at != 0;) {
    if (at < kExtendedStart || at % 4 != 0 || at + 4 > config.size() || !seen.insert(at).second) {
      return std::nullopt;
    }
    const uint32_t header = Dword(config, at);
    if (header == 0xffffffffU) return std::nullopt;  // the device did not answer
    if (header == 0) return AcsControl{};            // an empty list
    if ((header & 0xffffU) == kAcsCapability) {
      if (at + 8 > config.size()) return std::nullopt;
      const uint32_t registers = Dword(config, at + 4);
      return AcsControl{.present = true, .bits = static_cast<uint16_t>(registers >> 16)};
    }
    at = (header >> 20) & 0xffcU;
  }
  return AcsControl{};
}

std::string AcsControlText(uint16_t bits) {
  static constexpr const char* kNames[] = {"SrcValid",    "TransBlk",   "ReqRedir",   "CmpltRedir",
                                           "UpstreamFwd", "EgressCtrl", "DirectTrans"};
  std::string out;
  for (size_t bit = 0; bit < std::size(kNames); ++bit) {
    out += (out.empty() ? "" : " ") + std::string(kNames[bit]) + ((bits >> bit) & 1U ? "+" : "-");
  }
  return out;
}

bool AcsRedirects(uint16_t bits) {
  constexpr uint16_t kRequestRedirect = 1U << 2;
  constexpr uint16_t kCompletionRedirect = 1U << 3;
  constexpr uint16_t kEgressControl = 1U << 5;
  return (bits & (kRequestRedirect | kCompletionRedirect | kEgressControl)) != 0;
}

std::vector<std::string> PciPath(std::string_view sysfs_path) {
  std::vector<std::string> out;
  for (std::string_view part : Split(sysfs_path, '/')) {
    if (IsPciAddress(part)) out.push_back(ToLower(part));
  }
  return out;
}

void CollectPciEvidence(const sys::FileSystem& fs, AuditEvidence& out) {
  const auto devices = fs.ListDir(kDevices);
  if (!devices) return;
  AcsPaths(fs, *devices, out);
  BlueField(fs, *devices, out);
}

}  // namespace cmax::audit
