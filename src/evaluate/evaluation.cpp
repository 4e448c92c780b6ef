#include "evaluate/evaluation.hpp"

#include "rate/rate_run.hpp"
#include "store/store.hpp"

namespace cmax::evaluate {

Result<Evaluation> EvaluateThisHost(const EvaluationOptions& options, const audit::HostRunIo& io) {
  const rate::RateIo rate_io{.db_path = io.db_path, .fs = io.fs, .clock = io.clock};
  auto files = rate::LoadRatingFiles({.rubric = options.rubric, .attestation = options.attestation},
                                     rate_io);
  if (!files) return tl::unexpected(files.error());
  auto host = audit::EvaluateHost(options.probe_timeout_s, io);
  if (!host) return tl::unexpected(host.error());
  Evaluation out{.exit_code = host->exit_code,
                 .interrupted = host->interrupted,
                 .record = std::move(host->record)};
  if (out.interrupted) return out;
  // The record EvaluateHost read back from the store: what `cmax rate RUN` will read.
  rate::Rating rating = rate::RateEvidence(
      files->RubricToUse(), {{&out.record}, files->attestation ? &*files->attestation : nullptr});
  EvidenceItem item{"rating", rate::RatingJson(rating).dump()};
  auto store = store::Store::Open({.path = io.db_path});
  if (!store) return tl::unexpected(store.error());
  if (auto ok = store->AddEvidence(out.record.run.id, {item}); !ok) {
    return tl::unexpected(ok.error());
  }
  out.record.evidence.push_back(std::move(item));
  out.rating = std::move(rating);
  return out;
}

}  // namespace cmax::evaluate
