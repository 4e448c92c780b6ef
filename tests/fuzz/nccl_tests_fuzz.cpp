// libFuzzer target for nccl-tests' output, which comes from any version, launcher or crash:
// the parser may not crash or hang, its figures are finite where present and come from its
// rows, and its JSON can always be written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "net/nccl_tests_output.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const cmax::net::NcclTestsOutput out = cmax::net::ParseNcclTestsOutput(input);
  for (const auto& table : out.tables) {
    if (table.peak_busbw_gbs && table.rows.empty()) std::abort();
    if (table.largest_size_busbw_gbs && !table.peak_busbw_gbs) std::abort();
    if (table.peak_busbw_gbs && table.largest_size_busbw_gbs &&
        *table.largest_size_busbw_gbs > *table.peak_busbw_gbs) {
      std::abort();
    }
  }
  (void)cmax::net::NcclTestsOutputJson(out).dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
  return 0;
}
