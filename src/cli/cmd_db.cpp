// `cmax db`: what the store holds. `runs` lists runs, `show` prints one with its evidence.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/numbers.hpp"
#include "core/strings.hpp"
#include "report/render.hpp"

namespace cmax::cli {
namespace {

struct DbOptions {
  CLI::App* runs = nullptr;
  CLI::App* show = nullptr;
  CLI::App* path = nullptr;
  int limit = 20;
  std::string run;
  bool json = false;
};

int ListRuns(const DbOptions& options, Context& ctx, store::Store& store) {
  auto runs = store.ListRuns(options.limit);
  if (!runs) {
    ctx.err << "cmax db runs: " << runs.error().message << "\n";
    return kExitError;
  }
  if (options.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const store::RunSummary& s : *runs) {
      const RunInfo& r = s.run;
      list.push_back({{"id", r.id},
                      {"command", r.command},
                      {"target", r.target},
                      {"host", r.host},
                      {"started_at", FormatIso8601(r.started_at)},
                      {"ended_at", r.ended_at ? nlohmann::ordered_json(FormatIso8601(*r.ended_at))
                                              : nlohmann::ordered_json(nullptr)},
                      {"state", DisplayState(r)},
                      {"exit_code", r.exit_code ? nlohmann::ordered_json(*r.exit_code)
                                                : nlohmann::ordered_json(nullptr)},
                      {"cmax_version", r.cmax_version},
                      {"summary",
                       {{"PASS", s.counts.pass},
                        {"WARN", s.counts.warn},
                        {"FAIL", s.counts.fail},
                        {"SKIP", s.counts.skip},
                        {"ATTEST", s.counts.attest},
                        {"UNKNOWN", s.counts.unknown}}}});
    }
    nlohmann::ordered_json out = {
        {"schema", "cmax.runs/v1"}, {"store", store.Path()}, {"runs", list}};
    ctx.out << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (runs->empty()) {
    ctx.out << "no runs in " << store.Path() << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{:>5}  {:<8}  {:<13}  {:<24}  {:>8}  {:<28}  {}\n", "ID", "COMMAND",
                         "STATE", "STARTED", "TOOK", "TARGET",
                         "PASS/WARN/FAIL/SKIP/ATTEST/UNKNOWN");
  for (const store::RunSummary& s : *runs) {
    const RunInfo& r = s.run;
    const std::string took = r.ended_at ? FormatDuration(*r.ended_at - r.started_at) : "-";
    ctx.out << fmt::format("{:>5}  {:<8}  {:<13}  {:<24}  {:>8}  {:<28}  {}/{}/{}/{}/{}/{}\n", r.id,
                           SanitizeUtf8(r.command), DisplayState(r), FormatIso8601(r.started_at),
                           took, SanitizeUtf8(r.target), s.counts.pass, s.counts.warn,
                           s.counts.fail, s.counts.skip, s.counts.attest, s.counts.unknown);
  }
  return kExitOk;
}

int ShowRun(const DbOptions& options, Context& ctx, store::Store& store) {
  auto id = ResolveRunId(store, options.run);
  if (!id) {
    ctx.err << "cmax db show: " << id.error().message << "\n";
    return id.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  auto record = store.LoadRun(*id);
  if (!record) {
    ctx.err << "cmax db show: " << record.error().message << "\n";
    return record.error().code == ErrorCode::kNotFound ? kExitUsage : kExitError;
  }
  if (options.json) {
    ctx.out << report::RenderJson(*record);
  } else {
    ctx.out << report::RenderText(*record, {.color = ctx.Color(), .show_evidence = true});
  }
  return kExitOk;
}

int RunDb(const DbOptions& options, Context& ctx) {
  if (options.path->parsed()) {
    ctx.out << ctx.DbPath() << "\n";
    return kExitOk;
  }
  auto store = OpenExistingStore(ctx);
  if (!store) {
    // No store yet is not an error for a listing: there are simply no runs.
    if (store.error().code == ErrorCode::kNotFound && options.runs->parsed() && !options.json) {
      ctx.out << "no runs yet: " << store.error().message << "\n";
      return kExitOk;
    }
    ctx.err << "cmax db: " << store.error().message << "\n";
    return kExitError;
  }
  if (options.runs->parsed()) return ListRuns(options, ctx, *store);
  return ShowRun(options, ctx, *store);
}

}  // namespace

Command SetupDbCommand(CLI::App& parent) {
  auto options = std::make_shared<DbOptions>();
  CLI::App* app = parent.add_subcommand("db", "Read the store: list runs, show one run");
  app->require_subcommand(1);
  options->runs = app->add_subcommand("runs", "List runs, newest first, with finding counts");
  options->runs->add_option("-n,--limit", options->limit, "How many runs")
      ->check(Whole(1, 1000000));
  options->runs->add_flag("--json", options->json, "Machine-readable list (schema cmax.runs/v1)");
  options->show = app->add_subcommand("show", "Show one run: findings, evidence and metrics");
  options->show->add_option("RUN", options->run, "Run id, or 'latest' (default)");
  options->show->add_flag("--json", options->json, "The run as JSON (schema cmax.report/v1)");
  options->path = app->add_subcommand("path", "Print the store's path");
  return {app, [options](Context& ctx) { return RunDb(*options, ctx); }};
}

}  // namespace cmax::cli
