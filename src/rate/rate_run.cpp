#include "rate/rate_run.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/strings.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "sys/file_system.hpp"

namespace cmax::rate {
namespace {

constexpr size_t kFileLimit = size_t{4} << 20;

// The kinds of run that hold evidence a rubric reads; a rating takes the newest of each.
// What a rating reads the newest run of: each command, and of `health` each of its three kinds
// (a node's passive check, a node's active checks, the fleet's view), which follow one another in
// the store: the newest health run alone would hide the other two.
struct RatedKind {
  const char* command;
  const char* target_prefix;
};
constexpr RatedKind kRatedKinds[] = {{"run", ""},
                                     {"audit", ""},
                                     {"reliability", ""},
                                     {"endpoint", ""},
                                     {"health", "node/"},
                                     {"health", "active checks"},
                                     {"health", "active schedule"},
                                     {"nccl", ""},
                                     {"train", ""}};

// The newest run of each kind recorded for `provider`; a provider with none is an error that
// names the ones the store has.
Result<std::vector<int64_t>> ProviderRuns(store::Store& store, const std::string& provider) {
  std::vector<int64_t> ids;
  for (const RatedKind& kind : kRatedKinds) {
    if (auto id = store.LatestProviderRunId(provider, kind.command, kind.target_prefix,
                                            /*closed_only=*/true)) {
      ids.push_back(*id);
    }
  }
  if (ids.empty()) {
    auto known = store.Providers();
    if (!known) return tl::unexpected(known.error());
    return Fail(ErrorCode::kInvalidArgument, "no runs of provider {} in {} (providers: {})",
                SanitizeUtf8(provider), store.Path(),
                known->empty() ? "none; record runs with --provider NAME" : Join(*known, ", "));
  }
  return ids;
}

// A file named on the command line or in a plan that cannot be read is the user's to fix (exit
// 2), unless a signal ended the wait for it (a FIFO without a writer): then exit 128+N.
ErrorCode InputError(const Error& error) {
  return error.code == ErrorCode::kInterrupted ? ErrorCode::kInterrupted
                                               : ErrorCode::kInvalidArgument;
}

// The attestation at `path`, read and checked against `rubric` (its SLA template must be one of
// the rubric's).
Result<Attestation> LoadAttestation(const std::string& path, const Rubric& rubric,
                                    const RateIo& io) {
  auto text = io.fs->ReadFile(path, kFileLimit);
  if (!text) {
    // Named by --attestation or by a plan: the file is what to look at, whichever it was.
    return Fail(InputError(text.error()), "attestation {}: {}", path, text.error().message);
  }
  auto parsed = ParseAttestation(*text, io.clock->Now());
  if (!parsed) return Fail(ErrorCode::kInvalidArgument, "{}: {}", path, parsed.error().message);
  // A template the rubric does not have is a typo to say now, not an SLA risk left blank.
  const std::string& wanted = parsed->sla_template;
  const auto& templates = rubric.SlaTemplates();
  if (!wanted.empty() &&
      std::ranges::none_of(templates, [&](const SlaTerms& t) { return t.name == wanted; })) {
    std::vector<std::string> names;
    for (const SlaTerms& t : templates) names.push_back(t.name);
    return Fail(ErrorCode::kInvalidArgument,
                "{}: sla template \"{}\" is not one of the rubric's ({})", path, wanted,
                names.empty() ? "it has none" : Join(names, ", "));
  }
  return parsed;
}

// What an evaluation keeps with its run for its rating: the attestation it was rated with
// (judged today, as the same file given now would be) and a lab's time scale (the rubric's time
// bands scaled as its pass bars were). Each from the newest run that has it.
struct KeptWithRuns {
  std::optional<Attestation> attestation;
  std::string note;  // where the attestation came from, or why it could not be read
  std::optional<Rubric> scaled;
  const Rubric& RubricOr(const Rubric& rubric) const { return scaled ? *scaled : rubric; }
};

// The first of `runs` recorded for another provider than the attestation's, or null: one
// provider's promises (prices, SLA, certificates) rate only that provider's runs.
const RunRecord* OtherProvidersRun(const Attestation& attestation,
                                   const std::vector<const RunRecord*>& runs) {
  const auto other = std::ranges::find_if(runs, [&](const RunRecord* r) {
    return !r->run.provider.empty() && r->run.provider != attestation.provider;
  });
  return other == runs.end() ? nullptr : *other;
}

KeptWithRuns KeptWith(const std::vector<const RunRecord*>& runs, const Rubric& rubric,
                      WallTime now) {
  KeptWithRuns out;
  if (const std::optional<double> scale = TimeScaleOf(runs)) {
    out.scaled = rubric.WithTimesScaled(*scale);
  }
  for (const RunRecord* record : runs) {
    const auto item =
        std::ranges::find(record->evidence, std::string(kAttestationEvidence), &EvidenceItem::key);
    if (item == record->evidence.end()) continue;
    const nlohmann::json doc = nlohmann::json::parse(item->value_json, nullptr, false);
    const std::string yaml =
        doc.is_object() && doc.contains("yaml") && doc["yaml"].is_string() ? doc["yaml"] : "";
    if (auto parsed = ParseAttestation(yaml, now)) {
      // An evaluation recorded before cmax refused the mix may have kept another's.
      if (const RunRecord* other = OtherProvidersRun(*parsed, runs)) {
        out.note = fmt::format(
            "the attestation kept with run {} is provider {}'s and run {} is of provider {}: not "
            "used",
            record->run.id, SanitizeUtf8(parsed->provider), other->run.id,
            SanitizeUtf8(other->run.provider));
        break;
      }
      out.attestation = std::move(*parsed);
      out.note = fmt::format("the attestation kept with run {} ({}), judged today", record->run.id,
                             out.attestation->source);
    } else {
      out.note = fmt::format("the attestation kept with run {} cannot be read: {}", record->run.id,
                             parsed.error().message);
    }
    break;
  }
  return out;
}

}  // namespace

Result<std::optional<std::vector<DrainRecord>>> JournalDrains(store::Store& store) {
  auto providers = store.Providers();
  if (!providers) return tl::unexpected(providers.error());
  if (providers->size() > 1) return std::nullopt;
  auto drains = store.JournalDrains();
  if (!drains) return tl::unexpected(drains.error());
  std::vector<DrainRecord> out;
  for (store::Store::JournalDrain& d : *drains) {
    const auto at = ParseIso8601(d.planned_at);
    out.push_back({std::move(d.node), at ? std::optional(*at) : std::nullopt, std::move(d.reason)});
  }
  return std::optional(std::move(out));
}

Result<RatingFiles> LoadRatingFiles(const RateOptions& options, const RateIo& io) {
  RatingFiles files;
  if (!options.rubric.empty()) {
    auto text = io.fs->ReadFile(options.rubric, kFileLimit);
    if (!text) {
      return Fail(InputError(text.error()), "rubric {}: {}", options.rubric, text.error().message);
    }
    auto parsed = Rubric::Parse(*text);
    if (!parsed) {
      return Fail(ErrorCode::kInvalidArgument, "{}: {}", options.rubric, parsed.error().message);
    }
    files.rubric = std::move(*parsed);
  }
  if (!options.attestation.empty()) {
    auto attestation = LoadAttestation(options.attestation, files.RubricToUse(), io);
    if (!attestation) return tl::unexpected(attestation.error());
    files.attestation = std::move(*attestation);
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
  RatingInputs inputs{.attestation = files.attestation ? &*files.attestation : nullptr,
                      .now = io.clock->Now()};
  for (const RunRecord& record : records) inputs.runs.push_back(&record);
  if (files.attestation) {
    if (const RunRecord* other = OtherProvidersRun(*files.attestation, inputs.runs)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "the attestation is provider {}'s, and run {} is of provider {}: rate that "
                  "provider's runs with --provider {}, or name {}'s attestation",
                  SanitizeUtf8(files.attestation->provider), other->run.id,
                  SanitizeUtf8(other->run.provider), ShellWord(files.attestation->provider),
                  SanitizeUtf8(other->run.provider));
    }
  }
  // None named: the attestation an evaluation kept with its run; and a lab's scaled bands.
  const KeptWithRuns kept = KeptWith(inputs.runs, files.RubricToUse(), io.clock->Now());
  if (!files.attestation && kept.attestation) inputs.attestation = &*kept.attestation;
  // The drains the store's remediation journal holds (the runs named were read from this
  // store, so it exists).
  auto store = store::Store::Open({.path = io.db_path, .create = false, .read_only = true});
  if (!store) return tl::unexpected(store.error());
  auto drains = JournalDrains(*store);
  if (!drains) return tl::unexpected(drains.error());
  inputs.journal_drains = std::move(*drains);
  Rating rating = RateEvidence(kept.RubricOr(files.RubricToUse()), inputs);
  if (!files.attestation && !kept.note.empty()) rating.notes.push_back(kept.note);
  std::vector<std::string> rated_providers;  // a run that names none counts as one more
  for (const RunRecord& record : records) {
    const std::string name =
        record.run.provider.empty() ? std::string("(none named)") : record.run.provider;
    if (std::ranges::find(rated_providers, name) == rated_providers.end()) {
      rated_providers.push_back(name);
    }
  }
  // No attestation to name the provider: the runs' own, when they are one provider's.
  if (rating.provider.empty() && rated_providers.size() == 1 && !records.empty() &&
      !records.front().run.provider.empty()) {
    rating.provider = records.front().run.provider;
  }
  if (rated_providers.size() > 1) {
    rating.notes.push_back(
        fmt::format("the runs rated are of several providers ({}): rate one with --provider NAME",
                    Join(rated_providers, ", ")));
  }
  if (!inputs.journal_drains) {
    rating.notes.push_back(
        "the remediation journal's drains left out of drains by cause: this store holds runs of "
        "several providers, and its journal is not any one's");
  }
  return rating;
}

Result<Rating> RateStoredRuns(const RateOptions& options, const RateIo& io) {
  auto files = LoadRatingFiles(options, io);
  if (!files) return tl::unexpected(files.error());
  std::vector<std::string> asked = options.runs;
  if (asked.empty()) {
    auto store = store::Store::Open({.path = io.db_path, .create = false, .read_only = true});
    if (!store && store.error().code == ErrorCode::kNotFound) {
      return Fail(ErrorCode::kUnavailable, "no store at {}: run cmax run or cmax audit first",
                  io.db_path);
    }
    if (!store) return tl::unexpected(store.error());
    if (!options.provider.empty()) {
      auto ids = ProviderRuns(*store, options.provider);
      if (!ids) return tl::unexpected(ids.error());
      for (const int64_t id : *ids) asked.push_back(std::to_string(id));
    } else {
      for (const RatedKind& kind : kRatedKinds) {
        if (auto id = store->LatestRunId(kind.command, kind.target_prefix, /*closed_only=*/true)) {
          asked.push_back(std::to_string(*id));
        }
      }
    }
    if (asked.empty()) {
      return Fail(ErrorCode::kUnavailable,
                  "no runs in {} to rate: run cmax run, cmax audit or cmax reliability first",
                  io.db_path);
    }
  }
  return RateRuns(asked, *files, io);
}

Result<Ranking> RankStoredProviders(const RankOptions& options, const RateIo& io) {
  auto files = LoadRatingFiles({.rubric = options.rubric}, io);
  if (!files) return tl::unexpected(files.error());
  const Rubric& rubric = files->RubricToUse();
  std::map<std::string, Attestation> attested;  // by the provider each names
  for (const std::string& path : options.attestations) {
    auto one = LoadAttestation(path, rubric, io);  // the rubric read once, above
    if (!one) return tl::unexpected(one.error());
    const std::string provider = one->provider;
    if (!attested.emplace(provider, std::move(*one)).second) {
      return Fail(ErrorCode::kInvalidArgument, "{}: a second attestation for provider {}", path,
                  provider);
    }
  }
  auto store = store::Store::Open({.path = io.db_path, .create = false, .read_only = true});
  if (!store && store.error().code == ErrorCode::kNotFound) {
    return Fail(ErrorCode::kUnavailable, "no store at {}: record runs with --provider NAME first",
                io.db_path);
  }
  if (!store) return tl::unexpected(store.error());
  auto providers = store->Providers();
  if (!providers) return tl::unexpected(providers.error());
  if (providers->empty()) {
    return Fail(ErrorCode::kUnavailable,
                "no runs in {} name a provider: record them with --provider NAME (or "
                "CMAX_PROVIDER)",
                io.db_path);
  }
  for (const auto& [provider, attestation] : attested) {
    if (std::ranges::find(*providers, provider) == providers->end()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "an attestation names provider {}, which has no runs in {} (providers: {})",
                  provider, io.db_path, Join(*providers, ", "));
    }
  }
  std::vector<std::pair<std::string, Rating>> ratings;
  for (const std::string& provider : *providers) {
    auto ids = ProviderRuns(*store, provider);
    if (!ids) return tl::unexpected(ids.error());
    std::vector<RunRecord> records;
    for (const int64_t id : *ids) {
      auto record = store->LoadRun(id);
      if (!record) return tl::unexpected(record.error());
      records.push_back(std::move(*record));
    }
    RatingInputs inputs{.now = io.clock->Now()};
    for (const RunRecord& record : records) inputs.runs.push_back(&record);
    std::ranges::sort(inputs.runs, [](const RunRecord* a, const RunRecord* b) {
      return a->run.id > b->run.id;  // newest first
    });
    const auto found = attested.find(provider);
    inputs.attestation = found == attested.end() ? nullptr : &found->second;
    // Rated as `cmax rate --provider` rates it: a lab's scale, an evaluation's kept attestation.
    const KeptWithRuns kept = KeptWith(inputs.runs, rubric, io.clock->Now());
    if (inputs.attestation == nullptr && kept.attestation) inputs.attestation = &*kept.attestation;
    ratings.emplace_back(provider, RateEvidence(kept.RubricOr(rubric), inputs));
  }
  return RankProviders(rubric, std::move(ratings));
}

Result<Comparison> CompareStoredRuns(const std::string& before, const std::string& after,
                                     const RateOptions& options, const RateIo& io) {
  auto files = LoadRatingFiles(options, io);
  if (!files) return tl::unexpected(files.error());
  auto a = RateRuns({before}, *files, io);
  if (!a) return tl::unexpected(a.error());
  auto b = RateRuns({after}, *files, io);
  if (!b) return tl::unexpected(b.error());
  Comparison comparison = CompareRatings(*a, *b);
  // The measurements of the runs rated, side by side.
  auto store = store::Store::Open({.path = io.db_path, .create = false, .read_only = true});
  if (!store) return tl::unexpected(store.error());
  std::vector<Metric> metrics[2];
  for (int side = 0; side < 2; ++side) {
    for (int64_t id : (side == 0 ? a : b)->runs) {
      auto record = store->LoadRun(id);
      if (!record) return tl::unexpected(record.error());
      metrics[side].insert(metrics[side].end(), record->metrics.begin(), record->metrics.end());
    }
  }
  comparison.metrics = CompareMetrics(metrics[0], metrics[1], comparison.metric_threshold_pct);
  return comparison;
}

}  // namespace cmax::rate
