#include <fmt/format.h>

#include "store/store.hpp"

namespace cmax::store {

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "runs, evidence, findings, metrics", R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  command TEXT NOT NULL,
  target TEXT NOT NULL,
  host TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  state TEXT NOT NULL,
  exit_code INTEGER,
  cmax_version TEXT NOT NULL,
  pid INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE evidence (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE findings (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  check_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('PASS', 'WARN', 'FAIL', 'SKIP', 'ATTEST')),
  severity TEXT NOT NULL,
  observed TEXT NOT NULL DEFAULT '',
  expected TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  remediation TEXT NOT NULL DEFAULT '',
  links TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX findings_by_run ON findings(run_id);
CREATE TABLE metrics (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  labels TEXT NOT NULL DEFAULT '{}',
  value REAL NOT NULL,
  unit TEXT NOT NULL DEFAULT ''
);
CREATE INDEX metrics_by_run ON metrics(run_id, name);
)sql"},
      {2, "events from agents and observers", R"sql(
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  time TEXT NOT NULL,
  node TEXT NOT NULL,
  source TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL DEFAULT '{}',
  run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL
);
CREATE INDEX events_by_node_time ON events(node, time);
CREATE INDEX runs_by_command ON runs(command, id);
)sql"},
      {3, "node conditions kept by the agent", R"sql(
CREATE TABLE node_conditions (
  node TEXT NOT NULL,
  key TEXT NOT NULL,
  component TEXT NOT NULL,
  device TEXT NOT NULL,
  kind TEXT NOT NULL,
  code INTEGER NOT NULL DEFAULT 0,
  severity TEXT NOT NULL,
  action TEXT NOT NULL,
  action_source TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  count INTEGER NOT NULL,
  first_seen TEXT NOT NULL,
  last_seen TEXT NOT NULL,
  recovered INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (node, key)
);
)sql"},
      {4, "remediation: node lifecycle, actions before and after, history, breaker", R"sql(
CREATE TABLE remediation_nodes (
  node TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  since TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  pending TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  serious_faults TEXT NOT NULL DEFAULT '[]',
  spare_in_use INTEGER NOT NULL DEFAULT 0,
  spare TEXT NOT NULL DEFAULT '',
  handle TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL
);
CREATE TABLE remediation_actions (
  id INTEGER PRIMARY KEY,
  node TEXT NOT NULL,
  action TEXT NOT NULL,
  device TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL,
  planned_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  detail TEXT NOT NULL DEFAULT '',
  dry_run INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX remediation_actions_open ON remediation_actions(outcome, id);
CREATE INDEX remediation_actions_by_node ON remediation_actions(node, id);
CREATE TABLE remediation_history (
  id INTEGER PRIMARY KEY,
  node TEXT NOT NULL,
  event_detail TEXT NOT NULL DEFAULT '',
  at TEXT NOT NULL,
  event TEXT NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX remediation_history_by_node ON remediation_history(node, id);
CREATE TABLE remediation_seen (
  node TEXT NOT NULL,
  key TEXT NOT NULL,
  count INTEGER NOT NULL,
  recovered INTEGER NOT NULL,
  PRIMARY KEY (node, key)
);
CREATE TABLE remediation_breaker (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  tripped INTEGER NOT NULL,
  tripped_at TEXT NOT NULL,
  reason TEXT NOT NULL
);
)sql"},
      {5, "remediation: NVL72 trays held out of service because their rack is down", R"sql(
CREATE TABLE remediation_rack_holds (
  node TEXT PRIMARY KEY,
  rack TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('holding', 'held', 'releasing')),
  reason TEXT NOT NULL,
  since TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT ''
);
)sql"},
      {6, "findings: UNKNOWN, the status of a check that could not read what it judges", R"sql(
CREATE TABLE findings_v6 (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  check_id TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('PASS', 'WARN', 'FAIL', 'SKIP', 'ATTEST', 'UNKNOWN')),
  severity TEXT NOT NULL,
  observed TEXT NOT NULL DEFAULT '',
  expected TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  remediation TEXT NOT NULL DEFAULT '',
  links TEXT NOT NULL DEFAULT '[]'
);
INSERT INTO findings_v6
  SELECT id, run_id, check_id, status, severity, observed, expected, message, remediation, links
  FROM findings;
DROP TABLE findings;
ALTER TABLE findings_v6 RENAME TO findings;
CREATE INDEX findings_by_run ON findings(run_id);
)sql"},
      {7, "remediation: the policy the controller last ran with, for an operator's word", R"sql(
CREATE TABLE remediation_policy (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  policy TEXT NOT NULL,
  saved_at TEXT NOT NULL
);
)sql"},
      {8, "runs: the provider each run evaluates, so a store can hold and rank several", R"sql(
ALTER TABLE runs ADD COLUMN provider TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_provider ON runs(provider, command, id);
)sql"},
      {9, "remediation: an action's result still to be handed to the policy", R"sql(
ALTER TABLE remediation_actions ADD COLUMN feedback_due INTEGER NOT NULL DEFAULT 0;
)sql"},
  };
  return kMigrations;
}

int LatestSchemaVersion() {
  return Migrations().back().version;
}

Result<void> CheckIsCmaxStore(Database& db) {
  // One read transaction, so that the version and the tables come from the same snapshot even
  // while another process runs the first migration.
  if (auto ok = db.Execute("BEGIN"); !ok) return ok;
  auto version = db.QueryInt("PRAGMA user_version");
  auto tables = version ? db.QueryInt("SELECT count(*) FROM sqlite_master") : version;
  // cmax makes tables and indexes only: a view or trigger is someone's SQL that would run inside
  // every command reading the file (a recursive view never ends).
  auto code = tables ? db.QueryInt(
                           "SELECT count(*) FROM sqlite_master WHERE type IN "
                           "('view', 'trigger')")
                     : tables;
  (void)db.Execute("COMMIT");
  if (!version) return tl::unexpected(version.error());
  if (!tables) return tl::unexpected(tables.error());
  if (!code) return tl::unexpected(code.error());
  if (*code > 0) {
    return Fail(ErrorCode::kCorrupt,
                "{} holds views or triggers, which no cmax store has; it was not read", db.Path());
  }
  if (*version == 0 && *tables > 0) {
    return Fail(ErrorCode::kCorrupt,
                "{} is an SQLite database but not a cmax store; it was left as it is", db.Path());
  }
  return {};
}

Result<void> Migrate(Database& db, const std::vector<Migration>& migrations) {
  auto current = db.QueryInt("PRAGMA user_version");
  if (!current) return tl::unexpected(current.error());
  if (*current > LatestSchemaVersion()) {
    return Fail(ErrorCode::kUnsupported,
                "{} has schema version {}, newer than this cmax knows ({}); use a newer cmax",
                db.Path(), *current, LatestSchemaVersion());
  }
  if (auto ok = CheckIsCmaxStore(db); !ok) return ok;
  for (const Migration& migration : migrations) {
    if (migration.version <= *current) continue;
    auto tx = Transaction::Begin(db);
    if (!tx) return tl::unexpected(tx.error());
    // Another process may have migrated while we waited for the write lock.
    auto now = db.QueryInt("PRAGMA user_version");
    if (!now) return tl::unexpected(now.error());
    if (migration.version <= *now) continue;
    if (auto ok = db.Execute(migration.sql); !ok) {
      return Wrap(ok.error(),
                  fmt::format("migration {} ({})", migration.version, migration.description));
    }
    if (auto ok = db.Execute(fmt::format("PRAGMA user_version = {}", migration.version)); !ok) {
      return ok;
    }
    if (auto ok = tx->Commit(); !ok) return ok;
  }
  return {};
}

}  // namespace cmax::store
