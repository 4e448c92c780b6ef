#include <algorithm>
#include <fmt/format.h>
#include <vector>

#include "report/render.hpp"

namespace cmax::report {
namespace {

std::string Details(const Finding& f) {
  std::string text;
  if (!f.observed.empty()) text += "observed: " + f.observed + "\n";
  if (!f.expected.empty()) text += "expected: " + f.expected + "\n";
  if (!f.remediation.empty()) text += "remediation: " + f.remediation + "\n";
  for (const std::string& link : f.links) text += "see: " + link + "\n";
  return text;
}

}  // namespace

// JUnit has pass, failure, error and skipped. FAIL is a failure; UNKNOWN (the check could not
// read what it judges) is an error; SKIP is skipped; WARN and ATTEST pass, with their text in
// system-out so CI shows it without failing the build.
std::string RenderJunit(const RunRecord& record) {
  const RunInfo& run = record.run;
  const StatusCounts all = CountStatuses(record.findings);
  const double seconds =
      run.ended_at ? std::chrono::duration<double>(*run.ended_at - run.started_at).count() : 0.0;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n",
      XmlEscape(fmt::format("cmax {} #{}", run.command, run.id)), all.Total(), all.fail,
      all.unknown, all.skip, seconds);
  for (const auto& [category, members] : FindingsByCategory(record.findings)) {
    int failures = 0;
    int errors = 0;
    int skipped = 0;
    for (const Finding* f : members) {
      failures += f->status == CheckStatus::kFail ? 1 : 0;
      errors += f->status == CheckStatus::kUnknown ? 1 : 0;
      skipped += f->status == CheckStatus::kSkip ? 1 : 0;
    }
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "timestamp=\"{}\" hostname=\"{}\">\n",
        XmlEscape(category), members.size(), failures, errors, skipped,
        FormatIso8601(run.started_at).substr(0, 19), XmlEscape(run.host));
    for (const Finding* f : members) {
      out += fmt::format("    <testcase classname=\"cmax.{}\" name=\"{}\" time=\"0\">\n",
                         XmlEscape(category), XmlEscape(f->check_id));
      const std::string message = f->message.empty() ? f->observed : f->message;
      switch (f->status) {
        case CheckStatus::kFail:
          out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                             SeverityName(f->severity), XmlEscape(message), XmlEscape(Details(*f)));
          break;
        case CheckStatus::kUnknown:
          out += fmt::format("      <error type=\"unknown\" message=\"{}\">{}</error>\n",
                             XmlEscape(message), XmlEscape(Details(*f)));
          break;
        case CheckStatus::kSkip:
          out += fmt::format("      <skipped message=\"{}\"/>\n", XmlEscape(message));
          break;
        case CheckStatus::kWarn:
        case CheckStatus::kAttest:
          out += fmt::format("      <system-out>{}: {}&#10;{}</system-out>\n",
                             StatusName(f->status), XmlEscape(message), XmlEscape(Details(*f)));
          break;
        case CheckStatus::kPass: break;
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace cmax::report
