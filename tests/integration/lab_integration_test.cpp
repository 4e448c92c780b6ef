// The lab against the real Slurm daemons: up, a job across every node, drain and resume,
// `cmax run` seeing it, and down with nothing left running.
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <tuple>

#include "cli/cli.hpp"
#include "core/strings.hpp"
#include "lab/lab.hpp"
#include "net/nccl_sweep.hpp"
#include "support/free_port.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_lock.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/process_runner.hpp"

namespace cmax::lab {
namespace {

using namespace std::chrono_literals;

// Away from the default ports, so a developer's own lab does not collide with the tests.
constexpr int kPortBase = 26817;

class LabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the lab needs root";
    spec_.dir = dir_.Path() + "/lab";
    spec_.nodes = 4;
    spec_.spares = 1;
    spec_.controller_port = kPortBase;
    spec_.first_node_port = kPortBase + 1;
  }
  void TearDown() override {
    if (::geteuid() == 0) (void)Down(spec_.dir, ctx_);  // never leave daemons behind
  }
  Result<sys::ProcessResult> Slurm(std::vector<std::string> argv) {
    sys::ProcessSpec spec{.argv = std::move(argv), .env_add = SlurmEnv(spec_.dir)};
    spec.timeout = 30s;
    return runner_.Run(spec);
  }
  std::string NodeState(const std::string& node) {
    auto r = Slurm({"sinfo", "-h", "-N", "-n", node, "-o", "%t"});
    return r ? std::string(r->stdout_text.substr(0, r->stdout_text.find('\n'))) : "?";
  }

  testing::TempDir dir_;
  LabSpec spec_;
  SystemClock clock_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  LabContext ctx_{fs_, runner_, clock_, {}};
};

TEST_F(LabTest, UpRunDrainResumeDown) {
  auto up = Up(spec_, ctx_, 30s);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_FALSE(up->already_running);
  EXPECT_LT(up->took, 20s);
  ASSERT_EQ(up->state.daemons.size(), 2u + 5u);

  auto status = Status(spec_.dir, ctx_);
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->Running());
  ASSERT_EQ(status->nodes.size(), 5u);
  for (const auto& [node, state] : status->nodes) EXPECT_EQ(state, "idle") << node;

  // A job across the four compute nodes; the spare partition is separate.
  auto job = Slurm({"srun", "-N4", "-p", "gpu", "hostname"});
  ASSERT_TRUE(job);
  EXPECT_EQ(job->exit_code, 0) << job->stderr_text;
  std::istringstream lines(job->stdout_text);
  int count = 0;
  for (std::string line; std::getline(lines, line);) ++count;
  EXPECT_EQ(count, 4);
  auto gres = Slurm({"srun", "-N1", "--gres=gpu:8", "true"});
  ASSERT_TRUE(gres);
  EXPECT_EQ(gres->exit_code, 0) << "each node advertises gpu:8: " << gres->stderr_text;
  auto spare = Slurm({"sinfo", "-h", "-p", "spare", "-o", "%N"});
  EXPECT_EQ(spare->stdout_text, "gpu5\n");

  // Drain and resume with scontrol, as remediation will.
  auto drain = Slurm({"scontrol", "update", "nodename=gpu2", "state=drain", "reason=cmax: test"});
  ASSERT_TRUE(drain);
  ASSERT_EQ(drain->exit_code, 0) << drain->stderr_text;
  EXPECT_EQ(NodeState("gpu2"), "drain");
  auto reasons = Slurm({"sinfo", "-h", "-R", "-o", "%N|%E"});
  EXPECT_NE(reasons->stdout_text.find("gpu2|cmax: test"), std::string::npos)
      << reasons->stdout_text;
  auto blocked = Slurm({"srun", "-N1", "-w", "gpu2", "--immediate=2", "true"});
  EXPECT_NE(blocked->exit_code, 0) << "a drained node takes no job";
  ASSERT_EQ(Slurm({"scontrol", "update", "nodename=gpu2", "state=resume"})->exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return NodeState("gpu2") == "idle"; }, 5s))
      << NodeState("gpu2");

  // A second `up` reports the running lab instead of starting another.
  auto again = Up(spec_, ctx_, 30s);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->already_running);
  EXPECT_EQ(again->state.daemons[0].pid, up->state.daemons[0].pid);

  // While another cmax starts the lab (holds its lock), an `up` neither reports nor touches it.
  {
    auto starting = sys::FileLock::TryTake(spec_.dir + "/up.lock");
    ASSERT_TRUE(starting) << starting.error().message;
    auto busy = Up(spec_, ctx_, 30s);
    ASSERT_FALSE(busy);
    EXPECT_EQ(busy.error().code, ErrorCode::kBusy);
    EXPECT_NE(busy.error().message.find("another cmax is starting the lab"), std::string::npos)
        << busy.error().message;
  }

  // A lab that is not whole (a slurmd died, or the `up` that started it was killed part-way) is
  // no lab to report as running: it is taken down and started afresh.
  const Daemon lost = up->state.daemons[4];
  ASSERT_EQ(lost.name, "slurmd-gpu3");
  ::kill(lost.pid, SIGKILL);
  ASSERT_TRUE(testing::WaitUntil([&] { return !sys::ProcessAlive(lost.pid); }));
  EXPECT_EQ(Status(spec_.dir, ctx_)->Missing(), std::vector<std::string>{"slurmd-gpu3"});
  auto afresh = Up(spec_, ctx_, 30s);
  ASSERT_TRUE(afresh) << afresh.error().message;
  EXPECT_FALSE(afresh->already_running);
  for (const Daemon& d : up->state.daemons) {
    EXPECT_FALSE(sys::ProcessAlive(d.pid)) << "the old lab's " << d.name << " still runs";
  }
  status = Status(spec_.dir, ctx_);
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->Missing().empty());
  for (const auto& [node, state] : status->nodes) EXPECT_EQ(state, "idle") << node;

  // Down stops exactly what it started and leaves nothing running.
  auto down = Down(spec_.dir, ctx_);
  ASSERT_TRUE(down) << down.error().message;
  EXPECT_EQ(down->stopped.size(), 7u);
  EXPECT_TRUE(down->not_ours.empty());
  for (const Daemon& d : afresh->state.daemons) {
    EXPECT_FALSE(sys::ProcessAlive(d.pid)) << d.name << " still runs";
  }
  EXPECT_TRUE(ProcessesInside(spec_.dir).empty());
  EXPECT_FALSE(fs_.Exists(PathsFor(spec_.dir).state_file));
  EXPECT_FALSE(Status(spec_.dir, ctx_));
}

TEST_F(LabTest, DownEndsRunningJobs) {
  ASSERT_TRUE(Up(spec_, ctx_, 30s));
  auto submit = Slurm({"sbatch", "-N2", "-p", "gpu", "-o", spec_.dir + "/slurm-%j.out", "--wrap",
                       "sleep 307"});  // its own duration: other tests run sleep 300
  ASSERT_TRUE(submit);
  ASSERT_EQ(submit->exit_code, 0) << submit->stderr_text;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto q = Slurm({"squeue", "-h", "-t", "R", "-o", "%i"});
        return q && !q->stdout_text.empty();
      },
      10s))
      << "the job never ran";
  auto down = Down(spec_.dir, ctx_);
  ASSERT_TRUE(down) << down.error().message;
  EXPECT_TRUE(ProcessesInside(spec_.dir).empty());
  std::string survivors;
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        auto sleepers = runner_.Run({.argv = {"pgrep", "-f", "^sleep 307$"}});
        survivors = sleepers ? sleepers->stdout_text : "";
        return sleepers && sleepers->exit_code != 0;
      },
      5s))
      << "job processes survived: " << survivors;
}

TEST_F(LabTest, TakenPortIsNamedAndNothingStarts) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int one = 1;  // an earlier test's lab may have left the port in TIME_WAIT
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kPortBase + 2);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  auto up = Up(spec_, ctx_, 30s);
  ::close(fd);
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().message.find("port " + std::to_string(kPortBase + 2) + " is taken"),
            std::string::npos)
      << up.error().message;
  EXPECT_FALSE(fs_.Exists(PathsFor(spec_.dir).state_file));
}

TEST_F(LabTest, RefusesAFolderThatIsNotALabs) {
  ASSERT_TRUE(fs_.CreateDirs(spec_.dir, 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(spec_.dir + "/notes.txt", "someone's files", 0644));
  auto up = Up(spec_, ctx_, 30s);
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().message.find("not a cmax lab folder"), std::string::npos)
      << up.error().message;
  EXPECT_FALSE(fs_.Exists(spec_.dir + "/etc/slurm.conf")) << "nothing was written";

  // A folder others may write to could name any pids and any cluster for root to act on.
  LabSpec open = spec_;
  open.dir = dir_.Path() + "/open";
  ASSERT_TRUE(fs_.CreateDirs(open.dir, 0755));
  ASSERT_EQ(::chmod(open.dir.c_str(), 0777), 0);
  ASSERT_TRUE(fs_.WriteFileAtomic(open.dir + "/lab.json", "{}", 0644));
  const auto up_open = Up(open, ctx_, 30s);
  const auto status_open = Status(open.dir, ctx_);
  const auto down_open = Down(open.dir, ctx_);
  ASSERT_FALSE(up_open);
  ASSERT_FALSE(status_open);
  ASSERT_FALSE(down_open);
  for (const Error& refused : {up_open.error(), status_open.error(), down_open.error()}) {
    EXPECT_NE(refused.message.find("must be this user's and writable by no one else"),
              std::string::npos)
        << refused.message;
  }
  EXPECT_FALSE(fs_.Exists(open.dir + "/etc/slurm.conf")) << "nothing was written";
}

TEST_F(LabTest, NotRootIsRefusedWithAClearReason) {
  // The real binary as user nobody: up must say it needs root and start nothing.
  ::chmod(dir_.Path().c_str(), 0777);
  auto r = runner_.Run(
      {.argv = {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", CMAX_BINARY,
                "lab", "up", "--dir", spec_.dir, "--port-base", std::to_string(kPortBase)}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, cli::kExitError) << r->stdout_text << r->stderr_text;
  EXPECT_NE(r->stderr_text.find("needs root"), std::string::npos) << r->stderr_text;
  EXPECT_FALSE(fs_.Exists(PathsFor(spec_.dir).state_file));
}

TEST_F(LabTest, CmaxRunSeesTheLabAsASlurmClient) {
  ASSERT_TRUE(Up(spec_, ctx_, 30s));
  const std::string conf = PathsFor(spec_.dir).slurm_conf;
  ::setenv("SLURM_CONF", conf.c_str(), 1);
  std::ostringstream out;
  std::ostringstream err;
  const int code =
      cli::RunCli({"run", "--db", dir_.File("cmax.db"), "--no-html", "--json"}, out, err);
  ::unsetenv("SLURM_CONF");
  // 1: a check failed, 3: one could not be read (the audit's, on a machine like this one).
  ASSERT_TRUE(code == cli::kExitOk || code == cli::kExitChecksFailed || code == cli::kExitError)
      << err.str();
  auto doc = nlohmann::json::parse(out.str());
  EXPECT_NE(doc["run"]["target"].get<std::string>().find("slurm-client"), std::string::npos);
  bool found = false;
  for (const auto& f : doc["findings"]) {
    if (f["check_id"] != "scheduler.slurm") continue;
    found = true;
    EXPECT_EQ(f["status"], "PASS") << f.dump();
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(doc["evidence"]["scheduler.slurm"]["controller_up"].get<bool>());
}

TEST_F(LabTest, HealthCheckDrainsWithACmaxReasonAndLeavesOperatorDrainsAlone) {
  ASSERT_TRUE(Up(spec_, ctx_, 30s));
  const std::string conf = PathsFor(spec_.dir).slurm_conf;
  ::setenv("SLURM_CONF", conf.c_str(), 1);
  const std::string log = dir_.File("xid.log");
  std::ofstream(log) << "2026-11-30T09:22:35+0000 gpu2 kernel: NVRM: Xid (PCI:0000:17:00): 79, "
                        "pid=1, name=x, GPU has fallen off the bus.\n";
  auto check = [&](const std::string& node) {
    std::ostringstream out, err;
    const int code =
        cli::RunCli({"health", "--passive", "--slurm-healthcheck", "--drain", "--node", node,
                     "--since", "3650d", "--from-file", log, "--db", dir_.File("cmax.db")},
                    out, err);
    return std::make_tuple(code, out.str(), err.str());
  };
  auto [code, out, err] = check("gpu2");
  EXPECT_EQ(code, cli::kExitChecksFailed) << out << err;
  EXPECT_EQ(NodeState("gpu2"), "drain");
  auto reasons = Slurm({"sinfo", "-h", "-R", "-o", "%N|%E"});
  EXPECT_NE(reasons->stdout_text.find("gpu2|cmax: Xid 79"), std::string::npos)
      << reasons->stdout_text;

  // An operator's drain is never overwritten.
  ASSERT_EQ(Slurm({"scontrol", "update", "nodename=gpu3", "state=drain", "reason=maintenance"})
                ->exit_code,
            0);
  auto [code3, out3, err3] = check("gpu3");
  EXPECT_EQ(code3, cli::kExitChecksFailed);
  EXPECT_NE(out3.find("already drained by someone else"), std::string::npos) << out3 << err3;
  reasons = Slurm({"sinfo", "-h", "-R", "-o", "%N|%E"});
  EXPECT_NE(reasons->stdout_text.find("gpu3|maintenance"), std::string::npos)
      << reasons->stdout_text;
  ::unsetenv("SLURM_CONF");
}

TEST_F(LabTest, CliUpTwiceReportsTheRunningLab) {
  const std::vector<std::string> up = {"lab",     "up", "--dir",       spec_.dir,
                                       "--nodes", "2",  "--port-base", std::to_string(kPortBase),
                                       "--json"};
  std::ostringstream out1, err1, out2, err2;
  ASSERT_EQ(cli::RunCli(up, out1, err1), cli::kExitOk) << err1.str();
  EXPECT_FALSE(nlohmann::json::parse(out1.str())["already_running"].get<bool>());
  ASSERT_EQ(cli::RunCli(up, out2, err2), cli::kExitOk) << err2.str();
  EXPECT_TRUE(nlohmann::json::parse(out2.str())["already_running"].get<bool>());
  std::ostringstream out3, err3;
  EXPECT_EQ(cli::RunCli({"lab", "status", "--dir", spec_.dir, "--json"}, out3, err3), cli::kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out3.str())["nodes"]["gpu2"], "idle");
  std::ostringstream out4, err4;
  EXPECT_EQ(cli::RunCli({"lab", "down", "--dir", spec_.dir}, out4, err4), cli::kExitOk);
  EXPECT_NE(out4.str().find("stopped"), std::string::npos);
}

// The network sweep through the real srun (issue 17): `srun --mpi=... --nodes=N --nodelist=...
// --ntasks-per-node=G --gpus-per-node=G --kill-on-bad-exit=1 --export=ALL` must be what this
// Slurm accepts. The nccl-tests binary is a stand-in (a shell script, named as such) that prints
// a table from its first task only, as an MPI build does, and names the node it ran on.
TEST_F(LabTest, TheNcclSweepRunsThroughSrun) {
  auto up = Up(spec_, ctx_, 30s);
  ASSERT_TRUE(up) << up.error().message;
  const std::string tests = dir_.File("nccl-tests");
  ASSERT_TRUE(fs_.CreateDirs(tests, 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(
      tests + "/all_reduce_perf",
      "#!/bin/sh\n# A stand-in for nccl-tests' all_reduce_perf, under srun.\n"
      "[ \"$SLURM_PROCID\" = 0 ] || exit 0\n"
      "echo \"# ran on $SLURMD_NODENAME with $SLURM_NTASKS tasks, $SLURM_GPUS_ON_NODE GPUs\"\n"
      "cat " +
          std::string(CMAX_TEST_DATA) + "/nccl/modern_all_reduce.txt\n",
      0755));
  net::NcclSweepRequest request;
  request.sweep.hosts = {"gpu1", "gpu2"};
  request.sweep.launcher = net::NcclLauncher::kSrun;
  // The lab's nodes share this one host, and two slurmstepds' PMIx servers on it collide now
  // and then ("task launch failed"): no MPI plugin, which the stand-in does not need anyway.
  request.sweep.srun_mpi = "none";
  request.sweep.gpus_per_node = 2;
  request.sweep.step_timeout = 60s;
  request.sweep.env = SlurmEnv(spec_.dir);  // srun hands it on
  request.nccl_tests_dir = tests;
  request.out_dir = dir_.File("sweep");
  auto report = net::SweepNccl(request, {.analyze = {.db_path = dir_.File("cmax.db"),
                                                     .cmax_version = "test",
                                                     .fs = &fs_,
                                                     .clock = &clock_},
                                         .fs = &fs_,
                                         .runner = &runner_});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->steps.size(), 2U);  // 1 and 2 nodes
  for (const net::NcclStepOutcome& s : report->steps) {
    auto err = fs_.ReadFile(s.log_path + ".err", 1 << 20);
    EXPECT_EQ(s.problem, "") << s.step.nodes.size() << ": " << s.problem << "\n"
                             << (err ? *err : std::string("(no error output)"));
    auto log = fs_.ReadFile(s.log_path, 1 << 20);
    ASSERT_TRUE(log);
    EXPECT_NE(
        log->find(fmt::format("# ran on gpu1 with {} tasks, 2 GPUs", 2 * s.step.nodes.size())),
        std::string::npos)
        << *log;
  }
  EXPECT_EQ(report->analyzed.analysis.curves.size(), 2U);
  EXPECT_EQ(report->analyzed.exit_code, 0);
}

// mpirun starts ranks wherever it is told: a sweep or a search over hosts where Slurm runs
// others' jobs is refused before any step, with the hosts and jobs named; the allocation the
// sweep runs in ($SLURM_JOB_ID) is its own; --force runs it, and the run says so in a WARN.
TEST_F(LabTest, AnMpirunSweepLeavesHostsWithOthersJobsAlone) {
  ASSERT_TRUE(Up(spec_, ctx_, 30s));
  // The tenant's job: it runs until the lab (TearDown's Down) ends it.
  auto submit = Slurm({"sbatch", "--parsable", "-N1", "-w", "gpu2", "-o", "/dev/null", "--wrap",
                       "exec tail -f /dev/null"});
  ASSERT_TRUE(submit);
  ASSERT_EQ(submit->exit_code, 0) << submit->stderr_text;
  const std::string job(Trim(submit->stdout_text));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto q = Slurm({"squeue", "-h", "-j", job, "-t", "R", "-o", "%N"});
        return q && Trim(q->stdout_text) == "gpu2";
      },
      10s))
      << "the job never ran";
  const std::string table = std::string(CMAX_TEST_DATA) + "/nccl/modern_all_reduce.txt";
  const std::string tests = dir_.File("nccl-tests");
  ASSERT_TRUE(fs_.CreateDirs(tests, 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(tests + "/all_reduce_perf",
                                  "#!/bin/sh\n# A stand-in for nccl-tests' all_reduce_perf.\n",
                                  0755));
  // A stand-in for mpirun: the lab's node names are not hosts it could reach.
  ASSERT_TRUE(fs_.WriteFileAtomic(
      dir_.File("mpirun"), "#!/bin/sh\n# A stand-in for OpenMPI's mpirun.\ncat " + table + "\n",
      0755));
  ::setenv("SLURM_CONF", PathsFor(spec_.dir).slurm_conf.c_str(), 1);
  net::NcclSweepRequest request;
  request.sweep.hosts = {"gpu1", "gpu2.lab.example"};
  request.sweep.mpirun = dir_.File("mpirun");
  request.sweep.collectives = {"all_reduce"};
  request.sweep.gpus_per_node = 1;
  request.nccl_tests_dir = tests;
  request.out_dir = dir_.File("sweep");
  const net::NcclSweepIo io{.analyze = {.db_path = dir_.File("cmax.db"),
                                        .cmax_version = "test",
                                        .fs = &fs_,
                                        .clock = &clock_},
                            .fs = &fs_,
                            .runner = &runner_};
  auto refused = net::SweepNccl(request, io);
  auto search = net::FindNcclBadNodes(request, {.reference_gbs = 250}, io);
  request.own_job = job;
  auto own = net::SweepNccl(request, io);
  request.own_job.clear();
  // Over the first host alone: the second, busy, is not loaded.
  request.sweep.node_counts = {1};
  auto first_only = net::SweepNccl(request, io);
  // Every lab node's NodeHostname is localhost (sinfo's %n): so is gpu2, busy.
  request.sweep.hosts = {"localhost"};
  auto by_hostname = net::SweepNccl(request, io);
  request.sweep.hosts = {"gpu1", "gpu2.lab.example"};
  request.sweep.node_counts.clear();
  request.force = true;
  auto forced = net::SweepNccl(request, io);
  ::unsetenv("SLURM_CONF");
  ASSERT_TRUE(first_only) << first_only.error().message;
  ASSERT_FALSE(by_hostname);
  EXPECT_NE(
      by_hostname.error().message.find("others' Slurm jobs run on localhost (job " + job + ")"),
      std::string::npos)
      << by_hostname.error().message;
  ASSERT_FALSE(refused);
  ASSERT_FALSE(search);
  for (const Error* not_run : {&refused.error(), &search.error()}) {
    EXPECT_EQ(not_run->code, ErrorCode::kBusy);
    EXPECT_NE(not_run->message.find("others' Slurm jobs run on gpu2.lab.example (job " + job + ")"),
              std::string::npos)
        << not_run->message;
    EXPECT_EQ(not_run->message.find("gpu1"), std::string::npos) << not_run->message;
  }
  ASSERT_TRUE(own) << own.error().message;
  ASSERT_TRUE(forced) << forced.error().message;
  const auto beside = [](const RunRecord& run) {
    return std::ranges::count_if(run.findings, [](const Finding& f) {
      return f.check_id == "network.nccl-beside-jobs" && f.status == CheckStatus::kWarn;
    });
  };
  EXPECT_EQ(beside(own->analyzed.record), 0);
  EXPECT_EQ(beside(forced->analyzed.record), 1);
  EXPECT_EQ(forced->analyzed.analysis.curves.size(), 2U);  // over 1 node and 2
}

// The audit of every node through one srun step (issue 15): each lab node runs the cmax binary
// itself; then a node whose slurmd is gone is UNKNOWN with the reason while the others answer;
// then a controller that is down makes every check UNKNOWN and the audit still finishes.
TEST_F(LabTest, AuditsEveryNodeAndNamesTheOneThatCannotAnswer) {
  // A Prolog of a second: each node's task starts at least that long after its job. The sleep
  // is the slow prolog being measured (orchestration.slurm-prolog-duration), not a wait for a
  // state: the test waits on the audit's own output.
  spec_.prolog = dir_.File("prolog.sh");
  ASSERT_TRUE(fs_.WriteFileAtomic(spec_.prolog, "#!/bin/sh\nexec sleep 1\n", 0755));
  auto up = Up(spec_, ctx_, 30s);
  ASSERT_TRUE(up) << up.error().message;
  const std::string conf = PathsFor(spec_.dir).slurm_conf;
  ::setenv("SLURM_CONF", conf.c_str(), 1);
  const auto audit = [&](std::vector<std::string> extra, std::string* err_text = nullptr) {
    std::vector<std::string> args = {"audit",  "--slurm", "--yes",
                                     "--json", "--db",    dir_.File("cmax.db")};
    if (std::ranges::count(extra, "--remote-cmax") == 0) {
      args.insert(args.end(), {"--remote-cmax", CMAX_BINARY});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out;
    std::ostringstream err;
    const int code = cli::RunCli(args, out, err);
    if (err_text != nullptr) *err_text = err.str();
    return std::make_pair(code, out.str());
  };

  // Every node, both partitions; a check's message says how the nodes came out.
  std::string err;
  auto [code, text] = audit({"--exit-zero"}, &err);
  ASSERT_EQ(code, cli::kExitOk) << err;
  auto doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["run"]["target"], "slurm/all");
  EXPECT_EQ(doc["evidence"]["audit.coverage"]["answered"], 5) << doc["evidence"]["audit.coverage"];
  EXPECT_TRUE(doc["evidence"]["audit.coverage"]["unreachable"].empty());
  for (const char* node : {"gpu1", "gpu2", "gpu3", "gpu4", "gpu5"}) {
    ASSERT_TRUE(doc["evidence"].contains(std::string("audit.node.") + node)) << node;
    EXPECT_EQ(doc["evidence"][std::string("audit.node.") + node]["node"], node);
  }
  size_t on_every_node = 0;
  for (const auto& f : doc["findings"]) {
    const std::string message = f["message"];
    if (message.find("all 5 nodes") != std::string::npos ||
        message.find("of 5 nodes") != std::string::npos) {
      ++on_every_node;
    }
  }
  EXPECT_EQ(on_every_node, doc["findings"].size()) << doc["findings"].dump(1);
  EXPECT_NE(err.find("5 of 5 node(s) answered"), std::string::npos) << err;
  // ssh between nodes is a login on another node: not without --allow-side-effects.
  for (const auto& f : doc["findings"]) {
    if (f["check_id"] != "access.ssh-between-nodes") continue;
    EXPECT_EQ(f["status"], "SKIP") << f.dump();
    EXPECT_NE(f["message"].get<std::string>().find("--allow-side-effects"), std::string::npos)
        << f.dump();
  }
  // The Prolog's second, measured on every node from the job's start the controller gives.
  for (const char* node : {"gpu1", "gpu2", "gpu3", "gpu4", "gpu5"}) {
    const auto& prolog = doc["evidence"][std::string("audit.node.") + node]["evidence"]
                            ["scheduler.slurm.prolog_seconds"];
    ASSERT_TRUE(prolog.is_object())
        << node << ": " << doc["evidence"][std::string("audit.node.") + node].dump();
    EXPECT_GE(prolog["value"].get<double>(), 1.0) << node;
    EXPECT_LT(prolog["value"].get<double>(), 30.0) << node;
    EXPECT_EQ(prolog["source"], "scontrol show job") << node;
  }
  // The stored run regraded from each node's evidence: the same grades.
  std::ostringstream review_out;
  std::ostringstream review_err;
  EXPECT_EQ(cli::RunCli({"audit", "review", "--regrade", "--db", dir_.File("cmax.db")}, review_out,
                        review_err),
            cli::kExitOk)
      << review_err.str();
  EXPECT_NE(review_out.str().find("No check changed"), std::string::npos) << review_out.str();

  // A node list; then gpu3's slurmd is gone: it is UNKNOWN with the reason, the others answer.
  auto listed = audit({"--exit-zero", "-w", "gpu[1-2],gpu9"});
  ASSERT_EQ(listed.first, cli::kExitOk);
  const auto listed_coverage = nlohmann::json::parse(listed.second)["evidence"]["audit.coverage"];
  EXPECT_EQ(listed_coverage["nodes"], 3) << listed_coverage;
  EXPECT_EQ(listed_coverage["unreachable"]["gpu9"], "Slurm lists no such node") << listed_coverage;

  // Side effects allowed: each node opens its one connection to the host named (a listening
  // socket of this test's) and imports an image with enroot (a stand-in script on PATH that
  // writes the image file and logs its arguments: enroot is not packaged for Debian); the image
  // files are gone after, and the auditing host sums up what was done.
  int port = 0;
  const int listener = testing::ListenOnLoopback(&port);
  ASSERT_GE(listener, 0);
  const std::string bin = dir_.File("standins");
  const std::string scratch = dir_.File("scratch");
  ASSERT_TRUE(fs_.CreateDirs(bin, 0755));
  ASSERT_TRUE(fs_.CreateDirs(scratch, 0755));
  ASSERT_TRUE(fs_.WriteFileAtomic(bin + "/enroot",
                                  "#!/bin/sh\n"
                                  "echo \"$*\" >> " +
                                      dir_.File("enroot.log") +
                                      "\n"
                                      "[ \"$1 $2\" = \"import --output\" ] || exit 2\n"
                                      "echo image > \"$3\"\n",
                                  0755));
  // A stand-in ssh that logs its arguments and lets every node in (openssh's client is real
  // above; a real sshd per lab node is not worth its set-up here).
  ASSERT_TRUE(fs_.WriteFileAtomic(
      bin + "/ssh", "#!/bin/sh\necho \"$*\" >> " + dir_.File("ssh.log") + "\n", 0755));
  const std::string path = sys::GetEnv("PATH");
  ::setenv("PATH", (bin + ":" + path).c_str(), 1);
  ::setenv("TMPDIR", scratch.c_str(), 1);
  std::string side_err;
  auto side = audit({"--exit-zero", "-w", "gpu[1-2]", "--allow-side-effects", "--egress-target",
                     "127.0.0.1:" + std::to_string(port)},
                    &side_err);
  ::setenv("PATH", path.c_str(), 1);
  ::unsetenv("TMPDIR");
  ASSERT_EQ(side.first, cli::kExitOk) << side_err;
  const auto imports = fs_.ReadFile(dir_.File("enroot.log"), 1 << 20);
  ASSERT_TRUE(imports);
  EXPECT_EQ(std::ranges::count(*imports, '\n'), 2) << *imports;
  EXPECT_NE(imports->find("docker://hello-world"), std::string::npos) << *imports;
  // Each node's image in a folder made for it, removed with the image after.
  EXPECT_NE(imports->find(scratch + "/cmax-audit-enroot-"), std::string::npos) << *imports;
  EXPECT_NE(imports->find("/hello-world.sqsh docker://hello-world"), std::string::npos) << *imports;
  const auto left = fs_.ListDir(scratch);
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty()) << "image files or folders left behind: " << left->size();
  const int accepted = testing::AcceptWaiting(listener);
  ::close(listener);
  EXPECT_EQ(accepted, 2);
  std::map<std::string, std::string> side_status;
  const auto side_doc = nlohmann::json::parse(side.second);
  for (const auto& f : side_doc.at("findings")) {
    side_status[f.at("check_id").get<std::string>()] = f.at("status").get<std::string>();
  }
  EXPECT_EQ(side_status["networking.outbound-internet"], "WARN");
  EXPECT_EQ(side_status["containers.enroot-import"], "PASS");
  EXPECT_EQ(side_status["access.ssh-between-nodes"], "PASS");
  const auto logins = fs_.ReadFile(dir_.File("ssh.log"), 1 << 20);
  ASSERT_TRUE(logins);
  // gpu1 to gpu2 and gpu2 back to gpu1, in batch mode, writing no host key.
  EXPECT_EQ(std::ranges::count(*logins, '\n'), 2) << *logins;
  for (const char* want :
       {"BatchMode=yes", "StrictHostKeyChecking=yes", "UpdateHostKeys=no", "CheckHostIP=no",
        "ControlPath=none", "-- gpu2 hostname", "-- gpu1 hostname"}) {
    EXPECT_NE(logins->find(want), std::string::npos) << want << " in " << *logins;
  }
  EXPECT_NE(side_err.find("logged in with ssh to the next node of the job (hostname) on 2 "
                          "node(s)"),
            std::string::npos)
      << side_err;
  EXPECT_NE(side_err.find("; side effects taken: "), std::string::npos) << side_err;
  EXPECT_NE(side_err.find("opened one TCP connection to 127.0.0.1:" + std::to_string(port) +
                          " (nothing sent) on 2 node(s)"),
            std::string::npos)
      << side_err;

  // Without a terminal and without --yes nothing runs on the nodes and no run is recorded.
  ASSERT_NE(std::freopen("/dev/null", "r", stdin), nullptr);
  std::ostringstream refused_out;
  std::ostringstream refused_err;
  EXPECT_EQ(cli::RunCli(
                {"audit", "--slurm", "--db", dir_.File("refused.db"), "--remote-cmax", CMAX_BINARY},
                refused_out, refused_err),
            cli::kExitUsage);
  EXPECT_NE(refused_err.str().find("--yes is needed"), std::string::npos) << refused_err.str();
  EXPECT_FALSE(fs_.Exists(dir_.File("refused.db")));

  // A node past its own deadline says so (a probe that hangs: an nvcc that sleeps); a step past
  // the budget is stopped and its nodes are UNKNOWN with that reason.
  std::filesystem::create_directories(dir_.File("slow"));
  ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("slow/nvcc"), "#!/bin/sh\nexec sleep 30\n", 0755));
  const std::string slow_node = dir_.File("slow-node");
  ASSERT_TRUE(fs_.WriteFileAtomic(
      slow_node,
      "#!/bin/sh\nPATH=" + dir_.File("slow") + ":$PATH exec " + CMAX_BINARY + " \"$@\"\n", 0755));
  auto late =
      audit({"--exit-zero", "-w", "gpu1", "--remote-cmax", slow_node, "--node-timeout", "0.5"});
  ASSERT_EQ(late.first, cli::kExitOk);
  auto late_doc = nlohmann::json::parse(late.second)["evidence"]["audit.coverage"];
  EXPECT_NE(late_doc["unreachable"]["gpu1"].get<std::string>().find("deadline of 0.5 s"),
            std::string::npos)
      << late_doc;
  const std::string hung = dir_.File("hung-node");
  ASSERT_TRUE(fs_.WriteFileAtomic(hung, "#!/bin/sh\nexec sleep 60\n", 0755));
  auto over = audit({"--exit-zero", "-w", "gpu[1-2]", "--remote-cmax", hung, "--budget", "2",
                     "--node-timeout", "1"});
  ASSERT_EQ(over.first, cli::kExitOk);
  auto over_doc = nlohmann::json::parse(over.second)["evidence"]["audit.coverage"];
  EXPECT_EQ(over_doc["answered"], 0);
  EXPECT_NE(over_doc["unreachable"]["gpu2"].get<std::string>().find("budget of 2 s"),
            std::string::npos)
      << over_doc;
  int slurmd = 0;
  for (const Daemon& d : up->state.daemons) {
    if (d.name == "slurmd-gpu3") slurmd = d.pid;
  }
  ASSERT_GT(slurmd, 0);
  ASSERT_EQ(::kill(slurmd, SIGKILL), 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return !sys::ProcessAlive(slurmd); }, 10s));
  auto [code2, text2] = audit({}, &err);
  EXPECT_NE(code2, cli::kExitOk) << "gpu3's UNKNOWN checks fail the run: " << err;
  doc = nlohmann::json::parse(text2);
  const auto& coverage = doc["evidence"]["audit.coverage"];
  EXPECT_EQ(coverage["answered"], 4) << coverage;
  ASSERT_TRUE(coverage["unreachable"].contains("gpu3")) << coverage;
  EXPECT_FALSE(coverage["unreachable"]["gpu3"].get<std::string>().empty());
  bool unknown_somewhere = false;
  for (const auto& [check, statuses] : doc["evidence"]["audit.per_node"].items()) {
    if (statuses.contains("UNKNOWN")) {
      unknown_somewhere = unknown_somewhere || std::ranges::count(statuses["UNKNOWN"], "gpu3") > 0;
    }
  }
  EXPECT_TRUE(unknown_somewhere) << doc["evidence"]["audit.per_node"].dump();
  EXPECT_NE(err.find("UNKNOWN for gpu3"), std::string::npos) << err;

  // The controller is down: every check is UNKNOWN, with the reason, and the run is recorded.
  ASSERT_TRUE(Down(spec_.dir, ctx_));
  auto [code3, text3] = audit({});
  EXPECT_EQ(code3, cli::kExitError) << "UNKNOWN and no FAIL";
  doc = nlohmann::json::parse(text3);
  for (const auto& f : doc["findings"]) {
    if (f["status"] == "SKIP" || f["status"] == "ATTEST") continue;  // neither reads a node
    EXPECT_EQ(f["status"], "UNKNOWN") << f.dump();
    EXPECT_NE(f["message"].get<std::string>().find("Slurm controller did not answer"),
              std::string::npos)
        << f.dump();
  }
  ::unsetenv("SLURM_CONF");
}

}  // namespace
}  // namespace cmax::lab
