#include "store/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <thread>

#include "core/json_read.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"

namespace cmax::store {
namespace {

using Json = nlohmann::json;

std::string Dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string LinksJson(const std::vector<std::string>& links) {
  if (links.empty()) return "[]";
  return Dump(Json(links));
}

std::vector<std::string> ParseLinks(const std::string& text) {
  Json value = Json::parse(text, nullptr, false);
  std::vector<std::string> links;
  if (!value.is_array()) return links;
  for (const Json& item : value) {
    if (item.is_string()) links.push_back(item.get<std::string>());
  }
  return links;
}

std::string LabelsJson(const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return "{}";
  return Dump(Json(labels));
}

std::map<std::string, std::string> ParseLabels(const std::string& text) {
  if (JsonNesting(text, kMaxStoredJsonNesting) > kMaxStoredJsonNesting) {
    return {{"labels",
             fmt::format("(nested deeper than {} levels: not shown)", kMaxStoredJsonNesting)}};
  }
  Json value = Json::parse(text, nullptr, false);
  std::map<std::string, std::string> labels;
  if (!value.is_object()) return labels;
  for (const auto& [key, item] : value.items()) {
    labels[key] = item.is_string() ? item.get<std::string>() : Dump(item);
  }
  return labels;
}

// Creates the file ourselves so that it is 0600 from its first byte; SQLite gives the -wal
// and -shm files the mode of the database file.
Result<void> CreateStoreFile(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    sys::LocalFileSystem fs;
    if (auto ok = fs.CreateDirs(path.substr(0, slash), 0700); !ok) return ok;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) {
    return Fail(sys::ErrorCodeFromErrno(errno), "cannot create store {}: {}", path,
                std::strerror(errno));
  }
  if (fd >= 0) ::close(fd);
  return {};
}

// Switching to WAL takes an exclusive lock, and SQLite answers "busy" at once, without its
// busy handler, when another connection races it (two `cmax run` on a new store): retry.
Result<void> EnableWal(Database& db, int busy_timeout_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  while (true) {
    std::string mode;
    {
      auto stmt = db.Prepare("PRAGMA journal_mode=WAL");
      if (!stmt) return tl::unexpected(stmt.error());
      auto row = stmt->Step();
      if (row && *row) mode = stmt->ColumnText(0);
      if (!row && row.error().code != ErrorCode::kBusy) return tl::unexpected(row.error());
      if (!row && std::chrono::steady_clock::now() >= deadline) {
        return tl::unexpected(row.error());
      }
    }  // finalized here: an open statement would block the migrations' COMMIT
    if (mode == "wal") return {};
    // "If the journal mode could not be changed, the original journal mode is returned."
    if (std::chrono::steady_clock::now() >= deadline) {
      return Fail(ErrorCode::kUnsupported, "cannot put {} in WAL mode (it stays in '{}' mode)",
                  db.Path(), mode);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

constexpr const char* kRunColumns =
    "id, command, target, host, started_at, ended_at, state, exit_code, cmax_version, pid, "
    "provider";

// Every row's first column, as text.
Result<std::vector<std::string>> FirstColumn(Statement& stmt) {
  std::vector<std::string> values;
  while (true) {
    auto row = stmt.Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return values;
    values.push_back(stmt.ColumnText(0));
  }
}

RunInfo ReadRunInfo(const Statement& stmt) {
  RunInfo run;
  run.id = stmt.ColumnInt(0);
  run.command = stmt.ColumnText(1);
  run.target = stmt.ColumnText(2);
  run.host = stmt.ColumnText(3);
  run.started_at = ParseIso8601(stmt.ColumnText(4)).value_or(WallTime{});
  if (!stmt.ColumnIsNull(5)) run.ended_at = ParseIso8601(stmt.ColumnText(5)).value_or(WallTime{});
  run.state = ParseRunState(stmt.ColumnText(6)).value_or(RunState::kError);
  if (!stmt.ColumnIsNull(7)) run.exit_code = static_cast<int>(stmt.ColumnInt(7));
  run.cmax_version = stmt.ColumnText(8);
  run.pid = stmt.ColumnInt(9);
  run.provider = stmt.ColumnText(10);
  return run;
}

// The causes SQLite reports only as "unable to open database file" or "attempt to write a
// readonly database", named before it is asked: a folder given as the store, and a store whose
// folder cannot be written (SQLite keeps the -wal and -shm files beside the store).
Result<void> CheckStorePath(const StoreOptions& options) {
  struct stat st {};
  const bool there = ::stat(options.path.c_str(), &st) == 0;
  if (there && S_ISDIR(st.st_mode)) {
    return Fail(ErrorCode::kIo,
                "{} is a directory, not a store file; give --db (or CMAX_DB) a file path",
                options.path);
  }
  // SQLite would open /dev/null, a FIFO or a disk, and write its journal beside it (as root,
  // /dev/null-journal in /dev): a store is a regular file. kIo like a folder given as the store,
  // so that every command, reader or not, exits 3 for it.
  if (there && !S_ISREG(st.st_mode)) {
    return Fail(ErrorCode::kIo,
                "{} is not a regular file; give --db (or CMAX_DB) a store file's path",
                options.path);
  }
  // An empty file is no store yet: the commands that only read make none of it. (Read to be
  // sure: /proc's files say size 0 and are not empty, and SQLite would read one as an empty
  // database.)
  if (there && st.st_size == 0) {
    const bool empty = sys::LocalFileSystem().ReadFile(options.path, 1).value_or("x").empty();
    if (!empty) {
      return Fail(ErrorCode::kIo, "{} says it is empty and is not: no store (a file of /proc?)",
                  options.path);
    }
    if (!options.create || options.read_only) {
      return Fail(ErrorCode::kNotFound,
                  "no cmax store at {} (an empty file; a command that measures makes it one)",
                  options.path);
    }
  }
  // Even a reader needs the folder: a store in WAL mode is read through its -shm file there.
  const size_t slash = options.path.rfind('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : options.path.substr(0, slash);
  if (::access(folder.c_str(), F_OK) == 0 && ::access(folder.c_str(), W_OK) != 0) {
    return Fail(ErrorCode::kPermissionDenied,
                "cannot write in {} ({}): SQLite keeps the store's journal files beside {}; make "
                "the folder writable or put the store elsewhere with --db",
                folder, std::strerror(errno), options.path);
  }
  if (::access(options.path.c_str(), F_OK) == 0 && ::access(options.path.c_str(), W_OK) != 0) {
    return Fail(ErrorCode::kPermissionDenied, "the store {} is not writable: {}", options.path,
                std::strerror(errno));
  }
  return {};
}

// Past the check for a missing store, a file SQLite cannot open or create ("unable to open
// database file", ENOENT below /proc) is a store that cannot be used, not one the user failed to
// name: an error of the machine (exit 3), as every command reports it.
Error NotMissing(Error error) {
  if (error.code == ErrorCode::kNotFound) error.code = ErrorCode::kIo;
  return error;
}

}  // namespace

std::string BesideStore(const std::string& db_path, std::string_view name) {
  const size_t slash = db_path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : db_path.substr(0, slash);
  return folder + "/" + std::string(name);
}

Result<Store> Store::Open(const StoreOptions& options) {
  if (options.path.empty()) return Fail(ErrorCode::kInvalidArgument, "empty store path");
  if (auto ok = CheckStorePath(options); !ok) return tl::unexpected(ok.error());
  if (::access(options.path.c_str(), F_OK) != 0) {
    if (!options.create || options.read_only) {
      return Fail(ErrorCode::kNotFound, "no cmax store at {} (a command that measures creates it)",
                  options.path);
    }
    if (auto ok = CreateStoreFile(options.path); !ok) return tl::unexpected(NotMissing(ok.error()));
  }
  // From here the file is there: what fails is a store that cannot be used (NotMissing).
  auto opened = [&]() -> Result<Store> {
    auto db = Database::Open(options.path, false, options.read_only, options.busy_timeout_ms);
    if (!db) return tl::unexpected(db.error());
    auto owned = std::make_unique<Database>(std::move(*db));
    // Read before anything writes: a corrupt file fails here, and a database that is not a
    // cmax store is refused before journal_mode or a migration could change a byte of it.
    if (auto ok = CheckIsCmaxStore(*owned); !ok) return tl::unexpected(ok.error());
    if (!options.read_only) {
      if (auto ok = EnableWal(*owned, options.busy_timeout_ms); !ok) {
        return tl::unexpected(ok.error());
      }
      if (auto ok = owned->Execute("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL"); !ok) {
        return tl::unexpected(ok.error());
      }
      if (auto ok = Migrate(*owned, Migrations()); !ok) return tl::unexpected(ok.error());
    } else {
      owned->StopWhen(sys::Interrupted);
      auto version = owned->QueryInt("PRAGMA user_version");
      if (!version) return tl::unexpected(version.error());
      if (*version > LatestSchemaVersion()) {
        return Fail(ErrorCode::kUnsupported,
                    "{} has schema version {}, newer than this cmax knows ({}); use a newer cmax",
                    options.path, *version, LatestSchemaVersion());
      }
      if (*version < LatestSchemaVersion()) {
        // An older store is read through a copy migrated in memory: reading never changes it.
        auto copy = owned->CopyIntoMemory();
        if (!copy) return tl::unexpected(copy.error());
        owned = std::make_unique<Database>(std::move(*copy));
        owned->StopWhen(sys::Interrupted);
        if (auto ok = Migrate(*owned, Migrations()); !ok) return tl::unexpected(ok.error());
      }
    }
    return Store(std::move(owned));
  }();
  if (!opened) return tl::unexpected(NotMissing(opened.error()));
  return opened;
}

Result<int> Store::SchemaVersion() {
  auto version = db_->QueryInt("PRAGMA user_version");
  if (!version) return tl::unexpected(version.error());
  return static_cast<int>(*version);
}

Result<int64_t> Store::BeginRun(const RunStart& start) {
  auto stmt = db_->Prepare(
      "INSERT INTO runs (command, target, host, started_at, state, cmax_version, pid, provider) "
      "VALUES (?, ?, ?, ?, 'running', ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(start.command));
  stmt->Bind(2, std::string_view(start.target));
  stmt->Bind(3, std::string_view(start.host));
  stmt->Bind(4, std::string_view(FormatIso8601(start.started_at)));
  stmt->Bind(5, std::string_view(start.cmax_version));
  stmt->Bind(6, start.pid);
  stmt->Bind(7, std::string_view(start.provider));
  if (auto ok = stmt->Run(); !ok) return tl::unexpected(ok.error());
  return db_->LastInsertId();
}

Result<void> Store::FinishRun(int64_t run_id, RunState state, int exit_code, WallTime ended_at) {
  auto stmt = db_->Prepare("UPDATE runs SET state = ?, exit_code = ?, ended_at = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, RunStateName(state));
  stmt->Bind(2, static_cast<int64_t>(exit_code));
  stmt->Bind(3, std::string_view(FormatIso8601(ended_at)));
  stmt->Bind(4, run_id);
  return stmt->Run();
}

Result<void> Store::SetRunTarget(int64_t run_id, const std::string& target) {
  auto stmt = db_->Prepare("UPDATE runs SET target = ? WHERE id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(target));
  stmt->Bind(2, run_id);
  return stmt->Run();
}

Result<void> Store::AddToRun(int64_t run_id, const std::vector<EvidenceItem>& evidence,
                             const std::vector<Finding>& findings,
                             const std::vector<Metric>& metrics) {
  if (evidence.empty() && findings.empty() && metrics.empty()) return {};
  auto tx = Transaction::Begin(*db_);
  if (!tx) return tl::unexpected(tx.error());
  if (!evidence.empty()) {
    auto stmt =
        db_->Prepare("INSERT OR REPLACE INTO evidence (run_id, key, value) VALUES (?, ?, ?)");
    if (!stmt) return tl::unexpected(stmt.error());
    for (const EvidenceItem& item : evidence) {
      stmt->Bind(1, run_id);
      stmt->Bind(2, std::string_view(item.key));
      stmt->Bind(3, std::string_view(item.value_json));
      if (auto ok = stmt->Run(); !ok) return ok;
    }
  }
  if (!findings.empty()) {
    auto stmt = db_->Prepare(
        "INSERT INTO findings (run_id, check_id, status, severity, observed, expected, message, "
        "remediation, links) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!stmt) return tl::unexpected(stmt.error());
    for (const Finding& f : findings) {
      stmt->Bind(1, run_id);
      stmt->Bind(2, std::string_view(f.check_id));
      stmt->Bind(3, StatusName(f.status));
      stmt->Bind(4, SeverityName(f.severity));
      stmt->Bind(5, std::string_view(f.observed));
      stmt->Bind(6, std::string_view(f.expected));
      stmt->Bind(7, std::string_view(f.message));
      stmt->Bind(8, std::string_view(f.remediation));
      stmt->Bind(9, std::string_view(LinksJson(f.links)));
      if (auto ok = stmt->Run(); !ok) return ok;
    }
  }
  if (!metrics.empty()) {
    auto stmt = db_->Prepare(
        "INSERT INTO metrics (run_id, name, labels, value, unit) VALUES (?, ?, ?, ?, ?)");
    if (!stmt) return tl::unexpected(stmt.error());
    for (const Metric& m : metrics) {
      stmt->Bind(1, run_id);
      stmt->Bind(2, std::string_view(m.name));
      stmt->Bind(3, std::string_view(LabelsJson(m.labels)));
      stmt->Bind(4, m.value);
      stmt->Bind(5, std::string_view(m.unit));
      if (auto ok = stmt->Run(); !ok) return ok;
    }
  }
  return tx->Commit();
}

Result<void> Store::AddEvents(const std::vector<Event>& events, std::optional<int64_t> run_id) {
  auto tx = Transaction::Begin(*db_);
  if (!tx) return tl::unexpected(tx.error());
  auto stmt = db_->Prepare(
      "INSERT INTO events (time, node, source, kind, payload, run_id) VALUES (?, ?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  for (const Event& e : events) {
    stmt->Bind(1, std::string_view(FormatIso8601(e.time)));
    stmt->Bind(2, std::string_view(e.node));
    stmt->Bind(3, std::string_view(e.source));
    stmt->Bind(4, std::string_view(e.kind));
    stmt->Bind(5, std::string_view(e.payload_json.empty() ? "{}" : e.payload_json));
    stmt->Bind(6, run_id);
    if (auto ok = stmt->Run(); !ok) return ok;
  }
  return tx->Commit();
}

namespace {

// A run's finding counts, read after its kRunColumns. A status that is none of cmax's (a store
// edited by hand) counts as FAIL, as LoadRun reads it, so that the list and the report agree.
constexpr const char* kCountColumns =
    "(SELECT count(*) FROM findings f WHERE f.run_id = r.id AND f.status = 'PASS'), "
    "(SELECT count(*) FROM findings f WHERE f.run_id = r.id AND f.status = 'WARN'), "
    "(SELECT count(*) FROM findings f WHERE f.run_id = r.id AND (f.status IS NULL OR f.status "
    "NOT IN ('PASS', 'WARN', 'SKIP', 'ATTEST', 'UNKNOWN'))), "
    "(SELECT count(*) FROM findings f WHERE f.run_id = r.id AND f.status = 'SKIP'), "
    "(SELECT count(*) FROM findings f WHERE f.run_id = r.id AND f.status = 'ATTEST'), "
    "(SELECT count(*) FROM findings f WHERE f.run_id = r.id AND f.status = 'UNKNOWN')";

RunSummary ReadRunSummary(const Statement& stmt) {
  RunSummary summary{ReadRunInfo(stmt), {}};
  summary.counts.pass = static_cast<int>(stmt.ColumnInt(11));
  summary.counts.warn = static_cast<int>(stmt.ColumnInt(12));
  summary.counts.fail = static_cast<int>(stmt.ColumnInt(13));
  summary.counts.skip = static_cast<int>(stmt.ColumnInt(14));
  summary.counts.attest = static_cast<int>(stmt.ColumnInt(15));
  summary.counts.unknown = static_cast<int>(stmt.ColumnInt(16));
  return summary;
}

}  // namespace

Result<std::map<std::string, RunSummary>> Store::LatestRunByHost(const std::string& command,
                                                                 const std::string& target_prefix,
                                                                 const std::string& provider) {
  // Newest first; the first row of each host is its latest run.
  auto stmt = db_->Prepare(fmt::format(
      "SELECT {}, {} FROM runs r WHERE command = ?1 AND substr(ifnull(target, ''), 1, ?2) = ?3 "
      "AND (?4 = '' OR ifnull(provider, '') = ?4) AND state != 'running' ORDER BY id DESC",
      kRunColumns, kCountColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(command));
  stmt->Bind(2, static_cast<int64_t>(target_prefix.size()));
  stmt->Bind(3, std::string_view(target_prefix));
  stmt->Bind(4, std::string_view(provider));
  std::map<std::string, RunSummary> latest;
  while (true) {
    auto row = stmt->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    RunSummary summary = ReadRunSummary(*stmt);
    const std::string host = summary.run.host;
    latest.emplace(host, std::move(summary));
  }
  return latest;
}

Result<std::vector<RunSummary>> Store::ListRuns(int limit) {
  auto stmt = db_->Prepare(fmt::format("SELECT {}, {} FROM runs r ORDER BY id DESC LIMIT ?",
                                       kRunColumns, kCountColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, static_cast<int64_t>(limit));
  std::vector<RunSummary> runs;
  while (true) {
    auto row = stmt->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    runs.push_back(ReadRunSummary(*stmt));
  }
  return runs;
}

Result<RunInfo> Store::LoadRunInfo(int64_t run_id) {
  auto stmt = db_->Prepare(fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, run_id);
  auto row = stmt->Step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return Fail(ErrorCode::kNotFound, "no run {} in {}", run_id, Path());
  return ReadRunInfo(*stmt);
}

Result<RunRecord> Store::LoadRun(int64_t run_id) {
  RunRecord record;
  auto info = LoadRunInfo(run_id);
  if (!info) return tl::unexpected(info.error());
  record.run = std::move(*info);

  auto evidence = db_->Prepare("SELECT key, value FROM evidence WHERE run_id = ? ORDER BY key");
  if (!evidence) return tl::unexpected(evidence.error());
  evidence->Bind(1, run_id);
  while (true) {
    auto row = evidence->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    std::string value = evidence->ColumnText(1);
    // Not cmax's: every reader of it would recurse once per level (a report, rate, compare).
    if (JsonNesting(value, kMaxStoredJsonNesting) > kMaxStoredJsonNesting) {
      value = fmt::format("\"(evidence nested deeper than {} levels: not shown)\"",
                          kMaxStoredJsonNesting);
    }
    record.evidence.push_back({evidence->ColumnText(0), std::move(value)});
  }

  auto findings = db_->Prepare(
      "SELECT check_id, status, severity, observed, expected, message, remediation, links "
      "FROM findings WHERE run_id = ? ORDER BY id");
  if (!findings) return tl::unexpected(findings.error());
  findings->Bind(1, run_id);
  while (true) {
    auto row = findings->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    Finding f;
    f.check_id = findings->ColumnText(0);
    f.status = ParseStatus(findings->ColumnText(1)).value_or(CheckStatus::kFail);
    f.severity = ParseSeverity(findings->ColumnText(2)).value_or(Severity::kInfo);
    f.observed = findings->ColumnText(3);
    f.expected = findings->ColumnText(4);
    f.message = findings->ColumnText(5);
    f.remediation = findings->ColumnText(6);
    f.links = ParseLinks(findings->ColumnText(7));
    record.findings.push_back(std::move(f));
  }

  auto metrics =
      db_->Prepare("SELECT name, labels, value, unit FROM metrics WHERE run_id = ? ORDER BY id");
  if (!metrics) return tl::unexpected(metrics.error());
  metrics->Bind(1, run_id);
  while (true) {
    auto row = metrics->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    record.metrics.push_back({metrics->ColumnText(0), ParseLabels(metrics->ColumnText(1)),
                              metrics->ColumnDouble(2), metrics->ColumnText(3)});
  }
  return record;
}

Result<int64_t> Store::LatestProviderRunId(const std::string& provider, const std::string& command,
                                           const std::string& target_prefix, bool closed_only) {
  auto stmt = db_->Prepare(
      "SELECT max(id) FROM runs WHERE provider = ?1 AND command = ?2 AND "
      "substr(ifnull(target, ''), 1, length(?3)) = ?3 AND (?4 = 0 OR state != 'running')");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(provider));
  stmt->Bind(2, std::string_view(command));
  stmt->Bind(3, std::string_view(target_prefix));
  stmt->Bind(4, static_cast<int64_t>(closed_only ? 1 : 0));
  auto row = stmt->Step();
  if (!row) return tl::unexpected(row.error());
  if (!*row || stmt->ColumnIsNull(0)) {
    return Fail(ErrorCode::kNotFound, "no {} runs of provider {} in {}", command, provider, Path());
  }
  return stmt->ColumnInt(0);
}

Result<std::vector<std::string>> Store::Providers() {
  auto stmt = db_->Prepare("SELECT DISTINCT provider FROM runs WHERE provider != '' ORDER BY 1");
  if (!stmt) return tl::unexpected(stmt.error());
  return FirstColumn(*stmt);
}

Result<std::vector<Store::JournalDrain>> Store::JournalDrains() {
  auto stmt = db_->Prepare(
      "SELECT node, planned_at, reason FROM remediation_actions WHERE action = 'drain' AND "
      "outcome = 'done' AND dry_run = 0 ORDER BY id");
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<JournalDrain> out;
  while (true) {
    auto row = stmt->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->ColumnText(0), stmt->ColumnText(1), stmt->ColumnText(2)});
  }
  return out;
}

// A target no cmax wrote (NULL, in a store edited by hand) is read as "", here as in LoadRun.
Result<int64_t> Store::LatestRunId(const std::string& command, const std::string& target_prefix,
                                   bool closed_only) {
  auto stmt = db_->Prepare(
      "SELECT max(id) FROM runs WHERE (?1 = '' OR command = ?1) AND "
      "substr(ifnull(target, ''), 1, length(?2)) = ?2 AND (?3 = 0 OR state != 'running')");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(command));
  stmt->Bind(2, std::string_view(target_prefix));
  stmt->Bind(3, static_cast<int64_t>(closed_only ? 1 : 0));
  auto row = stmt->Step();
  if (!row) return tl::unexpected(row.error());
  if (!*row || stmt->ColumnIsNull(0)) {
    return Fail(ErrorCode::kNotFound, "no {}runs in {}", command.empty() ? "" : command + " ",
                Path());
  }
  return stmt->ColumnInt(0);
}

Result<void> Store::SaveConditions(const std::vector<NodeCondition>& conditions,
                                   const std::vector<Event>& events) {
  auto tx = Transaction::Begin(*db_);
  if (!tx) return tl::unexpected(tx.error());
  auto stmt = db_->Prepare(
      "INSERT OR REPLACE INTO node_conditions (node, key, component, device, kind, code, "
      "severity, action, action_source, message, count, first_seen, last_seen, recovered) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  for (const NodeCondition& c : conditions) {
    stmt->Bind(1, std::string_view(c.node));
    stmt->Bind(2, std::string_view(c.key));
    stmt->Bind(3, std::string_view(c.component));
    stmt->Bind(4, std::string_view(c.device));
    stmt->Bind(5, std::string_view(c.kind));
    stmt->Bind(6, static_cast<int64_t>(c.code));
    stmt->Bind(7, SeverityName(c.severity));
    stmt->Bind(8, std::string_view(c.action));
    stmt->Bind(9, std::string_view(c.action_source));
    stmt->Bind(10, std::string_view(c.message));
    stmt->Bind(11, static_cast<int64_t>(c.count));
    stmt->Bind(12, std::string_view(FormatIso8601(c.first_seen)));
    stmt->Bind(13, std::string_view(FormatIso8601(c.last_seen)));
    stmt->Bind(14, static_cast<int64_t>(c.recovered ? 1 : 0));
    if (auto ok = stmt->Run(); !ok) return ok;
  }
  if (!events.empty()) {
    auto insert = db_->Prepare(
        "INSERT INTO events (time, node, source, kind, payload) VALUES (?, ?, ?, ?, ?)");
    if (!insert) return tl::unexpected(insert.error());
    for (const Event& e : events) {
      insert->Bind(1, std::string_view(FormatIso8601(e.time)));
      insert->Bind(2, std::string_view(e.node));
      insert->Bind(3, std::string_view(e.source));
      insert->Bind(4, std::string_view(e.kind));
      insert->Bind(5, std::string_view(e.payload_json.empty() ? "{}" : e.payload_json));
      if (auto ok = insert->Run(); !ok) return ok;
    }
  }
  return tx->Commit();
}

Result<void> Store::SetAutoCheckpoint(int pages) {
  return db_->Execute(fmt::format("PRAGMA wal_autocheckpoint = {}", pages));
}

Result<void> Store::SetCacheKib(int kib) {
  return db_->Execute(fmt::format("PRAGMA cache_size = -{}", kib));
}

Result<void> Store::Checkpoint() {
  auto stmt = db_->Prepare("PRAGMA wal_checkpoint(PASSIVE)");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->Step();
  if (!row) return tl::unexpected(row.error());
  return {};
}

Result<std::vector<NodeCondition>> Store::LoadConditions(const std::string& node) {
  auto stmt = db_->Prepare(
      "SELECT node, key, component, device, kind, code, severity, action, action_source, "
      "message, count, first_seen, last_seen, recovered FROM node_conditions "
      "WHERE (? = '' OR node = ?) ORDER BY node, last_seen DESC");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(node));
  stmt->Bind(2, std::string_view(node));
  std::vector<NodeCondition> out;
  while (true) {
    auto row = stmt->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    NodeCondition c;
    c.node = stmt->ColumnText(0);
    c.key = stmt->ColumnText(1);
    c.component = stmt->ColumnText(2);
    c.device = stmt->ColumnText(3);
    c.kind = stmt->ColumnText(4);
    c.code = static_cast<int>(stmt->ColumnInt(5));
    c.severity = ParseSeverity(stmt->ColumnText(6)).value_or(Severity::kHigh);
    c.action = stmt->ColumnText(7);
    c.action_source = stmt->ColumnText(8);
    c.message = stmt->ColumnText(9);
    c.count = static_cast<uint64_t>(stmt->ColumnInt(10));
    c.first_seen = ParseIso8601(stmt->ColumnText(11)).value_or(WallTime{});
    c.last_seen = ParseIso8601(stmt->ColumnText(12)).value_or(WallTime{});
    c.recovered = stmt->ColumnInt(13) != 0;
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeCondition& a, const NodeCondition& b) {
    if (a.node != b.node) return a.node < b.node;
    return a.severity > b.severity;
  });
  return out;
}

Result<std::vector<Event>> Store::LoadEvents(const std::string& node, int limit) {
  auto stmt = db_->Prepare(
      "SELECT time, node, source, kind, payload FROM events WHERE (? = '' OR node = ?) "
      "ORDER BY time DESC, id DESC LIMIT ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->Bind(1, std::string_view(node));
  stmt->Bind(2, std::string_view(node));
  stmt->Bind(3, static_cast<int64_t>(limit));
  std::vector<Event> events;
  while (true) {
    auto row = stmt->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    events.push_back({ParseIso8601(stmt->ColumnText(0)).value_or(WallTime{}), stmt->ColumnText(1),
                      stmt->ColumnText(2), stmt->ColumnText(3), stmt->ColumnText(4)});
  }
  return events;
}

}  // namespace cmax::store
