#include "audit/review.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "audit/catalogue.hpp"
#include "audit/fanout.hpp"
#include "audit/grading.hpp"
#include "audit/kube_audit.hpp"
#include "core/json_text.hpp"
#include "core/strings.hpp"
#include "store/run_writer.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// Why each key a run could not read was not read, as stored ({"key": "why"}).
std::map<std::string, std::string> UnreadFrom(const json& stored) {
  std::map<std::string, std::string> unread;
  if (!stored.is_object()) return unread;
  for (const auto& [key, why] : stored.items()) {
    unread[key] = why.is_string() ? why.get<std::string>() : why.dump();
  }
  return unread;
}

std::optional<json> Item(const RunRecord& record, std::string_view key) {
  for (const EvidenceItem& item : record.evidence) {
    if (item.key != key) continue;
    auto value = json::parse(item.value_json, nullptr, false);
    if (value.is_discarded()) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

std::string TableOf(const std::optional<json>& generated, const std::optional<json>& sha) {
  const auto text = [](const std::optional<json>& v) {
    return v && v->is_string() ? v->get<std::string>() : std::string("?");
  };
  return fmt::format("{} (sha256 {})", text(generated), text(sha).substr(0, 12));
}

}  // namespace

Result<std::vector<Finding>> RegradeRecord(const RunRecord& record, const MinimumTable& table,
                                           WallTime now) {
  if (record.run.command != "audit") {
    return Fail(ErrorCode::kInvalidArgument, "run {} is a {} run, not an audit", record.run.id,
                record.run.command);
  }
  const auto target_name = Item(record, "audit.target");
  if (!target_name || !target_name->is_string()) {
    return Fail(ErrorCode::kInvalidArgument, "run {} records no audit target", record.run.id);
  }
  auto target = ParseTarget(target_name->get<std::string>());
  if (!target) return tl::unexpected(target.error());
  const auto profile = Item(record, "audit.profile");
  const std::string wanted =
      profile && profile->is_string() && *profile != "all" ? profile->get<std::string>() : "";
  auto checks = AuditCatalogue::Builtin().Select(wanted);
  if (!checks) return tl::unexpected(checks.error());
  const auto allowed = Item(record, "audit.side_effects_allowed");
  const GradeContext context{.target = *target,
                             .minimums = &table,
                             .now = now,
                             .allow_side_effects = allowed && *allowed == json(true)};

  // Slurm and Kubernetes audits are graded node by node; the others are one host's evidence.
  if (*target != AuditTarget::kSlurm && *target != AuditTarget::kKubernetes) {
    AuditEvidence evidence;
    std::map<std::string, std::string> unread;  // a host read from a container: what it cannot tell
    for (const EvidenceItem& item : record.evidence) {
      // The run's own bookkeeping; audit.coverage.nodes_read is evidence (the local target's).
      if (item.key == "audit.target" || item.key == "audit.profile" ||
          item.key == "audit.side_effects_allowed" || item.key == "audit.host_root" ||
          item.key.starts_with("audit.minimums.")) {
        continue;
      }
      auto value = json::parse(item.value_json, nullptr, false);
      if (value.is_discarded()) continue;
      if (item.key == "audit.unread") {
        unread = UnreadFrom(value);
        continue;
      }
      evidence[item.key] = std::move(value);
    }
    GradeContext local = context;
    if (!unread.empty()) local.unread = &unread;
    return GradeChecks(*checks, evidence, local);
  }

  std::vector<NodeFindings> nodes;
  const auto sacct = Item(record, "scheduler.slurm.sacct_ok");
  const auto coverage = Item(record, "audit.coverage");
  json nodes_read = nullptr;
  if (coverage && coverage->is_object()) {
    nodes_read = {{"read", coverage->value("answered", json(0))},
                  {"total", coverage->value("nodes", json(0))}};
  }
  for (const EvidenceItem& item : record.evidence) {
    if (!item.key.starts_with("audit.node.")) continue;
    const auto doc = json::parse(item.value_json, nullptr, false);
    if (doc.is_discarded() || !doc.contains("evidence") || !doc["evidence"].is_object()) continue;
    AuditEvidence evidence;
    for (const auto& [key, value] : doc["evidence"].items()) evidence[key] = value;
    if (sacct) evidence.emplace("scheduler.slurm.sacct_ok", *sacct);
    if (!nodes_read.is_null()) {
      evidence["audit.coverage.nodes_read"] = nodes_read;
      if (const json& total = nodes_read["total"]; total.is_number_unsigned()) {
        evidence["network.fabric.tiers"] = FabricTiers(total.get<size_t>());
      }
    }
    // A Kubernetes node's evidence says why each key it lacks could not be read.
    std::map<std::string, std::string> unread;
    std::string unread_otherwise;
    GradeContext node_context = context;
    if (doc.contains("unread") && doc["unread"].is_object()) {
      unread = UnreadFrom(doc["unread"]);
      node_context.unread = &unread;
      // Stored since the audit pods; before them every such node lacked a pod.
      const json& otherwise = doc.contains("unread_otherwise") ? doc["unread_otherwise"] : json();
      unread_otherwise =
          otherwise.is_string() ? otherwise.get<std::string>() : std::string(kNeedsAPodOnTheNode);
      node_context.unread_otherwise = unread_otherwise;
    }
    nodes.push_back({item.key.substr(11), GradeChecks(*checks, evidence, node_context)});
  }
  if (coverage && coverage->contains("unreachable") && (*coverage)["unreachable"].is_object()) {
    for (const auto& [node, reason] : (*coverage)["unreachable"].items()) {
      nodes.push_back({node, UnreachableNodeFindings(
                                 GradeChecks(*checks, {}, context),
                                 reason.is_string() ? reason.get<std::string>() : reason.dump())});
    }
  }
  if (nodes.empty()) {
    // No node was heard and none named (the controller did not answer): nothing to regrade.
    return record.findings;
  }
  std::ranges::sort(nodes, {}, &NodeFindings::node);
  return WorstNodeFindings(nodes);
}

std::vector<GradeChange> CompareGrades(const std::vector<Finding>& was,
                                       const std::vector<Finding>& now) {
  std::map<std::string, const Finding*> before;
  for (const Finding& f : was) before[f.check_id] = &f;
  std::vector<GradeChange> changes;
  for (const Finding& f : now) {
    const auto it = before.find(f.check_id);
    if (it == before.end()) {
      changes.push_back(
          {f.check_id, CheckStatus::kUnknown, f.status, "not graded before: " + f.message});
      continue;
    }
    if (it->second->status != f.status) {
      changes.push_back({f.check_id, it->second->status, f.status, f.message});
    }
    before.erase(it);
  }
  for (const auto& [id, f] : before) {
    changes.push_back({id, f->status, CheckStatus::kUnknown, "not graded now: no such check"});
  }
  return changes;
}

std::string RegradeText(const RunRecord& record, const Regrade& regrade) {
  std::string out = fmt::format(
      "Run {} ({}, {}), regraded with today's rules.\n  minimum table then: {}\n  minimum table "
      "now:  {}\n",
      record.run.id, SanitizeUtf8(record.run.target), FormatIso8601(record.run.started_at),
      regrade.was_table, regrade.now_table);
  if (regrade.changes.empty()) {
    out += fmt::format("No check changed ({} checks).\n", regrade.findings.size());
    return out;
  }
  for (const GradeChange& c : regrade.changes) {
    out += fmt::format("  {:<38} {:>7} -> {:<7} {}\n", c.check_id, StatusName(c.was),
                       StatusName(c.now), SanitizeUtf8(c.message));
  }
  size_t now_changed = 0;  // changes among today's checks (not ones removed since)
  for (const GradeChange& c : regrade.changes) {
    now_changed += std::ranges::any_of(regrade.findings,
                                       [&](const Finding& f) { return f.check_id == c.check_id; })
                       ? 1
                       : 0;
  }
  out += fmt::format("{} check(s) changed, {} unchanged.\n", regrade.changes.size(),
                     regrade.findings.size() - now_changed);
  return out;
}

std::string RegradeJson(const RunRecord& record, const Regrade& regrade) {
  json changes = json::array();
  for (const GradeChange& c : regrade.changes) {
    changes.push_back({{"check_id", c.check_id},
                       {"was", StatusName(c.was)},
                       {"now", StatusName(c.now)},
                       {"message", c.message}});
  }
  json findings = json::array();
  for (const Finding& f : regrade.findings) {
    findings.push_back({{"check_id", f.check_id},
                        {"status", StatusName(f.status)},
                        {"observed", f.observed},
                        {"expected", f.expected},
                        {"message", f.message}});
  }
  return JsonText(json({{"schema", "cmax.audit-regrade/v1"},
                        {"run", record.run.id},
                        {"target", record.run.target},
                        {"table_then", regrade.was_table},
                        {"table_now", regrade.now_table},
                        {"changes", changes},
                        {"findings", findings}}));
}

Result<AuditReview> ReviewAudit(const ReviewOptions& options, const AuditIo& io) {
  auto record = store::LoadStoredRun(io.db_path, options.run, "audit");
  if (!record) return tl::unexpected(record.error());
  AuditReview review{.record = std::move(*record)};
  if (!options.regrade) return review;
  auto table = LoadMinimums(options.minimums, io);
  if (!table) return tl::unexpected(table.error());
  auto findings = RegradeRecord(review.record, *table, io.clock->Now());
  if (!findings) return tl::unexpected(findings.error());
  Regrade regrade;
  regrade.changes = CompareGrades(review.record.findings, *findings);
  regrade.findings = std::move(*findings);
  regrade.was_table = TableOf(Item(review.record, "audit.minimums.generated"),
                              Item(review.record, "audit.minimums.sha256"));
  regrade.now_table = TableOf(json(FormatIso8601(table->Generated())), json(table->Sha256()));
  review.regrade = std::move(regrade);
  return review;
}

}  // namespace cmax::audit
