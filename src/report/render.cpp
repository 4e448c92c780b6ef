#include "report/render.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "core/strings.hpp"

namespace cmax::report {

Result<Format> ParseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  if (text == "junit") return Format::kJunit;
  if (text == "html") return Format::kHtml;
  if (text == "markdown" || text == "md") return Format::kMarkdown;
  return Fail(ErrorCode::kInvalidArgument,
              "unknown format '{}' (text, json, junit, html, markdown)", text);
}

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kText: return "text";
    case Format::kJson: return "json";
    case Format::kJunit: return "junit";
    case Format::kHtml: return "html";
    case Format::kMarkdown: return "markdown";
  }
  return "text";
}

std::string Render(Format format, const RunRecord& record, const TextOptions& text_options) {
  switch (format) {
    case Format::kText: return RenderText(record, text_options);
    case Format::kJson: return RenderJson(record);
    case Format::kJunit: return RenderJunit(record);
    case Format::kHtml: return RenderHtml(record);
    case Format::kMarkdown: return RenderMarkdown(record);
  }
  return RenderText(record, text_options);
}

std::string SvgValueGrid(int left, int right, double top, const std::function<double(double)>& y) {
  std::string out;
  for (int i = 0; i <= 4; ++i) {
    const double v = top / 4 * i;  // not top * i: that overflows near the largest double
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e6e9f0\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"#4a5468\">{5:.4g}</text>\n",
        left, y(v), right, left - 6, y(v) + 4, v);
  }
  return out;
}

std::string HtmlEscape(std::string_view text) {
  const std::string clean = SanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string XmlEscape(std::string_view text) {
  // XML 1.0 has no escape for most control characters; SanitizeUtf8 already replaced them.
  std::string out;
  for (char c : HtmlEscape(text)) {
    if (c == '\n') {
      out += "&#10;";
    } else if (c == '\t') {
      out += "&#9;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderRunList(const std::vector<RunListEntry>& runs, const std::string& store_path,
                          bool json) {
  if (json) {
    using Json = nlohmann::ordered_json;
    Json list = Json::array();
    for (const RunListEntry& e : runs) {
      const RunInfo& r = e.run;
      list.push_back({{"id", r.id},
                      {"command", r.command},
                      {"target", r.target},
                      {"host", r.host},
                      {"started_at", FormatIso8601(r.started_at)},
                      {"ended_at", r.ended_at ? Json(FormatIso8601(*r.ended_at)) : Json(nullptr)},
                      {"state", e.state},
                      {"exit_code", r.exit_code ? Json(*r.exit_code) : Json(nullptr)},
                      {"cmax_version", r.cmax_version},
                      {"provider", r.provider.empty() ? Json(nullptr) : Json(r.provider)},
                      {"summary",
                       {{"PASS", e.counts.pass},
                        {"WARN", e.counts.warn},
                        {"FAIL", e.counts.fail},
                        {"SKIP", e.counts.skip},
                        {"ATTEST", e.counts.attest},
                        {"UNKNOWN", e.counts.unknown}}}});
    }
    const Json out = {{"schema", "cmax.runs/v1"}, {"store", store_path}, {"runs", list}};
    return JsonText(out);
  }
  if (runs.empty()) return "no runs in " + store_path + "\n";
  // A PROVIDER column only where a run names one: a store of one provider's runs reads as before.
  const bool providers =
      std::ranges::any_of(runs, [](const RunListEntry& e) { return !e.run.provider.empty(); });
  const auto provider_cell = [providers](const std::string& provider) {
    return providers ? fmt::format("{:<16}  ", AsOneLine(provider.empty() ? "-" : provider))
                     : std::string();
  };
  std::string text = fmt::format("{:>5}  {:<8}  {:<13}  {:<24}  {:>8}  {:<28}  {}{}\n", "ID",
                                 "COMMAND", "STATE", "STARTED", "TOOK", "TARGET",
                                 provider_cell("PROVIDER"), "PASS/WARN/FAIL/SKIP/ATTEST/UNKNOWN");
  for (const RunListEntry& e : runs) {
    const RunInfo& r = e.run;
    const std::string took = r.ended_at ? FormatDuration(*r.ended_at - r.started_at) : "-";
    text +=
        fmt::format("{:>5}  {:<8}  {:<13}  {:<24}  {:>8}  {:<28}  {}{}/{}/{}/{}/{}/{}\n", r.id,
                    AsOneLine(r.command), e.state, FormatIso8601(r.started_at), took,
                    AsOneLine(r.target), provider_cell(r.provider), e.counts.pass, e.counts.warn,
                    e.counts.fail, e.counts.skip, e.counts.attest, e.counts.unknown);
  }
  return text;
}

}  // namespace cmax::report
