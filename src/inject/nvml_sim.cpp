#include "inject/nvml_sim.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "inject/kernel_lines.hpp"
#include "sys/host.hpp"

namespace cmax::inject {
namespace {

using nlohmann::json;

constexpr std::string_view kFaults[] = {
    "lost",       "dbe", "row-remap-failure", "row-remap-pending", "recovery-action",
    "pcie-width", "xid"};

std::string Show(const json& v) {
  return v.is_null() ? "unset" : v.dump();
}

}  // namespace

std::vector<std::string_view> SimFaultNames() {
  return {std::begin(kFaults), std::end(kFaults)};
}

Result<SimChange> ApplySimFault(const json& state, const SimFault& fault) {
  if (std::find(std::begin(kFaults), std::end(kFaults), fault.name) == std::end(kFaults)) {
    return Fail(ErrorCode::kInvalidArgument, "unknown simulated fault '{}' (one of: {})",
                fault.name, fmt::join(kFaults, ", "));
  }
  if (!state.is_object() || !state.contains("gpus") || !state["gpus"].is_array() ||
      state["gpus"].empty()) {
    return Fail(ErrorCode::kInvalidArgument, "the simulated NVML state has no GPUs");
  }
  SimChange change;
  change.state = state;
  json& gpus = change.state["gpus"];
  // The GPU: an index, or a PCI address compared in full form.
  size_t index = gpus.size();
  if (!fault.gpu.empty() && std::all_of(fault.gpu.begin(), fault.gpu.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      })) {
    index = std::stoul(fault.gpu);
  } else {
    auto want = FullPciAddress(fault.gpu);
    if (!want) return tl::unexpected(want.error());
    for (size_t i = 0; i < gpus.size(); ++i) {
      auto have = FullPciAddress(gpus[i].value("bus_id", ""));
      if (have && *have == *want) index = i;
    }
  }
  if (index >= gpus.size()) {
    return Fail(ErrorCode::kNotFound, "the simulated NVML has no GPU '{}' ({} GPUs)", fault.gpu,
                gpus.size());
  }
  json& gpu = gpus[index];
  change.bus_id = gpu.value("bus_id", "");
  const auto set = [&](json& parent, const std::string& key, const json& value,
                       const std::string& path) {
    const json before = parent.is_object() && parent.contains(key) ? parent[key] : json();
    parent[key] = value;
    change.description =
        fmt::format("GPU {}: {} {} -> {}", change.bus_id, path, Show(before), Show(value));
  };
  if (fault.name == "lost") {
    set(gpu, "lost", true, "lost");
  } else if (fault.name == "dbe") {
    json& ecc = gpu["ecc"];
    ecc["enabled"] = true;
    const auto bump = [&](const char* scope) {
      json& s = ecc[scope];
      const long long before = s.is_object() ? s.value("dbe", 0LL) : 0LL;
      s["dbe"] = before + 1;
    };
    bump("volatile");
    bump("aggregate");
    change.description =
        fmt::format("GPU {}: ecc.volatile.dbe and ecc.aggregate.dbe +1", change.bus_id);
  } else if (fault.name == "row-remap-failure") {
    set(gpu["remapped_rows"], "failure", true, "remapped_rows.failure");
  } else if (fault.name == "row-remap-pending") {
    set(gpu["remapped_rows"], "pending", true, "remapped_rows.pending");
  } else if (fault.name == "recovery-action") {
    if (fault.value < 0 || fault.value > 4) {
      return Fail(ErrorCode::kInvalidArgument, "recovery-action is 0-4 (NVML's values)");
    }
    set(gpu, "recovery_action", fault.value, "recovery_action");
  } else if (fault.name == "pcie-width") {
    if (fault.value <= 0 || fault.value > 32) {
      return Fail(ErrorCode::kInvalidArgument, "pcie-width is a lane count (1-32)");
    }
    set(gpu["pcie"], "width", fault.value, "pcie.width");
  } else {  // xid: an NVML Xid event (type 8, nvmlEventTypeXidCriticalError) after the last one
    if (fault.value <= 0) return Fail(ErrorCode::kInvalidArgument, "xid needs a code");
    json& events = change.state["events"];
    if (!events.is_array()) events = json::array();
    long long seq = 0;
    for (const json& e : events) seq = std::max(seq, e.value("seq", 0LL));
    events.push_back({{"seq", seq + 1}, {"gpu", index}, {"type", 8}, {"data", fault.value}});
    change.description =
        fmt::format("GPU {}: NVML Xid event {} (seq {})", change.bus_id, fault.value, seq + 1);
  }
  return change;
}

std::string SimBackupPath(const std::string& path) {
  return path + ".cmax-backup";
}

std::string SimStatePath(const std::string& given) {
  return given.empty() ? sys::GetEnv("CMAX_NVML_SIM_STATE") : given;
}

Result<SimChange> ApplySimFaultToFile(sys::FileSystem& fs, const std::string& path,
                                      const SimFault& fault, bool dry_run) {
  auto current = fs.ReadFile(path, size_t{16} << 20);
  if (!current) return tl::unexpected(current.error());
  const json state = json::parse(*current, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded()) {
    return Fail(ErrorCode::kInvalidArgument, "{} is not JSON", path);
  }
  auto change = ApplySimFault(state, fault);
  if (!change || dry_run) return change;
  const std::string backup = SimBackupPath(path);
  if (!fs.Exists(backup)) {
    if (auto ok = fs.WriteFileAtomic(backup, *current, 0644); !ok)
      return tl::unexpected(ok.error());
  }
  if (auto ok = fs.WriteFileAtomic(path, change->state.dump(2), 0644); !ok) {
    return tl::unexpected(ok.error());
  }
  return change;
}

Result<void> RestoreSimState(sys::FileSystem& fs, const std::string& path) {
  const std::string backup = SimBackupPath(path);
  auto saved = fs.ReadFile(backup, size_t{16} << 20);
  if (!saved) return Fail(ErrorCode::kNotFound, "nothing to restore: no {}", backup);
  if (auto ok = fs.WriteFileAtomic(path, *saved, 0644); !ok) return ok;
  return fs.RemoveFile(backup);
}

}  // namespace cmax::inject
