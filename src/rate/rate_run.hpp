// `cmax rate`'s work: the stored runs and the attestation read, the rubric applied. It reads
// only the store and the files named, so a past evaluation can be rated again, with another
// rubric or a newer attestation, without the cluster.
#pragma once

#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "rate/rating.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::rate {

struct RateOptions {
  // Run ids (or "latest"); none: the newest run of each kind that holds evidence (run, audit,
  // reliability, endpoint, health).
  std::vector<std::string> runs;
  std::string rubric;       // a rubric file; empty: the built-in one
  std::string attestation;  // an attestation file; empty: none
};

struct RateIo {
  std::string db_path;
  const sys::FileSystem* fs = nullptr;
  const Clock* clock = nullptr;
};

Result<Rating> RateStoredRuns(const RateOptions& options, const RateIo& io);

}  // namespace cmax::rate
