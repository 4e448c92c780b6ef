#include "remediate/journal.hpp"

#include <nlohmann/json.hpp>

namespace cmax::remediate {
namespace {

using Json = nlohmann::json;

std::string Iso(WallTime t) {
  return FormatIso8601(t);
}

WallTime ParseTime(const std::string& text) {
  auto t = ParseIso8601(text);
  return t ? *t : WallTime{};
}

std::optional<WallTime> ParseOptionalTime(const store::Statement& s, int column) {
  if (s.ColumnIsNull(column)) return std::nullopt;
  return ParseTime(s.ColumnText(column));
}

std::string FaultsJson(const std::vector<FaultSeen>& faults) {
  Json out = Json::array();
  for (const FaultSeen& f : faults) out.push_back({{"at", Iso(f.at)}, {"device", f.device}});
  return out.dump();
}

std::vector<FaultSeen> ParseFaults(const std::string& text) {
  std::vector<FaultSeen> faults;
  const Json in = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_array()) return faults;
  for (const Json& f : in) {
    if (!f.is_object() || !f.contains("at") || !f["at"].is_string()) continue;
    faults.push_back({ParseTime(f["at"].get<std::string>()), f.value("device", std::string())});
  }
  return faults;
}

Result<ActionKind> ParseActionKind(const std::string& text) {
  for (int i = 0; i <= static_cast<int>(ActionKind::kAlert); ++i) {
    const auto kind = static_cast<ActionKind>(i);
    if (ActionKindName(kind) == text) return kind;
  }
  return Fail(ErrorCode::kCorrupt, "unknown action '{}' in the store", text);
}

Outcome ParseOutcome(const std::string& text) {
  for (Outcome o : {Outcome::kPlanned, Outcome::kStarted, Outcome::kDone, Outcome::kFailed,
                    Outcome::kSkipped}) {
    if (OutcomeName(o) == text) return o;
  }
  return Outcome::kFailed;
}

constexpr const char* kActionColumns =
    "id, node, action, device, reason, outcome, planned_at, started_at, finished_at, detail, "
    "dry_run";

Result<std::vector<ActionRow>> ReadActions(store::Statement& s) {
  std::vector<ActionRow> rows;
  for (;;) {
    auto row = s.Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    ActionRow a;
    a.id = s.ColumnInt(0);
    a.node = s.ColumnText(1);
    auto kind = ParseActionKind(s.ColumnText(2));
    if (!kind) return tl::unexpected(kind.error());
    a.action = {*kind, s.ColumnText(3), s.ColumnText(4)};
    a.outcome = ParseOutcome(s.ColumnText(5));
    a.planned_at = ParseTime(s.ColumnText(6));
    a.started_at = ParseOptionalTime(s, 7);
    a.finished_at = ParseOptionalTime(s, 8);
    a.detail = s.ColumnText(9);
    a.dry_run = s.ColumnInt(10) != 0;
    rows.push_back(std::move(a));
  }
  return rows;
}

Result<std::vector<WallTime>> ReadTimes(store::Statement& s) {
  std::vector<WallTime> times;
  for (;;) {
    auto row = s.Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    times.push_back(ParseTime(s.ColumnText(0)));
  }
  return times;
}

}  // namespace

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPlanned: return "planned";
    case Outcome::kStarted: return "started";
    case Outcome::kDone: return "done";
    case Outcome::kFailed: return "failed";
    case Outcome::kSkipped: return "skipped";
  }
  return "?";
}

Result<std::vector<NodeEntry>> Journal::Nodes() {
  auto s = db_->Prepare(
      "SELECT node, state, since, reason, pending, device, serious_faults, spare_in_use, spare, "
      "handle FROM remediation_nodes ORDER BY node");
  if (!s) return tl::unexpected(s.error());
  std::vector<NodeEntry> entries;
  for (;;) {
    auto row = s->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    NodeEntry e;
    e.node = s->ColumnText(0);
    auto state = ParseNodeState(s->ColumnText(1));
    if (!state) return Fail(ErrorCode::kCorrupt, "node {}: {}", e.node, state.error().message);
    e.record.state = *state;
    e.record.since = ParseTime(s->ColumnText(2));
    e.record.reason = s->ColumnText(3);
    e.record.pending = s->ColumnText(4);
    e.record.device = s->ColumnText(5);
    e.record.serious_faults = ParseFaults(s->ColumnText(6));
    e.record.spare_in_use = s->ColumnInt(7) != 0;
    e.spare = s->ColumnText(8);
    e.handle = s->ColumnText(9);
    entries.push_back(std::move(e));
  }
  return entries;
}

Result<NodeEntry> Journal::Node(const std::string& node, WallTime now) {
  auto all = Nodes();
  if (!all) return tl::unexpected(all.error());
  for (NodeEntry& e : *all) {
    if (e.node == node) return std::move(e);
  }
  NodeEntry fresh;
  fresh.node = node;
  fresh.record.since = now;
  return fresh;
}

Result<void> Journal::SaveEntry(const NodeEntry& entry, WallTime now) {
  auto s = db_->Prepare(
      "INSERT OR REPLACE INTO remediation_nodes (node, state, since, reason, pending, device, "
      "serious_faults, spare_in_use, spare, handle, updated_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!s) return tl::unexpected(s.error());
  const NodeRecord& r = entry.record;
  s->Bind(1, std::string_view(entry.node));
  s->Bind(2, NodeStateName(r.state));
  s->Bind(3, std::string_view(Iso(r.since)));
  s->Bind(4, std::string_view(r.reason));
  s->Bind(5, std::string_view(r.pending));
  s->Bind(6, std::string_view(r.device));
  s->Bind(7, std::string_view(FaultsJson(r.serious_faults)));
  s->Bind(8, static_cast<int64_t>(r.spare_in_use ? 1 : 0));
  s->Bind(9, std::string_view(entry.spare));
  s->Bind(10, std::string_view(entry.handle));
  s->Bind(11, std::string_view(Iso(now)));
  return s->Run();
}

Result<void> Journal::MarkSeen(const std::vector<SeenMark>& seen, int64_t result_of) {
  if (result_of != 0) {
    auto handed = db_->Prepare("UPDATE remediation_actions SET feedback_due = 0 WHERE id = ?");
    if (!handed) return tl::unexpected(handed.error());
    handed->Bind(1, result_of);
    if (auto ok = handed->Run(); !ok) return ok;
  }
  if (seen.empty()) return {};
  auto s = db_->Prepare(
      "INSERT OR REPLACE INTO remediation_seen (node, key, count, recovered) VALUES (?, ?, ?, ?)");
  if (!s) return tl::unexpected(s.error());
  for (const SeenMark& m : seen) {
    s->Bind(1, std::string_view(m.node));
    s->Bind(2, std::string_view(m.key));
    s->Bind(3, static_cast<int64_t>(m.count));
    s->Bind(4, static_cast<int64_t>(m.recovered ? 1 : 0));
    if (auto ok = s->Run(); !ok) return ok;
  }
  return {};
}

Result<std::vector<int64_t>> Journal::Apply(const NodeEntry& before, const Event& event,
                                            const Decision& decision, WallTime now, bool dry_run,
                                            const std::vector<SeenMark>& seen) {
  auto tx = store::Transaction::Begin(*db_);
  if (!tx) return tl::unexpected(tx.error());
  NodeEntry after = before;
  after.record = decision.next;
  if (auto ok = SaveEntry(after, now); !ok) return tl::unexpected(ok.error());
  auto h = db_->Prepare(
      "INSERT INTO remediation_history (node, event_detail, at, event, from_state, to_state, "
      "note) VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!h) return tl::unexpected(h.error());
  std::string detail = event.summary;
  if (event.kind == EventKind::kActionSucceeded || event.kind == EventKind::kActionFailed) {
    detail = std::string(ActionKindName(event.action));
  }
  h->Bind(1, std::string_view(before.node));
  h->Bind(2, std::string_view(detail));
  h->Bind(3, std::string_view(Iso(now)));
  h->Bind(4, EventKindName(event.kind));
  h->Bind(5, NodeStateName(before.record.state));
  h->Bind(6, NodeStateName(decision.next.state));
  h->Bind(7, std::string_view(decision.note));
  if (auto ok = h->Run(); !ok) return tl::unexpected(ok.error());
  std::vector<int64_t> ids;
  auto a = db_->Prepare(
      "INSERT INTO remediation_actions (node, action, device, reason, outcome, planned_at, "
      "dry_run, finished_at, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!a) return tl::unexpected(a.error());
  for (const Action& action : decision.actions) {
    a->Bind(1, std::string_view(before.node));
    a->Bind(2, ActionKindName(action.kind));
    a->Bind(3, std::string_view(action.device));
    a->Bind(4, std::string_view(action.reason));
    a->Bind(5, OutcomeName(dry_run ? Outcome::kSkipped : Outcome::kPlanned));
    a->Bind(6, std::string_view(Iso(now)));
    a->Bind(7, static_cast<int64_t>(dry_run ? 1 : 0));
    if (dry_run) {
      a->Bind(8, std::string_view(Iso(now)));
      a->Bind(9, std::string_view("dry run: not carried out"));
    } else {
      a->BindNull(8);
      a->Bind(9, std::string_view(""));
    }
    if (auto ok = a->Run(); !ok) return tl::unexpected(ok.error());
    ids.push_back(db_->LastInsertId());
  }
  if (auto ok = MarkSeen(seen, event.result_of); !ok) return tl::unexpected(ok.error());
  if (auto ok = tx->Commit(); !ok) return tl::unexpected(ok.error());
  return ids;
}

Result<void> Journal::Note(const std::string& node, std::string_view event,
                           const std::string& detail, const std::string& note, WallTime now) {
  auto entry = Node(node, now);
  if (!entry) return tl::unexpected(entry.error());
  auto h = db_->Prepare(
      "INSERT INTO remediation_history (node, event_detail, at, event, from_state, to_state, "
      "note) VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!h) return tl::unexpected(h.error());
  h->Bind(1, std::string_view(node));
  h->Bind(2, std::string_view(detail));
  h->Bind(3, std::string_view(Iso(now)));
  h->Bind(4, event);
  h->Bind(5, NodeStateName(entry->record.state));
  h->Bind(6, NodeStateName(entry->record.state));
  h->Bind(7, std::string_view(note));
  return h->Run();
}

Result<void> Journal::Started(int64_t id, WallTime at, const std::string& device) {
  auto s = db_->Prepare(
      "UPDATE remediation_actions SET outcome = 'started', started_at = COALESCE(started_at, ?), "
      "device = CASE WHEN ? = '' THEN device ELSE ? END WHERE id = ?");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(Iso(at)));
  s->Bind(2, std::string_view(device));
  s->Bind(3, std::string_view(device));
  s->Bind(4, id);
  return s->Run();
}

Result<void> Journal::Finished(int64_t id, bool ok, const std::string& detail, WallTime at,
                               bool feedback_due) {
  auto s = db_->Prepare(
      "UPDATE remediation_actions SET outcome = ?, finished_at = ?, detail = ?, feedback_due = ? "
      "WHERE id = ?");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, OutcomeName(ok ? Outcome::kDone : Outcome::kFailed));
  s->Bind(2, std::string_view(Iso(at)));
  s->Bind(3, std::string_view(detail));
  s->Bind(4, static_cast<int64_t>(feedback_due ? 1 : 0));
  s->Bind(5, id);
  return s->Run();
}

Result<std::vector<ActionRow>> Journal::ResultsDue() {
  auto s = db_->Prepare(std::string("SELECT ") + kActionColumns +
                        " FROM remediation_actions WHERE feedback_due = 1 ORDER BY id");
  if (!s) return tl::unexpected(s.error());
  return ReadActions(*s);
}

Result<std::vector<ActionRow>> Journal::OpenActions() {
  auto s = db_->Prepare(std::string("SELECT ") + kActionColumns +
                        " FROM remediation_actions WHERE outcome IN ('planned', 'started') "
                        "ORDER BY id");
  if (!s) return tl::unexpected(s.error());
  return ReadActions(*s);
}

Result<std::vector<ActionRow>> Journal::Actions(const std::string& node, int limit) {
  auto s = db_->Prepare(std::string("SELECT ") + kActionColumns +
                        " FROM (SELECT * FROM remediation_actions WHERE node = ? ORDER BY id DESC "
                        "LIMIT ?) ORDER BY id");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(node));
  s->Bind(2, static_cast<int64_t>(limit));
  return ReadActions(*s);
}

Result<std::vector<HistoryRow>> Journal::History(const std::string& node, int limit) {
  auto s = db_->Prepare(
      "SELECT id, node, at, event, event_detail, from_state, to_state, note FROM (SELECT * FROM "
      "remediation_history WHERE node = ? ORDER BY id DESC LIMIT ?) ORDER BY id");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(node));
  s->Bind(2, static_cast<int64_t>(limit));
  std::vector<HistoryRow> rows;
  for (;;) {
    auto row = s->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    rows.push_back({s->ColumnInt(0), s->ColumnText(1), ParseTime(s->ColumnText(2)),
                    s->ColumnText(3), s->ColumnText(4), s->ColumnText(5), s->ColumnText(6),
                    s->ColumnText(7)});
  }
  return rows;
}

Result<std::vector<TakeOut>> Journal::TakeOuts(WallTime since) {
  // planned_at is ISO 8601 in UTC with a fixed width, so text order is time order.
  auto s = db_->Prepare(
      "SELECT node, planned_at FROM remediation_actions WHERE action = 'drain' AND dry_run = 0 "
      "AND outcome != 'failed' AND planned_at >= ? ORDER BY planned_at");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(Iso(since)));
  std::vector<TakeOut> out;
  for (;;) {
    auto row = s->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    out.push_back({s->ColumnText(0), ParseTime(s->ColumnText(1))});
  }
  return out;
}

Result<std::vector<WallTime>> Journal::DisruptiveActions(const std::string& node, WallTime since) {
  auto s = db_->Prepare(
      "SELECT planned_at FROM remediation_actions WHERE node = ? AND dry_run = 0 AND action IN "
      "('drain', 'reset-gpu', 'reboot-node') AND planned_at >= ? ORDER BY planned_at");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(node));
  s->Bind(2, std::string_view(Iso(since)));
  return ReadTimes(*s);
}

Result<std::map<std::pair<std::string, std::string>, SeenMark>> Journal::Seen() {
  auto s = db_->Prepare("SELECT node, key, count, recovered FROM remediation_seen");
  if (!s) return tl::unexpected(s.error());
  std::map<std::pair<std::string, std::string>, SeenMark> seen;
  for (;;) {
    auto row = s->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    SeenMark m{s->ColumnText(0), s->ColumnText(1), static_cast<uint64_t>(s->ColumnInt(2)),
               s->ColumnInt(3) != 0};
    seen[{m.node, m.key}] = m;
  }
  return seen;
}

Result<BreakerState> Journal::Breaker() {
  auto s = db_->Prepare("SELECT tripped, tripped_at, reason FROM remediation_breaker WHERE id = 1");
  if (!s) return tl::unexpected(s.error());
  auto row = s->Step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return BreakerState{};
  return BreakerState{s->ColumnInt(0) != 0, ParseTime(s->ColumnText(1)), s->ColumnText(2)};
}

Result<void> Journal::SetBreaker(const BreakerState& state) {
  auto s = db_->Prepare(
      "INSERT OR REPLACE INTO remediation_breaker (id, tripped, tripped_at, reason) "
      "VALUES (1, ?, ?, ?)");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, static_cast<int64_t>(state.tripped ? 1 : 0));
  s->Bind(2, std::string_view(Iso(state.tripped_at)));
  s->Bind(3, std::string_view(state.reason));
  return s->Run();
}

Result<void> Journal::SavePolicy(const PolicyConfig& policy, WallTime at) {
  auto s = db_->Prepare(
      "INSERT OR REPLACE INTO remediation_policy (id, policy, saved_at) VALUES (1, ?, ?)");
  if (!s) return tl::unexpected(s.error());
  const std::string json = PolicyJson(policy);
  s->Bind(1, std::string_view(json));
  s->Bind(2, std::string_view(Iso(at)));
  return s->Run();
}

Result<std::optional<PolicyConfig>> Journal::SavedPolicy() {
  auto s = db_->Prepare("SELECT policy FROM remediation_policy WHERE id = 1");
  if (!s) return tl::unexpected(s.error());
  auto row = s->Step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<PolicyConfig>{};
  auto policy = ParsePolicyJson(s->ColumnText(0));
  if (!policy) return tl::unexpected(policy.error());
  return std::optional<PolicyConfig>(*policy);
}

Result<std::vector<RackHold>> Journal::RackHolds() {
  auto s = db_->Prepare(
      "SELECT node, rack, state, reason, since, detail FROM remediation_rack_holds ORDER BY node");
  if (!s) return tl::unexpected(s.error());
  std::vector<RackHold> holds;
  for (;;) {
    auto row = s->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    holds.push_back({s->ColumnText(0), s->ColumnText(1), s->ColumnText(2), s->ColumnText(3),
                     ParseTime(s->ColumnText(4)), s->ColumnText(5)});
  }
  return holds;
}

Result<void> Journal::SaveRackHold(const RackHold& hold) {
  auto s = db_->Prepare(
      "INSERT OR REPLACE INTO remediation_rack_holds (node, rack, state, reason, since, detail) "
      "VALUES (?, ?, ?, ?, ?, ?)");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(hold.node));
  s->Bind(2, std::string_view(hold.rack));
  s->Bind(3, std::string_view(hold.state));
  s->Bind(4, std::string_view(hold.reason));
  s->Bind(5, std::string_view(Iso(hold.since)));
  s->Bind(6, std::string_view(hold.detail));
  return s->Run();
}

Result<void> Journal::DropRackHold(const std::string& node) {
  auto s = db_->Prepare("DELETE FROM remediation_rack_holds WHERE node = ?");
  if (!s) return tl::unexpected(s.error());
  s->Bind(1, std::string_view(node));
  return s->Run();
}

}  // namespace cmax::remediate
