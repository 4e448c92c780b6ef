#include <algorithm>
#include <fmt/format.h>
#include <vector>

#include "core/strings.hpp"
#include "report/render.hpp"

namespace cmax::report {
namespace {

constexpr std::string_view kReset = "\x1b[0m";

std::string_view StatusColor(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass: return "\x1b[32m";
    case CheckStatus::kWarn: return "\x1b[33m";
    case CheckStatus::kFail: return "\x1b[1;31m";
    case CheckStatus::kSkip: return "\x1b[2m";
    case CheckStatus::kAttest: return "\x1b[36m";
    case CheckStatus::kUnknown: return "\x1b[1;35m";
  }
  return "";
}

std::string Paint(std::string_view text, std::string_view color, bool enabled) {
  if (!enabled) return std::string(text);
  return fmt::format("{}{}{}", color, text, kReset);
}

// Outside text may span lines; continuation lines keep the column the first one started in.
std::string Indented(std::string_view text, const std::string& indent) {
  const std::string clean = SanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size());
  for (const char c : clean) {  // one pass: inserting at each line break was quadratic
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

std::string RunHeadline(const RunInfo& run, bool color) {
  std::string state(RunStateName(run.state));
  std::string_view state_color = "\x1b[1m";
  if (run.state == RunState::kChecksFailed || run.state == RunState::kError) {
    state_color = StatusColor(CheckStatus::kFail);
  } else if (run.state == RunState::kInterrupted) {
    state_color = StatusColor(CheckStatus::kWarn);
  } else if (run.state == RunState::kOk) {
    state_color = StatusColor(CheckStatus::kPass);
  }
  // The run's names are one line each, wherever they came from (a store someone handed over):
  // a line break in one would start a line of the report's own.
  std::string out = fmt::format("cmax {} #{}  {}", AsOneLine(run.command), run.id,
                                Paint(state, state_color, color));
  if (run.exit_code) out += fmt::format(" (exit {})", *run.exit_code);
  out += "\n";
  out += fmt::format("  host {} · target {} · started {}", AsOneLine(run.host),
                     AsOneLine(run.target), FormatIso8601(run.started_at));
  if (run.ended_at) out += " · took " + FormatDuration(*run.ended_at - run.started_at);
  out += fmt::format(" · cmax {}\n", AsOneLine(run.cmax_version));
  return out;
}

}  // namespace

std::string RenderText(const RunRecord& record, const TextOptions& options) {
  std::string out = RunHeadline(record.run, options.color);
  size_t id_width = 0;
  for (const Finding& f : record.findings) id_width = std::max(id_width, f.check_id.size());
  id_width = std::min<size_t>(id_width, 32);
  // "UNKNOWN" is the one status name longer than six letters; the column grows only for it.
  size_t status_width = 6;
  for (const Finding& f : record.findings) {
    status_width = std::max(status_width, StatusName(f.status).size());
  }

  for (const auto& [category, group] : FindingsByCategory(record.findings)) {
    out += fmt::format("\n{}\n", Paint(AsOneLine(category), "\x1b[1m", options.color));
    for (const Finding* finding : group) {
      const Finding& f = *finding;
      const std::string status = fmt::format("{:<{}}", StatusName(f.status), status_width);
      const std::string& headline = f.message.empty() ? f.observed : f.message;
      const std::string indent(2 + status_width + 2 + id_width + 2, ' ');
      out += fmt::format("  {}  {:<{}}  {}\n", Paint(status, StatusColor(f.status), options.color),
                         AsOneLine(f.check_id), id_width, Indented(headline, indent));
      const bool problem = f.status == CheckStatus::kWarn || f.status == CheckStatus::kFail ||
                           f.status == CheckStatus::kUnknown;
      if ((problem || options.detail >= 1) && (!f.observed.empty() || !f.expected.empty())) {
        out += fmt::format("{}observed: {} · expected: {}\n", indent, Indented(f.observed, indent),
                           Indented(f.expected.empty() ? "-" : f.expected, indent));
      }
      if (problem && !f.remediation.empty()) {
        out += fmt::format("{}fix: {}\n", indent, Indented(f.remediation, indent));
      }
      if (options.detail >= 2 && options.explain) {
        for (const auto& [label, text] : options.explain(f.check_id)) {
          if (!text.empty())
            out += fmt::format("{}{}: {}\n", indent, label, Indented(text, indent));
        }
      }
      if (options.detail >= 1) {
        for (const std::string& link : f.links) {
          out += fmt::format("{}see: {}\n", indent, AsOneLine(link));
        }
      }
    }
  }

  if (options.show_evidence && !record.evidence.empty()) {
    out += fmt::format("\n{}\n", Paint("evidence", "\x1b[1m", options.color));
    for (const EvidenceItem& item : record.evidence) {
      out += fmt::format("  {} = {}\n", AsOneLine(item.key), AsOneLine(item.value_json));
    }
  }
  if (!record.metrics.empty()) {
    out += fmt::format("\n{}\n", Paint("metrics", "\x1b[1m", options.color));
    for (const Metric& m : record.metrics) {
      std::string labels;
      for (const auto& [key, value] : m.labels) {
        labels += fmt::format("{}{}={}", labels.empty() ? "{" : ",", key, value);
      }
      if (!labels.empty()) labels += "}";
      out += fmt::format("  {}{} = {:g} {}\n", AsOneLine(m.name), AsOneLine(labels), m.value,
                         AsOneLine(m.unit));
    }
  }

  const StatusCounts c = CountStatuses(record.findings);
  out += fmt::format("\n{} findings: {} · {} · {} · {} · {}\n", c.Total(),
                     Paint(fmt::format("{} PASS", c.pass), StatusColor(CheckStatus::kPass),
                           options.color && c.pass > 0),
                     Paint(fmt::format("{} WARN", c.warn), StatusColor(CheckStatus::kWarn),
                           options.color && c.warn > 0),
                     Paint(fmt::format("{} FAIL", c.fail), StatusColor(CheckStatus::kFail),
                           options.color && c.fail > 0),
                     Paint(fmt::format("{} SKIP", c.skip), StatusColor(CheckStatus::kSkip),
                           options.color && c.skip > 0),
                     Paint(fmt::format("{} ATTEST", c.attest), StatusColor(CheckStatus::kAttest),
                           options.color && c.attest > 0));
  // Rare, and never to be missed: on its own line, only when there is one.
  if (c.unknown > 0) {
    out += Paint(fmt::format("{} UNKNOWN: checks that could not read what they judge\n", c.unknown),
                 StatusColor(CheckStatus::kUnknown), options.color);
  }
  return out;
}

}  // namespace cmax::report
