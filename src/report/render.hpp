// Renderers from a stored run to what people and machines read: terminal text, JSON
// (schema cmax.report/v1, docs/REPORT_SCHEMA.md), JUnit XML for CI, one self-contained HTML
// page and its Markdown twin. A run that was rated (its `rating` evidence) leads the page and
// the Markdown with the rating (rating_view.hpp). Pure functions: a run in, a string out.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::report {

inline constexpr std::string_view kJsonSchema = "cmax.report/v1";

enum class Format { kText, kJson, kJunit, kHtml, kMarkdown };
Result<Format> ParseFormat(std::string_view text);
std::string_view FormatName(Format format);

struct TextOptions {
  bool color = false;          // ANSI colours: only when writing to a terminal
  bool show_evidence = false;  // list every evidence key and value
  // How much each finding says: 0 observed, expected and fix for problems only; 1 observed and
  // expected for every finding, and its links (CVEs, advisories); 2 also what `explain` gives
  // for its check (the audit: why it matters as its rule, the command that reproduces it).
  int detail = 0;
  std::function<std::vector<std::pair<std::string, std::string>>(std::string_view check_id)>
      explain;
};

std::string RenderText(const RunRecord& record, const TextOptions& options);
std::string RenderJson(const RunRecord& record);
std::string RenderJunit(const RunRecord& record);
std::string RenderHtml(const RunRecord& record);
std::string RenderMarkdown(const RunRecord& record);  // GitHub-flavoured, the HTML page's content
std::string Render(Format format, const RunRecord& record, const TextOptions& text_options);

// Escaping for text from outside; both run SanitizeUtf8 first.
std::string HtmlEscape(std::string_view text);
std::string XmlEscape(std::string_view text);
// For Markdown text and table cells: its syntax and inline HTML both become text, one line.
std::string MarkdownEscape(std::string_view text);

// A chart's value axis: five gridlines from 0 to `top` across [left, right], each labelled at
// its left; `y` maps a value to its height in the chart.
std::string SvgValueGrid(int left, int right, double top, const std::function<double(double)>& y);

// `cmax db runs`: runs newest first with their finding counts, as a table or JSON (schema
// cmax.runs/v1). `state` is the state to show (a run whose process is gone is "abandoned").
struct RunListEntry {
  RunInfo run;
  StatusCounts counts;
  std::string state;
};
std::string RenderRunList(const std::vector<RunListEntry>& runs, const std::string& store_path,
                          bool json);

}  // namespace cmax::report
