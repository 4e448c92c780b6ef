// Field injection into DCGM's host engine: `dcgmi test --inject` writes a value into DCGM's
// cache for one GPU and field, as if the driver had reported it, so a provider's DCGM policies
// and health watches fire (no real driver event happens). Pure: the command line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sys/process_runner.hpp"

namespace cmax::inject {

// Field ids from dcgm_fields.h, by the names cmax accepts.
struct DcgmField {
  std::string_view name;
  int id;
  std::string_view meaning;
};
const std::vector<DcgmField>& DcgmFields();

// "xid", "ecc-dbe", ... or a number.
Result<int> DcgmFieldId(std::string_view field);
// DCGM's id of a GPU on its node ("0", "3"): a whole non-negative number, nothing else.
Result<int> DcgmGpuId(std::string_view text);

// dcgmi test --inject --gpuid N -f FIELD -v VALUE [--offset S]
Result<std::vector<std::string>> DcgmInjectArgv(std::string_view field, long long value, int gpu,
                                                std::optional<int> offset_s);

// dcgmi on PATH, or the error that says how to get it.
Result<void> DcgmiReady();
// Runs the command DcgmInjectArgv made; its output when dcgmi succeeded.
Result<std::string> RunDcgmInject(sys::ProcessRunner& runner, const std::vector<std::string>& argv);

}  // namespace cmax::inject
