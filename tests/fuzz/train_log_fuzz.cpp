// libFuzzer target for TorchTitan's logs, which come from any release, launcher or crash: the
// reader may not crash or hang, the figures come from the steps it read (warm-up and steady
// steps together are the steps logged; a median lies within its steps), and the JSON and text
// can always be written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "train/torchtitan_log.hpp"
#include "train/train_figures.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const cmax::train::TrainLog log = cmax::train::ParseTorchTitanLog(input);
  const cmax::train::TrainFigures f = cmax::train::AnalyzeTrainLog(log);
  if (f.warmup.size() + f.steady.size() != f.steps_logged) std::abort();
  if (f.tokens_per_s_per_gpu) {
    if (!std::isfinite(*f.tokens_per_s_per_gpu) || f.steady.empty()) std::abort();
    double low = INFINITY;
    double high = -INFINITY;
    for (const auto& s : log.steps) {
      if (s.tps && std::isfinite(*s.tps)) {
        low = std::min(low, *s.tps);
        high = std::max(high, *s.tps);
      }
    }
    if (*f.tokens_per_s_per_gpu < low || *f.tokens_per_s_per_gpu > high) std::abort();
  }
  if (f.first_error && log.failures.empty()) std::abort();
  (void)cmax::train::TrainFiguresJson(f, log).dump(-1, ' ', false,
                                                   nlohmann::json::error_handler_t::strict);
  (void)cmax::train::TrainFiguresText(f, log);
  return 0;
}
