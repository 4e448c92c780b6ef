#include "remediate/views.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/json_text.hpp"
#include "core/strings.hpp"

namespace cmax::remediate {

std::string NextStep(const NodeEntry& e, double probation_min) {
  const NodeRecord& r = e.record;
  switch (r.state) {
    case NodeState::kHealthy: return "-";
    case NodeState::kSuspect: return "watching; healthy again when quiet";
    case NodeState::kQuarantined: return "waiting for " + (r.pending.empty() ? "?" : r.pending);
    case NodeState::kValidating:
      return e.handle.empty() ? "starting validation" : "validation " + e.handle;
    case NodeState::kReintroduced:
      return "probation until " +
             FormatIso8601(r.since + std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::duration<double>(probation_min * 60)));
    case NodeState::kRepair: return "repair by hand, then `cmax remediate repaired " + e.node + "`";
    case NodeState::kRetired: return "-";
  }
  return "?";
}

Result<std::string> StatusView(Journal& journal, const std::string& store_path,
                               double probation_min, bool json) {
  auto nodes = journal.Nodes();
  auto breaker = journal.Breaker();
  auto open = journal.OpenActions();
  auto holds = journal.RackHolds();
  if (!nodes) return tl::unexpected(nodes.error());
  if (!breaker) return tl::unexpected(breaker.error());
  if (!open) return tl::unexpected(open.error());
  if (!holds) return tl::unexpected(holds.error());
  if (json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const NodeEntry& e : *nodes) {
      list.push_back({{"node", e.node},
                      {"state", NodeStateName(e.record.state)},
                      {"since", FormatIso8601(e.record.since)},
                      {"reason", e.record.reason},
                      {"pending", e.record.pending},
                      {"spare", e.spare},
                      {"next", NextStep(e, probation_min)}});
    }
    nlohmann::ordered_json rack_holds = nlohmann::ordered_json::array();
    for (const RackHold& h : *holds) {
      rack_holds.push_back({{"node", h.node},
                            {"rack", h.rack},
                            {"state", h.state},
                            {"since", FormatIso8601(h.since)},
                            {"reason", h.reason}});
    }
    nlohmann::ordered_json out = {
        {"schema", "cmax.remediation/v1"},
        {"breaker",
         {{"tripped", breaker->tripped},
          {"since", breaker->tripped ? nlohmann::ordered_json(FormatIso8601(breaker->tripped_at))
                                     : nlohmann::ordered_json(nullptr)},
          {"reason", breaker->reason}}},
        {"open_actions", open->size()},
        {"nodes", list},
        {"rack_holds", rack_holds}};
    return JsonText(out);
  }
  std::string text;
  if (breaker->tripped) {
    text += "CIRCUIT BREAKER TRIPPED at " + FormatIso8601(breaker->tripped_at) + ": " +
            SanitizeUtf8(breaker->reason) +
            "\n  no action is taken until `cmax remediate reset-breaker`\n\n";
  }
  if (!holds->empty()) {
    // Grouped by rack: 15 held trays of one rack are one line for a person.
    std::map<std::string, std::vector<std::string>> by_rack;
    for (const RackHold& h : *holds) {
      by_rack[h.rack].push_back(h.node + (h.state == "held" ? "" : " (" + h.state + ")"));
    }
    for (const auto& [rack, trays] : by_rack) {
      text += fmt::format("rack {}: {} tray(s) held out of service for the rack: {}\n",
                          SanitizeUtf8(rack), trays.size(), SanitizeUtf8(Join(trays, ", ")));
    }
    text += "\n";
  }
  if (nodes->empty()) {
    return text + "no node has been remediated (store " + store_path + ")\n";
  }
  text +=
      fmt::format("{:<16} {:<13} {:<24} {:<32} {}\n", "NODE", "STATE", "SINCE", "REASON", "NEXT");
  for (const NodeEntry& e : *nodes) {
    std::string reason = SanitizeUtf8(e.record.reason);
    if (reason.size() > 32) reason = reason.substr(0, 29) + "...";
    std::string next = NextStep(e, probation_min);
    if (!e.spare.empty()) next += " (spare " + e.spare + " serving)";
    text += fmt::format("{:<16} {:<13} {:<24} {:<32} {}\n", SanitizeUtf8(e.node),
                        NodeStateName(e.record.state), FormatIso8601(e.record.since),
                        reason.empty() ? "-" : reason, SanitizeUtf8(next));
  }
  if (!open->empty())
    text += fmt::format("\n{} action(s) planned and not finished\n", open->size());
  return text;
}

Result<std::string> HistoryView(Journal& journal, const std::string& node, int limit, bool json) {
  auto history = journal.History(node, limit);
  if (!history) return tl::unexpected(history.error());
  auto actions = journal.Actions(node, limit);
  if (!actions) return tl::unexpected(actions.error());
  struct Line {
    WallTime at;
    int order;  // a transition before the actions it planned
    std::string text;
    nlohmann::ordered_json json;
  };
  std::vector<Line> lines;
  for (const HistoryRow& h : *history) {
    std::string what = h.from == h.to ? h.from : h.from + " -> " + h.to;
    lines.push_back({h.at,
                     0,
                     fmt::format("{}  {:<32} {}{}: {}", FormatIso8601(h.at), what, h.event,
                                 h.event_detail.empty() ? "" : " (" + h.event_detail + ")", h.note),
                     {{"at", FormatIso8601(h.at)},
                      {"kind", "transition"},
                      {"event", h.event},
                      {"detail", h.event_detail},
                      {"from", h.from},
                      {"to", h.to},
                      {"note", h.note}}});
  }
  for (const ActionRow& a : *actions) {
    const WallTime at = a.finished_at.value_or(a.started_at.value_or(a.planned_at));
    std::string took;
    if (a.started_at && a.finished_at)
      took = " in " + FormatDuration(*a.finished_at - *a.started_at);
    lines.push_back(
        {at,
         1,
         fmt::format("{}    {:<30} {}{}{}", FormatIso8601(at), ActionKindName(a.action.kind),
                     OutcomeName(a.outcome), took, a.detail.empty() ? "" : ": " + a.detail),
         {{"at", FormatIso8601(at)},
          {"kind", "action"},
          {"action", ActionKindName(a.action.kind)},
          {"device", a.action.device},
          {"reason", a.action.reason},
          {"outcome", OutcomeName(a.outcome)},
          {"planned_at", FormatIso8601(a.planned_at)},
          {"started_at", a.started_at ? nlohmann::ordered_json(FormatIso8601(*a.started_at))
                                      : nlohmann::ordered_json(nullptr)},
          {"finished_at", a.finished_at ? nlohmann::ordered_json(FormatIso8601(*a.finished_at))
                                        : nlohmann::ordered_json(nullptr)},
          {"detail", a.detail},
          {"dry_run", a.dry_run}}});
  }
  std::ranges::stable_sort(lines, [](const Line& a, const Line& b) {
    return a.at != b.at ? a.at < b.at : a.order < b.order;
  });
  if (json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Line& l : lines) list.push_back(l.json);
    nlohmann::ordered_json out = {
        {"schema", "cmax.remediation-history/v1"}, {"node", node}, {"timeline", list}};
    return JsonText(out);
  }
  if (lines.empty()) return "no remediation history for " + SanitizeUtf8(node) + "\n";
  std::string text;
  for (const Line& l : lines) text += SanitizeUtf8(l.text) + "\n";
  return text;
}

std::string OperatorOutcomeView(std::string_view node, const OperatorOutcome& outcome) {
  if (!outcome.changed) {
    return fmt::format("{} is {}; nothing to do ({})\n", SanitizeUtf8(node),
                       NodeStateName(outcome.from), outcome.note);
  }
  return fmt::format("{}: {} -> {}; {} action(s) planned for the controller{}\n",
                     SanitizeUtf8(node), NodeStateName(outcome.from), NodeStateName(outcome.to),
                     outcome.actions_planned,
                     outcome.policy_of_controller ? ""
                                                  : " (no controller has run on this store yet: "
                                                    "judged by the default policy)");
}

std::string PassView(const StepSummary& pass) {
  std::string text = fmt::format(
      "{} events, {} transitions, {} actions done, {} failed, {} refused\n", pass.events,
      pass.transitions, pass.actions_done, pass.actions_failed, pass.refused);
  for (const std::string& line : pass.decided) text += "  " + AsOneLine(line) + "\n";
  if (pass.breaker_tripped) {
    text +=
        "circuit breaker tripped: no more action until `cmax remediate reset-breaker` "
        "(see `cmax remediate status`)\n";
  }
  return text;
}

bool PassWentWrong(const StepSummary& pass) {
  return pass.breaker_tripped || pass.actions_failed > 0 || pass.refused > 0;
}

}  // namespace cmax::remediate
