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
  (void)db.Execute("COMMIT");
  if (!version) return tl::unexpected(version.error());
  if (!tables) return tl::unexpected(tables.error());
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
