// `cmax report`: renders a stored run as text, JSON, JUnit XML, a self-contained HTML page or
// Markdown.
// It reads only the store, so any past run can be re-rendered without the cluster.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/cli.hpp"
#include "cli/common.hpp"
#include "cli/flags.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"

namespace cmax::cli {
namespace {

struct ReportOptions {
  std::string run = "latest";
  std::string format = "text";
  std::string output;
  bool json = false;
};

int RunReport(const ReportOptions& options, Context& ctx) {
  auto format = report::ParseFormat(options.json ? "json" : options.format);
  if (!format) {
    ctx.err << "cmax report: " << format.error().message << "\n";
    return kExitUsage;
  }
  auto record = store::LoadStoredRun(ctx.DbPath(), options.run);
  if (!record) return PrintError(ctx, "cmax report", record.error());
  const bool to_stdout = options.output.empty() || options.output == "-";
  return WriteOrPrint(ctx, "cmax report", options.output,
                      report::Render(*format, *record,
                                     {.color = to_stdout && ctx.Color(), .show_evidence = false}));
}

}  // namespace

Command SetupReportCommand(CLI::App& parent) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* app = parent.add_subcommand(
      "report",
      "Render a stored run: text, json (cmax.report/v1), junit, html or markdown; a rated run's\n"
      "page and Markdown lead with its rating (tier, category chart, items and evidence)");
  Opt(app, "RUN", options->run, "Run id, or 'latest' (default)");
  CLI::Option* format = Choice(app, "-f,--format", options->format,
                               {"text", "json", "junit", "html", "markdown", "md"},
                               "text, json, junit, html or markdown (md)");
  Opt(app, "-o,--output", options->output,
      "Write to this file instead of stdout (a device, FIFO or link is written through)")
      ->check([](const std::string& path) { return path.empty() ? "must name a file" : ""; });
  Flag(app, "--json", options->json, "Same as --format json")->excludes(format);
  return {app, [options](Context& ctx) { return RunReport(*options, ctx); }};
}

}  // namespace cmax::cli
