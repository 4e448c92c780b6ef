// `cmax rate`: the rating of stored runs (the newest of each kind by default) against the
// rubric (data/rubric/default.json, or --rubric FILE), with the provider's attestation where
// one is given. Reads only the store and the files named.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "rate/rate_run.hpp"
#include "sys/file_system.hpp"

namespace cmax::cli {
namespace {

struct RateFlags {
  rate::RateOptions rate;
  bool json = false;
};

int Rate(const RateFlags& o, Context& ctx) {
  sys::LocalFileSystem fs;
  SystemClock clock;
  auto rating = rate::RateStoredRuns(o.rate, {.db_path = ctx.DbPath(), .fs = &fs, .clock = &clock});
  if (!rating) return PrintError(ctx, "cmax rate", rating.error());
  ctx.out << (o.json ? rate::RatingJson(*rating).dump(2) + "\n"
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
      "Run ids to rate together (default: the newest run, audit, reliability, endpoint and "
      "health runs)");
  Opt(app, "--rubric", o->rate.rubric,
      "A rubric file (JSON, schema cmax.rubric/v1, like data/rubric/default.json) instead of "
      "the built-in one");
  Opt(app, "--attestation", o->rate.attestation,
      "The provider's attestation (YAML, schema cmax.attestation/v1): security reports, SLA "
      "terms, prices, delivery dates");
  Flag(app, "--json", o->json, "Print the rating as JSON (schema cmax.rating/v1)");
  return {app, [o](Context& ctx) { return Rate(*o, ctx); }};
}

}  // namespace cmax::cli
