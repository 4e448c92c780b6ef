// `cmax rate`: the rating of stored runs (the newest of each kind by default, or a provider's)
// against the rubric (data/rubric/default.json, or --rubric FILE), with the provider's
// attestation where one is given; `--providers` ranks every provider in the store. Reads only
// the store and the files named.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "rate/rate_run.hpp"
#include "sys/file_system.hpp"

namespace cmax::cli {
namespace {

struct RateFlags {
  rate::RateOptions rate;
  std::vector<std::string> attestations;
  bool providers = false;
  bool json = false;
};

int Rate(const RateFlags& o, Context& ctx) {
  sys::LocalFileSystem fs;
  SystemClock clock;
  const rate::RateIo io{.db_path = ctx.DbPath(), .fs = &fs, .clock = &clock};
  // CMAX_PROVIDER names the provider runs are recorded for; for `cmax rate` it is only a
  // default, for when nothing else says what to rate. --provider itself is a request.
  const bool asked_provider = ctx.global.provider_flag && !ctx.global.provider.empty();
  if (o.providers) {
    if (!o.rate.runs.empty() || asked_provider) {
      ctx.err << "cmax rate: --providers ranks every provider's newest runs; name no RUN and "
                 "no --provider\n";
      return kExitUsage;
    }
    auto ranking =
        rate::RankStoredProviders({.rubric = o.rate.rubric, .attestations = o.attestations}, io);
    if (!ranking) return PrintError(ctx, "cmax rate", ranking.error());
    ctx.out << (o.json ? JsonText(rate::RankingJson(*ranking)) : rate::RankingText(*ranking));
    return kExitOk;
  }
  if (o.attestations.size() > 1) {
    ctx.err << "cmax rate: one --attestation for one provider (several only with --providers)\n";
    return kExitUsage;
  }
  if (!o.rate.runs.empty() && asked_provider) {
    ctx.err << "cmax rate: name runs or --provider, not both\n";
    return kExitUsage;
  }
  rate::RateOptions options = o.rate;
  if (!o.attestations.empty()) options.attestation = o.attestations.front();
  if (o.rate.runs.empty()) options.provider = ctx.global.provider;
  auto rating = rate::RateStoredRuns(options, io);
  if (!rating) return PrintError(ctx, "cmax rate", rating.error());
  ctx.out << (o.json ? JsonText(rate::RatingJson(*rating))
                     : rate::RatingText(*rating, ctx.global.verbosity));
  return kExitOk;
}

}  // namespace

Command SetupRateCommand(CLI::App& parent) {
  auto o = std::make_shared<RateFlags>();
  CLI::App* app = parent.add_subcommand(
      "rate",
      "Rate stored runs against the rubric: a score per item with the evidence behind it, per\n"
      "category and overall (0-100), the confidence (the share of the rubric's weight that had\n"
      "evidence), gates, and the tier. Missing evidence lowers the confidence, never counts as\n"
      "a pass. Reads only the store and the files named");
  Opt(app, "RUN", o->rate.runs,
      "Run ids to rate together (default: the newest run, audit, reliability, endpoint, nccl "
      "and train runs and the newest health run of each kind; with --provider NAME, that "
      "provider's)");
  Opt(app, "--rubric", o->rate.rubric,
      "A rubric file (JSON, schema cmax.rubric/v1, like data/rubric/default.json) instead of "
      "the built-in one");
  Repeated(app, "--attestation", o->attestations,
           "The provider's attestation (YAML, schema cmax.attestation/v1): security reports, "
           "SLA terms, prices, delivery dates; with --providers, one per provider (repeatable). "
           "Without it, the attestation kept with the provider's `cmax run` evaluation");
  Flag(app, "--providers", o->providers,
       "Rank every provider in the store (runs recorded with --provider NAME), each on its "
       "newest runs, with its absolute tier and one relative to the field");
  Flag(app, "--json", o->json,
       "Print the rating as JSON (schema cmax.rating/v1; with --providers cmax.ranking/v1)");
  return {app, [o](Context& ctx) { return Rate(*o, ctx); }};
}

}  // namespace cmax::cli
