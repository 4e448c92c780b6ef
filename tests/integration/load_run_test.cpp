// The endpoint commands' work as a library call (endpoint/load_run.hpp), against serve-sim (a
// stand-in inference server) in a thread and a real SQLite store: what is checked before the
// run, what the store keeps, what the output files get, and a write that fails after the run.
#include "endpoint/load_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "support/sim_fixture.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::endpoint {
namespace {

using testing::SimFixture;
using testing::TempDir;

struct Shell {
  TempDir dir;
  sys::LocalFileSystem fs;
  std::vector<std::string> notes;
  std::vector<std::string> rows;
  std::map<std::string, std::string> written;
  std::vector<std::string> attempted;
  bool fail_writes = false;
  bool fail_growing = false;
  // The requests file as it grows, written from the requests stream's thread.
  std::mutex growing_mutex;
  std::map<std::string, std::string> grown;  // under growing_mutex
  std::atomic<size_t> grown_lines{0};

  LoadRunIo Io() {
    LoadRunIo io;
    io.db_path = dir.File("cmax.db");
    io.cmax_version = "test";
    io.fs = &fs;
    io.env = [](const std::string&) { return std::string(); };
    io.hooks.interrupted = [] { return false; };
    io.interrupt_signal = [] { return 0; };
    io.note = [this](std::string_view line) { notes.emplace_back(line); };
    io.table = [this](std::string_view line) { rows.emplace_back(line); };
    io.write_output = [this](const std::string& path, std::string_view text) -> Result<void> {
      attempted.push_back(path);
      if (fail_writes) return Fail(ErrorCode::kInvalidArgument, "disk full (a stand-in)");
      written[path] = std::string(text);
      return {};
    };
    io.open_growing = [this](const std::string& path) -> Result<sys::GrowingOutput> {
      return sys::GrowingOutput{.append = [this, path](std::string_view text) -> Result<void> {
        if (fail_growing) return Fail(ErrorCode::kIo, "disk full (a stand-in)");
        const std::lock_guard lock(growing_mutex);
        grown[path] += text;
        grown_lines += static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
        return {};
      }};
    };
    return io;
  }
  std::string Grown(const std::string& path) {
    const std::lock_guard lock(growing_mutex);
    return grown[path];
  }
  std::vector<store::RunSummary> Runs() {
    auto store = store::Store::Open({.path = dir.File("cmax.db"), .create = false});
    if (!store) return {};
    auto runs = store->ListRuns(10);
    return runs ? *runs : std::vector<store::RunSummary>{};
  }
};

TargetOptions Target(const SimFixture& sim) {
  TargetOptions t;
  t.url = sim.Url("/v1");
  t.model = "m";
  t.timeout_s = 10;
  return t;
}

WorkloadOptions Small() {
  return {.input_len = 20, .output_len = 4};
}

TEST(LoadRun, ARunIsMeasuredRecordedAndWritten) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  Shell shell;
  TargetOptions target = Target(sim);
  target.output_file = shell.dir.File("result.json");
  target.requests_file = shell.dir.File("requests.jsonl");
  const auto report =
      RunEndpoint(target, Small(), {.concurrency = 2, .requests = 5, .warmup = 2}, shell.Io());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->exit_code, 0);
  EXPECT_NE(report->text.find("stored as run " + std::to_string(report->run_id)), std::string::npos)
      << report->text;
  ASSERT_EQ(shell.notes.size(), 1U);  // the warm-up, not counted
  EXPECT_EQ(shell.notes[0], "warm-up: 2 requests (0 failed), not counted");
  EXPECT_NE(shell.written[target.output_file].find("\"completed\": 5"), std::string::npos);
  const std::string lines = shell.Grown(target.requests_file);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 5);
  const auto runs = shell.Runs();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].run.id, report->run_id);
  EXPECT_EQ(runs[0].run.command, "endpoint");
  EXPECT_EQ(runs[0].run.state, RunState::kOk);
}

TEST(LoadRun, BadInputIsRefusedBeforeAnythingIsSentOrStored) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  Shell shell;
  TargetOptions bad_body = Target(sim);
  bad_body.extra_body = "[1]";
  TargetOptions bad_url = Target(sim);
  bad_url.url = "ftp://example.com/v1";
  TargetOptions bad_path = Target(sim);
  bad_path.output_file = shell.dir.File("no/such/folder/result.json");
  // The same file for results and requests: the requests overwrote the results.
  TargetOptions same_file = Target(sim);
  same_file.output_file = shell.dir.File("out.json");
  same_file.requests_file = shell.dir.File("./out.json");
  // ... also through a link to it.
  std::ofstream(shell.dir.File("kept.json")) << "{}";
  std::filesystem::create_symlink(shell.dir.File("kept.json"), shell.dir.File("link.json"));
  TargetOptions linked = Target(sim);
  linked.output_file = shell.dir.File("kept.json");
  linked.requests_file = shell.dir.File("link.json");
  // Trust that is not there, or holds no certificate: every request would fail as "tls".
  TargetOptions no_ca = Target(sim);
  no_ca.cacert = shell.dir.File("none.pem");
  TargetOptions folder_ca = Target(sim);
  folder_ca.cacert = shell.dir.Path();
  TargetOptions text_ca = Target(sim);
  text_ca.cacert = shell.dir.File("notes.txt");
  std::ofstream(text_ca.cacert) << "not a certificate\n";
  for (const TargetOptions& t :
       {bad_body, bad_url, bad_path, same_file, linked, no_ca, folder_ca, text_ca}) {
    const auto report = RunEndpoint(t, Small(), {.requests = 1}, shell.Io());
    ASSERT_FALSE(report) << t.url << " " << t.cacert;
    EXPECT_NE(report.error().code, ErrorCode::kIo) << report.error().message;
    EXPECT_NE(report.error().code, ErrorCode::kInternal) << report.error().message;
  }
  EXPECT_FALSE(std::filesystem::exists(shell.dir.File("cmax.db")));
  EXPECT_EQ(sim.Stop().requests, 0U);
}

TEST(LoadRun, AnOutputThatFailsAfterTheRunEndsItAsAnError) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  Shell shell;
  shell.fail_writes = true;
  TargetOptions target = Target(sim);
  target.output_file = shell.dir.File("result.json");
  target.requests_file = shell.dir.File("requests.jsonl");
  const auto report = RunEndpoint(target, Small(), {.requests = 2}, shell.Io());
  ASSERT_FALSE(report);
  // Not the user's input: the path was checked before the run.
  EXPECT_EQ(report.error().code, ErrorCode::kIo);
  EXPECT_EQ(shell.attempted, std::vector<std::string>{target.output_file});
  // The requests were kept as they ended, before the result file failed.
  const std::string lines = shell.Grown(target.requests_file);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2);
  const auto runs = shell.Runs();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].run.state, RunState::kError);
  EXPECT_EQ(runs[0].run.exit_code, 3);
}

// The requests file grows while the run goes: a run killed half-way keeps what had ended.
// The run is stopped once lines have come; were they written only at its end, it would run its
// whole 30 s and none would have been seen.
TEST(LoadRun, TheRequestsFileGrowsAsRequestsEnd) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  Shell shell;
  TargetOptions target = Target(sim);
  target.requests_file = shell.dir.File("requests.jsonl");
  target.output_file = shell.dir.File("result.json");
  LoadRunIo io = shell.Io();
  bool seen_mid_run = false;
  io.hooks.interrupted = [&] {
    seen_mid_run = seen_mid_run || shell.grown_lines >= 3;
    return seen_mid_run;
  };
  const auto report =
      RunEndpoint(target, Small(), {.concurrency = 2, .duration_s = 30, .warmup = 2}, io);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(seen_mid_run);
  // Every request of the measured run has its line, whole, and no warm-up request has one.
  const nlohmann::json result = nlohmann::json::parse(shell.written[target.output_file]);
  const size_t sent = result["completed"].get<size_t>() + result["failed"].get<size_t>();
  std::istringstream lines(shell.Grown(target.requests_file));
  std::vector<uint64_t> indexes;
  for (std::string line; std::getline(lines, line);) {
    const auto request = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(request.is_object()) << line;
    indexes.push_back(request["index"].get<uint64_t>());
  }
  EXPECT_EQ(indexes.size(), sent);
  EXPECT_GE(indexes.size(), 3U);
}

// A requests file that cannot be written stops the run: what it measures could not be kept.
TEST(LoadRun, ARequestsFileThatFailsStopsTheRun) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  Shell shell;
  shell.fail_growing = true;
  TargetOptions target = Target(sim);
  target.requests_file = shell.dir.File("requests.jsonl");
  target.output_file = shell.dir.File("result.json");
  const auto started = std::chrono::steady_clock::now();
  const auto report =
      RunEndpoint(target, Small(), {.concurrency = 2, .duration_s = 30}, shell.Io());
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kIo);
  EXPECT_NE(report.error().message.find("--requests-file"), std::string::npos)
      << report.error().message;
  EXPECT_NE(report.error().message.find("disk full"), std::string::npos);
  EXPECT_LT(took_s, 15) << "the run went on to its end";
  EXPECT_TRUE(shell.attempted.empty());  // no result file for a run cut short
  const auto runs = shell.Runs();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].run.state, RunState::kError);
}

TEST(LoadRun, ASweepGivesARowPerLevelAndOneRun) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  Shell shell;
  TargetOptions target = Target(sim);
  target.output_file = "-";
  const auto report =
      SweepEndpoint(target, Small(), {.requests = 4}, {.levels = {1, 3}}, shell.Io());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(shell.rows.size(), 3U);  // the header and one row per level
  EXPECT_EQ(shell.rows[0].find("CONCURRENCY"), 0U);
  EXPECT_EQ(shell.rows[1].substr(0, 11), "          1");
  EXPECT_EQ(shell.rows[2].substr(0, 11), "          3");
  EXPECT_EQ(shell.written["-"].front(), '[');
  EXPECT_EQ(shell.Runs().size(), 1U);
  // A sweep keeps no requests file: the flag is refused, not ignored.
  target.requests_file = shell.dir.File("requests.jsonl");
  const auto refused = SweepEndpoint(target, Small(), {.requests = 4}, {.levels = {1}}, shell.Io());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(shell.Runs().size(), 1U);
}

TEST(LoadRun, TheShapeFollowsTheOptions) {
  const TargetOptions target{.retries = 2, .seed = 7, .cache_block = 32};
  const PaceOptions pace{.rate = 5, .burstiness = 0.5, .duration_s = 3};
  const LoadShape shape = ShapeOf(target, pace, 8, 40);
  EXPECT_EQ(shape.concurrency, 8U);
  EXPECT_EQ(shape.requests, 40U);
  EXPECT_EQ(shape.rate, 5);
  EXPECT_EQ(shape.burstiness, 0.5);
  EXPECT_EQ(shape.duration_s, 3);
  EXPECT_EQ(shape.retries, 2);
  EXPECT_EQ(shape.seed, 7U);
  EXPECT_EQ(shape.cache_block_tokens, 32U);
}

}  // namespace
}  // namespace cmax::endpoint
