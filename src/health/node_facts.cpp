#include "health/node_facts.hpp"

#include "core/strings.hpp"

namespace cmax::health {
namespace {

std::string ReadTrimmed(const sys::FileSystem& fs, const std::string& path) {
  auto text = fs.ReadFile(path, 4096);
  return text ? std::string(Trim(*text)) : std::string();
}

int ReadInt(const sys::FileSystem& fs, const std::string& path) {
  return ParseWhole<int>(ReadTrimmed(fs, path)).value_or(0);
}

uint32_t ReadHex(const sys::FileSystem& fs, const std::string& path) {
  std::string text = ReadTrimmed(fs, path);
  if (text.rfind("0x", 0) == 0) text = text.substr(2);
  return ParseWhole<uint32_t>(text, 16).value_or(0);
}

// /proc/mounts writes space, tab, newline and backslash as \040, \011, \012, \134.
std::string Unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      if (const std::optional<int> value = ParseWhole<int>(text.substr(i + 1, 3), 8)) {
        out += static_cast<char>(*value);
        i += 3;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

}  // namespace

std::vector<PcieLink> CollectPcieLinks(const sys::FileSystem& fs) {
  std::vector<PcieLink> links;
  const std::string root = "/sys/bus/pci/devices";
  auto entries = fs.ListDir(root);
  if (!entries) return links;
  for (const std::string& address : *entries) {
    const std::string dir = root + "/" + address;
    const uint32_t vendor = ReadHex(fs, dir + "/vendor");
    const uint32_t class_code = ReadHex(fs, dir + "/class");
    const bool gpu = vendor == 0x10de && (class_code >> 16) == 0x03;
    const bool nic = (class_code >> 16) == 0x02 || (class_code >> 8) == 0x0c06;
    if (!gpu && !nic) continue;
    PcieLink link;
    link.address = address;
    link.gpu = gpu;
    link.current_width = ReadInt(fs, dir + "/current_link_width");
    link.max_width = ReadInt(fs, dir + "/max_link_width");
    link.current_speed = ReadTrimmed(fs, dir + "/current_link_speed");
    link.max_speed = ReadTrimmed(fs, dir + "/max_link_speed");
    if (link.max_width == 0) continue;  // no PCIe capability exposed (virtual devices)
    links.push_back(std::move(link));
  }
  return links;
}

std::string_view SysfsStateName(std::string_view text) {
  text = Trim(text);
  const size_t colon = text.find(':');
  return colon == std::string_view::npos ? text : Trim(text.substr(colon + 1));
}

std::vector<IbPort> CollectIbPorts(const sys::FileSystem& fs) {
  std::vector<IbPort> ports;
  const std::string root = "/sys/class/infiniband";
  auto devices = fs.ListDir(root);
  if (!devices) return ports;
  for (const std::string& device : *devices) {
    auto numbers = fs.ListDir(root + "/" + device + "/ports");
    if (!numbers) continue;
    for (const std::string& number : *numbers) {
      const std::string dir = root + "/" + device + "/ports/" + number;
      IbPort port;
      port.device = device;
      port.port = ParseWhole<int>(number).value_or(0);
      port.state = std::string(SysfsStateName(ReadTrimmed(fs, dir + "/state")));
      port.phys_state = std::string(SysfsStateName(ReadTrimmed(fs, dir + "/phys_state")));
      port.rate = ReadTrimmed(fs, dir + "/rate");
      port.link_layer = ReadTrimmed(fs, dir + "/link_layer");
      ports.push_back(std::move(port));
    }
  }
  return ports;
}

bool IsNetworkFilesystem(std::string_view fs_type) {
  static constexpr std::string_view kNetworkTypes[] = {
      "nfs",        "nfs4",      "lustre",       "cifs",      "smb3",      "beegfs",
      "gpfs",       "wekafs",    "ceph",         "9p",        "glusterfs", "fuse.glusterfs",
      "fuse.sshfs", "fuse.s3fs", "fuse.juicefs", "fuse.weka", "panfs",     "vast"};
  for (std::string_view type : kNetworkTypes) {
    if (fs_type == type) return true;
  }
  return false;
}

std::vector<Mount> ParseProbeMounts(std::string_view proc_mounts) {
  static constexpr std::string_view kLocalDiskTypes[] = {"ext4",  "ext3", "xfs",
                                                         "btrfs", "zfs",  "f2fs"};
  std::vector<Mount> mounts;
  for (std::string_view line : Split(proc_mounts, '\n')) {
    const auto fields = SplitFields(line);
    if (fields.size() < 3) continue;
    bool probe = IsNetworkFilesystem(fields[2]);
    for (std::string_view type : kLocalDiskTypes) probe = probe || fields[2] == type;
    if (!probe) continue;
    mounts.push_back({Unescape(fields[0]), Unescape(fields[1]), std::string(fields[2])});
  }
  return mounts;
}

MountProbe ProbeMount(sys::ProcessRunner& runner, const Mount& mount, Duration timeout) {
  MountProbe probe;
  probe.mount = mount;
  // LC_ALL=C: its output is not read, and the C locale spares it loading a dozen locale files.
  sys::ProcessSpec spec{.argv = {"stat", "-f", "--", mount.mount_point}, .env_add = {"LC_ALL=C"}};
  spec.timeout = timeout;
  spec.kill_grace = std::chrono::milliseconds(200);
  auto result = runner.Run(spec);
  if (!result) {
    probe.detail = result.error().message;
    return probe;
  }
  probe.took = result->duration;
  probe.answered = result->Succeeded();
  if (!probe.answered) {
    probe.detail =
        result->timed_out || result->abandoned
            ? "no answer within " + FormatDuration(timeout)
            : "stat -f: " + result->Describe() + ": " + std::string(Trim(result->stderr_text));
  }
  return probe;
}

}  // namespace cmax::health
