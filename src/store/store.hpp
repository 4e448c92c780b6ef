// The store: one SQLite file (WAL, mode 0600) holding every run with its evidence, findings
// and metrics, and the event stream from agents. Reports and ratings read only this.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"
#include "store/sqlite.hpp"

namespace cmax::store {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};
// Every schema change, oldest first; a database's PRAGMA user_version is the last one applied.
const std::vector<Migration>& Migrations();
int LatestSchemaVersion();
// Fails for a file that is not SQLite (kCorrupt) and for an SQLite database with tables but
// no cmax schema version; reads only.
Result<void> CheckIsCmaxStore(Database& db);
// Applies the migrations in list above the database's version, each in its own transaction.
// Refuses a database from a newer cmax and a non-empty database that is not a cmax store.
Result<void> Migrate(Database& db, const std::vector<Migration>& migrations);

// What cmax keeps beside the store (HTML reports, logs, the lab's folder) goes in the store
// file's folder: `name` there ("./name" for a store named without a folder, "/name" for one in
// /). Pure.
std::string BesideStore(const std::string& db_path, std::string_view name);

struct StoreOptions {
  std::string path;
  bool create = true;  // false: a missing file is an error (read-only commands)
  // Reads only: the file is never written (an older store is migrated in a copy in memory), and
  // Ctrl-C or SIGTERM stops a statement.
  bool read_only = false;
  int busy_timeout_ms = 5000;
};

struct RunStart {
  std::string command;
  std::string target;
  std::string host;
  WallTime started_at;
  std::string cmax_version;
  int64_t pid = 0;
  std::string provider;  // the provider the run evaluates; empty: not said
};

struct RunSummary {
  RunInfo run;
  StatusCounts counts;
};

class Store {
 public:
  // Creates the folder (0700) and file (0600) when allowed, sets WAL mode and migrates.
  static Result<Store> Open(const StoreOptions& options);

  const std::string& Path() const { return db_->Path(); }
  Result<int> SchemaVersion();

  Result<int64_t> BeginRun(const RunStart& start);
  Result<void> FinishRun(int64_t run_id, RunState state, int exit_code, WallTime ended_at);
  // A run learns what it evaluates as it goes (the scheduler is found after the run began).
  Result<void> SetRunTarget(int64_t run_id, const std::string& target);
  // A batch of a run's evidence, findings and metrics, in one transaction: all of it or none, so
  // that a kill or a failed write never keeps a finding without the evidence it was judged on.
  // Evidence keys are unique per run: adding a key again replaces its value.
  Result<void> AddToRun(int64_t run_id, const std::vector<EvidenceItem>& evidence,
                        const std::vector<Finding>& findings = {},
                        const std::vector<Metric>& metrics = {});
  Result<void> AddEvents(const std::vector<Event>& events, std::optional<int64_t> run_id = {});

  // Newest first.
  Result<std::vector<RunSummary>> ListRuns(int limit);
  // Each host's latest run of `command` whose target starts with `target_prefix`, with its
  // counts: a node's last active check. Of `provider`'s runs only, when one is named (two
  // providers' clusters may both have a gpu1); empty: of every provider's. Of the runs that
  // ended only: a check still running, or killed part-way, has counts of the checks it got to.
  Result<std::map<std::string, RunSummary>> LatestRunByHost(const std::string& command,
                                                            const std::string& target_prefix,
                                                            const std::string& provider = "");
  Result<RunRecord> LoadRun(int64_t run_id);
  // The newest run, optionally of one command, and of those optionally one whose target starts
  // with `target_prefix`; NotFound when there is none. `closed_only`: of the runs that ended
  // (ok, checks failed, interrupted or in error), not one still running or left running by a
  // process that was killed: what a rating reads, never a half-written run.
  Result<int64_t> LatestRunId(const std::string& command = "",
                              const std::string& target_prefix = "", bool closed_only = false);
  // The newest run of `command` that evaluates `provider`, of a target starting with
  // `target_prefix` when one is given (kNotFound when none); `closed_only` as above.
  Result<int64_t> LatestProviderRunId(const std::string& provider, const std::string& command,
                                      const std::string& target_prefix = "",
                                      bool closed_only = false);
  // The providers runs were recorded for, sorted.
  Result<std::vector<std::string>> Providers();
  // The drains the remediation controller carried out (not dry runs), oldest first: what the
  // rating splits by cause.
  struct JournalDrain {
    std::string node;
    std::string planned_at;  // ISO 8601, as the journal keeps it
    std::string reason;
  };
  Result<std::vector<JournalDrain>> JournalDrains();
  Result<std::vector<Event>> LoadEvents(const std::string& node, int limit);

  // Node conditions: inserted or replaced by (node, key), in one transaction with the events
  // that go with them, so the store never holds one without the other.
  Result<void> SaveConditions(const std::vector<NodeCondition>& conditions,
                              const std::vector<Event>& events);
  // A node's conditions, worst first; all nodes when node is empty.
  Result<std::vector<NodeCondition>> LoadConditions(const std::string& node);

  // WAL checkpoints move the log into the database and fsync it. A writer that must commit
  // with low latency turns the automatic ones off (0) and calls Checkpoint when idle.
  Result<void> SetAutoCheckpoint(int pages);
  Result<void> Checkpoint();
  // SQLite's page cache for this connection (its default is 2 MiB).
  Result<void> SetCacheKib(int kib);

  // For the libraries that keep their own tables in the store (remediation); the schema stays
  // here, in Migrations().
  Database& Db() { return *db_; }

 private:
  explicit Store(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  Result<RunInfo> LoadRunInfo(int64_t run_id);
  // Statements hold a pointer to the Database: it lives on the heap so a moved Store keeps it.
  std::unique_ptr<Database> db_;
};

}  // namespace cmax::store
