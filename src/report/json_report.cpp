#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "core/strings.hpp"
#include "report/render.hpp"

namespace cmax::report {
namespace {

using Json = nlohmann::ordered_json;

Json OptionalTime(const std::optional<WallTime>& time) {
  return time ? Json(FormatIso8601(*time)) : Json(nullptr);
}

}  // namespace

std::string RenderJson(const RunRecord& record) {
  const RunInfo& run = record.run;
  Json out;
  out["schema"] = kJsonSchema;
  out["run"] = {
      {"id", run.id},
      {"command", run.command},
      {"target", run.target},
      {"host", run.host},
      {"started_at", FormatIso8601(run.started_at)},
      {"ended_at", OptionalTime(run.ended_at)},
      {"duration_s",
       run.ended_at ? Json(std::chrono::duration<double>(*run.ended_at - run.started_at).count())
                    : Json(nullptr)},
      {"state", RunStateName(run.state)},
      {"exit_code", run.exit_code ? Json(*run.exit_code) : Json(nullptr)},
      {"cmax_version", run.cmax_version},
      {"provider", run.provider.empty() ? Json(nullptr) : Json(run.provider)},
  };
  const StatusCounts c = CountStatuses(record.findings);
  out["summary"] = {{"total", c.Total()},  {"PASS", c.pass}, {"WARN", c.warn},
                    {"FAIL", c.fail},      {"SKIP", c.skip}, {"ATTEST", c.attest},
                    {"UNKNOWN", c.unknown}};
  Json findings = Json::array();
  for (const Finding& f : record.findings) {
    findings.push_back({
        {"check_id", f.check_id},
        {"category", FindingCategory(f.check_id)},
        {"status", StatusName(f.status)},
        {"severity", SeverityName(f.severity)},
        {"observed", f.observed},
        {"expected", f.expected},
        {"message", f.message},
        {"remediation", f.remediation},
        {"links", f.links},
    });
  }
  out["findings"] = std::move(findings);
  Json evidence = Json::object();
  for (const EvidenceItem& item : record.evidence) {
    // Evidence is stored as JSON text; anything that does not parse is kept as a string.
    Json value = Json::parse(item.value_json, nullptr, false);
    evidence[item.key] = value.is_discarded() ? Json(item.value_json) : std::move(value);
  }
  out["evidence"] = std::move(evidence);
  Json metrics = Json::array();
  for (const Metric& m : record.metrics) {
    metrics.push_back(
        {{"name", m.name}, {"labels", m.labels}, {"value", m.value}, {"unit", m.unit}});
  }
  out["metrics"] = std::move(metrics);
  return JsonText(out);
}

}  // namespace cmax::report
