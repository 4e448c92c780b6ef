#include "evaluate/evaluation.hpp"

#include "rate/rate_run.hpp"
#include "store/store.hpp"

namespace cmax::evaluate {

Result<Evaluation> EvaluateThisHost(const EvaluationOptions& options, const audit::HostRunIo& io) {
  const rate::RateIo rate_io{.db_path = io.db_path, .fs = io.fs, .clock = io.clock};
  auto files = rate::LoadRatingFiles({.rubric = options.rubric, .attestation = options.attestation},
                                     rate_io);
  if (!files) return tl::unexpected(files.error());
  // The provider whose attestation this is, when no --provider said otherwise: its run is
  // then found by `cmax rate --provider` and ranked by `cmax rate --providers`.
  audit::HostRunIo host_io = io;
  if (files->attestation && io.env && io.env("CMAX_PROVIDER").empty()) {
    host_io.provider = files->attestation->provider;
  }
  auto host = audit::EvaluateHost(options.probe_timeout_s, host_io);
  if (!host) return tl::unexpected(host.error());
  Evaluation out{.exit_code = host->exit_code,
                 .interrupted = host->interrupted,
                 .record = std::move(host->record)};
  if (out.interrupted) return out;
  // The record EvaluateHost read back from the store, and the store's remediation journal:
  // what `cmax rate RUN` will read.
  auto store = store::Store::Open({.path = io.db_path});
  if (!store) return tl::unexpected(store.error());
  auto drains = store->DrainReasons();
  if (!drains) return tl::unexpected(drains.error());
  rate::Rating rating = rate::RateEvidence(
      files->RubricToUse(), {.runs = {&out.record},
                             .attestation = files->attestation ? &*files->attestation : nullptr,
                             .drain_reasons = std::move(*drains)});
  EvidenceItem item{"rating", rate::RatingJson(rating).dump()};
  if (auto ok = store->AddEvidence(out.record.run.id, {item}); !ok) {
    return tl::unexpected(ok.error());
  }
  out.record.evidence.push_back(std::move(item));
  out.rating = std::move(rating);
  return out;
}

}  // namespace cmax::evaluate
