// SHA-256 (FIPS 180-4), for content digests a run records: which minimum-version table graded
// it, which topology file a node has. Not for secrets. Pure.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace cmax {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  std::array<uint8_t, 32> Finish();  // once; the object is spent afterwards

 private:
  void Block(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes so far
};

// The digest of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace cmax
