// `cmax health --passive` as a library call, on saved kernel logs and a real SQLite store, with a
// stand-in for Slurm's drain: a health check is silent and unrecorded on success, one line and a
// drain on failure, and never overwrites someone else's drain. (The real drain is tested on the
// lab: lab_integration_test.)
#include "health/passive_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace cmax::health {
namespace {

constexpr const char* kXid79 =
    "2026-11-30T09:22:35+0000 gpu2 kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=x, GPU has "
    "fallen off the bus.\n";

struct Shell {
  testing::TempDir dir;
  std::vector<std::pair<std::string, std::string>> drains;
  std::string drain_answer = "drained";
  PassiveRunIo Io() {
    return {
        .db_path = dir.File("cmax.db"),
        .cmax_version = "test",
        .interrupted = [] { return false; },
        .interrupt_signal = [] { return 0; },
        .drain = [this](const std::string& node, const std::string& reason) -> Result<std::string> {
          drains.emplace_back(node, reason);
          return drain_answer;
        }};
  }
  std::string Log(const std::string& text) {
    std::ofstream(dir.File("kern.log")) << text;
    return dir.File("kern.log");
  }
  bool Stored() const { return std::filesystem::exists(dir.File("cmax.db")); }
};

PassiveRunOptions Check(const std::string& log) {
  return {.from_file = log,
          .since = "3650d",
          .slurm_healthcheck = true,
          .node = "gpu2",
          .nvml_lib = "/nonexistent/libnvidia-ml.so.1"};  // no NVML: a SKIP, not a failure
}

constexpr const char* kQuietBoot =
    "2026-11-30T09:20:01+0000 gpu2 kernel: Linux version 6.1.0-27-amd64\n"
    "2026-11-30T09:20:02+0000 gpu2 kernel: nvidia-nvlink: Nvlink Core is being initialized\n";

TEST(PassiveRun, AHealthyNodeIsSilentAndNothingIsRecorded) {
  Shell shell;
  const auto report = RunPassiveHealth(Check(shell.Log(kQuietBoot)), shell.Io());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->exit_code, 0) << report->line;
  EXPECT_EQ(report->line, "");
  EXPECT_FALSE(report->record);
  EXPECT_FALSE(shell.Stored());
}

TEST(PassiveRun, AFailureIsOneLineADrainAndARecordedRun) {
  Shell shell;
  PassiveRunOptions o = Check(shell.Log(kXid79));
  o.drain = true;
  const auto report = RunPassiveHealth(o, shell.Io());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->exit_code, 1);
  EXPECT_EQ(report->line.rfind("cmax: Xid 79", 0), 0U) << report->line;
  EXPECT_EQ(std::count(report->line.begin(), report->line.end(), '\n'), 1);
  ASSERT_EQ(shell.drains.size(), 1U);
  EXPECT_EQ(shell.drains[0].first, "gpu2");
  EXPECT_EQ(shell.drains[0].second.rfind("cmax: Xid 79", 0), 0U) << shell.drains[0].second;
  EXPECT_TRUE(shell.Stored());  // the reason for the drain is kept
}

TEST(PassiveRun, SomeoneElsesDrainIsLeftAndSaidSo) {
  Shell shell;
  shell.drain_answer = "already drained by someone else (maintenance)";
  PassiveRunOptions o = Check(shell.Log(kXid79));
  o.drain = true;
  const auto report = RunPassiveHealth(o, shell.Io());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->exit_code, 1);
  EXPECT_NE(report->line.find("gpu2 is already drained by someone else (maintenance)"),
            std::string::npos)
      << report->line;
}

TEST(PassiveRun, WithoutTheHealthCheckTheRunIsShownAndNothingIsDrained) {
  Shell shell;
  PassiveRunOptions o = Check(shell.Log(kXid79));
  o.slurm_healthcheck = false;
  const auto report = RunPassiveHealth(o, shell.Io());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->exit_code, 1);
  ASSERT_TRUE(report->record);
  EXPECT_EQ(report->record->run.command, "health");
  EXPECT_EQ(report->line, "");
  EXPECT_TRUE(shell.drains.empty());
}

// Any text reads as bare kernel messages: a saved file in which no line carries a kernel log's
// prefix (random bytes, a help text, an empty file) is never a healthy log, and what it does say
// is still reported.
TEST(PassiveRun, AFileThatIsNoKernelLogIsNeverAPass) {
  Shell shell;
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919 + 13) % 256);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {noise, "not a kernel log"},
      {"Usage: cmax [OPTIONS] COMMAND\n  --db TEXT  SQLite store\n", "not a kernel log"},
      {"2026-11-30T09:20:01+0000 gpu2 sshd[12]: Accepted publickey for root\n",
       "not a kernel log"}};
  for (const auto& [text, observed] : cases) {
    PassiveRunOptions o = Check(shell.Log(text));
    o.slurm_healthcheck = false;
    const auto report = RunPassiveHealth(o, shell.Io());
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_TRUE(report->record);
    const auto log = std::ranges::find_if(report->record->findings, [](const Finding& f) {
      return f.check_id == "health.kernel_log";
    });
    ASSERT_NE(log, report->record->findings.end());
    EXPECT_EQ(log->status, CheckStatus::kUnknown) << log->message;
    EXPECT_EQ(log->observed, observed) << log->message;
    EXPECT_NE(report->exit_code, 0);
  }
  // A kernel log whose dates cannot be read (a month in a language not known here, 29 February
  // in a year that lacks it) is still a kernel log: its lines carry the prefix.
  for (const char* line : {"ноя 30 09:22:28 gpu2 kernel: Linux version 6.1.0-27-amd64\n",
                           "[Xyz Foo 30 09:22:28 2026] Linux version 6.1.0-27-amd64\n"}) {
    PassiveRunOptions foreign = Check(shell.Log(line));
    foreign.slurm_healthcheck = false;
    foreign.since.clear();
    const auto read = RunPassiveHealth(foreign, shell.Io());
    ASSERT_TRUE(read) << read.error().message;
    ASSERT_TRUE(read->record);
    const auto log = std::ranges::find_if(
        read->record->findings, [](const Finding& f) { return f.check_id == "health.kernel_log"; });
    ASSERT_NE(log, read->record->findings.end());
    EXPECT_EQ(log->status, CheckStatus::kPass) << line << log->message;
  }
  // Bare messages (dmesg --notime) that name a fault: the fault is reported all the same.
  PassiveRunOptions bare = Check(
      shell.Log("NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"));
  bare.slurm_healthcheck = false;
  const auto report = RunPassiveHealth(bare, shell.Io());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_TRUE(report->record);
  EXPECT_TRUE(std::ranges::any_of(report->record->findings, [](const Finding& f) {
    return f.status == CheckStatus::kFail && f.message.find("79") != std::string::npos;
  }));
}

TEST(PassiveRun, WhatTheUserGaveIsCheckedFirst) {
  Shell shell;
  PassiveRunOptions drain_alone = Check(shell.Log(""));
  drain_alone.slurm_healthcheck = false;
  drain_alone.drain = true;
  PassiveRunOptions bad_since = Check(shell.Log(""));
  bad_since.since = "yesterday-ish";
  PassiveRunOptions bad_timeout = Check(shell.Log(""));
  bad_timeout.mount_timeout_s = 0;
  for (const PassiveRunOptions& o : {drain_alone, bad_since, bad_timeout}) {
    const auto report = RunPassiveHealth(o, shell.Io());
    ASSERT_FALSE(report);
    EXPECT_EQ(report.error().code, ErrorCode::kInvalidArgument) << report.error().message;
  }
  const auto missing = RunPassiveHealth(Check(shell.dir.File("nope.log")), shell.Io());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.rfind("--from-file: ", 0), 0U) << missing.error().message;
  EXPECT_TRUE(shell.drains.empty());
  EXPECT_FALSE(shell.Stored());
}

}  // namespace
}  // namespace cmax::health
