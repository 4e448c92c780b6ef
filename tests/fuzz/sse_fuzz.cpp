// The SSE parser on any bytes: it never crashes, keeps memory bounded, and gives the same
// events whether the bytes arrive at once or split (the first byte of the input picks the
// split size).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "endpoint/sse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 17;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  using cmax::endpoint::SseEvent;
  using cmax::endpoint::SseParser;
  std::vector<std::string> whole;
  std::vector<std::string> split;
  SseParser a(256);
  SseParser b(256);
  a.Feed(text, [&](const SseEvent& e) { whole.push_back(e.event + "|" + e.data + "|" + e.id); });
  for (size_t at = 0; at < text.size(); at += chunk) {
    b.Feed(text.substr(at, chunk),
           [&](const SseEvent& e) { split.push_back(e.event + "|" + e.data + "|" + e.id); });
  }
  if (whole != split || a.Finish() != b.Finish() || a.Oversized() != b.Oversized()) std::abort();
  for (const std::string& e : whole) {
    if (e.size() > 256 * 2 + 2) std::abort();  // bounded by the limit
  }
  return 0;
}
