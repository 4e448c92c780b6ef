// libFuzzer target for what every renderer relies on: SanitizeUtf8 yields valid UTF-8 with no
// control characters (so is idempotent), and HTML escaping leaves no markup characters.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/clock.hpp"
#include "core/strings.hpp"
#include "report/render.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string clean = cmax::SanitizeUtf8(input);
  if (cmax::SanitizeUtf8(clean) != clean) std::abort();
  for (size_t i = 0; i < clean.size(); ++i) {
    const auto c = static_cast<unsigned char>(clean[i]);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) std::abort();
    // No C1 control (U+0080-U+009F is 0xC2 then 0x80-0x9F in UTF-8).
    if (c == 0xC2 && i + 1 < clean.size() && static_cast<unsigned char>(clean[i + 1]) <= 0x9F) {
      std::abort();
    }
  }
  const std::string html = cmax::report::HtmlEscape(input);
  if (html.find_first_of("<>\"'") != std::string::npos) std::abort();
  (void)cmax::ParseIso8601(input);
  (void)cmax::SplitFields(input);
  return 0;
}
