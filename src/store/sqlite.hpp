// A thin RAII layer over the SQLite C API: a connection, prepared statements, and SQLite's
// result codes turned into Errors that name the database file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace cmax::store {

class Statement;

class Database {
 public:
  // Opens (create: or creates) the file; does not run any statement.
  static Result<Database> Open(const std::string& path, bool create, bool read_only,
                               int busy_timeout_ms);
  Database(Database&&) noexcept = default;
  Database& operator=(Database&&) noexcept = default;
  ~Database();

  Result<void> Execute(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  Result<int64_t> QueryInt(std::string_view sql);
  int64_t LastInsertId() const;
  // The whole database copied into a new one in memory (SQLite's backup), named as this one:
  // an older store is migrated there for a command that only reads, leaving the file as it was.
  Result<Database> CopyIntoMemory() const;
  // The tables (and their indexes) whose names start with `prefix`, copied into a new database
  // in memory: what a dry run works on, so that nothing it decides is written here. The file is
  // read through a second connection: what this one has committed is there.
  Result<Database> CopyTablesIntoMemory(std::string_view prefix);
  // From now on a statement gives up (kInterrupted) once `stop` says so: a reading command on
  // someone else's store (a view that never ends) hears Ctrl-C and SIGTERM.
  void StopWhen(bool (*stop)());
  const std::string& Path() const { return path_; }

  // An Error for SQLite result code rc, naming the file and the operation.
  Error MakeError(int rc, std::string_view what) const;

 private:
  Database(sqlite3* db, std::string path, int busy_timeout_ms);
  // A new, empty database in memory, named as this one (its errors name this file).
  Result<Database> EmptyInMemory() const;
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  int busy_timeout_ms_ = 0;
};

class Statement {
 public:
  Statement(Statement&&) noexcept = default;
  Statement& operator=(Statement&&) noexcept = default;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  void Bind(int index, int64_t value);
  void Bind(int index, double value);
  void Bind(int index, std::string_view value);
  void BindNull(int index);
  void Bind(int index, const std::optional<int64_t>& value);
  void Bind(int index, const std::optional<std::string>& value);

  // true: a row is ready; false: done.
  Result<bool> Step();
  // Step() for a statement that returns no rows, then Reset().
  Result<void> Run();
  void Reset();

  int64_t ColumnInt(int index) const;
  double ColumnDouble(int index) const;
  std::string ColumnText(int index) const;
  bool ColumnIsNull(int index) const;

 private:
  friend class Database;
  Statement(sqlite3_stmt* stmt, const Database* db) : stmt_(stmt), db_(db) {}
  struct Finalizer {
    void operator()(sqlite3_stmt* stmt) const;
  };
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
  const Database* db_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when it goes out of scope uncommitted.
class Transaction {
 public:
  static Result<Transaction> Begin(Database& db);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Result<void> Commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;
};

}  // namespace cmax::store
