// `cmax db`: what the store holds. `runs` lists runs, `show` prints one with its evidence.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "cli/numbers.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"

namespace cmax::cli {
namespace {

struct DbOptions {
  CLI::App* runs = nullptr;
  CLI::App* show = nullptr;
  CLI::App* path = nullptr;
  int limit = 20;
  std::string run = "latest";
  bool json = false;
};

int ListRuns(const DbOptions& options, Context& ctx) {
  auto store = store::Store::Open({.path = ctx.DbPath(), .create = false, .read_only = true});
  if (!store) {
    // No store yet is not an error for a listing: there are simply no runs.
    if (store.error().code == ErrorCode::kNotFound) {
      ctx.out << (options.json ? report::RenderRunList({}, ctx.DbPath(), true)
                               : "no runs yet: " + store.error().message + "\n");
      return kExitOk;
    }
    return PrintError(ctx, "cmax db runs", store.error());
  }
  auto runs = store->ListRuns(options.limit);
  if (!runs) return PrintError(ctx, "cmax db runs", runs.error());
  std::vector<report::RunListEntry> entries;
  for (const store::RunSummary& s : *runs) {
    entries.push_back({s.run, s.counts, store::DisplayState(s.run)});
  }
  ctx.out << report::RenderRunList(entries, store->Path(), options.json);
  return kExitOk;
}

int RunDb(const DbOptions& options, Context& ctx) {
  if (options.path->parsed()) {
    ctx.out << ctx.DbPath() << "\n";
    return kExitOk;
  }
  if (options.runs->parsed()) return ListRuns(options, ctx);
  auto record = store::LoadStoredRun(ctx.DbPath(), options.run);
  if (!record) return PrintError(ctx, "cmax db show", record.error());
  PrintRunRecord(ctx, *record, options.json, {.color = ctx.Color(), .show_evidence = true});
  return kExitOk;
}

}  // namespace

Command SetupDbCommand(CLI::App& parent) {
  auto options = std::make_shared<DbOptions>();
  CLI::App* app = parent.add_subcommand("db", "Read the store: list runs, show one run");
  app->require_subcommand(1);
  options->runs = app->add_subcommand("runs", "List runs, newest first, with finding counts");
  Num(options->runs, "-n,--limit", options->limit, Whole(1, 1000000), "How many runs");
  Flag(options->runs, "--json", options->json, "Machine-readable list (schema cmax.runs/v1)");
  options->show = app->add_subcommand("show", "Show one run: findings, evidence and metrics");
  Opt(options->show, "RUN", options->run, "Run id, or 'latest' (default)");
  Flag(options->show, "--json", options->json, "The run as JSON (schema cmax.report/v1)");
  options->path = app->add_subcommand("path", "Print the store's path");
  return {app, [options](Context& ctx) { return RunDb(*options, ctx); }};
}

}  // namespace cmax::cli
