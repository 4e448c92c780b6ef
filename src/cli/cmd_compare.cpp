// `cmax compare A B`: two stored runs rated with the same rubric and attestation, and what moved
// from A to B (the tier, each category, each item with its evidence before and after).
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

struct CompareFlags {
  std::string before;
  std::string after;
  rate::RateOptions rate;
  bool json = false;
};

int Compare(const CompareFlags& o, Context& ctx) {
  sys::LocalFileSystem fs;
  SystemClock clock;
  auto comparison = rate::CompareStoredRuns(o.before, o.after, o.rate,
                                            {.db_path = ctx.DbPath(), .fs = &fs, .clock = &clock});
  if (!comparison) return PrintError(ctx, "cmax compare", comparison.error());
  ctx.out << (o.json ? JsonText(rate::ComparisonJson(*comparison))
                     : rate::ComparisonText(*comparison));
  return kExitOk;
}

}  // namespace

Command SetupCompareCommand(CLI::App& parent) {
  auto o = std::make_shared<CompareFlags>();
  CLI::App* app = parent.add_subcommand(
      "compare",
      "What moved between two stored runs: each rated as `cmax rate RUN` would, with the same\n"
      "rubric and attestation; the tier, score and confidence before and after, the categories\n"
      "that moved, and each item whose score or evidence changed, with both evidences");
  Opt(app, "A", o->before, "The run before (an id, or 'latest')")->required();
  Opt(app, "B", o->after, "The run after (an id, or 'latest')")->required();
  Opt(app, "--rubric", o->rate.rubric,
      "Rate both with this rubric (JSON, cmax.rubric/v1) instead of the built-in one");
  Opt(app, "--attestation", o->rate.attestation,
      "The provider's attestation (YAML, cmax.attestation/v1), applied to both");
  Flag(app, "--json", o->json, "Print the comparison as JSON (schema cmax.comparison/v1)");
  return {app, [o](Context& ctx) { return Compare(*o, ctx); }};
}

}  // namespace cmax::cli
