#include "store/sqlite.hpp"

#include <sqlite3.h>
#include <utility>

namespace cmax::store {

void Database::Closer::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}
void Statement::Finalizer::operator()(sqlite3_stmt* stmt) const {
  sqlite3_finalize(stmt);
}

Database::Database(sqlite3* db, std::string path, int busy_timeout_ms)
    : db_(db), path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}

Database::~Database() = default;

Result<Database> Database::Open(const std::string& path, bool create, bool read_only,
                                int busy_timeout_ms) {
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Database db(raw, path, busy_timeout_ms);
  if (rc != SQLITE_OK) return tl::unexpected(db.MakeError(rc, "cannot open"));
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);
  // No function of the schema's own (a view's, a trigger's) runs with this process's rights.
  (void)db.Execute("PRAGMA trusted_schema=OFF");
  return db;
}

Result<Database> Database::EmptyInMemory() const {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  Database empty(raw, path_, busy_timeout_ms_);
  if (rc != SQLITE_OK) return tl::unexpected(empty.MakeError(rc, "cannot open memory for"));
  return empty;
}

Result<Database> Database::CopyIntoMemory() const {
  auto opened = EmptyInMemory();
  if (!opened) return opened;
  Database copy = std::move(*opened);
  sqlite3_backup* backup = sqlite3_backup_init(copy.db_.get(), "main", db_.get(), "main");
  if (backup == nullptr) {
    return tl::unexpected(copy.MakeError(sqlite3_errcode(copy.db_.get()), "cannot copy"));
  }
  const int stepped = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (stepped != SQLITE_DONE) return tl::unexpected(MakeError(stepped, "cannot copy"));
  return copy;
}

Result<Database> Database::CopyTablesIntoMemory(std::string_view prefix) {
  auto opened = EmptyInMemory();
  if (!opened) return opened;
  Database copy = std::move(*opened);
  // Tables before their indexes ('table' sorts after 'index'); SQLite's own have no SQL.
  auto schema = Prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND "
      "sql IS NOT NULL AND substr(name, 1, length(?1)) = ?1 ORDER BY type DESC, name");
  if (!schema) return tl::unexpected(schema.error());
  schema->Bind(1, prefix);
  std::vector<std::string> tables;
  for (;;) {
    auto row = schema->Step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    if (auto made = copy.Execute(schema->ColumnText(2)); !made) {
      return tl::unexpected(made.error());
    }
    if (schema->ColumnText(0) == "table") tables.push_back(schema->ColumnText(1));
  }
  auto attach = copy.Prepare("ATTACH DATABASE ?1 AS source");
  if (!attach) return tl::unexpected(attach.error());
  attach->Bind(1, std::string_view(path_));
  if (auto attached = attach->Step(); !attached) return tl::unexpected(attached.error());
  // One read transaction over the source: the tables as of one moment, not each as of its turn.
  if (auto began = copy.Execute("BEGIN"); !began) return tl::unexpected(began.error());
  for (const std::string& table : tables) {
    // The names come from sqlite_master and start with `prefix`: quoted all the same.
    std::string quoted = "\"";
    for (char c : table) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += "\"";
    if (auto copied =
            copy.Execute("INSERT INTO main." + quoted + " SELECT * FROM source." + quoted);
        !copied) {
      return tl::unexpected(copied.error());
    }
  }
  if (auto committed = copy.Execute("COMMIT"); !committed) {
    return tl::unexpected(committed.error());
  }
  if (auto detached = copy.Execute("DETACH DATABASE source"); !detached) {
    return tl::unexpected(detached.error());
  }
  return copy;
}

void Database::StopWhen(bool (*stop)()) {
  sqlite3_progress_handler(
      db_.get(), 10000, [](void* ask) { return reinterpret_cast<bool (*)()>(ask)() ? 1 : 0; },
      reinterpret_cast<void*>(stop));
}

Error Database::MakeError(int rc, std::string_view what) const {
  const int primary = rc & 0xFF;
  const char* detail = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  ErrorCode code = ErrorCode::kIo;
  std::string hint;
  switch (primary) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      code = ErrorCode::kCorrupt;
      hint = " (the file is damaged or is not a cmax store; it was left as it is)";
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = ErrorCode::kBusy;
      hint = fmt::format(" (another process holds a lock; waited {} ms)", busy_timeout_ms_);
      break;
    case SQLITE_CANTOPEN: code = ErrorCode::kNotFound; break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: code = ErrorCode::kPermissionDenied; break;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE: code = ErrorCode::kInvalidArgument; break;
    case SQLITE_INTERRUPT: code = ErrorCode::kInterrupted; break;
    default: break;
  }
  return Error{code, fmt::format("{} {}: {}{}", what, path_, detail, hint)};
}

Result<void> Database::Execute(std::string_view sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_.get(), std::string(sql).c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);
  if (rc != SQLITE_OK) return tl::unexpected(MakeError(rc, "cannot update"));
  return {};
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return tl::unexpected(MakeError(rc, "cannot read"));
  return Statement(stmt, this);
}

Result<int64_t> Database::QueryInt(std::string_view sql) {
  auto stmt = Prepare(sql);
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->Step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return Fail(ErrorCode::kNotFound, "no result from {}", path_);
  return stmt->ColumnInt(0);
}

int64_t Database::LastInsertId() const {
  return sqlite3_last_insert_rowid(db_.get());
}

Statement::~Statement() = default;

void Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_.get(), index, value);
}
void Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_.get(), index, value);
}
void Statement::Bind(int index, std::string_view value) {
  sqlite3_bind_text(stmt_.get(), index, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
}
void Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_.get(), index);
}
void Statement::Bind(int index, const std::optional<int64_t>& value) {
  if (value) {
    Bind(index, *value);
  } else {
    BindNull(index);
  }
}
void Statement::Bind(int index, const std::optional<std::string>& value) {
  if (value) {
    Bind(index, std::string_view(*value));
  } else {
    BindNull(index);
  }
}

Result<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error error = db_->MakeError(rc, "cannot access");
  sqlite3_reset(stmt_.get());
  return tl::unexpected(std::move(error));
}

Result<void> Statement::Run() {
  auto done = Step();
  Reset();
  if (!done) return tl::unexpected(done.error());
  return {};
}

void Statement::Reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

int64_t Statement::ColumnInt(int index) const {
  return sqlite3_column_int64(stmt_.get(), index);
}
double Statement::ColumnDouble(int index) const {
  return sqlite3_column_double(stmt_.get(), index);
}
std::string Statement::ColumnText(int index) const {
  const auto* text = sqlite3_column_text(stmt_.get(), index);
  const int size = sqlite3_column_bytes(stmt_.get(), index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}
bool Statement::ColumnIsNull(int index) const {
  return sqlite3_column_type(stmt_.get(), index) == SQLITE_NULL;
}

Result<Transaction> Transaction::Begin(Database& db) {
  if (auto ok = db.Execute("BEGIN IMMEDIATE"); !ok) return tl::unexpected(ok.error());
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  if (db_ != nullptr) (void)db_->Execute("ROLLBACK");
}

Result<void> Transaction::Commit() {
  Database* db = std::exchange(db_, nullptr);
  if (auto ok = db->Execute("COMMIT"); !ok) {
    (void)db->Execute("ROLLBACK");
    return ok;
  }
  return {};
}

}  // namespace cmax::store
