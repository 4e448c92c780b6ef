// libFuzzer target for the version parser and ordering: no crash on any bytes, and the
// ordering stays an ordering (reflexive, antisymmetric) for whatever parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/version.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('|');
  const std::string_view a = input.substr(0, split);
  const std::string_view b = split == std::string_view::npos ? a : input.substr(split + 1);
  auto va = cmax::ParseVersion(a);
  auto vb = cmax::ParseVersion(b);
  (void)cmax::MajorVersion(a);
  if (va) {
    if (cmax::CompareVersions(*va, *va) != 0) std::abort();
    // What FormatVersion writes parses back to an equal version.
    auto again = cmax::ParseVersion(cmax::FormatVersion(*va));
    if (!again || cmax::CompareVersions(*again, *va) != 0) std::abort();
  }
  if (va && vb) {
    const int ab = cmax::CompareVersions(*va, *vb);
    const int ba = cmax::CompareVersions(*vb, *va);
    if ((ab < 0) != (ba > 0) || (ab == 0) != (ba == 0)) std::abort();
  }
  (void)cmax::CompareVersionPart(a, b);
  return 0;
}
