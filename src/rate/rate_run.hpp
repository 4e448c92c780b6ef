// `cmax rate`'s work: the stored runs and the attestation read, the rubric applied. It reads
// only the store and the files named, so a past evaluation can be rated again, with another
// rubric or a newer attestation, without the cluster.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "rate/compare.hpp"
#include "rate/ranking.hpp"
#include "rate/rating.hpp"

namespace cmax::store {
class Store;
}

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
  // With no runs named: the newest runs of each kind recorded for this provider (--provider).
  std::string provider;
};

// `cmax rate --providers`: every provider in the store rated with the same rubric, each on its
// newest runs of each kind and with the attestation that names it (any number of files; one
// that names no provider in the store is an error, a provider without one is rated without).
struct RankOptions {
  std::string rubric;
  std::vector<std::string> attestations;
};

struct RateIo {
  std::string db_path;
  const sys::FileSystem* fs = nullptr;
  const Clock* clock = nullptr;
};

// The rubric and attestation files named, read and checked (kInvalidArgument naming the file
// and the line), before any work that they would be applied to.
struct RatingFiles {
  std::optional<Rubric> rubric;  // none: the built-in one
  std::optional<Attestation> attestation;
  const Rubric& RubricToUse() const { return rubric ? *rubric : Rubric::Builtin(); }
};
Result<RatingFiles> LoadRatingFiles(const RateOptions& options, const RateIo& io);

// The store's remediation journal's drains (their reasons), when they can be the rated
// provider's: a store that holds runs of several providers has a journal that is not any one's
// (nullopt then).
Result<std::optional<std::vector<DrainRecord>>> JournalDrains(store::Store& store);

// The stored runs named (ids or "latest"), rated with `files`.
Result<Rating> RateRuns(const std::vector<std::string>& runs, const RatingFiles& files,
                        const RateIo& io);

// LoadRatingFiles, then RateRuns on options.runs or, when none is named, the newest run of
// each kind.
Result<Rating> RateStoredRuns(const RateOptions& options, const RateIo& io);

Result<Ranking> RankStoredProviders(const RankOptions& options, const RateIo& io);

// `cmax compare A B`: run A and run B rated with the same files, and what moved from A to B.
Result<Comparison> CompareStoredRuns(const std::string& before, const std::string& after,
                                     const RateOptions& options, const RateIo& io);

}  // namespace cmax::rate
