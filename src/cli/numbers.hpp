// One rule for numbers on the command line: every numeric option of every command is declared
// with one of these validators (a test walks the command tree and holds each to it). They read
// the text themselves because CLI11's conversion does not: it lets "-1" wrap into an unsigned
// option, reads "010" as octal and "0x10" as hex, takes "nan" and "inf", and clamps integers
// too large for the type. Out of range is a usage error (exit 2) that names the option and the
// range: "--requests: must be a whole number in [1, 1000000000], not '-1'".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace cmax::cli {

// The name every range validator carries, so the test can find it on an option.
inline constexpr const char* kRangeValidator = "cmax-range";

// Limits shared by many options.
inline constexpr int64_t kMaxCount = 1'000'000'000;       // requests, events, records
inline constexpr int64_t kMaxStreams = 1'000'000;         // concurrency, connections
inline constexpr double kMaxSeconds = 366.0 * 24 * 3600;  // a year: no timer needs more

// Decimal whole numbers in [min, max] (no sign unless min < 0, no hex, no exponent).
CLI::Validator Whole(int64_t min, int64_t max);
// Any 64-bit unsigned value, decimal (seeds).
CLI::Validator AnyUnsigned();
// Finite decimal numbers in [min, max] ("1.5", "2e3"; never NaN or an infinity).
CLI::Validator Real(double min, double max);
// Finite decimal numbers > 0 and at most max.
CLI::Validator Positive(double max);
// A share or probability: Real(0, 1).
CLI::Validator Share();
// A duration in seconds, finite, > 0 and at most max; with zero_means_none, 0 is taken too
// (and the option's help says what 0 means).
CLI::Validator SecondsIn(double max = kMaxSeconds, bool zero_means_none = false);

}  // namespace cmax::cli
