#include "report/render.hpp"

#include "core/strings.hpp"

namespace cmax::report {

Result<Format> ParseFormat(std::string_view text) {
  if (text == "text") return Format::kText;
  if (text == "json") return Format::kJson;
  if (text == "junit") return Format::kJunit;
  if (text == "html") return Format::kHtml;
  return Fail(ErrorCode::kInvalidArgument, "unknown format '{}' (text, json, junit, html)", text);
}

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kText: return "text";
    case Format::kJson: return "json";
    case Format::kJunit: return "junit";
    case Format::kHtml: return "html";
  }
  return "text";
}

std::string Render(Format format, const RunRecord& record, const TextOptions& text_options) {
  switch (format) {
    case Format::kText: return RenderText(record, text_options);
    case Format::kJson: return RenderJson(record);
    case Format::kJunit: return RenderJunit(record);
    case Format::kHtml: return RenderHtml(record);
  }
  return RenderText(record, text_options);
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

}  // namespace cmax::report
