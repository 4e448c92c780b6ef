#include "inject/dcgm.hpp"

#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax::inject {

const std::vector<DcgmField>& DcgmFields() {
  static const std::vector<DcgmField> kFields = {
      {"xid", 230, "XID_ERRORS: the last Xid (the value is the code)"},
      {"power-violation", 240, "POWER_VIOLATION: time throttled by power, us"},
      {"temperature", 150, "GPU_TEMP: degrees C"},
      {"pcie-replay", 202, "PCIE_REPLAY_COUNTER"},
      {"ecc-dbe", 311, "ECC_DBE_VOL_TOTAL: volatile double-bit ECC errors"},
      {"row-remap-failure", 395, "ROW_REMAP_FAILURE: 1 when a row could not be remapped"},
      {"nvlink-crc", 409, "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"},
  };
  return kFields;
}

Result<int> DcgmFieldId(std::string_view field) {
  for (const DcgmField& f : DcgmFields()) {
    if (f.name == field) return f.id;
  }
  if (const std::optional<int> id = ParseWhole<int>(field); id && *id > 0 && *id < 65536) {
    return *id;
  }
  std::string names;
  for (const DcgmField& f : DcgmFields())
    names += std::string(names.empty() ? "" : ", ") + std::string(f.name);
  return Fail(ErrorCode::kInvalidArgument, "'{}' is not a DCGM field (a field id, or one of: {})",
              field, names);
}

Result<int> DcgmGpuId(std::string_view text) {
  const std::optional<int> id = ParseWhole<int>(text);
  if (!id || *id < 0) {
    return Fail(ErrorCode::kInvalidArgument, "'{}' is not DCGM's GPU id (a number: 0, 1, ...)",
                text);
  }
  return *id;
}

Result<std::vector<std::string>> DcgmInjectArgv(std::string_view field, long long value, int gpu,
                                                std::optional<int> offset_s) {
  auto id = DcgmFieldId(field);
  if (!id) return tl::unexpected(id.error());
  if (gpu < 0 || gpu > 63) return Fail(ErrorCode::kInvalidArgument, "GPU id {} out of range", gpu);
  std::vector<std::string> argv = {"dcgmi",
                                   "test",
                                   "--inject",
                                   "--gpuid",
                                   std::to_string(gpu),
                                   "-f",
                                   std::to_string(*id),
                                   "-v",
                                   std::to_string(value)};
  if (offset_s) {
    if (*offset_s < 0) return Fail(ErrorCode::kInvalidArgument, "--offset must not be negative");
    argv.insert(argv.end(), {"--offset", std::to_string(*offset_s)});
  }
  return argv;
}

Result<void> DcgmiReady() {
  if (!sys::FindProgram("dcgmi").empty()) return {};
  return Fail(ErrorCode::kNotFound,
              "dcgmi is not on PATH: install DCGM (datacenter-gpu-manager) on the node, or inject "
              "into the kernel log (cmax inject xid)");
}

Result<std::string> RunDcgmInject(sys::ProcessRunner& runner,
                                  const std::vector<std::string>& argv) {
  if (auto ready = DcgmiReady(); !ready) return tl::unexpected(ready.error());
  sys::ProcessSpec spec{.argv = argv};
  spec.timeout = std::chrono::seconds(30);
  auto r = runner.Run(spec);
  if (!r) return tl::unexpected(r.error());
  if (!r->Succeeded()) {
    return Fail(ErrorCode::kIo, "{}: {}", r->Describe(),
                std::string(Trim(r->stderr_text + r->stdout_text)));
  }
  return std::string(Trim(r->stdout_text));
}

}  // namespace cmax::inject
