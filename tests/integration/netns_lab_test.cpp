// The namespace lab for real (root): hosts as network namespaces on a bridge, one host's link
// slowed by tc's token bucket, cmax-mpi-perf run across them by the real mpirun through the
// lab's rsh agent. The bad-node finder must name the slowed host, a sweep over 2 and 4 hosts
// must show the drop the slow link causes, and nothing may outlive the lab.
#include "net/netns_lab.hpp"

#include <signal.h>
#include <unistd.h>

#include <functional>
#include <gtest/gtest.h>
#include <latch>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/strings.hpp"
#include "net/bad_node_finder.hpp"
#include "net/mpi_launch.hpp"
#include "net/nccl_analysis.hpp"
#include "net/nccl_sweep.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/interrupt.hpp"
#include "sys/process_runner.hpp"
#include "train/train_runner.hpp"

namespace cmax::net {
namespace {

using namespace std::chrono_literals;

class NetnsLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
    auto plan = PlanNetnsLab("t" + std::to_string(getpid() % 1000), 4);
    ASSERT_TRUE(plan) << plan.error().message;
    lab_.emplace(*plan, runner_);
    auto up = lab_->Up(fs_);
    ASSERT_TRUE(up) << up.error().message;
    const NetnsLabPlan& placed = lab_->Plan();  // in the first free block: Up moves it there
    launch_ = {.perf = CMAX_MPI_PERF,
               .agent = lab_->AgentCommand(),
               .subnet = placed.subnet,
               .min_bytes = "64K",
               .max_bytes = "256K",
               .iters = 3,
               .warmup = 1,
               .timeout = 60s};
    for (const NetnsHost& h : placed.hosts) addresses_[h.name] = h.address;
  }
  void TearDown() override {
    if (!lab_) return;
    lab_->Down();
    ExpectNothingLeft();
  }
  // Nothing of the lab is left: no namespace, no interface of its tag, no agent.
  void ExpectNothingLeft() {
    const auto netns = runner_.Run({.argv = {"ip", "netns", "list"}});
    ASSERT_TRUE(netns);
    EXPECT_EQ(netns->stdout_text.find("cmax-" + lab_->Plan().tag + "-"), std::string::npos)
        << netns->stdout_text;
    const auto links = runner_.Run({.argv = {"ip", "-o", "link", "show"}});
    ASSERT_TRUE(links);
    EXPECT_EQ(links->stdout_text.find("cx" + lab_->Plan().tag), std::string::npos);
    EXPECT_FALSE(fs_.Exists(lab_->AgentPath()));
  }
  std::vector<std::string> Addresses(const std::vector<std::string>& hosts) {
    std::vector<std::string> out;
    for (const std::string& h : hosts) out.push_back(addresses_.at(h));
    return out;
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  std::optional<NetnsLab> lab_;
  MpiLaunch launch_;
  std::map<std::string, std::string> addresses_;
};

TEST_F(NetnsLabTest, TheSlowedLinkIsFoundAndNamed) {
  // 20 Mbit/s: a hundred times below what a healthy pair carries here, so that the verdict does
  // not rest on this machine's noise.
  ASSERT_TRUE(lab_->SlowLink("h3", "20mbit"));
  // The sweep: two hosts, then four with the slowed one among them.
  NcclInput sweep{.name = "netns"};
  for (const std::vector<std::string>& hosts :
       {std::vector<std::string>{"h1", "h2"}, {"h1", "h2", "h3", "h4"}}) {
    const MpiPerfRun run = RunMpiPerf(launch_, Addresses(hosts), runner_);
    ASSERT_EQ(run.problem, "") << hosts.size();
    ASSERT_EQ(run.output.tables.size(), 1U);
    EXPECT_EQ(static_cast<size_t>(run.output.tables[0].ranks), hosts.size());
    EXPECT_EQ(run.output.tables[0].hosts, hosts);  // each rank names its namespace host
    sweep.output.tables.push_back(run.output.tables[0]);
  }
  const NcclAnalysis analysis = AnalyzeNccl({sweep}, {.tolerance = 0.8});
  ASSERT_EQ(analysis.scaling.size(), 1U) << NcclAnalysisText(analysis, true);
  EXPECT_EQ(analysis.scaling[0].from_nodes, 2);
  EXPECT_EQ(analysis.scaling[0].to_nodes, 4);

  // Which host it is: the group, its halves, then pairs. Healthy pairs here read 1.5 to 4 GB/s
  // from one run to the next (TCP over veth on 2 shared cores) and the slowed link 0.01: the
  // tolerance must be wider than the healthy noise, or an unlucky pair is convicted.
  const BadNodeVerdict verdict = FindBadNodes(
      {"h1", "h2", "h3", "h4"}, MpiMeasure(launch_, addresses_, runner_), {.tolerance = 0.8});
  ASSERT_EQ(verdict.slow.size(), 1U) << BadNodeVerdictText(verdict);
  EXPECT_EQ(verdict.slow[0].node, "h3") << BadNodeVerdictText(verdict);
  EXPECT_LE(verdict.measurements.size(), 8U) << BadNodeVerdictText(verdict);
}

TEST_F(NetnsLabTest, AHostThatIsGoneFailsItsGroupAndIsNamed) {
  // h2's namespace deleted under the lab: mpirun cannot start its rank there.
  ASSERT_TRUE(runner_.Run({.argv = {"ip", "netns", "delete", lab_->Plan().hosts[1].netns}}));
  const MpiPerfRun run = RunMpiPerf(launch_, Addresses({"h1", "h2"}), runner_);
  EXPECT_NE(run.problem, "");
  const BadNodeVerdict verdict = FindBadNodes(
      {"h1", "h2", "h3", "h4"}, MpiMeasure(launch_, addresses_, runner_), {.tolerance = 0.8});
  ASSERT_EQ(verdict.slow.size(), 1U) << BadNodeVerdictText(verdict);
  EXPECT_EQ(verdict.slow[0].node, "h2");
  EXPECT_FALSE(verdict.slow[0].busbw_gbs);
}

// Two labs brought up at the same moment (two sweeps, or two of these tests run in parallel)
// each take a block of their own: both used to read the same first free block before either
// claimed it, gave their bridges one address, and the route to one lab's hosts led into the
// other's (a sweep then failed now and then under `ctest --parallel`).
// Ctrl-C is what sets a lab's taking down going: it must not cut it short (each `ip` command
// of it killed as it starts), or the namespaces, the bridge and the agent outlive the lab.
TEST_F(NetnsLabTest, ACtrlCDoesNotCutTheTakingDownShort) {
  struct ClearAtEnd {
    ~ClearAtEnd() { sys::ClearInterrupt(); }
  } clear;
  sys::RequestInterrupt(SIGINT);
  lab_->Down();
  sys::ClearInterrupt();  // the look is not to be cut short either
  ExpectNothingLeft();
}

// What a killed cmax's lab left (SIGKILL, a power cut: nothing ran its teardown) is taken down by
// the next lab that comes up: its process is gone, which its tag says.
TEST(NetnsLabUp, ALabLeftByAProcessThatIsGoneIsRemovedByTheNext) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const pid_t ended = ::fork();
  if (ended == 0) ::_exit(0);
  ASSERT_GT(ended, 0);
  ASSERT_EQ(::waitpid(ended, nullptr, 0), ended);
  const std::string tag = NetnsTagOf(ended);
  sys::PosixProcessRunner runner;
  sys::LocalFileSystem fs;
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"ip", "netns", "add", "cmax-" + tag + "-h1"},
        std::vector<std::string>{"ip", "netns", "add", "cmax-" + tag + "-h2"},
        std::vector<std::string>{"ip", "link", "add", "cx" + tag + "br", "type", "bridge"}}) {
    const auto made = runner.Run({.argv = argv});
    ASSERT_TRUE(made && made->Succeeded()) << Join(argv, " ");
  }
  auto plan = PlanNetnsLab("u" + std::to_string(getpid() % 1000), 2);
  ASSERT_TRUE(plan);
  NetnsLab next(*plan, runner);
  ASSERT_TRUE(next.Up(fs));
  const auto netns = runner.Run({.argv = {"ip", "netns", "list"}});
  ASSERT_TRUE(netns);
  EXPECT_EQ(netns->stdout_text.find("cmax-" + tag + "-"), std::string::npos) << netns->stdout_text;
  EXPECT_NE(netns->stdout_text.find("cmax-" + plan->tag + "-h2"), std::string::npos);
  const auto links = runner.Run({.argv = {"ip", "-o", "link", "show"}});
  ASSERT_TRUE(links);
  EXPECT_EQ(links->stdout_text.find("cx" + tag + "br"), std::string::npos);
}

TEST(NetnsLabUp, TwoLabsBroughtUpAtOnceTakeBlocksOfTheirOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  sys::LocalFileSystem fs;
  for (int round = 0; round < 3; ++round) {
    sys::PosixProcessRunner runners[2];
    std::optional<NetnsLab> labs[2];
    for (int i = 0; i < 2; ++i) {
      auto plan = PlanNetnsLab(
          std::string(1, static_cast<char>('p' + i)) + std::to_string(getpid() % 1000), 2);
      ASSERT_TRUE(plan) << plan.error().message;
      labs[i].emplace(*plan, runners[i]);
    }
    std::latch start(2);
    Result<void> up[2];
    std::thread second([&] {
      start.arrive_and_wait();
      up[1] = labs[1]->Up(fs);
    });
    start.arrive_and_wait();
    up[0] = labs[0]->Up(fs);
    second.join();
    ASSERT_TRUE(up[0]) << up[0].error().message;
    ASSERT_TRUE(up[1]) << up[1].error().message;
    EXPECT_NE(labs[0]->Plan().subnet, labs[1]->Plan().subnet) << "round " << round;
  }
}

// A lab of 4 hosts with one link slowed ("" none), the stand-in from `min_bytes` to 256 KiB.
NcclSweepRequest LabRequest(const std::string& tag, const std::string& slow,
                            const std::string& min_bytes, const std::string& out_dir) {
  NcclSweepRequest request;
  request.sweep.cpu_perf = CMAX_MPI_PERF;
  request.sweep.min_bytes = min_bytes;
  request.sweep.max_bytes = "256K";
  request.sweep.iters = 3;
  request.sweep.warmup = 1;
  request.sweep.step_timeout = 60s;
  request.lab_hosts = 4;
  request.lab_tag = tag + std::to_string(getpid() % 1000);
  if (!slow.empty()) request.slow_links = {slow};
  request.out_dir = out_dir;
  return request;
}

// What a sweep in a lab test runs with: real processes, files and time, its store at `db_path`.
struct SweepShell {
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  NcclSweepIo Io(const std::string& db_path,
                 std::function<void(std::string_view)> progress = nullptr) {
    return {.analyze = {.db_path = db_path, .cmax_version = "test", .fs = &fs, .clock = &clock},
            .fs = &fs,
            .runner = &runner,
            .progress = std::move(progress)};
  }
};

// `cmax nccl sweep --netns-lab 4 --slow-link h3:20mbit`, as a library call: the sweep makes its
// own lab, shows the drop from 2 to 4 hosts, keeps its logs, and leaves nothing behind. Its
// folders hold blanks: mpirun's agent, which it splits at blanks, is the lab's own, in /run.
TEST(NetnsLabSweep, TheSweepMakesItsLabShowsTheDropAndTakesItDown) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  testing::TempDir dir;
  SweepShell shell;
  sys::LocalFileSystem& fs = shell.fs;
  NcclSweepRequest request = LabRequest("w", "h3:20mbit", "64K", dir.File("the logs"));
  request.sweep.collectives = {"all_reduce"};
  request.analysis.tolerance_pct = 80;  // healthy pairs here vary 2x; the slowed link is 100x
  std::vector<std::string> progress;
  auto report =
      SweepNccl(request, shell.Io(dir.File("a store/cmax.db"),
                                  [&](std::string_view line) { progress.emplace_back(line); }));
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->steps.size(), 2U);
  for (const NcclStepOutcome& s : report->steps) {
    EXPECT_EQ(s.problem, "") << s.step.nodes.size();
    EXPECT_TRUE(fs.Exists(s.log_path));
  }
  const NcclAnalysis& analysis = report->analyzed.analysis;
  ASSERT_EQ(analysis.curves.size(), 2U);
  EXPECT_EQ(analysis.curves[1].nodes, 4);  // each rank named its namespace host
  ASSERT_EQ(analysis.scaling.size(), 1U) << NcclAnalysisText(analysis, true);
  EXPECT_EQ(analysis.scaling[0].to_nodes, 4);
  EXPECT_EQ(report->analyzed.exit_code, 1);
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(progress[0].starts_with("namespace lab up: 4 hosts in 198.")) << progress[0];
  const auto netns = shell.runner.Run({.argv = {"ip", "netns", "list"}});
  ASSERT_TRUE(netns);
  EXPECT_EQ(netns->stdout_text.find("cmax-" + request.lab_tag + "-"), std::string::npos)
      << netns->stdout_text;
  EXPECT_FALSE(fs.Exists(NetnsAgentPath(request.lab_tag)));
}

// `--env NAME=VALUE` reaches every rank by name: the lab's agent starts each host's daemon with
// CMAX_MPI_PERF_HOST set to the host, so the ranks name "everywhere" only when mpirun's -x
// passes its own value on. The value is in no command line and no recorded step.
TEST(NetnsLabSweep, TheEnvironmentReachesTheRanksByNameAndNoValueIsInTheCommand) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  testing::TempDir dir;
  SweepShell shell;
  NcclSweepRequest request = LabRequest("e", "", "64K", dir.File("logs"));
  request.lab_hosts = 2;
  request.sweep.collectives = {"all_reduce"};
  request.sweep.env = {"CMAX_MPI_PERF_HOST=everywhere"};
  auto report = SweepNccl(request, shell.Io(dir.File("cmax.db")));
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->steps.size(), 1U);
  const NcclStepOutcome& step = report->steps[0];
  ASSERT_EQ(step.problem, "");
  const std::string command = Join(step.step.argv, " ");
  EXPECT_NE(command.find(" -x CMAX_MPI_PERF_HOST "), std::string::npos) << command;
  EXPECT_EQ(command.find("everywhere"), std::string::npos) << command;
  auto log = shell.fs.ReadFile(step.log_path, 1 << 20);
  ASSERT_TRUE(log);
  EXPECT_EQ(report->analyzed.analysis.curves.at(0).nodes, 1) << *log;  // both ranks: one name
  EXPECT_NE(log->find("everywhere"), std::string::npos) << *log;
  EXPECT_EQ(NcclSweepJson(*report).dump().find("everywhere"), std::string::npos);
}

// A namespace host that dies mid-sweep (its namespace deleted after the first step): the step
// over it fails with the cause and the sweep goes on to the next collective.
TEST(NetnsLabSweep, AHostThatDiesMidSweepFailsItsStepsAndTheSweepGoesOn) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  testing::TempDir dir;
  SweepShell shell;
  sys::PosixProcessRunner& runner = shell.runner;
  NcclSweepRequest request = LabRequest("d", "", "64K", dir.File("logs"));
  request.sweep.collectives = {"all_reduce", "alltoall"};
  request.sweep.step_timeout = 20s;
  auto report = SweepNccl(request, shell.Io(dir.File("cmax.db"), [&](std::string_view line) {
    // After the first step (2 hosts), h4 dies: the 4-host steps cannot reach it.
    if (line.starts_with("step 1/")) {
      (void)runner.Run({.argv = {"ip", "netns", "delete", "cmax-" + request.lab_tag + "-h4"}});
    }
  }));
  ASSERT_TRUE(report) << report.error().message;
  // Every step ran: the sweep went on past the dead host. The steps over it fail with a cause;
  // the 2-host steps usually pass, but after a failed launch OpenMPI 4.1.4 here sometimes hangs
  // the next one (killed at its deadline) or crashes (SIGSEGV): not asserted.
  ASSERT_EQ(report->steps.size(), 4U);  // all_reduce and alltoall over 2 and 4 hosts
  EXPECT_NE(report->steps[1].problem, "") << "the 4-host all_reduce reached a dead host";
  EXPECT_NE(report->steps[3].problem, "") << "the 4-host alltoall reached a dead host";
  EXPECT_EQ(report->analyzed.exit_code, 1);
  // The lab is gone, its dead host too.
  const auto netns = runner.Run({.argv = {"ip", "netns", "list"}});
  ASSERT_TRUE(netns);
  EXPECT_EQ(netns->stdout_text.find("cmax-" + request.lab_tag + "-"), std::string::npos)
      << netns->stdout_text;
}

// `cmax nccl find-bad-node --netns-lab 4 --slow-link h2:20mbit`, as a library call: the node is
// named with its figures, recorded as a FAIL, and every run's log kept.
TEST(NetnsLabSweep, FindBadNodeNamesTheSlowedHostAndRecordsIt) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  testing::TempDir dir;
  SweepShell shell;
  sys::LocalFileSystem& fs = shell.fs;
  const NcclSweepRequest request = LabRequest("f", "h2:20mbit", "256K", dir.File("logs"));
  auto report = FindNcclBadNodes(request, {.tolerance = 0.8}, shell.Io(dir.File("cmax.db")));
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->verdict.slow.size(), 1U) << NcclBadNodeText(*report);
  EXPECT_EQ(report->verdict.slow[0].node, "h2");
  EXPECT_EQ(report->exit_code, 1);
  const auto failed = std::ranges::find_if(report->record.findings, [](const Finding& f) {
    return f.check_id == "network.nccl-bad-node" && f.status == CheckStatus::kFail;
  });
  ASSERT_NE(failed, report->record.findings.end());
  EXPECT_TRUE(failed->message.starts_with("h2: ")) << failed->message;
  EXPECT_TRUE(fs.Exists(dir.File("logs/find-01-4n.log")));
}

// `cmax train run --netns-lab 2 --slow-link h2:100mbit -- cmax-train-sim ...`, as a library call:
// one rank on each namespace host, started by mpirun through the lab's agent; the log in a folder
// whose name holds a blank; the run recorded with the command that ran; the lab, its agent too,
// gone after.
TEST(NetnsLabTrain, TheJobRunsOneRankOnEachHostAndTheLabGoesAfter) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  testing::TempDir dir;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  const std::string tag = "j" + std::to_string(getpid() % 1000);
  const train::TrainRunOptions options{
      .command = {CMAX_TRAIN_SIM, "--steps", "6", "--layers", "2", "--width", "64", "--batch", "16",
                  "--log-freq", "1"},
      .deadline = 120s,
      .log_path = dir.File("a job/train.log")};
  std::vector<std::string> progress;
  auto report = train::RunAndRecordTrainingOverNetnsLab(
      options, {.hosts = 2, .slow_links = {"h2:100mbit"}, .tag = tag},
      {.runner = &runner,
       .fs = &fs,
       .progress = [&](std::string_view line) { progress.emplace_back(line); }},
      {.db_path = dir.File("cmax.db"), .cmax_version = "test", .fs = &fs, .clock = &clock});
  ASSERT_TRUE(report) << report.error().message;
  const std::string log = fs.ReadFile(options.log_path, 1 << 20).value_or("");
  EXPECT_EQ(report->run.ending, train::TrainEnding::kFinished) << log;
  // Two ranks: the job's global batch is two of its local ones; six steps logged.
  EXPECT_NE(log.find("global batch size 32"), std::string::npos) << log;
  EXPECT_EQ(report->run.log.steps.size(), 6U) << log;
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(progress[0].starts_with("namespace lab up: 2 hosts in 198.")) << progress[0];
  EXPECT_NE(progress[0].find("links slowed as asked"), std::string::npos) << progress[0];
  // What ran is recorded: mpirun through the lab's agent, then the job.
  std::string command;
  for (const EvidenceItem& item : report->recorded.record.evidence) {
    if (item.key == "train.command") command = item.value_json;
  }
  EXPECT_NE(command.find("\"plm_rsh_agent\",\"" + NetnsAgentCommand(tag) + "\""), std::string::npos)
      << command;
  EXPECT_NE(command.find(CMAX_TRAIN_SIM), std::string::npos) << command;
  // Nothing of the lab is left.
  const auto netns = runner.Run({.argv = {"ip", "netns", "list"}});
  ASSERT_TRUE(netns);
  EXPECT_EQ(netns->stdout_text.find("cmax-" + tag + "-"), std::string::npos) << netns->stdout_text;
  EXPECT_FALSE(fs.Exists(NetnsAgentPath(tag)));
}

// The environment reaches every rank by name: its values are neither in mpirun's argv (which
// `ps` shows) nor in the recorded command. Each rank here is a shell that prints what it got.
TEST(NetnsLabTrain, TheEnvironmentReachesEveryRankAndNoValueIsRecorded) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  testing::TempDir dir;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  const train::TrainRunOptions options{.command = {"echo \"rank sees $CMAX_TEST_SECRET\""},
                                       .use_shell = true,
                                       .env = {"CMAX_TEST_SECRET=hunter2"},
                                       .deadline = 60s,
                                       .log_path = dir.File("train.log")};
  auto report = train::RunAndRecordTrainingOverNetnsLab(
      options, {.hosts = 2, .tag = "e" + std::to_string(getpid() % 1000)},
      {.runner = &runner, .fs = &fs},
      {.db_path = dir.File("cmax.db"), .cmax_version = "test", .fs = &fs, .clock = &clock});
  ASSERT_TRUE(report) << report.error().message;
  const std::string log = fs.ReadFile(options.log_path, 1 << 20).value_or("");
  size_t seen = 0;
  for (size_t at = log.find("rank sees hunter2"); at != std::string::npos;
       at = log.find("rank sees hunter2", at + 1)) {
    ++seen;
  }
  EXPECT_EQ(seen, 2U) << log;
  bool recorded = false;
  for (const EvidenceItem& item : report->recorded.record.evidence) {
    if (item.key != "train.command") continue;
    recorded = true;
    EXPECT_EQ(item.value_json.find("hunter2"), std::string::npos) << item.value_json;
    EXPECT_NE(item.value_json.find("\"-x\",\"CMAX_TEST_SECRET\""), std::string::npos)
        << item.value_json;
  }
  EXPECT_TRUE(recorded);
}

}  // namespace
}  // namespace cmax::net
