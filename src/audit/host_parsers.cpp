#include <set>

#include "audit/host_inventory.hpp"
#include "core/strings.hpp"

namespace cmax::audit {
namespace {

std::string Unquote(std::string_view value) {
  value = Trim(value);
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '\\' && i + 1 < value.size()) ++i;
    out += value[i];
  }
  return out;
}

template <class Int>
bool ParseNumber(std::string_view text, Int& out) {
  const std::optional<Int> value = ParseWhole<Int>(Trim(text));
  if (value) out = *value;
  return value.has_value();
}

// "key<sep>value" lines, the shape of /proc/cpuinfo, /proc/meminfo and os-release.
template <class Visit>
void ForEachKeyValue(std::string_view text, char separator, Visit visit) {
  for (std::string_view line : Split(text, '\n')) {
    const size_t pos = line.find(separator);
    if (pos == std::string_view::npos) {
      visit(Trim(line), std::string_view());
      continue;
    }
    visit(Trim(line.substr(0, pos)), Trim(line.substr(pos + 1)));
  }
}

}  // namespace

bool IsNvidiaGpu(const PciDevice& device) {
  return device.vendor == 0x10de && (device.class_code >> 16) == 0x03;
}

bool IsNetworkDevice(const PciDevice& device) {
  return (device.class_code >> 16) == 0x02 || (device.class_code >> 8) == 0x0c06 ||
         (device.class_code >> 8) == 0x0207;
}

OsRelease ParseOsRelease(std::string_view text) {
  OsRelease os;
  ForEachKeyValue(text, '=', [&](std::string_view key, std::string_view value) {
    if (key == "ID") os.id = Unquote(value);
    if (key == "VERSION_ID") os.version_id = Unquote(value);
    if (key == "PRETTY_NAME") os.pretty_name = Unquote(value);
  });
  return os;
}

CpuInfo ParseCpuInfo(std::string_view text) {
  CpuInfo cpu;
  std::set<std::string> sockets;
  std::map<std::string, int> cores_per_socket;
  std::string socket;
  ForEachKeyValue(text, ':', [&](std::string_view key, std::string_view value) {
    if (key == "processor") {
      ++cpu.logical_cpus;
      socket = "0";
    } else if (key == "vendor_id" && cpu.vendor.empty()) {
      cpu.vendor = std::string(value);
    } else if (key == "model name" && cpu.model.empty()) {
      cpu.model = std::string(value);
    } else if (key == "physical id") {
      socket = std::string(value);
      sockets.insert(socket);
    } else if (key == "cpu cores") {
      int cores = 0;
      if (ParseNumber(value, cores)) cores_per_socket[socket] = cores;
    } else if (key == "flags") {
      for (std::string_view flag : SplitFields(value)) {
        if (flag == "hypervisor") cpu.hypervisor_flag = true;
      }
    }
  });
  cpu.sockets = sockets.empty() ? (cpu.logical_cpus > 0 ? 1 : 0) : static_cast<int>(sockets.size());
  for (const auto& [id, cores] : cores_per_socket) cpu.cores += cores;
  return cpu;
}

MemInfo ParseMemInfo(std::string_view text) {
  MemInfo mem;
  ForEachKeyValue(text, ':', [&](std::string_view key, std::string_view value) {
    const auto fields = SplitFields(value);
    uint64_t number = 0;
    if (fields.empty() || !ParseNumber(fields[0], number)) return;
    if (key == "MemTotal") mem.total_kib = number;
    if (key == "MemAvailable") mem.available_kib = number;
    if (key == "HugePages_Total") mem.hugepages_total = number;
    if (key == "Hugepagesize") mem.hugepage_size_kib = number;
  });
  return mem;
}

Result<int> CountCpuList(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return 0;
  int count = 0;
  for (std::string_view range : Split(text, ',')) {
    const size_t dash = range.find('-');
    int first = 0;
    int last = 0;
    const bool ok = dash == std::string_view::npos
                        ? ParseNumber(range, first) && ParseNumber(range, last)
                        : ParseNumber(range.substr(0, dash), first) &&
                              ParseNumber(range.substr(dash + 1), last);
    if (!ok || first < 0 || last < first) {
      return Fail(ErrorCode::kInvalidArgument, "bad CPU list '{}'", text);
    }
    count += last - first + 1;
  }
  return count;
}

std::optional<NvidiaDriver> ParseNvidiaVersion(std::string_view text) {
  const std::string_view first_line = text.substr(0, text.find('\n'));
  const size_t module = first_line.find("Kernel Module");
  if (first_line.find("NVRM version:") == std::string_view::npos ||
      module == std::string_view::npos) {
    return std::nullopt;
  }
  NvidiaDriver driver;
  driver.loaded = true;
  driver.open_kernel_module = first_line.find("Open Kernel Module") != std::string_view::npos;
  for (std::string_view field : SplitFields(first_line.substr(module))) {
    if (!field.empty() && field[0] >= '0' && field[0] <= '9' &&
        field.find('.') != std::string_view::npos) {
      driver.version = std::string(field);
      break;
    }
  }
  if (driver.version.empty()) return std::nullopt;
  return driver;
}

std::string ParseNvidiaModel(std::string_view information) {
  std::string model;
  ForEachKeyValue(information, ':', [&](std::string_view key, std::string_view value) {
    if (key == "Model" && model.empty()) model = std::string(value);
  });
  return model;
}

std::string ParseSlurmVersion(std::string_view output) {
  const auto fields = SplitFields(Trim(output));
  if (fields.size() >= 2 && fields[0] == "slurm") return std::string(fields[1]);
  return {};
}

std::string ParseKubeconfigContext(std::string_view text) {
  for (std::string_view line : Split(text, '\n')) {
    constexpr std::string_view kKey = "current-context:";
    if (line.substr(0, kKey.size()) == kKey) return Unquote(line.substr(kKey.size()));
  }
  return {};
}

}  // namespace cmax::audit
