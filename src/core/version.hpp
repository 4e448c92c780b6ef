// Version comparison for what GPU clusters report: dotted versions (1.10 > 1.9), Debian
// package versions with epochs and revisions (1:2.3-4 > 2.9), and NVIDIA driver branches
// (570.211.01 > 570.86.15). One ordering, Debian's, covers all three.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cmax {

struct Version {
  uint64_t epoch = 0;
  std::string upstream;  // what users call "the version"; a leading 'v' is dropped
  std::string revision;  // the Debian revision after the last '-', empty when absent
};

// Rejects empty text, whitespace and control characters, a non-numeric or overlong epoch, and
// an upstream part that does not start with a digit.
Result<Version> ParseVersion(std::string_view text);

// <0, 0, >0 as a is older than, equal to, or newer than b.
int CompareVersions(const Version& a, const Version& b);

// Parses both and compares; the error names which one is malformed.
Result<int> CompareVersionText(std::string_view a, std::string_view b);

// The part of Debian's algorithm that compares one upstream or revision string:
// non-digit runs by character ('~' before everything, letters before other symbols),
// digit runs by numeric value with no limit on length.
int CompareVersionPart(std::string_view a, std::string_view b);

// The leading number of a version, the branch of an NVIDIA driver (570 for 570.86.15).
Result<uint64_t> MajorVersion(std::string_view text);

std::string FormatVersion(const Version& version);

}  // namespace cmax
