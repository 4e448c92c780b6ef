#include "store/store.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <gtest/gtest.h>
#include <mutex>
#include <sqlite3.h>
#include <sstream>
#include <sys/stat.h>
#include <thread>

#include "store/run_writer.hpp"
#include "support/temp_dir.hpp"

namespace cmax::store {
namespace {

WallTime At(int64_t ms) {
  return WallTime{std::chrono::milliseconds(ms)};
}

RunStart Start(std::string command = "run") {
  return {.command = std::move(command),
          .target = "vm/standalone",
          .host = "node-a",
          .started_at = At(1795944148911),
          .cmax_version = "0.1.0-test",
          .pid = 4242};
}

Finding MakeFinding(std::string id, CheckStatus status) {
  Finding f;
  f.check_id = std::move(id);
  f.status = status;
  f.severity = Severity::kHigh;
  f.observed = "7 of 8";
  f.expected = "8 of 8";
  f.message = "one GPU fell off the bus";
  f.remediation = "drain and reset";
  f.links = {"https://docs.nvidia.com/deploy/xid-errors/"};
  return f;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Reports, logs and the lab's folder go beside the store; a store named without a folder is in
// the current one (the scheduled checks' logs once went to /active-checks for --db cmax.db).
TEST(Store, WhatGoesBesideItGoesInItsFolder) {
  const struct {
    const char* db;
    const char* beside;
  } cases[] = {{"/var/lib/cmax/cmax.db", "/var/lib/cmax/logs"},
               {"/cmax.db", "/logs"},
               {"cmax.db", "./logs"},
               {"runs/cmax.db", "runs/logs"},
               {"./a/b/c.db", "./a/b/logs"}};
  for (const auto& c : cases) EXPECT_EQ(BesideStore(c.db, "logs"), c.beside) << c.db;
  EXPECT_EQ(BesideStore("/data/c.db", "reports/run-7.html"), "/data/reports/run-7.html");
}

TEST(Store, CreatesAPrivateWalStoreAtTheLatestSchema) {
  testing::TempDir dir;
  const std::string path = dir.File("nested/folder/cmax.db");
  auto store = Store::Open({.path = path});
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ(store->SchemaVersion().value(), LatestSchemaVersion());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.File("nested/folder").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_TRUE(store->BeginRun(Start()));
  ASSERT_EQ(::stat((path + "-wal").c_str(), &st), 0) << "WAL mode keeps a -wal file";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Store, RoundTripsARun) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  auto id = store->BeginRun(Start());
  ASSERT_TRUE(id);
  ASSERT_TRUE(store->AddToRun(*id, {{"host.os", R"({"id":"debian"})"}, {"a.first", "1"}}));
  ASSERT_TRUE(store->AddToRun(*id, {{"a.first", "2"}},  // replaces
                              {MakeFinding("gpu.visible", CheckStatus::kFail),
                               MakeFinding("gpu.driver", CheckStatus::kPass)},
                              {{"busbw", {{"op", "all_reduce"}, {"size", "1G"}}, 391.5, "GB/s"}}));
  ASSERT_TRUE(store->FinishRun(*id, RunState::kChecksFailed, 1, At(1795944149911)));

  auto record = store->LoadRun(*id);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->run.command, "run");
  EXPECT_EQ(record->run.host, "node-a");
  EXPECT_EQ(record->run.state, RunState::kChecksFailed);
  EXPECT_EQ(record->run.exit_code, 1);
  EXPECT_EQ(record->run.started_at, At(1795944148911));
  EXPECT_EQ(record->run.ended_at, At(1795944149911));
  EXPECT_EQ(record->run.pid, 4242);
  ASSERT_EQ(record->evidence.size(), 2u);
  EXPECT_EQ(record->evidence[0].key, "a.first");
  EXPECT_EQ(record->evidence[0].value_json, "2");
  ASSERT_EQ(record->findings.size(), 2u);
  const Finding& f = record->findings[0];
  EXPECT_EQ(f.check_id, "gpu.visible");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.severity, Severity::kHigh);
  EXPECT_EQ(f.observed, "7 of 8");
  EXPECT_EQ(f.links, std::vector<std::string>{"https://docs.nvidia.com/deploy/xid-errors/"});
  ASSERT_EQ(record->metrics.size(), 1u);
  EXPECT_EQ(record->metrics[0].labels.at("op"), "all_reduce");
  EXPECT_DOUBLE_EQ(record->metrics[0].value, 391.5);

  auto runs = store->ListRuns(10);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].counts.fail, 1);
  EXPECT_EQ((*runs)[0].counts.pass, 1);
  EXPECT_EQ(store->LatestRunId().value(), *id);
  EXPECT_EQ(store->LatestRunId("run").value(), *id);
  EXPECT_FALSE(store->LatestRunId("audit"));
  auto missing = store->LoadRun(*id + 100);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(Store, StoresEvents) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->AddEvents({{At(1000), "gpu1", "kmsg", "xid", R"({"code":79})"},
                                {At(2000), "gpu2", "kmsg", "xid", ""}}));
  auto events = store->LoadEvents("gpu1", 10);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].payload_json, R"({"code":79})");
  EXPECT_EQ(store->LoadEvents("", 10)->size(), 2u);
}

// A store as the first schema left it, with a run in it; open for more.
Database FirstSchemaStore(const std::string& path) {
  auto db = Database::Open(path, true, false, 1000);
  EXPECT_TRUE(db);
  const std::vector<Migration> first_only(Migrations().begin(), Migrations().begin() + 1);
  EXPECT_TRUE(Migrate(*db, first_only));
  EXPECT_EQ(db->QueryInt("PRAGMA user_version").value(), 1);
  EXPECT_TRUE(db->Execute(
      "INSERT INTO runs (command, target, host, started_at, state, cmax_version) VALUES "
      "('run', 'vm/standalone', 'h', '2026-11-29T09:22:28.911Z', 'ok', '0.0.1')"));
  return std::move(*db);
}

TEST(Store, MigratesAnEmptyDatabaseAndAPreviousSchema) {
  testing::TempDir dir;
  const std::string path = dir.File("old.db");
  {
    Database db_store = FirstSchemaStore(path);
    Database* db = &db_store;
    ASSERT_TRUE(db->Execute(
        "INSERT INTO findings (run_id, check_id, status, severity, message) VALUES "
        "(1, 'host.os', 'FAIL', 'high', 'kept across the findings rebuild (schema 6)')"));
    EXPECT_FALSE(
        db->Execute("INSERT INTO findings (run_id, check_id, status, severity) VALUES "
                    "(1, 'x', 'UNKNOWN', 'high')"))
        << "the first schema knew no UNKNOWN";
  }
  auto store = Store::Open({.path = path});
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ(store->SchemaVersion().value(), LatestSchemaVersion());
  auto runs = store->ListRuns(10);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].run.cmax_version, "0.0.1");
  EXPECT_TRUE(store->AddEvents({{At(1), "n", "s", "k", "{}"}})) << "events came with schema 2";
  auto record = store->LoadRun(1);
  ASSERT_TRUE(record);
  ASSERT_EQ(record->findings.size(), 1u);
  EXPECT_EQ(record->findings[0].message, "kept across the findings rebuild (schema 6)");
  Finding unknown;
  unknown.check_id = "health.kernel_log";
  unknown.status = CheckStatus::kUnknown;
  ASSERT_TRUE(store->AddToRun(1, {}, {unknown}));
  EXPECT_EQ(store->LoadRun(1)->findings[1].status, CheckStatus::kUnknown);
  EXPECT_EQ((*store->ListRuns(10))[0].counts.unknown, 1);
  EXPECT_EQ(store->LoadRun(1)->run.provider, "") << "a run from before schema 8 names none";
  EXPECT_TRUE(store->Providers()->empty());
}

// A store someone handed over is evidence: reading it (a report, a listing, rate) leaves every
// byte as it was, an older schema included (it is migrated in a copy in memory: it used to be
// migrated in place and switched to WAL).
TEST(Store, AReaderLeavesAnOlderStoreAsItWas) {
  testing::TempDir dir;
  const std::string path = dir.File("old.db");
  (void)FirstSchemaStore(path);
  const std::string before = ReadBytes(path);
  {
    auto store = Store::Open({.path = path, .create = false, .read_only = true});
    ASSERT_TRUE(store) << store.error().message;
    auto record = store->LoadRun(1);
    ASSERT_TRUE(record) << record.error().message;
    EXPECT_EQ(record->run.cmax_version, "0.0.1");
    EXPECT_EQ(record->run.provider, "");
  }
  EXPECT_TRUE(ReadBytes(path) == before) << "the store was changed by a reader";
  EXPECT_FALSE(std::ifstream(path + "-wal").good());
}

// What a dry run decides with: the remediation tables copied into memory with their keys, rows
// and nothing else; writes to the copy leave the store as it was.
TEST(Store, TablesCopiedIntoMemoryKeepTheirRowsAndKeysAndLeaveTheStoreAlone) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("with blank.db")});
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(store->Db().Execute(
      "INSERT INTO remediation_seen (node, key, count, recovered) VALUES ('gpu1', 'xid', 2, 0)"));
  auto copy = store->Db().CopyTablesIntoMemory("remediation_");
  ASSERT_TRUE(copy) << copy.error().message;
  EXPECT_EQ(copy->QueryInt("SELECT count FROM remediation_seen WHERE node = 'gpu1'").value(), 2);
  // The key came along: the same (node, key) again is refused, as in the store.
  EXPECT_FALSE(copy->Execute(
      "INSERT INTO remediation_seen (node, key, count, recovered) VALUES ('gpu1', 'xid', 3, 0)"));
  ASSERT_TRUE(copy->Execute("UPDATE remediation_seen SET count = 9"));
  ASSERT_TRUE(copy->Execute(
      "INSERT INTO remediation_breaker (id, tripped, tripped_at, reason) VALUES (1, 1, 'x', 'y')"));
  EXPECT_FALSE(copy->QueryInt("SELECT count(*) FROM runs")) << "only the tables asked for";
  EXPECT_EQ(store->Db().QueryInt("SELECT count FROM remediation_seen").value(), 2);
  EXPECT_EQ(store->Db().QueryInt("SELECT count(*) FROM remediation_breaker").value(), 0);
}

// SQL of the store's own runs inside every command that reads it: a view, a trigger.
TEST(Store, AStoreWithViewsOrTriggersIsNotRead) {
  testing::TempDir dir;
  for (const char* sql :
       {"ALTER TABLE runs RENAME TO runs_real; CREATE VIEW runs AS WITH RECURSIVE c(x) AS "
        "(SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT r.* FROM runs_real r, c",
        "CREATE TRIGGER t AFTER INSERT ON runs BEGIN DELETE FROM findings; END"}) {
    const std::string path = dir.File("hostile.db");
    std::remove(path.c_str());
    ASSERT_TRUE(Store::Open({.path = path}));
    {
      auto db = Database::Open(path, false, false, 1000);
      ASSERT_TRUE(db);
      ASSERT_TRUE(db->Execute(sql)) << sql;
    }
    for (const bool read_only : {true, false}) {
      auto store = Store::Open({.path = path, .create = false, .read_only = read_only});
      ASSERT_FALSE(store) << sql;
      EXPECT_EQ(store.error().code, ErrorCode::kCorrupt);
      EXPECT_NE(store.error().message.find("holds views or triggers"), std::string::npos);
    }
  }
}

// A batch is all or nothing: a metric the store refuses (NaN is stored as NULL, which the column
// refuses) takes the batch's evidence and findings with it, so that no finding is kept without
// what it was judged on.
TEST(Store, ABatchThatFailsLeavesNothingOfItBehind) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  const int64_t id = store->BeginRun(Start()).value();
  ASSERT_TRUE(store->AddToRun(id, {{"kept", "1"}}));
  const auto failed =
      store->AddToRun(id, {{"lost", "2"}}, {MakeFinding("lost", CheckStatus::kFail)},
                      {{"ok", {}, 1.0, "s"}, {"nan", {}, std::nan(""), "s"}});
  ASSERT_FALSE(failed);
  const RunRecord record = store->LoadRun(id).value();
  ASSERT_EQ(record.evidence.size(), 1U);
  EXPECT_EQ(record.evidence[0].key, "kept");
  EXPECT_TRUE(record.findings.empty());
  EXPECT_TRUE(record.metrics.empty());
}

// Evidence or labels nested past any depth cmax writes are shown as a note: every reader of
// them recursed once per level, and 100,000 levels (200 KB) broke the stack of every report.
TEST(Store, EvidenceNestedTooDeepIsANote) {
  testing::TempDir dir;
  const std::string path = dir.File("deep.db");
  auto store = Store::Open({.path = path});
  ASSERT_TRUE(store);
  const int64_t id = store->BeginRun(Start()).value();
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string shallow = R"({"a": [[["\"[[[["]]]})";
  ASSERT_TRUE(store->AddToRun(id, {{"deep", deep}, {"shallow", shallow}}, {},
                              {{"m", {{"l", "v"}}, 1.0, "s"}}));
  {
    auto db = Database::Open(path, false, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute("UPDATE metrics SET labels = '{\"a\":" + deep + "}'"));
  }
  auto record = store->LoadRun(id);
  ASSERT_TRUE(record) << record.error().message;
  ASSERT_EQ(record->evidence.size(), 2U);
  EXPECT_EQ(record->evidence[0].value_json,
            "\"(evidence nested deeper than 64 levels: not shown)\"");
  EXPECT_EQ(record->evidence[1].value_json, shallow) << "a bracket inside a string is no level";
  ASSERT_EQ(record->metrics.size(), 1U);
  EXPECT_EQ(record->metrics[0].labels.at("labels"), "(nested deeper than 64 levels: not shown)");
}

// A store handed over may hold a status no cmax wrote (edited with sqlite3, the CHECK set
// aside): the run's findings read it as a failure, and so must the list of runs, or `db runs`
// says "0 failed" of a run whose report shows a failure.
TEST(Store, AStatusNoCmaxWroteCountsAsAFailureInTheListAsInTheRun) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  auto store = Store::Open({.path = path});
  ASSERT_TRUE(store);
  const int64_t id = store->BeginRun(Start()).value();
  ASSERT_TRUE(
      store->AddToRun(id, {},
                      {MakeFinding("a", CheckStatus::kPass), MakeFinding("b", CheckStatus::kPass),
                       MakeFinding("c", CheckStatus::kWarn)}));
  {
    auto db = Database::Open(path, false, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute("PRAGMA ignore_check_constraints = ON"));
    ASSERT_TRUE(db->Execute("UPDATE findings SET status = 'bogus' WHERE check_id = 'a'"));
    ASSERT_TRUE(db->Execute("UPDATE findings SET status = 'pass' WHERE check_id = 'b'"));
  }
  auto record = store->LoadRun(id);
  ASSERT_TRUE(record) << record.error().message;
  const auto failed = std::ranges::count_if(
      record->findings, [](const Finding& f) { return f.status == CheckStatus::kFail; });
  EXPECT_EQ(failed, 2);
  auto runs = store->ListRuns(10);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1U);
  EXPECT_EQ((*runs)[0].counts.fail, failed);
  EXPECT_EQ((*runs)[0].counts.pass, 0);
  EXPECT_EQ((*runs)[0].counts.warn, 1);
}

// A run with no target (a store whose schema was edited to allow it) is still the latest run
// for `report latest`: the prefix filter matched no NULL, and the store looked empty.
// A run still open (or left open by a process that was killed) is the newest, but never what a
// rating reads: that is the newest run that ended.
TEST(Store, TheLatestClosedRunPassesOverOneStillRunning) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  RunStart start = Start("health");
  start.provider = "acme";
  const int64_t ended = store->BeginRun(start).value();
  ASSERT_TRUE(store->FinishRun(ended, RunState::kOk, 0, At(1795944149911)));
  const int64_t open = store->BeginRun(start).value();
  EXPECT_EQ(store->LatestRunId("health").value(), open);
  EXPECT_EQ(store->LatestRunId("health", "", /*closed_only=*/true).value(), ended);
  EXPECT_EQ(store->LatestProviderRunId("acme", "health").value(), open);
  EXPECT_EQ(store->LatestProviderRunId("acme", "health", "", /*closed_only=*/true).value(), ended);
  ASSERT_TRUE(store->FinishRun(open, RunState::kInterrupted, 130, At(1795944150911)));
  EXPECT_EQ(store->LatestRunId("health", "", /*closed_only=*/true).value(), open);
}

TEST(Store, ARunWithNoTargetIsStillTheLatest) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  auto store = Store::Open({.path = path});
  ASSERT_TRUE(store);
  const int64_t id = store->BeginRun(Start()).value();
  {
    auto db = Database::Open(path, false, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute("PRAGMA writable_schema = ON"));
    ASSERT_TRUE(
        db->Execute("UPDATE sqlite_schema SET sql = replace(sql, 'target TEXT NOT NULL', "
                    "'target TEXT') WHERE name = 'runs'"));
  }
  {
    auto db = Database::Open(path, false, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute("UPDATE runs SET target = NULL"));
  }
  auto reopened = Store::Open({.path = path});
  ASSERT_TRUE(reopened) << reopened.error().message;
  auto latest = reopened->LatestRunId();
  ASSERT_TRUE(latest) << latest.error().message;
  EXPECT_EQ(*latest, id);
}

// A statement of a reader gives up when asked to stop (Ctrl-C, SIGTERM): a query that would
// never end returns kInterrupted.
bool StopNow() {
  return true;
}

TEST(Store, AReadersStatementStopsWhenAsked) {
  testing::TempDir dir;
  auto db = Database::Open(dir.File("x.db"), true, false, 1000);
  ASSERT_TRUE(db);
  db->StopWhen(StopNow);
  auto endless = db->QueryInt(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
      "SELECT max(x) FROM c");
  ASSERT_FALSE(endless);
  EXPECT_EQ(endless.error().code, ErrorCode::kInterrupted);
}

// Schema 8: each run names the provider it evaluates; the newest of each kind per provider.
TEST(Store, RunsNameTheirProvider) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  const auto begin = [&](const char* command, const char* provider) {
    return *store->BeginRun({.command = command, .started_at = At(1), .provider = provider});
  };
  const int64_t a1 = begin("audit", "Beta");
  const int64_t a2 = begin("audit", "Alpha");
  const int64_t a3 = begin("audit", "Beta");
  const int64_t r1 = begin("reliability", "Beta");
  begin("audit", "");
  EXPECT_EQ(store->LoadRun(a2)->run.provider, "Alpha");
  EXPECT_EQ(*store->Providers(), (std::vector<std::string>{"Alpha", "Beta"}));
  EXPECT_EQ(store->LatestProviderRunId("Beta", "audit").value(), a3);
  EXPECT_EQ(store->LatestProviderRunId("Beta", "reliability").value(), r1);
  EXPECT_EQ(store->LatestProviderRunId("Alpha", "reliability").error().code, ErrorCode::kNotFound);
  // Of one target: the fleet's view among the nodes' own health runs.
  const int64_t fleet =
      *store->BeginRun({.command = "health", .target = "active schedule", .provider = "Beta"});
  const int64_t node = *store->BeginRun(
      {.command = "health", .target = "active checks (quick)", .provider = "Beta"});
  EXPECT_EQ(store->LatestProviderRunId("Beta", "health").value(), node);
  EXPECT_EQ(store->LatestProviderRunId("Beta", "health", "active schedule").value(), fleet);
  EXPECT_FALSE(store->LatestProviderRunId("Alpha", "health", "active schedule"));
  EXPECT_NE(a1, a3);
  EXPECT_EQ((*store->ListRuns(10))[1].run.provider, "Beta");
}

// A node's last check, per host: of one provider's runs when one is named (two providers'
// clusters both have a gpu1), else of anyone's; of the checks that ended.
TEST(Store, EachHostsLatestRunIsOfTheProviderNamed) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  const auto check = [&](const char* host, const char* provider) {
    const int64_t id = *store->BeginRun({.command = "health",
                                         .target = "active checks (quick)",
                                         .host = host,
                                         .started_at = At(1),
                                         .provider = provider});
    EXPECT_TRUE(store->FinishRun(id, RunState::kOk, 0, At(2)));
    return id;
  };
  const int64_t alpha1 = check("gpu1", "Alpha");
  const int64_t beta1 = check("gpu1", "Beta");
  const int64_t alpha2 = check("gpu2", "Alpha");
  const int64_t none3 = check("gpu3", "");
  // A check still running (or killed part-way) is not a node's last check: gpu2's stays alpha2.
  (void)store->BeginRun({.command = "health",
                         .target = "active checks (quick)",
                         .host = "gpu2",
                         .started_at = At(3),
                         .provider = "Alpha"});
  const auto hosts = [&](const std::string& provider) {
    auto latest = store->LatestRunByHost("health", "active checks", provider);
    EXPECT_TRUE(latest) << latest.error().message;
    std::map<std::string, int64_t> ids;
    for (const auto& [host, run] : latest.value_or(std::map<std::string, RunSummary>{})) {
      ids[host] = run.run.id;
    }
    return ids;
  };
  EXPECT_EQ(hosts("Alpha"), (std::map<std::string, int64_t>{{"gpu1", alpha1}, {"gpu2", alpha2}}));
  EXPECT_EQ(hosts("Beta"), (std::map<std::string, int64_t>{{"gpu1", beta1}}));
  EXPECT_EQ(hosts(""),
            (std::map<std::string, int64_t>{{"gpu1", beta1}, {"gpu2", alpha2}, {"gpu3", none3}}));
}

TEST(Store, ProcessesOpeningANewStoreAtOnceAllSucceed) {
  // Parallel `cmax run` on a fresh store: each must see the others' migrations, not redo them.
  for (int round = 0; round < 5; ++round) {
    testing::TempDir dir;
    const std::string path = dir.File("cmax.db");
    std::vector<std::thread> openers;
    std::atomic<int> failures{0};
    std::string first_error;
    std::mutex error_mutex;
    for (int i = 0; i < 4; ++i) {
      openers.emplace_back([&] {
        auto store = Store::Open({.path = path});
        if (!store || !store->BeginRun(Start())) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!store) first_error = store.error().message;
          ++failures;
        }
      });
    }
    for (std::thread& t : openers) t.join();
    EXPECT_EQ(failures.load(), 0) << first_error;
  }
}

TEST(Store, RefusesAStoreFromANewerCmax) {
  testing::TempDir dir;
  const std::string path = dir.File("future.db");
  {
    auto db = Database::Open(path, true, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->Execute("CREATE TABLE x (a); PRAGMA user_version = 99"));
  }
  auto store = Store::Open({.path = path});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(store.error().message.find(path), std::string::npos);
}

TEST(Store, RefusesAForeignSqliteDatabaseAndLeavesItAlone) {
  testing::TempDir dir;
  const std::string path = dir.File("other.db");
  {
    auto db = Database::Open(path, true, false, 1000);
    ASSERT_TRUE(db);
    ASSERT_TRUE(
        db->Execute("CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('x')"));
  }
  const std::string before = ReadBytes(path);
  auto store = Store::Open({.path = path});
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find("not a cmax store"), std::string::npos);
  EXPECT_TRUE(ReadBytes(path) == before) << "the foreign database was modified";
}

TEST(Store, CorruptFileIsAClearErrorAndIsNotOverwritten) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  const std::string garbage(8192, '\x5a');
  {
    std::ofstream out(path, std::ios::binary);
    out << garbage;
  }
  auto store = Store::Open({.path = path});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(store.error().message.find(path), std::string::npos) << store.error().message;
  EXPECT_TRUE(ReadBytes(path) == garbage) << "the corrupt file was modified";
}

TEST(Store, MissingStoreIsNotCreatedWhenAskedNotTo) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("none.db"), .create = false});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(std::ifstream(dir.File("none.db")).good());
}

// An empty file is no store yet: a command that only reads leaves it as it is (it used to make
// a 118 KB store of it); one that records makes it one.
TEST(Store, AnEmptyFileIsNoStoreForAReaderAndBecomesOneForAWriter) {
  testing::TempDir dir;
  const std::string path = dir.File("empty.db");
  std::ofstream(path).close();
  for (const StoreOptions& reader : {StoreOptions{.path = path, .create = false},
                                     StoreOptions{.path = path, .read_only = true}}) {
    auto store = Store::Open(reader);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, ErrorCode::kNotFound) << store.error().message;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 0);
    EXPECT_FALSE(std::ifstream(path + "-journal").good());
    EXPECT_FALSE(std::ifstream(path + "-wal").good());
  }
  EXPECT_TRUE(Store::Open({.path = path}));
}

// SQLite would open a device or a FIFO and write its journal beside it: as root, --db /dev/null
// left /dev/null-journal in /dev.
TEST(Store, AStoreIsARegularFile) {
  testing::TempDir dir;
  const std::string fifo = dir.File("fifo.db");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const bool journal_before = std::ifstream("/dev/null-journal").good();  // an old cmax's
  for (const std::string& path : {std::string("/dev/null"), fifo}) {
    for (const bool create : {true, false}) {
      auto store = Store::Open({.path = path, .create = create});
      ASSERT_FALSE(store) << path;
      EXPECT_EQ(store.error().code, ErrorCode::kIo) << store.error().message;  // exit 3
      EXPECT_NE(store.error().message.find("not a regular file"), std::string::npos);
    }
  }
  if (!journal_before) {
    EXPECT_FALSE(std::ifstream("/dev/null-journal").good());
  }
  EXPECT_FALSE(std::ifstream(fifo + "-journal").good());
}

TEST(Store, LockedStoreIsABusyErrorNamingTheFile) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  ASSERT_TRUE(Store::Open({.path = path}));
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto store = Store::Open({.path = path, .busy_timeout_ms = 100});
  Result<int64_t> id = store ? store->BeginRun(Start()) : tl::unexpected(store.error());
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, ErrorCode::kBusy);
  EXPECT_NE(id.error().message.find(path), std::string::npos) << id.error().message;
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  auto again = Store::Open({.path = path, .busy_timeout_ms = 100});
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->BeginRun(Start()));
}

TEST(Store, ReaderIsNotBlockedByAWriterAndSeesCommittedRowsOnly) {
  testing::TempDir dir;
  const std::string path = dir.File("cmax.db");
  auto writer = Store::Open({.path = path});
  ASSERT_TRUE(writer);
  auto run = writer->BeginRun(Start());
  ASSERT_TRUE(run);
  auto reader = Store::Open({.path = path, .busy_timeout_ms = 100});
  ASSERT_TRUE(reader);

  // The writer holds an open write transaction while the reader reads.
  auto raw = Database::Open(path, false, false, 1000);
  ASSERT_TRUE(raw);
  ASSERT_TRUE(raw->Execute("BEGIN IMMEDIATE"));
  ASSERT_TRUE(raw->Execute(fmt::format(
      "INSERT INTO findings (run_id, check_id, status, severity) VALUES ({}, 'x.y', 'FAIL', "
      "'high')",
      *run)));
  std::thread concurrent([&] {
    auto record = reader->LoadRun(*run);
    ASSERT_TRUE(record) << record.error().message;
    EXPECT_TRUE(record->findings.empty()) << "uncommitted rows must not be visible";
  });
  concurrent.join();
  ASSERT_TRUE(raw->Execute("COMMIT"));
  EXPECT_EQ(reader->LoadRun(*run)->findings.size(), 1u);
}

TEST(RunWriter, OutcomeFollowsFindingsAndInterruption) {
  testing::TempDir dir;
  auto store = Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  {
    auto w = RunWriter::Begin(*store, Start());
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->Add({}, {MakeFinding("a.b", CheckStatus::kPass)}));
    auto outcome = w->Finish(0, At(2000));
    ASSERT_TRUE(outcome);
    EXPECT_EQ(outcome->state, RunState::kOk);
    EXPECT_EQ(outcome->exit_code, 0);
  }
  {
    auto w = RunWriter::Begin(*store, Start());
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->Add({{"k", "1"}}, {MakeFinding("a.b", CheckStatus::kFail)}));
    ASSERT_TRUE(w->SetTarget("vm/slurm-client"));
    EXPECT_EQ(w->Finish(0, At(2000))->state, RunState::kChecksFailed);
    EXPECT_EQ(store->LoadRun(w->RunId())->run.target, "vm/slurm-client");
  }
  {
    auto w = RunWriter::Begin(*store, Start());
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->Add({}, {MakeFinding("a.b", CheckStatus::kFail)}));
    auto outcome = w->Finish(15, At(2000));
    EXPECT_EQ(outcome->state, RunState::kInterrupted);
    EXPECT_EQ(outcome->exit_code, 143);
    auto record = store->LoadRun(w->RunId());
    EXPECT_EQ(record->findings.size(), 1u) << "an interrupted run keeps what it had";
  }
}

}  // namespace
}  // namespace cmax::store
