// The active checks that run a tool, against stand-in programs (shell scripts named dcgmi and
// nvbandwidth in a test folder: stand-ins, not NVIDIA's tools) run as real processes: a tool
// that is absent, one that answers, one that prints garbage, one that hangs past cmax's
// deadline and one that dies of a signal.
#include "active/tool_checks.hpp"

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>

#include "support/corpus.hpp"
#include "support/temp_dir.hpp"

namespace cmax::active {
namespace {

class ToolChecks : public ::testing::Test {
 protected:
  // A stand-in program: `body` after a shebang, executable.
  // A stand-in that never answers, as DCGM's diagnostic does on some parts: it opens a FIFO
  // no one writes to, which blocks until it is killed (no timer of its own to wait out).
  void StandInThatHangs(const std::string& name) {
    const std::string fifo = dir_.File(name + ".never");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    StandIn(name, "exec cat '" + fifo + "'");
  }
  void StandIn(const std::string& name, const std::string& body) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  }
  // Data for a stand-in to print, from the tests' data folder.
  std::string Data(const std::string& relative) {
    return std::string(CMAX_TEST_DATA) + "/" + relative;
  }
  ToolIo Io() {
    return {.runner = &runner_, .find_program = [this](const std::string& name) {
              const std::string path = dir_.File(name);
              struct stat st {};
              return ::stat(path.c_str(), &st) == 0 ? path : std::string();
            }};
  }

  testing::TempDir dir_;
  sys::PosixProcessRunner runner_;
};

TEST_F(ToolChecks, AToolThatIsNotInstalledIsASkipWithTheReason) {
  const auto findings = RunDcgmDiag(1, std::chrono::seconds(10), Io());
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, CheckStatus::kSkip);
  EXPECT_EQ(findings[0].message, "dcgmi is not on PATH: not run");
}

TEST_F(ToolChecks, TheDiagnosticsFailuresArePerTestWithTheirGpus) {
  // dcgmi exits non-zero when a test fails (226 seen in the field); the document says which.
  StandIn("dcgmi", "cat '" + Data("dcgm_diag/dcgm4-level1-fail.json") + "'\nexit 226");
  const auto findings = RunDcgmDiag(1, std::chrono::seconds(30), Io());
  ASSERT_EQ(findings.size(), 2U);
  EXPECT_EQ(findings[0].status, CheckStatus::kWarn);
  EXPECT_EQ(findings[1].status, CheckStatus::kFail);
  EXPECT_EQ(findings[1].message,
            "DCGM 4.2.3 diagnostic level 1: memory: GPU 3: Pending page retirements together "
            "with a DBE were detected on GPU 3.");

  // Exit 205: DCGM ranks the failure as one that needs the GPU isolated.
  StandIn("dcgmi", "cat '" + Data("dcgm_diag/dcgm4-level1-fail.json") + "'\nexit 205");
  const auto isolate = RunDcgmDiag(1, std::chrono::seconds(30), Io());
  ASSERT_EQ(isolate.size(), 2U);
  EXPECT_EQ(isolate[1].severity, Severity::kCritical);
  EXPECT_NE(isolate[1].message.find("(DCGM asks for the GPU to be isolated: exit 205)"),
            std::string::npos);
  EXPECT_EQ(isolate[0].message.find("isolated"), std::string::npos);  // a warning is not
  EXPECT_EQ(findings[1].severity, Severity::kHigh);                   // 226: a failed test

  StandIn("dcgmi", "cat '" + Data("dcgm_diag/dcgm4-level1-pass.json") + "'");
  const auto pass = RunDcgmDiag(1, std::chrono::seconds(30), Io());
  ASSERT_EQ(pass.size(), 1U);
  EXPECT_EQ(pass[0].status, CheckStatus::kPass) << pass[0].message;

  StandIn("dcgmi", "cat '" + Data("dcgm_diag/dcgm4-runtime-error.json") + "'\nexit 1");
  const auto busy = RunDcgmDiag(1, std::chrono::seconds(30), Io());
  ASSERT_EQ(busy.size(), 1U);
  EXPECT_EQ(busy[0].status, CheckStatus::kUnknown);
  EXPECT_NE(busy[0].message.find("GPU 2 is running a compute process"), std::string::npos)
      << busy[0].message;
}

TEST_F(ToolChecks, GarbageIsUnknownWithWhatWasSaid) {
  StandIn("dcgmi", "echo 'Error: unable to connect to host engine at 127.0.0.1' >&2\nexit 255");
  const auto findings = RunDcgmDiag(1, std::chrono::seconds(30), Io());
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].status, CheckStatus::kUnknown);
  EXPECT_NE(findings[0].message.find("(exit 255)"), std::string::npos) << findings[0].message;
  EXPECT_NE(findings[0].message.find("unable to connect to host engine"), std::string::npos);

  StandIn("nvbandwidth", "echo 'nvbandwidth: unrecognised option -t'");
  const auto bw =
      RunNvbandwidth(nullptr, ActiveThresholds::Builtin(), std::chrono::seconds(30), Io());
  ASSERT_EQ(bw.size(), 1U);
  EXPECT_EQ(bw[0].status, CheckStatus::kUnknown);
  EXPECT_NE(bw[0].message.find("unrecognised option"), std::string::npos) << bw[0].message;
}

TEST_F(ToolChecks, AHangIsKilledAtCmaxsDeadlineAndAsksForASecondLook) {
  // The check must come back at its deadline (plus the kill's grace), not the tool's.
  StandInThatHangs("dcgmi");
  const auto start = std::chrono::steady_clock::now();
  const ToolOutcome hung = RunTool({.check_id = "active.dcgm-diag",
                                    .tool = "dcgmi",
                                    .args = {"diag", "-r", "2", "-j"},
                                    .deadline = std::chrono::milliseconds(500)},
                                   Io());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(20));
  ASSERT_TRUE(hung.instead);
  EXPECT_FALSE(hung.result);
  EXPECT_TRUE(hung.second_look);
  EXPECT_EQ(hung.instead->status, CheckStatus::kUnknown);  // never FAIL for a hang alone
  EXPECT_NE(hung.instead->message.find("gave no result within 0.5 s and was killed"),
            std::string::npos)
      << hung.instead->message;
  EXPECT_NE(hung.instead->message.find("look at this node again"), std::string::npos);
}

TEST_F(ToolChecks, ADeathBySignalIsUnknown) {
  StandIn("nvbandwidth", "echo 'Running host_to_device_memcpy_ce.'\nkill -SEGV $$");
  const auto bw = RunNvbandwidth(ActiveThresholds::Builtin().Find("h100-sxm"),
                                 ActiveThresholds::Builtin(), std::chrono::seconds(30), Io());
  ASSERT_EQ(bw.size(), 1U);
  EXPECT_EQ(bw[0].status, CheckStatus::kUnknown);
  EXPECT_NE(bw[0].message.find("died of signal 11"), std::string::npos) << bw[0].message;
}

TEST_F(ToolChecks, NvbandwidthIsRunWithTheThreeTestsAndJudged) {
  StandIn("nvbandwidth", "echo \"$@\" > '" + dir_.File("args") + "'\ncat '" +
                             Data("active/nvbandwidth/h100-gpu3-pcie-and-one-link.txt") + "'");
  const auto bw = RunNvbandwidth(ActiveThresholds::Builtin().Find("h100-sxm"),
                                 ActiveThresholds::Builtin(), std::chrono::seconds(30), Io());
  EXPECT_EQ(testing::SlurpFile(dir_.File("args")),
            "-j -t host_to_device_memcpy_ce device_to_host_memcpy_ce "
            "device_to_device_memcpy_read_ce\n");
  ASSERT_EQ(bw.size(), 3U);
  EXPECT_EQ(bw[0].status, CheckStatus::kFail);
  EXPECT_EQ(bw[1].status, CheckStatus::kWarn);
  EXPECT_EQ(bw[2].status, CheckStatus::kFail);
}

TEST_F(ToolChecks, TheLocalAllReduceIsJudgedAtSixteenGiB) {
  const GpuClass* h100 = ActiveThresholds::Builtin().Find("h100-sxm");
  const auto run = [&](const std::string& fixture, bool ib_only) {
    StandIn("all_reduce_perf", "echo \"$@\" > '" + dir_.File("args") + "'\nenv > '" +
                                   dir_.File("env") + "'\ncat '" +
                                   Data("active/nccl/" + fixture + ".txt") + "'");
    return RunLocalAllReduce(8, ib_only, h100, ActiveThresholds::Builtin(),
                             std::chrono::seconds(30), Io());
  };
  auto good = run("h100-local-16g", false);
  ASSERT_EQ(good.size(), 1U);
  EXPECT_EQ(good[0].status, CheckStatus::kPass) << good[0].message;
  EXPECT_EQ(good[0].observed, "479.3 GB/s");  // the better of out-of-place and in-place
  EXPECT_EQ(testing::SlurpFile(dir_.File("args")), "-b 16G -e 16G -f 2 -g 8 -c 1\n");
  EXPECT_EQ(testing::SlurpFile(dir_.File("env")).find("NCCL_P2P_DISABLE"), std::string::npos);

  auto slow = run("h100-local-16g-slow", false);
  ASSERT_EQ(slow.size(), 1U);
  EXPECT_EQ(slow[0].status, CheckStatus::kFail);
  EXPECT_EQ(slow[0].message, "local all-reduce of 8 GPUs at 16 GiB: 315.2 GB/s, below 460 GB/s");

  auto wrong = run("h100-local-16g-wrong-values", false);
  ASSERT_EQ(wrong.size(), 1U);
  EXPECT_EQ(wrong[0].status, CheckStatus::kFail);
  EXPECT_EQ(wrong[0].severity, Severity::kCritical);
  EXPECT_NE(wrong[0].message.find("results were wrong"), std::string::npos);

  // Through the adapters: NVLink and shared memory off; H100 has no published limit for it.
  auto ib = run("h100-local-16g-slow", true);
  const std::string env = testing::SlurpFile(dir_.File("env"));
  EXPECT_NE(env.find("NCCL_P2P_DISABLE=1"), std::string::npos);
  EXPECT_NE(env.find("NCCL_SHM_DISABLE=1"), std::string::npos);
  ASSERT_EQ(ib.size(), 1U);
  EXPECT_EQ(ib[0].check_id, "active.nccl.ib-loopback-all-reduce");
  EXPECT_EQ(ib[0].status, CheckStatus::kUnknown);
  const auto gb200 = RunLocalAllReduce(4, true, ActiveThresholds::Builtin().Find("gb200"),
                                       ActiveThresholds::Builtin(), std::chrono::seconds(30), Io());
  ASSERT_EQ(gb200.size(), 1U);
  EXPECT_EQ(gb200[0].status, CheckStatus::kPass);  // 315 GB/s against GB200's 48
}

TEST(DiagDeadline, LongerLevelsGetLongerDeadlines) {
  EXPECT_EQ(DefaultDiagDeadline(1), std::chrono::minutes(2));
  EXPECT_LT(DefaultDiagDeadline(2), DefaultDiagDeadline(3));
  EXPECT_LT(DefaultDiagDeadline(3), DefaultDiagDeadline(4));
}

}  // namespace
}  // namespace cmax::active
