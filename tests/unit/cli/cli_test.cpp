#include "cli/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli/common.hpp"
#include "core/strings.hpp"
#include "store/store.hpp"
#include "support/corpus.hpp"
#include "support/temp_dir.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"

namespace cmax::cli {
namespace {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult Cli(std::vector<std::string> args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

// RunCli builds only the command a line names: the tree was most of a one-shot start-up.
TEST(CliTree, OnlyTheNamedCommandIsBuilt) {
  struct Case {
    std::vector<std::string> args;
    bool all;
    std::string command;
  };
  const Case cases[] = {
      {{"health", "--passive"}, false, "health"},
      {{"-v", "--db", "run", "db", "runs"}, false, "db"},  // --db's value is no command
      {{"--db=/x", "-q", "endpoint", "run"}, false, "endpoint"},
      {{"--version"}, false, ""},  // nothing but the global options
      {{"--version", "--help"}, true, ""},
      {{"health", "--help"}, false, "health"},  // a command's own help needs only it
      {{"--help"}, true, ""},
      {{"-vh", "health"}, true, ""},  // -h inside a cluster of short flags
      {{}, true, ""},                 // no command: the whole list in the error
      {{"helth"}, true, ""},          // a typo: CLI11 suggests from the whole tree
  };
  for (const Case& c : cases) {
    const TreeNeeded t = TreeFor(c.args);
    EXPECT_EQ(t.all, c.all) << c.args.size();
    if (!c.all) {
      EXPECT_EQ(t.command, c.command);
    }
  }
  EXPECT_EQ(Cli({"--version"}).code, kExitOk);
  EXPECT_NE(Cli({"--version"}).out.find("cmax "), std::string::npos);
  auto help = Cli({"health", "--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_NE(help.out.find("--passive"), std::string::npos);
  auto all = Cli({"--help"});
  for (const char* name : {"run", "endpoint", "reliability", "remediate"})
    EXPECT_NE(all.out.find(name), std::string::npos) << name;
  auto typo = Cli({"helth"});
  EXPECT_EQ(typo.code, kExitUsage);
}

TEST(Cli, HelpAndVersionExitZero) {
  auto help = Cli({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos);
  for (const char* sub : {"run", "db", "report", "lab"}) {
    auto sub_help = Cli({sub, "--help"});
    EXPECT_EQ(sub_help.code, kExitOk) << sub;
    EXPECT_NE(sub_help.out.find(sub), std::string::npos) << sub;
  }
  EXPECT_EQ(Cli({"lab", "up", "--help"}).code, kExitOk);
  auto version = Cli({"--version"});
  EXPECT_EQ(version.code, kExitOk);
  EXPECT_EQ(version.out.rfind("cmax ", 0), 0u);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(Cli({}).code, kExitUsage);
  EXPECT_EQ(Cli({"--no-such-flag"}).code, kExitUsage);
  EXPECT_EQ(Cli({"run", "--no-such-flag"}).code, kExitUsage);
  EXPECT_EQ(Cli({"frobnicate"}).code, kExitUsage);
  EXPECT_EQ(Cli({"report", "--format", "pdf"}).code, kExitUsage);
  EXPECT_EQ(Cli({"lab", "up", "--nodes", "0", "--dir", "/tmp/cmax-no-lab-here"}).code, kExitUsage);
  EXPECT_EQ(Cli({"db"}).code, kExitUsage);
  EXPECT_EQ(Cli({"run", "--probe-timeout", "nan", "--no-html"}).code, kExitUsage);
  // The lab's options go with --lab, and --lab writes its own plan and attestation.
  EXPECT_EQ(Cli({"run", "--provider-profile", "slow"}).code, kExitUsage);
  EXPECT_EQ(Cli({"run", "--lab", "--plan", "p.yaml"}).code, kExitUsage);
  EXPECT_EQ(Cli({"run", "--lab", "--attestation", "a.yaml"}).code, kExitUsage);
  const auto profile = Cli({"run", "--lab", "--provider-profile", "sloppy", "--no-html"});
  EXPECT_EQ(profile.code, kExitUsage);
  EXPECT_NE(profile.err.find("no provider profile \"sloppy\" (profiles: good, slow, negligent)"),
            std::string::npos)
      << profile.err;
  // A folder of its own, so that no mistake can start or stop the user's default lab.
  EXPECT_EQ(Cli({"lab", "up", "--timeout", "nan", "--dir", "/tmp/cmax-no-lab-here"}).code,
            kExitUsage);
  // Options that contradict each other, or one that has nothing to act on, are refused rather
  // than one of them silently winning or being ignored.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"report", "--format", "html", "--json"},
           {"report", "-o", ""},
           {"audit", "--show", "--show-minimums"},
           {"audit", "review", "--minimums", "table.json"},
           {"audit", "--minimums", "table.json", "review"},
           {"endpoint", "sweep", "--url", "http://127.0.0.1:1/v1", "--model", "m", "--levels", "1",
            "--max-concurrency", "4"}}) {
    EXPECT_EQ(Cli(args).code, kExitUsage) << Join(args, " ");
  }
}

TEST(Cli, RunStoresARunAndEveryReadingCommandFindsIt) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string html = dir.File("out/report.html");
  auto run = Cli({"run", "--db", db, "--html", html, "--json"});
  // 1: a check failed, 3: one could not be read (the audit's, on a machine like this one).
  ASSERT_TRUE(run.code == kExitOk || run.code == kExitChecksFailed || run.code == kExitError)
      << run.err;
  auto doc = nlohmann::json::parse(run.out);
  EXPECT_EQ(doc["schema"], "cmax.report/v1");
  EXPECT_EQ(doc["run"]["command"], "run");
  EXPECT_NE(doc["run"]["state"], "running");
  EXPECT_FALSE(doc["findings"].empty());
  EXPECT_TRUE(doc["evidence"].contains("host.kernel"));
  EXPECT_TRUE(doc["evidence"].contains("target"));
  // There are GPU checks, and one skipped (no GPU here) says why.
  int gpu_checks = 0;
  for (const auto& f : doc["findings"]) {
    if (f["category"] != "gpu") continue;
    ++gpu_checks;
    if (f["status"] == "SKIP") {
      EXPECT_FALSE(f["message"].get<std::string>().empty()) << f.dump();
    }
  }
  EXPECT_GT(gpu_checks, 0);
  // The audit is a phase of the run: every check of the catalogue has its finding, and the
  // minimum table it graded with is recorded.
  size_t audit_checks = 0;
  for (const auto& f : doc["findings"]) {
    const std::string id = f["check_id"];
    if (id.starts_with("versions.") || id.starts_with("isolation.") || id.starts_with("access.")) {
      ++audit_checks;
    }
  }
  EXPECT_GE(audit_checks, 20U);
  EXPECT_TRUE(doc["evidence"].contains("audit.minimums.sha256"));
  EXPECT_TRUE(doc["evidence"].contains("audit.target"));
  // And rated: the rating is kept in the run, as `cmax rate RUN` gives it.
  ASSERT_TRUE(doc["evidence"].contains("rating")) << doc["evidence"].dump();
  EXPECT_EQ(doc["evidence"]["rating"]["schema"], "cmax.rating/v1");
  EXPECT_EQ(doc["evidence"]["rating"]["runs"], nlohmann::json::array({doc["run"]["id"]}));
  const auto rated =
      Cli({"rate", "--db", db, "--json", std::to_string(doc["run"]["id"].get<int64_t>())});
  ASSERT_EQ(rated.code, kExitOk) << rated.err;
  EXPECT_EQ(nlohmann::json::parse(rated.out)["tier"], doc["evidence"]["rating"]["tier"]);
  std::ifstream page(html);
  ASSERT_TRUE(page.good()) << "the HTML report was not written";
  const int64_t id = doc["run"]["id"];

  auto runs = Cli({"db", "runs", "--db", db, "--json"});
  ASSERT_EQ(runs.code, kExitOk) << runs.err;
  // The evaluation, and its health phase recorded as a run of its own just after it opened.
  const auto listed = nlohmann::json::parse(runs.out)["runs"];
  ASSERT_EQ(listed.size(), 2U) << listed;
  EXPECT_EQ(listed[1]["id"], id);
  EXPECT_EQ(listed[0]["command"], "health");
  EXPECT_EQ(doc["evidence"]["evaluation.phases"][1]["run"], listed[0]["id"]);
  auto runs_text = Cli({"--db", db, "db", "runs"});
  // The table has the run's row: its id, then its command (not merely the word "run", which
  // "no runs in ..." also holds).
  EXPECT_TRUE(std::regex_search(
      runs_text.out, std::regex("\n +" + std::to_string(id) + "  run +(ok|checks-failed) ")))
      << runs_text.out;

  auto show = Cli({"db", "show", std::to_string(id), "--db", db, "--json"});
  ASSERT_EQ(show.code, kExitOk) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["run"]["id"], id);
  auto show_text = Cli({"db", "show", "latest", "--db", db});
  EXPECT_NE(show_text.out.find("evidence"), std::string::npos);

  for (const char* format : {"text", "json", "junit", "html"}) {
    const std::string file = dir.File(std::string("report.") + format);
    auto report = Cli({"report", std::to_string(id), "--db", db, "--format", format, "-o", file});
    EXPECT_EQ(report.code, kExitOk) << format << ": " << report.err;
    EXPECT_TRUE(std::ifstream(file).good()) << format;
  }
  auto junit = Cli({"report", "--db", db, "-f", "junit"});
  EXPECT_NE(junit.out.find("<testsuites"), std::string::npos);
  EXPECT_EQ(Cli({"db", "path", "--db", db}).out, db + "\n");

  // With the provider's attestation the run ends with a tier; a bad one stops it first.
  const std::string example = std::string(CMAX_TEST_DATA) + "/../../data/attestation.example.yaml";
  auto attested = Cli({"run", "--db", db, "--no-html", "--attestation", example});
  EXPECT_TRUE(attested.code == kExitOk || attested.code == kExitChecksFailed ||
              attested.code == kExitError)
      << attested.code << ": " << attested.err;
  EXPECT_TRUE(std::regex_search(attested.out,
                                std::regex("\nTier: [A-Za-z ]+ \\(score [0-9.]+, confidence "
                                           "[0-9]+%; cmax rate [0-9]+ -v for each item\\)\n$")))
      << attested.out;
  const auto before = Cli({"db", "runs", "--db", db, "--json"}).out;
  auto refused = Cli({"run", "--db", db, "--no-html", "--attestation", dir.File("none.yaml")});
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_NE(refused.err.find("none.yaml"), std::string::npos) << refused.err;
  EXPECT_EQ(Cli({"db", "runs", "--db", db, "--json"}).out, before) << "a run was recorded";
}

TEST(Cli, MissingRunsAndStoresAreReportedClearly) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  auto no_store = Cli({"report", "--db", db});
  EXPECT_EQ(no_store.code, kExitError);
  EXPECT_NE(no_store.err.find(db), std::string::npos);
  EXPECT_EQ(Cli({"db", "runs", "--db", db}).code, kExitOk) << "an empty listing is not an error";
  // Nor in JSON: an empty list, as for a store without runs.
  const CliResult listed = Cli({"db", "runs", "--db", db, "--json"});
  EXPECT_EQ(listed.code, kExitOk) << listed.err;
  EXPECT_EQ(nlohmann::json::parse(listed.out)["runs"], nlohmann::json::array()) << listed.out;
  EXPECT_FALSE(std::filesystem::exists(db));
  // A file that is there but cannot be opened as a store is no missing store: an error of the
  // machine (3), for a listing as for a command that records.
  const CliResult proc = Cli({"db", "runs", "--db", "/proc/version"});
  EXPECT_EQ(proc.code, kExitError) << proc.out << proc.err;
  EXPECT_EQ(proc.out, "");
  const std::string train_log = std::string(CMAX_TEST_DATA) + "/train/older_wps_release.log";
  EXPECT_EQ(Cli({"--db", "/proc/cmax.db", "train", "log", train_log}).code, kExitError);
  ASSERT_TRUE(store::Store::Open({.path = db}));
  auto no_run = Cli({"db", "show", "99", "--db", db});
  EXPECT_EQ(no_run.code, kExitUsage);
  EXPECT_NE(no_run.err.find("no run 99"), std::string::npos);
  EXPECT_EQ(Cli({"report", "banana", "--db", db}).code, kExitUsage);
  EXPECT_EQ(Cli({"report", "--db", db}).code, kExitError) << "no runs yet";
}

// Issue 13: a directory given as the store listed "no runs yet" with exit 0, and a store in a
// folder that cannot be written failed as "attempt to write a readonly database".
TEST(Cli, StorePathErrorsNameTheRealCause) {
  testing::TempDir dir;
  auto folder = Cli({"db", "runs", "--db", dir.Path()});
  EXPECT_EQ(folder.code, kExitError);
  EXPECT_NE(folder.err.find("is a directory"), std::string::npos) << folder.err;
  EXPECT_EQ(Cli({"run", "--db", dir.Path(), "--no-html"}).code, kExitError);

  // A store in a folder only root may write, opened by an unprivileged user (nobody): tests run
  // as root, for whom no permission bit stops a write.
  ASSERT_EQ(::chmod(dir.Path().c_str(), 0755), 0);
  const std::string folder_ro = dir.File("ro");
  ASSERT_EQ(::mkdir(folder_ro.c_str(), 0755), 0);
  const std::string db = folder_ro + "/cmax.db";
  ASSERT_TRUE(store::Store::Open({.path = db}));
  ASSERT_EQ(::chmod(db.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(folder_ro.c_str(), 0555), 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(99);
    std::ostringstream out;
    std::ostringstream err;
    const int code = RunCli({"--db", db, "db", "runs"}, out, err);
    const std::string text = err.str();
    (void)!::write(pipe_fds[1], text.data(), text.size());
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
    err.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kExitError) << err;
  EXPECT_NE(err.find("cannot write in " + folder_ro), std::string::npos) << err;
  EXPECT_EQ(err.find("readonly database"), std::string::npos) << err;
}

TEST(Cli, ErrorsReachTheTerminalWithoutControlCharacters) {
  std::ostringstream sink;
  ControlCharacterFilter filter(sink.rdbuf());
  std::ostream err(&filter);
  err << "server said: \x1b[2J\x1b]0;owned\x07 gone\r\n" << '\x7f' << "caf\xc3\xa9\tok\n";
  err.flush();
  EXPECT_EQ(sink.str(), "server said: ?[2J?]0;owned? gone?\n?caf\xc3\xa9\tok\n");
  // A C1 control's two bytes become one '?': exactly what is shown is written, nothing past it.
  std::ostringstream c1_sink;
  ControlCharacterFilter c1_filter(c1_sink.rdbuf());
  std::ostream c1(&c1_filter);
  c1 << "a\xC2\x9B"
     << "31m b\xC2\x85"
     << "c\n";
  c1.flush();
  EXPECT_EQ(c1_sink.str(), "a?31m b?c\n");
}

// A sink that takes `room` bytes, then fails as a full disk (or a closed pipe) does.
class FullSink : public std::streambuf {
 public:
  FullSink(size_t room, int error) : room_(room), error_(error) {}
  std::string taken;

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char one = traits_type::to_char_type(c);
    return xsputn(&one, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto fits = std::min<std::streamsize>(n, static_cast<std::streamsize>(room_));
    taken.append(s, static_cast<size_t>(fits));
    room_ -= static_cast<size_t>(fits);
    if (fits < n) errno = error_;
    return fits;
  }
  int sync() override { return 0; }

 private:
  size_t room_;
  int error_;
};

// What never reached stdout is a failure of the command (exit 3 and why), not 0 or 1; a reader
// that closed the pipe (`| head`) is not; a command that failed keeps its own code.
TEST(Cli, OutputThatDidNotReachStdoutIsExitThree) {
  const auto after = [](size_t room, int error, int code, const std::string& text) {
    FullSink sink(room, error);
    FailureRecordingBuffer recorder(&sink);
    std::ostream out(&recorder);
    out << text;
    out.flush();
    std::ostringstream err;
    errno = 0;  // stale by the time the command ends: the cause is the one recorded
    return std::pair{ExitCodeAfterOutput(code, recorder, err), err.str()};
  };
  EXPECT_EQ(after(100, ENOSPC, kExitOk, "all of it"), std::pair(kExitOk, std::string()));
  EXPECT_EQ(
      after(4, ENOSPC, kExitOk, "more than four"),
      std::pair(kExitError, std::string("cmax: cannot write to standard output: No space left on "
                                        "device\n")));
  EXPECT_EQ(after(4, ENOSPC, kExitChecksFailed, "more than four").first, kExitError);
  EXPECT_EQ(after(4, EPIPE, kExitOk, "more than four"), std::pair(kExitOk, std::string()));
  EXPECT_EQ(after(4, ENOSPC, kExitUsage, "more than four"), std::pair(kExitUsage, std::string()));
}

TEST(Cli, CorruptStoreIsAnErrorNamingTheFileAndIsLeftAlone) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  std::ofstream(db, std::ios::binary) << std::string(4096, '\x01');
  for (auto args : std::vector<std::vector<std::string>>{
           {"run", "--db", db, "--no-html"}, {"db", "runs", "--db", db}, {"report", "--db", db}}) {
    auto r = Cli(args);
    EXPECT_EQ(r.code, kExitError) << args[0];
    EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
  }
  std::ifstream in(db, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_TRUE(bytes.str() == std::string(4096, '\x01')) << "the corrupt store was modified";
}

// The commands that read never write where --db points: a device is no store (as root, SQLite
// left /dev/null-journal in /dev), and an empty file stays empty (it became a 118 KB store).
TEST(Cli, TheCommandsThatReadLeaveWhatDbNamesAsItIs) {
  const bool journal_before = std::ifstream("/dev/null-journal").good();  // an old cmax's
  for (auto args : std::vector<std::vector<std::string>>{{"db", "runs"},
                                                         {"db", "show", "latest"},
                                                         {"report"},
                                                         {"compare", "1", "2"},
                                                         {"rate"},
                                                         {"health", "--passive"}}) {
    args.insert(args.begin(), {"--db", "/dev/null"});
    auto r = Cli(args);
    EXPECT_EQ(r.code, kExitError) << args[2] << ": " << r.err;  // as a measuring command's
    EXPECT_NE(r.err.find("/dev/null is not a regular file"), std::string::npos) << r.err;
  }
  if (!journal_before) {
    EXPECT_FALSE(std::ifstream("/dev/null-journal").good());
  }
  testing::TempDir dir;
  const std::string empty = dir.File("empty.db");
  std::ofstream(empty).close();
  EXPECT_EQ(Cli({"--db", empty, "db", "runs"}).code, kExitOk);
  EXPECT_NE(Cli({"--db", empty, "db", "show", "latest"}).code, kExitOk);
  struct stat st {};
  ASSERT_EQ(::stat(empty.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
}

TEST(Cli, RunWhoseProcessDiedShowsAsAbandoned) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  auto store = store::Store::Open({.path = db});
  ASSERT_TRUE(store);
  // A pid that has certainly exited: a child we ran and reaped.
  sys::PosixProcessRunner runner;
  auto child = runner.Run({.argv = {"sh", "-c", "echo $$"}});
  ASSERT_TRUE(child);
  const int64_t dead_pid = std::stoll(child->stdout_text);
  ASSERT_TRUE(
      store->BeginRun({.command = "run", .target = "t", .host = sys::Hostname(), .pid = dead_pid}));
  ASSERT_TRUE(store->BeginRun(
      {.command = "run", .target = "t", .host = sys::Hostname(), .pid = ::getpid()}));
  auto runs = Cli({"db", "runs", "--db", db, "--json"});
  auto doc = nlohmann::json::parse(runs.out);
  EXPECT_EQ(doc["runs"][0]["state"], "running") << "our own process is alive";
  EXPECT_EQ(doc["runs"][1]["state"], "abandoned");
}

TEST(Cli, HealthReplaysASavedLogIntoTheStore) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string log = std::string(CMAX_TEST_DATA) + "/health/kmsg/xid_shapes.log";
  auto r = Cli({"health", "--passive", "--from-file", log, "--db", db, "--json"});
  EXPECT_EQ(r.code, kExitChecksFailed) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["command"], "health");
  bool xid79 = false;
  for (const auto& c : doc["evidence"]["health.conditions"]) {
    if (c.contains("code") && c["code"] == 79) {
      xid79 = true;
      EXPECT_EQ(c["pci"], "0000:db:00") << "pci as the driver printed it, lowercased";
      EXPECT_EQ(c["action"], "reboot-node");
    }
  }
  EXPECT_TRUE(xid79);
  for (const auto& e : doc["evidence"]["health.xid_events"]) {
    EXPECT_TRUE(e["code"].is_number_integer());
    EXPECT_TRUE(e["pci"].is_string());
  }
  EXPECT_EQ(Cli({"db", "show", "latest", "--db", db}).code, kExitOk);
}

TEST(Cli, HealthAsSlurmHealthCheckIsSilentOnSuccessAndOneLineOnFailure) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  std::ofstream(dir.File("clean.log")) << "[ 1.0] usb 1-1: new device\n";
  auto ok = Cli({"health", "--passive", "--slurm-healthcheck", "--since", "3650d", "--from-file",
                 dir.File("clean.log"), "--db", db});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_EQ(ok.out, "");
  EXPECT_FALSE(std::ifstream(db).good()) << "a passing health check writes nothing";
  std::ofstream(dir.File("bad.log"))
      << "2026-11-30T09:22:35+0000 node kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1, "
         "name=x, GPU has fallen off the bus.\n";
  auto bad = Cli({"health", "--passive", "--slurm-healthcheck", "--since", "3650d", "--from-file",
                  dir.File("bad.log"), "--db", db});
  EXPECT_EQ(bad.code, kExitChecksFailed);
  EXPECT_EQ(std::count(bad.out.begin(), bad.out.end(), '\n'), 1) << bad.out;
  EXPECT_EQ(bad.out.rfind("cmax: Xid 79", 0), 0u) << bad.out;
  EXPECT_TRUE(std::ifstream(db).good()) << "a failing one keeps its evidence";
}

// Without a GPU (no NVML library here) the active checks run nothing and say why, in a
// recorded run: the run, not an error.
TEST(Cli, HealthActiveWithoutAGpuRecordsWhyNothingRan) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  auto r = Cli(
      {"health", "--active", "--nvml-lib", dir.File("no-libnvidia-ml.so"), "--db", db, "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["findings"].size(), 4U) << r.out;
  EXPECT_EQ(j["findings"][0]["check_id"], "active.dcgm-diag");
  EXPECT_EQ(j["findings"][0]["status"], "SKIP");
  EXPECT_NE(j["findings"][0]["message"].get<std::string>().find("no NVIDIA GPU to exercise"),
            std::string::npos);
  EXPECT_EQ(j["run"]["target"], "active checks (quick)");
}

TEST(Cli, HealthUsageErrors) {
  const auto neither = Cli({"health"});
  EXPECT_EQ(neither.code, kExitUsage) << "--passive or --active is required";
  EXPECT_NE(neither.err.find("say --passive"), std::string::npos) << neither.err;
  EXPECT_EQ(Cli({"health", "--passive", "--active"}).code, kExitUsage);
  EXPECT_EQ(Cli({"health", "--active", "--level", "slow"}).code, kExitUsage);
  EXPECT_EQ(Cli({"health", "--active", "--deadline", "-1"}).code, kExitUsage);
  const auto wrong_class = Cli({"health", "--active", "--gpu-class", "h1000"});
  EXPECT_EQ(wrong_class.code, kExitUsage);
  EXPECT_NE(wrong_class.err.find("not a class of the table"), std::string::npos) << wrong_class.err;
  EXPECT_EQ(Cli({"health", "--passive", "--since", "soon"}).code, kExitUsage);
  // An unset variable's empty value read the whole log; a future time read none of it.
  EXPECT_EQ(Cli({"health", "--passive", "--since", ""}).code, kExitUsage);
  EXPECT_EQ(Cli({"health", "--passive", "--since", "9999-12-31T23:59:59Z"}).code, kExitUsage);
  EXPECT_EQ(Cli({"health", "--passive", "--drain"}).code, kExitUsage);
  EXPECT_EQ(Cli({"health", "--passive", "--mount-timeout", "nan"}).code, kExitUsage);
  EXPECT_EQ(Cli({"health", "--passive", "--xid-catalog", "/no/such/catalog.json"}).code,
            kExitUsage);
}

TEST(Cli, AuditListsItsChecksAndItsTable) {
  const CliResult show = Cli({"audit", "--show", "storage"});
  EXPECT_EQ(show.code, kExitOk) << show.err;
  EXPECT_EQ(show.out.rfind("storage (2 checks): ", 0), 0U) << show.out;
  const CliResult verbose = Cli({"-v", "audit", "--show", "access"});
  EXPECT_NE(verbose.out.find("reproduce: sudo -n true"), std::string::npos) << verbose.out;
  EXPECT_EQ(Cli({"audit", "--show", "securty"}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--show", "--format", "yaml"}).code, kExitUsage);
  // The Slurm options alone would audit this host instead: refused.
  EXPECT_EQ(Cli({"audit", "-w", "gpu1"}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--slurm", "--node-evidence"}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--slurm", "--node-timeout", "60", "--budget", "30", "--yes"}).code,
            kExitUsage);
  // Auditing this host records a run with a finding per check of the profile.
  testing::TempDir dir;
  const CliResult local = Cli({"--db", dir.File("cmax.db"), "audit", "--local", "access"});
  EXPECT_TRUE(local.code == kExitOk || local.code == kExitChecksFailed || local.code == kExitError)
      << local.code << local.err;
  EXPECT_NE(local.out.find("access.user-management"), std::string::npos) << local.out;
  EXPECT_NE(local.out.find("5 findings"), std::string::npos) << local.out;
  EXPECT_EQ(Cli({"--db", dir.File("cmax.db"), "audit", "--local", "access", "--exit-zero"}).code,
            kExitOk);
  const CliResult runs = Cli({"--db", dir.File("cmax.db"), "db", "runs"});
  EXPECT_NE(runs.out.find("audit"), std::string::npos) << runs.out;
  // The stored audit, as graded and regraded; a run that is not an audit is refused.
  const CliResult review = Cli({"--db", dir.File("cmax.db"), "audit", "review"});
  EXPECT_EQ(review.code, kExitOk) << review.err;
  EXPECT_NE(review.out.find("access.user-management"), std::string::npos) << review.out;
  const CliResult regrade = Cli({"--db", dir.File("cmax.db"), "audit", "review", "--regrade"});
  EXPECT_NE(regrade.out.find("No check changed (5 checks)."), std::string::npos) << regrade.out;
  EXPECT_EQ(Cli({"--db", dir.File("cmax.db"), "audit", "review", "99"}).code, kExitUsage);
  const CliResult table = Cli({"audit", "--show-minimums"});
  EXPECT_EQ(table.code, kExitOk) << table.err;
  EXPECT_NE(table.out.find("nvidia-driver (by branch"), std::string::npos) << table.out;
  EXPECT_EQ(Cli({"audit", "--show-minimums", "--minimums", "/no/such/table.json"}).code,
            kExitUsage);
}

// A host audited from a container that mounts its / (docker run -v /:/host): its files read
// below the folder (its os-release, not this machine's), the run in this store.
TEST(Cli, AuditReadsAHostThroughItsMountedRoot) {
  testing::TempDir dir;
  const std::string root = dir.File("host");
  std::filesystem::create_directories(root + "/etc");
  std::ofstream(root + "/etc/os-release") << "ID=cmaxtestos\nVERSION_ID=\"7\"\n";
  const std::string db = dir.File("cmax.db");
  const CliResult audit = Cli({"--db", db, "audit", "--host-root", root, "--json", "--exit-zero"});
  ASSERT_EQ(audit.code, kExitOk) << audit.err;
  const nlohmann::json doc = nlohmann::json::parse(audit.out);
  EXPECT_EQ(doc["evidence"]["host.os.id"], "cmaxtestos") << doc["evidence"].dump();
  EXPECT_EQ(doc["run"]["command"], "audit");
  // A root container cannot tell what sudo lets a tenant do: UNKNOWN saying so, here and when
  // the stored run is graded again.
  const auto sudo = std::ranges::find_if(
      doc["findings"], [](const nlohmann::json& f) { return f["check_id"] == "access.sudo"; });
  ASSERT_NE(sudo, doc["findings"].end());
  EXPECT_EQ((*sudo)["status"], "UNKNOWN") << *sudo;
  EXPECT_NE((*sudo)["message"].get<std::string>().find("a container that runs as root"),
            std::string::npos)
      << *sudo;
  const CliResult regrade = Cli({"--db", db, "audit", "review", "--regrade"});
  EXPECT_NE(regrade.out.find("No check changed"), std::string::npos) << regrade.out;
  // Not a folder, a relative path, or with a cluster target: usage errors.
  EXPECT_EQ(Cli({"--db", db, "audit", "--host-root", dir.File("none")}).code, kExitUsage);
  EXPECT_EQ(Cli({"--db", db, "audit", "--host-root", "host"}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--slurm", "--host-root", root}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--kubernetes", "--host-root", root}).code, kExitUsage);
  // Nor is it taken and ignored where it reads nothing: listings, a stored run, a table's build.
  EXPECT_EQ(Cli({"audit", "--show", "--host-root", root}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--show-minimums", "--host-root", root}).code, kExitUsage);
  const CliResult review = Cli({"--db", db, "audit", "--host-root", root, "review"});
  EXPECT_EQ(review.code, kExitUsage) << review.out;
  EXPECT_NE(review.err.find("--host-root is an option of the audit itself, not of review"),
            std::string::npos)
      << review.err;
  EXPECT_EQ(Cli({"--db", db, "audit", "--json", "review"}).code, kExitUsage);
  EXPECT_EQ(Cli({"audit", "--slurm", "minimums", "build", root}).code, kExitUsage);
  // The table review regrades with may be given before its name too.
  const CliResult table_first =
      Cli({"--db", db, "audit", "--minimums",
           std::string(CMAX_TEST_DATA) + "/../../data/audit_minimums.json", "review", "--regrade"});
  EXPECT_EQ(table_first.code, kExitOk) << table_first.err;
}

TEST(Cli, AuditBuildsAMinimumTableTheAuditThenReads) {
  testing::TempDir dir;
  const std::string advisories = std::string(CMAX_TEST_DATA) + "/advisories";
  auto built = Cli({"audit", "minimums", "build", advisories, "-o", dir.File("table.json")});
  ASSERT_EQ(built.code, kExitOk) << built.err;
  EXPECT_NE(built.err.find("minimum nvidia-driver 570 -> 570.211.01"), std::string::npos)
      << built.err;
  auto shown = Cli({"audit", "--show-minimums", "--minimums", dir.File("table.json")});
  ASSERT_EQ(shown.code, kExitOk) << shown.err;
  EXPECT_NE(shown.out.find("runc (by major.minor branch"), std::string::npos) << shown.out;
  // On stdout without -o; a file that is no advisory is a usage error naming it.
  auto to_stdout = Cli({"-q", "audit", "minimums", "build", advisories + "/dcgm-5857.csaf.json"});
  ASSERT_EQ(to_stdout.code, kExitOk) << to_stdout.err;
  EXPECT_NE(to_stdout.out.find("\"schema\": \"cmax.audit-minimums/v1\""), std::string::npos);
  EXPECT_TRUE(to_stdout.err.empty()) << to_stdout.err;
  std::ofstream(dir.File("notes.json")) << "{\"title\": \"meeting notes\"}";
  auto refused = Cli({"audit", "minimums", "build", dir.File("notes.json")});
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_NE(refused.err.find("notes.json: neither a CSAF document"), std::string::npos)
      << refused.err;
  EXPECT_EQ(Cli({"audit", "minimums", "build"}).code, kExitUsage);
}

// `cmax rate` on what the store holds: nothing yet is an error that says what to run; an audit
// of this host without an attestation is Untestable with the gate unverified; with the example
// attestation the gate passes and the attestation's items score.
TEST(Cli, RateReadsTheStoreAndAnAttestation) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const auto empty = Cli({"rate", "--db", db});
  EXPECT_EQ(empty.code, kExitError);
  EXPECT_NE(empty.err.find("run cmax run or cmax audit first"), std::string::npos) << empty.err;
  ASSERT_NE(Cli({"audit", "--db", db, "--exit-zero"}).code, kExitError);
  const auto bare = Cli({"rate", "--db", db, "--json"});
  ASSERT_EQ(bare.code, kExitOk) << bare.err;
  const auto doc = nlohmann::json::parse(bare.out);
  EXPECT_EQ(doc["schema"], "cmax.rating/v1");
  EXPECT_EQ(doc["runs"].size(), 1U);
  EXPECT_EQ(doc["gates_unverified"].size(), 1U) << doc.dump(1);
  EXPECT_EQ(doc["tier"], "Untestable") << doc["notes"];  // an audit alone is too little
  const std::string example = std::string(CMAX_TEST_DATA) + "/../../data/attestation.example.yaml";
  // The run after the attestation is the run to rate, not a second attestation.
  const auto attested = Cli({"rate", "--db", db, "--json", "--attestation", example, "1"});
  ASSERT_EQ(attested.code, kExitOk) << attested.err;
  const auto rated = nlohmann::json::parse(attested.out);
  EXPECT_EQ(rated["provider"], "Example Cloud");
  EXPECT_TRUE(rated["gates_unverified"].empty());
  EXPECT_TRUE(rated["gates_failed"].empty());
  EXPECT_GT(rated["confidence"].get<double>(), doc["confidence"].get<double>());
  // A bad attestation or rubric is a usage error naming the file and the line.
  const std::string bad = dir.File("bad.yaml");
  std::ofstream(bad) << "schema: cmax.attestation/v1\nprovider: P\nsource: S\ndate: 2026-13-01\n";
  const auto refused = Cli({"rate", "--db", db, "--attestation", bad});
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_NE(refused.err.find("bad.yaml: attestation line 4: date must be a date"),
            std::string::npos)
      << refused.err;
  const auto text = Cli({"rate", "--db", db});
  EXPECT_TRUE(text.out.starts_with("Tier: Untestable")) << text.out;

  // Two audits of the same host: nothing moved; a run that is not there is a usage error.
  ASSERT_NE(Cli({"audit", "--db", db, "--exit-zero"}).code, kExitError);
  const auto compared = Cli({"compare", "1", "2", "--db", db, "--attestation", example});
  ASSERT_EQ(compared.code, kExitOk) << compared.err;
  EXPECT_NE(compared.out.find("(unchanged)"), std::string::npos) << compared.out;
  EXPECT_NE(compared.out.find("Runs: 1 -> 2"), std::string::npos) << compared.out;
  const auto compared_json = Cli({"compare", "1", "latest", "--db", db, "--json"});
  ASSERT_EQ(compared_json.code, kExitOk) << compared_json.err;
  EXPECT_EQ(nlohmann::json::parse(compared_json.out)["schema"], "cmax.comparison/v1");
  const auto missing = Cli({"compare", "1", "99", "--db", db});
  EXPECT_EQ(missing.code, kExitUsage) << missing.err;
}

// `cmax nccl analyze`: logs in, the judgement out and in the store; exit 1 for a fault, 2 for
// what the user gave wrong, 3 for nothing to analyse.
// What the sweep refuses before any step runs or any lab is made: usage errors, exit 2.
TEST(Cli, NcclSweepRefusesWhatItCannotRun) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::pair<std::vector<std::string>, std::string> refused[] = {
      {{"--slow-link", "h2:1mbit", "--hosts", "a,b"}, "--slow-link requires --netns-lab"},
      {{"--netns-lab", "4", "--hosts", "a,b"}, "excludes"},
      {{"--netns-lab", "1"}, "--netns-lab"},
      {{"--hosts", "a,b", "--variants", "nvls"}, "unknown variant 'nvls'"},
      {{"--hosts", "a,b", "--variants", "network"}, "variant network needs nccl-tests"},
      {{"--hosts", "a"}, "two nodes or more"},
      {{"--hosts", "a,b", "--nodes", "3"}, "3 nodes: the sweep has 2 to 2"},
      {{"--hosts", "a,b", "--launcher", "pbs"}, "--launcher"},
      {{"--hosts", "a,b", "--nccl-tests", dir.File("none")}, "not a folder"},
      {{"--hostfile", dir.File("none")}, "none"},
      {{"--hosts", "a,b", "--platform", "nosuch"}, "no platform 'nosuch'"},
      {{"--netns-lab", "2", "--slow-link", "h9:1mbit"}, "slowed link 'h9:1mbit'"},
      {{"--hosts", "a,b", "--step-timeout", "0"}, "--step-timeout"},
      {{"--hosts", "a,a"}, "host a is listed twice"},
      {{"--hosts", "a,b;reboot"}, "a host name is letters, digits"},
      {{"--netns-lab", "2", "--launcher", "srun"}, "through mpirun, not srun"}};
  for (const auto& [flags, says] : refused) {
    std::vector<std::string> args = {"nccl", "sweep", "--db", db, "--out", dir.File("logs")};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = Cli(args);
    EXPECT_EQ(r.code, kExitUsage) << Join(flags, " ") << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << Join(flags, " ") << ": " << r.err;
  }
  const std::pair<std::vector<std::string>, std::string> find_refused[] = {
      {{"--hosts", "a"}, "two hosts or more"},
      {{"--hosts", "a,b", "--tolerance", "0"}, "--tolerance"},
      {{"--netns-lab", "3", "--slow-link", "h3"}, "slowed link 'h3'"}};
  for (const auto& [flags, says] : find_refused) {
    std::vector<std::string> args = {"nccl", "find-bad-node", "--db", db, "--out", dir.File("f")};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = Cli(args);
    EXPECT_EQ(r.code, kExitUsage) << Join(flags, " ") << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << Join(flags, " ") << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db));  // nothing was run, so nothing was recorded
}

TEST(Cli, NcclRecipeListsAndRefusesAnUnknownRecipe) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const auto listed = Cli({"nccl", "recipe", "--db", db, "--list"});
  EXPECT_EQ(listed.code, kExitOk) << listed.err;
  EXPECT_TRUE(listed.out.starts_with("generic  ")) << listed.out;
  EXPECT_NE(listed.out.find("\nazure-nd-v5  "), std::string::npos) << listed.out;
  const auto unknown = Cli({"nccl", "recipe", "--db", db, "--recipe", "h100"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_NE(unknown.err.find("no recipe 'h100' (known: generic, h100-ib"), std::string::npos)
      << unknown.err;
  const auto missing = Cli({"nccl", "recipe", "--db", db, "--recipes", dir.File("none.json")});
  EXPECT_EQ(missing.code, kExitUsage) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(db));
}

// The metrics of a recorded `cmax train` run, by name (empty, and a test failure, otherwise).
std::map<std::string, Metric> TrainRunMetrics(const std::string& db, int64_t id) {
  std::map<std::string, Metric> metrics;
  auto store = store::Store::Open({.path = db});
  EXPECT_TRUE(store);
  const auto run = store ? store->LoadRun(id) : tl::unexpected(store.error());
  EXPECT_TRUE(run && run->run.command == "train");
  if (run) {
    for (const Metric& m : run->metrics) metrics[m.name] = m;
  }
  return metrics;
}

// TorchTitan logs read and recorded: a steady run exits 0 with its figures as metrics; a run
// that failed exits 1 naming the rank; a file that is not there is a usage error before any
// run is recorded.
TEST(Cli, TrainLogReadsTorchTitanLogsAndRecordsTheRun) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string data = std::string(CMAX_TEST_DATA) + "/train/";
  const auto missing = Cli({"train", "log", "--db", db, dir.File("none.log")});
  EXPECT_EQ(missing.code, kExitUsage) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(db));

  const auto steady = Cli({"train", "log", "--db", db, data + "run_train_rank0_coloured.log"});
  EXPECT_EQ(steady.code, kExitOk) << steady.err;
  EXPECT_NE(steady.out.find("steady: 5,846 tokens/s/GPU, MFU 34.2% in steady state (steps "
                            "10-100); loss decreasing"),
            std::string::npos)
      << steady.out;
  EXPECT_NE(steady.err.find("recorded as run 1"), std::string::npos) << steady.err;
  std::map<std::string, Metric> metrics = TrainRunMetrics(db, 1);
  EXPECT_EQ(metrics["train.tokens_per_s_per_gpu"].value, 5846);
  EXPECT_EQ(metrics["train.tokens_per_s_per_gpu"].unit, "tokens/s");
  EXPECT_EQ(metrics["train.mfu_pct"].unit, "%");

  const auto failed =
      Cli({"train", "log", "--db", db, "--json", data + "oom_on_rank3_torchrun_report.log"});
  EXPECT_EQ(failed.code, kExitChecksFailed) << failed.err;
  const nlohmann::json figures = nlohmann::json::parse(failed.out);
  EXPECT_EQ(figures["files"][0]["first_error"]["rank"], 3);
  EXPECT_EQ(figures["files"][0]["first_error"]["kind"], "oom");
  EXPECT_EQ(figures["run_id"], 2);
  const auto zero =
      Cli({"train", "log", "--db", db, "--exit-zero", data + "oom_on_rank3_torchrun_report.log"});
  EXPECT_EQ(zero.code, kExitOk);
  // Held against a published figure: its share, a finding and a metric; an id that is not
  // there is a usage error naming where to look.
  const auto refd =
      Cli({"train", "log", "--db", db, "--reference", "llama3_8b-h100-8gpu-fsdp-ac-selective",
           data + "run_train_rank0_coloured.log"});
  EXPECT_EQ(refd.code, kExitOk) << refd.err;
  EXPECT_NE(refd.out.find("against the reference: 101% of 5,762 tokens/s/GPU"), std::string::npos)
      << refd.out;
  std::map<std::string, Metric> shared = TrainRunMetrics(db, 4);
  EXPECT_NEAR(shared["train.share_of_reference"].value, 5846.0 / 5762, 1e-9);
  const auto unknown = Cli(
      {"train", "log", "--db", db, "--reference", "llama9", data + "run_train_rank0_coloured.log"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_NE(unknown.err.find("cmax train references lists them"), std::string::npos);
  const auto listed = Cli({"train", "references", "llama3_8b", "h200"});
  EXPECT_EQ(listed.code, kExitOk);
  EXPECT_NE(listed.out.find("llama3_8b-h200-32gpu"), std::string::npos) << listed.out;
  EXPECT_EQ(Cli({"train", "references", "nothing-like-this"}).code, kExitUsage);
  const auto warm = Cli({"train", "log", "--db", db, data + "warmup_only_then_killed.log"});
  EXPECT_EQ(warm.code, kExitChecksFailed) << warm.out;
  EXPECT_NE(warm.out.find("never got past warm-up"), std::string::npos) << warm.out;
}

// Profiler traces: the exposed all-to-all named, recorded with its metrics; a trace cut short is
// used and said; a missing file is a usage error before anything is recorded; a file that is
// not a trace is left out, and with nothing else given is an error.
TEST(Cli, TrainTraceNamesWhatLimitsTheJobAndRecordsIt) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string data = std::string(CMAX_TEST_DATA) + "/train/";
  const auto missing = Cli({"train", "trace", "--db", db, dir.File("none.json.gz")});
  EXPECT_EQ(missing.code, kExitUsage) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  const auto not_trace = Cli({"train", "trace", "--db", db, data + "older_wps_release.log"});
  EXPECT_EQ(not_trace.code, kExitUsage) << not_trace.err;
  EXPECT_NE(not_trace.err.find("no readable trace"), std::string::npos) << not_trace.err;

  const auto moe =
      Cli({"train", "trace", "--db", db, data + "trace/h100_moe_all_to_all_exposed.trace.json"});
  EXPECT_EQ(moe.code, kExitChecksFailed) << moe.err;
  EXPECT_TRUE(moe.out.starts_with("24% of step time is exposed all_to_all on rank 0\n")) << moe.out;
  EXPECT_NE(moe.out.find("all_to_all"), std::string::npos);
  EXPECT_NE(moe.err.find("recorded as run 1"), std::string::npos) << moe.err;
  std::map<std::string, Metric> metrics = TrainRunMetrics(db, 1);
  EXPECT_NEAR(metrics["train.exposed_comm_pct"].value, 23.5, 0.5);
  EXPECT_EQ(metrics["train.exposed_comm_pct"].unit, "%");
  EXPECT_TRUE(metrics.contains("train.collective_busbw_gbs"));

  const auto cut = Cli({"train", "trace", "--db", db, "--json", "--exit-zero",
                        data + "trace/cut_off_mid_event.trace.json"});
  EXPECT_EQ(cut.code, kExitOk) << cut.err;
  const nlohmann::json figures = nlohmann::json::parse(cut.out);
  EXPECT_EQ(figures["ranks"][0]["ended_early"], true);
  EXPECT_EQ(figures["run_id"], 2);
}

// Two training runs compared: the measurements that moved are named, with both values.
TEST(Cli, CompareNamesTheTrainingMeasurementsThatMoved) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string data = std::string(CMAX_TEST_DATA) + "/train/";
  ASSERT_EQ(Cli({"train", "log", "--db", db, data + "run_train_rank0_coloured.log"}).code, kExitOk);
  ASSERT_EQ(Cli({"train", "log", "--db", db, data + "older_wps_release.log"}).code, kExitOk);
  const auto compared = Cli({"compare", "1", "2", "--db", db});
  EXPECT_EQ(compared.code, kExitOk) << compared.err;
  EXPECT_NE(compared.out.find("Measurements that moved 5% or more:"), std::string::npos)
      << compared.out;
  EXPECT_NE(compared.out.find("train.tokens_per_s_per_gpu {log="), std::string::npos)
      << compared.out;
  const nlohmann::json json =
      nlohmann::json::parse(Cli({"compare", "1", "2", "--db", db, "--json"}).out);
  bool tokens = false;
  for (const auto& m : json["metrics"]) {
    if (m["name"] == "train.tokens_per_s_per_gpu") tokens = m["before"] == 5846;
  }
  EXPECT_TRUE(tokens) << json["metrics"].dump();
}

// `cmax train run` over the stand-in training job: stopped at its budget, recorded with how it
// ended; a malformed --env, or a lab asked for wrongly, is refused before anything runs.
TEST(Cli, TrainRunStopsAtTheBudgetAndRecordsTheEnding) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string standin = std::string(CMAX_TEST_DATA) + "/train/standin_train.sh";
  // A setting that is not NAME=VALUE is refused without being repeated: it may be a secret.
  for (const std::vector<std::string>& bad_env :
       {std::vector<std::string>{"train", "run", "--db", db, "--env", "sk-hunter2", "--",
                                 "/bin/true"},
        std::vector<std::string>{"nccl", "sweep", "--db", db, "--hosts", "a", "--env",
                                 "1sk=hunter2"}}) {
    const auto bad = Cli(bad_env);
    EXPECT_EQ(bad.code, kExitUsage) << bad.err;
    EXPECT_NE(bad.err.find("not NAME=VALUE"), std::string::npos) << bad.err;
    EXPECT_EQ(bad.err.find("hunter2"), std::string::npos) << bad.err;
  }
  // A job id is Slurm's number, a time limit whole minutes: anything else is refused before
  // Slurm is asked.
  for (const std::vector<std::string>& bad_job :
       {std::vector<std::string>{"nccl", "sweep", "--db", db, "--hosts", "a", "--own-job", "x1"},
        std::vector<std::string>{"health", "--db", db, "--active", "--own-job", "-5"},
        std::vector<std::string>{"health", "schedule", "--db", db, "--time-limit", "-1"}}) {
    const auto bad = Cli(bad_job);
    EXPECT_EQ(bad.code, kExitUsage) << bad.err;
    EXPECT_TRUE(bad.err.find("--own-job") != std::string::npos ||
                bad.err.find("--time-limit") != std::string::npos)
        << bad.err;
  }
  // A slowed link without a lab, and a lab of one host, are refused before anything runs.
  const auto unlabbed =
      Cli({"train", "run", "--db", db, "--slow-link", "h2:200mbit", "--", "/bin/true"});
  EXPECT_EQ(unlabbed.code, kExitUsage) << unlabbed.err;
  EXPECT_NE(unlabbed.err.find("--slow-link requires --netns-lab"), std::string::npos)
      << unlabbed.err;
  const auto alone = Cli({"train", "run", "--db", db, "--netns-lab", "1", "--", "/bin/true"});
  EXPECT_EQ(alone.code, kExitUsage) << alone.err;
  // After `--`, every word is the command's, also after a repeatable option: the environment
  // reaches it, and its own options are not taken for cmax's.
  const auto words =
      Cli({"train", "run", "--db", db, "--log", dir.File("words.log"), "--env",
           "CMAX_TEST_WORD=seen", "--", "/bin/sh", "-c", "echo \"$CMAX_TEST_WORD $0\"", "--steps"});
  EXPECT_EQ(words.code, kExitError) << words.err;  // no metric line: nothing to read
  EXPECT_EQ(testing::SlurpFile(dir.File("words.log")), "seen --steps\n");
  const auto ran = Cli({"train", "run", "--db", db, "--steps", "30", "--log", dir.File("t.log"),
                        "--", "/bin/sh", standin, "forever"});
  EXPECT_EQ(ran.code, kExitOk) << ran.err;
  EXPECT_TRUE(ran.out.starts_with("stopped at the step budget (30)")) << ran.out;
  EXPECT_NE(ran.err.find("cmax train run: step 10 (rank 0): 5800 tokens/s/GPU"), std::string::npos)
      << ran.err;
  auto store = store::Store::Open({.path = db});
  ASSERT_TRUE(store) << store.error().message;
  const auto run = store->LoadRun(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->run.target, "training command");
  bool ending = false;
  for (const Finding& f : run->findings) {
    if (f.check_id == "train.ending") {
      ending = true;
      EXPECT_EQ(f.status, CheckStatus::kPass);
    }
  }
  EXPECT_TRUE(ending);
}

TEST(Cli, NcclAnalyzeJudgesLogsAndRecordsTheRun) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  // Two nodes, 16 ranks: busbw falls 41% at 64 MiB and comes back.
  std::string log =
      "# Collective test starting: all_reduce_perf_mpi\n"
      "#  Rank  0 Group  0 Pid   1001 on     node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  8 Group  0 Pid   2001 on     node-b device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  const std::pair<uint64_t, double> rows[] = {{8388608, 20.0},   {16777216, 28.0},
                                              {33554432, 32.57}, {67108864, 19.10},
                                              {134217728, 31.0}, {268435456, 33.0}};
  for (const auto& [size, bw] : rows) {
    log += std::to_string(size) + " " + std::to_string(size / 4) + " float sum -1 100.0 1.0 " +
           std::to_string(bw) + " 0 100.0 1.0 " + std::to_string(bw) + " 0\n";
  }
  log +=
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 27.2\n#\n"
      "# Collective test concluded: all_reduce_perf_mpi\n";
  const std::string file = dir.File("nccl.log");
  std::ofstream(file) << log;

  const auto judged = Cli({"nccl", "analyze", "--db", db, file});
  EXPECT_EQ(judged.code, kExitChecksFailed) << judged.err;
  EXPECT_NE(judged.out.find("DIP    64 MiB: down to 19.10 GB/s at 64 MiB, 41% below 32.57 GB/s at "
                            "32 MiB"),
            std::string::npos)
      << judged.out;
  EXPECT_NE(judged.err.find("recorded as run 1"), std::string::npos) << judged.err;
  auto store = store::Store::Open({.path = db});
  ASSERT_TRUE(store) << store.error().message;
  const auto run = store->LoadRun(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->run.command, "nccl");
  ASSERT_EQ(run->findings.size(), 1U);
  EXPECT_EQ(run->findings[0].check_id, "network.nccl-dip");
  EXPECT_EQ(run->findings[0].status, CheckStatus::kWarn);
  std::map<std::string, Metric> metrics;
  for (const Metric& m : run->metrics) metrics[m.name] = m;
  ASSERT_EQ(metrics.size(), 3U);
  EXPECT_EQ(metrics["nccl.busbw_peak"].value, 33.0);
  EXPECT_EQ(metrics["nccl.busbw_peak"].labels.at("nodes"), "2");
  EXPECT_EQ(metrics["nccl.busbw_largest"].value, 33.0);
  EXPECT_NEAR(metrics["nccl.worst_fall_pct"].value, 41.36, 0.01);
  // The rating scores the fall: deeper than 40% is the last band's "otherwise".
  const auto rated = Cli({"rate", "--db", db, "--json"});
  ASSERT_EQ(rated.code, kExitOk) << rated.err;
  const nlohmann::json rating = nlohmann::json::parse(rated.out);  // outlives the loop
  bool scored = false;
  for (const auto& item : rating["items"]) {
    if (item["id"] == "networking.nccl-curves") {
      scored = true;
      EXPECT_EQ(item["score"], 0.0) << item;
    }
    if (item["id"] == "networking.nccl-platform") {
      EXPECT_TRUE(item["score"].is_null()) << item;  // no platform named: no evidence
    }
  }
  EXPECT_TRUE(scored);

  const auto json = Cli({"nccl", "analyze", "--db", db, "--json", "--exit-zero", file});
  EXPECT_EQ(json.code, kExitOk) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], "cmax.nccl-analysis/v1");
  EXPECT_EQ(doc["dips"][0]["kind"], "dip");
  EXPECT_EQ(doc["faulty"], true);
  // A looser tolerance lets the same fall pass; -v prints each size.
  const auto loose = Cli({"nccl", "analyze", "--db", db, "-v", "--tolerance", "50", file});
  EXPECT_EQ(loose.code, kExitOk) << loose.out;
  EXPECT_NE(loose.out.find("    64 MiB         19.10"), std::string::npos) << loose.out;
  // A file's name is any bytes: one with a line break stays on its line in the text.
  const std::string odd = dir.File("a\nFAIL forged.log");
  std::filesystem::copy_file(file, odd);
  const auto named = Cli({"nccl", "analyze", "--db", db, "--exit-zero", odd});
  EXPECT_EQ(named.code, kExitOk) << named.err;
  EXPECT_NE(named.out.find("a?FAIL forged.log"), std::string::npos) << named.out;
  EXPECT_EQ(named.out.find("\nFAIL forged"), std::string::npos) << named.out;

  const auto missing = Cli({"nccl", "analyze", "--db", db, dir.File("nope.log")});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_NE(missing.err.find("nope.log"), std::string::npos) << missing.err;
  const auto platform = Cli({"nccl", "analyze", "--db", db, "--platform", "h1OO", file});
  EXPECT_EQ(platform.code, kExitUsage);
  EXPECT_NE(platform.err.find("known: h100-nvlink"), std::string::npos) << platform.err;
  const std::string empty = dir.File("empty.log");
  std::ofstream(empty) << "no table here\n";
  EXPECT_EQ(Cli({"nccl", "analyze", "--db", db, empty}).code, kExitError);
  const auto listed = Cli({"nccl", "platforms"});
  EXPECT_EQ(listed.code, kExitOk);
  EXPECT_NE(listed.out.find("gb200-nvl72"), std::string::npos) << listed.out;
}

// SIGTERM (or Ctrl-C) during an analysis of files: 128 + the signal and nothing recorded, as the
// other commands do; the analysers used to finish, record the run as ok and exit 0.
TEST(Cli, AnAnalysisStoppedBySigtermRecordsNothing) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const std::string train_log = std::string(CMAX_TEST_DATA) + "/train/older_wps_release.log";
  const std::string trace = dir.File("trace.json");
  std::ofstream(trace) << "{\"traceEvents\": []}";
  const std::string nccl_log = dir.File("nccl.log");
  std::ofstream(nccl_log) << "# nothing\n";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"train", "log", train_log},
        std::vector<std::string>{"train", "trace", trace},
        std::vector<std::string>{"nccl", "analyze", nccl_log}}) {
    std::vector<std::string> args = {"--db", db};
    args.insert(args.end(), command.begin(), command.end());
    sys::RequestInterrupt(SIGTERM);
    const CliResult stopped = Cli(args);
    sys::ClearInterrupt();
    EXPECT_EQ(stopped.code, 128 + SIGTERM)
        << command[0] << " " << command[1] << ": " << stopped.err;
    EXPECT_NE(stopped.err.find("interrupted; nothing was recorded"), std::string::npos)
        << stopped.err;
    EXPECT_FALSE(std::filesystem::exists(db)) << command[0] << " " << command[1];
  }
  // Not stopped, the same log is recorded, its start no later than its end.
  const CliResult recorded = Cli({"--db", db, "train", "log", train_log});
  EXPECT_EQ(recorded.code, kExitOk) << recorded.err;
  auto store = store::Store::Open({.path = db});
  ASSERT_TRUE(store) << store.error().message;
  const auto run = store->LoadRun(1);
  ASSERT_TRUE(run);
  ASSERT_TRUE(run->run.ended_at);
  EXPECT_LE(run->run.started_at, *run->run.ended_at);
  // A file named twice would count twice (a trace is a rank): refused before anything is read.
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"train", "log", train_log, train_log},
        std::vector<std::string>{"train", "trace", trace, dir.Path() + "/./trace.json"},
        std::vector<std::string>{"nccl", "analyze", nccl_log, nccl_log}}) {
    std::vector<std::string> args = {"--db", db};
    args.insert(args.end(), command.begin(), command.end());
    const CliResult twice = Cli(args);
    EXPECT_EQ(twice.code, kExitUsage) << command[0] << " " << command[1] << ": " << twice.err;
    EXPECT_NE(twice.err.find("is given twice"), std::string::npos) << twice.err;
  }
}

// Providers: each run records the one it evaluates (--provider, or CMAX_PROVIDER, and the flag
// does not outlive its command); `cmax rate --provider` rates one, `--providers` ranks them all
// with the attestation that names each.
TEST(Cli, RunsNameTheirProviderAndRateRanksThem) {
  testing::TempDir dir;
  const std::string db = dir.File("cmax.db");
  const auto none = Cli({"rate", "--db", db, "--providers"});
  EXPECT_EQ(none.code, kExitError) << none.err;
  ASSERT_NE(Cli({"--provider", "Alpha", "audit", "--db", db, "--exit-zero"}).code, kExitError);
  EXPECT_EQ(std::getenv("CMAX_PROVIDER"), nullptr) << "the flag outlived its command";
  ::setenv("CMAX_PROVIDER", "Beta", 1);
  ASSERT_NE(Cli({"audit", "--db", db, "--exit-zero"}).code, kExitError);
  ::unsetenv("CMAX_PROVIDER");
  ASSERT_NE(Cli({"audit", "--db", db, "--exit-zero"}).code, kExitError);  // names none

  const std::string example = std::string(CMAX_TEST_DATA) + "/../../data/attestation.example.yaml";
  const std::string beta = dir.File("beta.yaml");
  {
    std::ifstream in(example);
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    yaml.replace(yaml.find("provider: Example Cloud"), 23, "provider: Beta");
    std::ofstream(beta) << yaml;
  }
  const auto ranked = Cli({"rate", "--db", db, "--providers", "--json", "--attestation", beta});
  ASSERT_EQ(ranked.code, kExitOk) << ranked.err;
  const auto doc = nlohmann::json::parse(ranked.out);
  EXPECT_EQ(doc["schema"], "cmax.ranking/v1");
  ASSERT_EQ(doc["providers"].size(), 2U) << "the run that names no provider is in no ranking";
  EXPECT_EQ(doc["providers"][0]["provider"], "Beta") << "attested, so rated on more evidence";
  EXPECT_EQ(doc["providers"][0]["runs"], nlohmann::json::array({2}));
  EXPECT_EQ(doc["providers"][1]["runs"], nlohmann::json::array({1}));
  EXPECT_EQ(doc["field"], 1);
  EXPECT_TRUE(doc["providers"][0]["relative_tier"].is_null()) << "no field of three";

  const auto one = Cli({"--provider", "Alpha", "rate", "--db", db, "--json"});
  ASSERT_EQ(one.code, kExitOk) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["runs"], nlohmann::json::array({1}));
  const auto unknown = Cli({"rate", "--db", db, "--provider", "Gamma"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_NE(unknown.err.find("no runs of provider Gamma"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("(providers: Alpha, Beta)"), std::string::npos) << unknown.err;
  // An attestation for a provider with no runs, two for one provider, a bad name, mixed modes.
  EXPECT_EQ(Cli({"rate", "--db", db, "--providers", "--attestation", example}).code, kExitUsage);
  EXPECT_EQ(
      Cli({"rate", "--db", db, "--providers", "--attestation", beta, "--attestation", beta}).code,
      kExitUsage);
  EXPECT_EQ(Cli({"rate", "--db", db, "--attestation", beta, "--attestation", beta}).code,
            kExitUsage);
  EXPECT_EQ(Cli({"--provider", "Beta", "rate", "--db", db, "--providers"}).code, kExitUsage);
  EXPECT_EQ(Cli({"--provider", "", "audit", "--db", db}).code, kExitUsage);
  const auto listed = Cli({"db", "runs", "--db", db, "--json"});
  ASSERT_EQ(listed.code, kExitOk) << listed.err;
  EXPECT_EQ(nlohmann::json::parse(listed.out)["runs"][2]["provider"], "Alpha");
  EXPECT_NE(Cli({"db", "runs", "--db", db}).out.find("PROVIDER"), std::string::npos);
  // cmax run with an attestation evaluates the provider it names; another provider's is refused
  // (Alpha's run would be rated on Beta's prices, SLA and certificates, under Beta's name).
  ASSERT_NE(Cli({"run", "--db", db, "--no-html", "--attestation", beta}).code, kExitError);
  const auto others =
      Cli({"--provider", "Alpha", "run", "--db", db, "--no-html", "--attestation", beta});
  EXPECT_EQ(others.code, kExitUsage);
  EXPECT_NE(others.err.find("it is provider Beta's, and this evaluation is of provider Alpha"),
            std::string::npos)
      << others.err;
  ASSERT_NE(Cli({"--provider", "Alpha", "run", "--db", db, "--no-html"}).code, kExitError);
  // Nor does cmax rate rate Alpha's runs with Beta's attestation.
  const auto rated_as_beta =
      Cli({"rate", "--db", db, "--provider", "Alpha", "--attestation", beta});
  EXPECT_EQ(rated_as_beta.code, kExitUsage);
  EXPECT_NE(rated_as_beta.err.find("the attestation is provider Beta's"), std::string::npos)
      << rated_as_beta.err;
  const auto alpha = Cli({"rate", "--db", db, "--provider", "Alpha", "--json"});
  ASSERT_EQ(alpha.code, kExitOk) << alpha.err;
  EXPECT_EQ(nlohmann::json::parse(alpha.out)["provider"], "Alpha");  // the runs' own name
  // Newest first: each evaluation's health phase (a run of its own), then the evaluation.
  const auto runs = nlohmann::json::parse(Cli({"db", "runs", "--db", db, "--json"}).out)["runs"];
  ASSERT_GE(runs.size(), 4U);
  const std::vector<std::pair<std::string, std::string>> newest = {
      {runs[0]["command"], runs[0]["provider"]},
      {runs[1]["command"], runs[1]["provider"]},
      {runs[2]["command"], runs[2]["provider"]},
      {runs[3]["command"], runs[3]["provider"]}};
  EXPECT_EQ(newest,
            (std::vector<std::pair<std::string, std::string>>{
                {"health", "Alpha"}, {"run", "Alpha"}, {"health", "Beta"}, {"run", "Beta"}}));
  // Beta's evaluation kept Beta's attestation: rating it with Alpha's run leaves it out, said.
  const auto kept_other =
      Cli({"rate", "--db", db, "--json", std::to_string(runs[1]["id"].get<int64_t>()),
           std::to_string(runs[3]["id"].get<int64_t>())});
  ASSERT_EQ(kept_other.code, kExitOk) << kept_other.err;
  const auto kept_doc = nlohmann::json::parse(kept_other.out);
  EXPECT_TRUE(kept_doc["provider"].is_null()) << kept_doc["provider"];
  EXPECT_NE(kept_doc["notes"].dump().find("is provider Beta's and run"), std::string::npos)
      << kept_doc["notes"];
  // Nothing named in a store of several providers: the rating says its runs are mixed, and
  // leaves the journal's drains out.
  const auto mixed = Cli({"rate", "--db", db, "--json"});
  ASSERT_EQ(mixed.code, kExitOk) << mixed.err;
  const auto mixed_doc = nlohmann::json::parse(mixed.out);
  EXPECT_NE(mixed_doc["notes"].dump().find("of several providers"), std::string::npos)
      << mixed_doc["notes"];
  EXPECT_TRUE(mixed_doc["drains"].is_null());
  // CMAX_PROVIDER is a default for `cmax rate`, not a request: named runs and --providers win.
  ::setenv("CMAX_PROVIDER", "Beta", 1);
  EXPECT_EQ(Cli({"rate", "--db", db, "1"}).code, kExitOk);
  EXPECT_EQ(Cli({"rate", "--db", db, "--providers"}).code, kExitOk);
  const auto env_default = Cli({"rate", "--db", db, "--json"});
  ::unsetenv("CMAX_PROVIDER");
  ASSERT_EQ(env_default.code, kExitOk) << env_default.err;
  // Beta's newest run of each kind: its evaluation's health phase, the evaluation, its audit.
  EXPECT_EQ(nlohmann::json::parse(env_default.out)["runs"], nlohmann::json::array({5, 4, 2}));
}

TEST(Cli, CmaxDbEnvironmentVariableSelectsTheStore) {
  testing::TempDir dir;
  const std::string db = dir.File("from-env.db");
  ::setenv("CMAX_DB", db.c_str(), 1);
  auto path = Cli({"db", "path"});
  ::unsetenv("CMAX_DB");
  EXPECT_EQ(path.out, db + "\n");
  // An empty variable is an unset one, as XDG's are; an empty --db names nothing and is refused
  // rather than read as the default store (`--db "$UNSET"`).
  ::setenv("CMAX_DB", "", 1);
  auto default_path = Cli({"db", "path"});
  ::unsetenv("CMAX_DB");
  EXPECT_EQ(default_path.out, Cli({"db", "path"}).out);
  const CliResult empty = Cli({"--db", "", "db", "path"});
  EXPECT_EQ(empty.code, kExitUsage);
  EXPECT_NE(empty.err.find("--db: must name the store's file"), std::string::npos) << empty.err;
  EXPECT_EQ(empty.out, "");
}

TEST(Cli, LabEnvPrintsTheSlurmConfLine) {
  auto env = Cli({"lab", "env", "--dir", "/tmp/some-lab"});
  EXPECT_EQ(env.code, kExitOk);
  EXPECT_EQ(env.out, "export SLURM_CONF=/tmp/some-lab/etc/slurm.conf\n");
  auto status = Cli({"lab", "status", "--dir", "/tmp/cmax-no-lab-here"});
  EXPECT_EQ(status.code, kExitChecksFailed);
  EXPECT_NE(status.err.find("no lab"), std::string::npos);
  EXPECT_EQ(Cli({"lab", "down", "--dir", "/tmp/cmax-no-lab-here"}).code, kExitOk);
}

TEST(Cli, InjectDryRunPrintsTheRecordAndRefusalsWriteNothing) {
  testing::TempDir dir;
  const std::string kmsg = dir.File("kmsg");
  std::ofstream(kmsg).close();
  ::unsetenv("SLURM_CONF");  // not a lab
  auto r = Cli({"--db", dir.File("cmax.db"), "inject", "xid", "79", "--gpu", "0000:17:00.0",
                "--force", "--dry-run", "--kmsg", kmsg});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("would write to " + kmsg +
                       ": <3>NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', name=cmax-inject"),
            std::string::npos)
      << r.out;
  // For real on a node that is not a lab's: refused without --yes.
  r = Cli({"--db", dir.File("cmax.db"), "inject", "xid", "79", "--gpu", "0000:17:00.0", "--force",
           "--kmsg", kmsg});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--yes"), std::string::npos) << r.err;
  // Another host: refused even as a dry run.
  r = Cli({"--db", dir.File("cmax.db"), "inject", "sxid", "12028", "--switch-pci", "05:00.0",
           "--node", "elsewhere-node", "--force", "--dry-run"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("not this host"), std::string::npos) << r.err;
  // With --yes it is written, once, with its newline, and recorded.
  r = Cli({"--db", dir.File("cmax.db"), "inject", "xid", "48", "--gpu", "0000:17:00.0", "--force",
           "--yes", "--kmsg", kmsg});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  std::ifstream in(kmsg);
  std::stringstream written;
  written << in.rdbuf();
  EXPECT_EQ(written.str(),
            "<3>NVRM: Xid (PCI:0000:17:00): 48, pid='<unknown>', name=cmax-inject, Double Bit "
            "ECC Error\n");
  auto store = store::Store::Open({.path = dir.File("cmax.db")});
  ASSERT_TRUE(store);
  const auto events = store->LoadEvents("", 10).value();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].source, "inject");
  EXPECT_EQ(events[0].kind, "xid");
}

TEST(Cli, InjectIntoTheSimulatedNvmlAndRestore) {
  testing::TempDir dir;
  const std::string state = dir.File("sim.json");
  const std::string original = R"({"gpus": [{"bus_id": "0000:17:00.0"}]})";
  std::ofstream(state) << original;
  auto r = Cli({"--db", dir.File("cmax.db"), "inject", "nvml-sim", "lost", "--gpu", "0", "--state",
                state, "--dry-run"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("would GPU 0000:17:00.0: lost unset -> true"), std::string::npos) << r.out;
  r = Cli({"--db", dir.File("cmax.db"), "inject", "nvml-sim", "lost", "--gpu", "0", "--state",
           state, "--yes"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  std::stringstream now;
  now << std::ifstream(state).rdbuf();
  EXPECT_TRUE(nlohmann::json::parse(now.str())["gpus"][0]["lost"].get<bool>());
  r = Cli(
      {"--db", dir.File("cmax.db"), "inject", "nvml-sim", "--restore", "--state", state, "--yes"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  std::stringstream back;
  back << std::ifstream(state).rdbuf();
  EXPECT_EQ(back.str(), original);
  EXPECT_EQ(Cli({"inject", "nvml-sim", "--restore", "--state", state, "--yes"}).code, kExitUsage);
  EXPECT_EQ(Cli({"inject", "nvml-sim", "melt", "--gpu", "0", "--state", state, "--yes"}).code,
            kExitUsage);
}

TEST(Cli, ReliabilityRefusesBadScenariosAndNodesElsewhere) {
  testing::TempDir dir;
  const std::string bad = dir.File("bad.yaml");
  std::ofstream(bad) << "steps: []\n";
  EXPECT_EQ(Cli({"reliability", "run", "--scenario", bad}).code, kExitUsage);
  EXPECT_EQ(Cli({"reliability", "run", "--scenario", dir.File("missing.yaml")}).code, kExitUsage);
  const std::string elsewhere = dir.File("elsewhere.yaml");
  std::ofstream(elsewhere)
      << "steps: [{inject: xid, code: 79, node: not-this-host, gpu: '0000:17:00.0'}]\n";
  ::unsetenv("SLURM_CONF");
  auto r = Cli({"reliability", "run", "--scenario", elsewhere, "--dry-run"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("not this host"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("<3>NVRM: Xid (PCI:0000:17:00): 79"), std::string::npos) << r.out;
  // A bus-reset step needs its flag and a GPU that is certainly there (none is, here).
  const std::string sbr = dir.File("sbr.yaml");
  std::ofstream(sbr) << "steps: [{inject: pcie-sbr, node: " << sys::Hostname()
                     << ", gpu: '0000:17:00.0'}]\n";
  r = Cli({"reliability", "run", "--scenario", sbr, "--dry-run"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("--allow-destructive"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no PCI device 0000:17:00.0"), std::string::npos) << r.err;
}

// DCGM's dcgmi is not installed here: a stand-in script on PATH records its arguments.
TEST(Cli, InjectDcgmRunsDcgmiWithTheFieldAndSaysWhenItIsMissing) {
  testing::TempDir dir;
  const std::string old_path = sys::GetEnv("PATH");
  ::setenv("PATH", dir.Path().c_str(), 1);
  auto missing =
      Cli({"--db", dir.File("cmax.db"), "inject", "dcgm", "xid", "79", "--gpu", "0", "--yes"});
  EXPECT_EQ(missing.code, kExitError);
  EXPECT_NE(missing.err.find("dcgmi is not on PATH"), std::string::npos) << missing.err;
  {
    std::ofstream script(dir.File("dcgmi"));
    script << "#!/bin/sh\necho \"$@\" > " << dir.File("args")
           << "\necho 'Successfully injected.'\n";
  }
  ::chmod(dir.File("dcgmi").c_str(), 0755);
  auto r = Cli({"--db", dir.File("cmax.db"), "inject", "dcgm", "row-remap-failure", "1", "--gpu",
                "3", "--offset", "5", "--yes"});
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(r.code, kExitOk) << r.err;
  std::stringstream args;
  args << std::ifstream(dir.File("args")).rdbuf();
  EXPECT_EQ(args.str(), "test --inject --gpuid 3 -f 395 -v 1 --offset 5\n");
  EXPECT_NE(r.out.find("Successfully injected."), std::string::npos);
  auto dry = Cli({"inject", "dcgm", "230", "95", "--gpu", "0", "--dry-run"});
  EXPECT_EQ(dry.code, kExitOk);
  EXPECT_NE(dry.out.find("would run: dcgmi test --inject --gpuid 0 -f 230 -v 95"),
            std::string::npos)
      << dry.out;
  EXPECT_EQ(Cli({"inject", "dcgm", "melting", "1", "--gpu", "0", "--dry-run"}).code, kExitUsage);
  EXPECT_EQ(Cli({"inject", "dcgm", "xid", "1", "--gpu", "first", "--dry-run"}).code, kExitUsage);
  EXPECT_EQ(Cli({"inject", "dcgm", "xid", "1", "--gpu", "3abc", "--dry-run"}).code, kExitUsage);
  // The field names, their ids and meanings in the help come from the table the code uses.
  const auto help = Cli({"inject", "dcgm", "--help"});
  EXPECT_NE(help.out.find("ecc-dbe (311)"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("ECC_DBE_VOL_TOTAL"), std::string::npos) << help.out;
}

TEST(Cli, PcieSbrIsRefusedUnlessEverySafetyRuleIsMet) {
  // This machine has no NVIDIA GPU: the plan itself is refused, and so is the missing flag.
  auto r = Cli({"inject", "pcie-sbr", "--gpu", "0000:17:00.0", "--dry-run"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("no PCI device 0000:17:00.0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-destructive"), std::string::npos) << r.err;
  r = Cli({"inject", "pcie-sbr", "--gpu", "0000:17:00.0", "--allow-destructive", "--yes"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.find("--allow-destructive"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cmax::cli
