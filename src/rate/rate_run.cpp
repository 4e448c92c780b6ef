#include "rate/rate_run.hpp"

#include <algorithm>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"

namespace cmax::rate {
namespace {

constexpr size_t kFileLimit = size_t{4} << 20;

}  // namespace

Result<RatingFiles> LoadRatingFiles(const RateOptions& options, const RateIo& io) {
  RatingFiles files;
  if (!options.rubric.empty()) {
    auto text = io.fs->ReadFile(options.rubric, kFileLimit);
    if (!text) {
      return Fail(ErrorCode::kInvalidArgument, "--rubric {}: {}", options.rubric,
                  text.error().message);
    }
    auto parsed = Rubric::Parse(*text);
    if (!parsed) {
      return Fail(ErrorCode::kInvalidArgument, "{}: {}", options.rubric, parsed.error().message);
    }
    files.rubric = std::move(*parsed);
  }
  if (!options.attestation.empty()) {
    auto text = io.fs->ReadFile(options.attestation, kFileLimit);
    if (!text) {
      return Fail(ErrorCode::kInvalidArgument, "--attestation {}: {}", options.attestation,
                  text.error().message);
    }
    auto parsed = ParseAttestation(*text, io.clock->Now());
    if (!parsed) {
      return Fail(ErrorCode::kInvalidArgument, "{}: {}", options.attestation,
                  parsed.error().message);
    }
    files.attestation = std::move(*parsed);
    // A template the rubric does not have is a typo to say now, not an SLA risk left blank.
    const std::string& wanted = files.attestation->sla_template;
    const auto& templates = files.RubricToUse().SlaTemplates();
    if (!wanted.empty() &&
        std::ranges::none_of(templates, [&](const SlaTerms& t) { return t.name == wanted; })) {
      std::vector<std::string> names;
      for (const SlaTerms& t : templates) names.push_back(t.name);
      return Fail(ErrorCode::kInvalidArgument,
                  "{}: sla template \"{}\" is not one of the rubric's ({})", options.attestation,
                  wanted, names.empty() ? "it has none" : Join(names, ", "));
    }
  }
  return files;
}

Result<Rating> RateRuns(const std::vector<std::string>& runs, const RatingFiles& files,
                        const RateIo& io) {
  std::vector<RunRecord> records;
  for (const std::string& run : runs) {
    auto record = store::LoadStoredRun(io.db_path, run);
    if (!record) return tl::unexpected(record.error());
    if (std::ranges::none_of(records,
                             [&](const RunRecord& r) { return r.run.id == record->run.id; })) {
      records.push_back(std::move(*record));
    }
  }
  std::ranges::sort(records, std::greater<>(), [](const RunRecord& r) { return r.run.id; });
  RatingInputs inputs{.attestation = files.attestation ? &*files.attestation : nullptr};
  for (const RunRecord& record : records) inputs.runs.push_back(&record);
  return RateEvidence(files.RubricToUse(), inputs);
}

Result<Rating> RateStoredRuns(const RateOptions& options, const RateIo& io) {
  auto files = LoadRatingFiles(options, io);
  if (!files) return tl::unexpected(files.error());
  std::vector<std::string> asked = options.runs;
  if (asked.empty()) {
    auto store = store::Store::Open({.path = io.db_path, .create = false, .read_only = true});
    if (!store) {
      return Fail(ErrorCode::kUnavailable, "no store at {}: run cmax run or cmax audit first",
                  io.db_path);
    }
    for (const char* command : {"run", "audit", "reliability", "endpoint", "health"}) {
      if (auto id = store->LatestRunId(command)) asked.push_back(std::to_string(*id));
    }
    if (asked.empty()) {
      return Fail(ErrorCode::kUnavailable,
                  "no runs in {} to rate: run cmax run, cmax audit or cmax reliability first",
                  io.db_path);
    }
  }
  return RateRuns(asked, *files, io);
}

Result<Comparison> CompareStoredRuns(const std::string& before, const std::string& after,
                                     const RateOptions& options, const RateIo& io) {
  auto files = LoadRatingFiles(options, io);
  if (!files) return tl::unexpected(files.error());
  auto a = RateRuns({before}, *files, io);
  if (!a) return tl::unexpected(a.error());
  auto b = RateRuns({after}, *files, io);
  if (!b) return tl::unexpected(b.error());
  return CompareRatings(*a, *b);
}

}  // namespace cmax::rate
