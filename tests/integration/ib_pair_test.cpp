// Per-rail ib_write_bw between two hosts, run for real: the peer's server started through its
// launcher and this host's client connecting to it over TCP, one rail at a time, each under
// cmax's deadlines. The program is a stand-in for perftest's ib_write_bw (tests/standins:
// no InfiniBand is reachable here) that keeps perftest's command line, its server's banner,
// its one-client service and its output; the rates come from a sysfs tree the test writes.
// On loopback (the server here, with `env` as its launcher so that the peer has devices of its
// own) and, as root, across two network namespaces joined by the lab's bridge.
#include "active/ib_pair.hpp"

#include <unistd.h>

#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "net/netns_lab.hpp"
#include "support/free_port.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::active {
namespace {

using namespace std::chrono_literals;

class IbPairRun : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.File("bin"));
    std::filesystem::create_symlink(IB_WRITE_BW_STANDIN, dir_.File("bin/ib_write_bw"));
    for (const char* rail : {"mlx5_0", "mlx5_1"}) {
      const std::string ports = dir_.File(std::string("sys/class/infiniband/") + rail + "/ports/1");
      std::filesystem::create_directories(ports);
      ASSERT_TRUE(fs_.WriteFileAtomic(ports + "/rate", "400 Gb/sec (4X NDR)\n", 0644));
    }
    ::setenv("STANDIN_IB_DEVICES", "mlx5_0,mlx5_1", 1);
    // Stand-ins for Slurm's squeue and sinfo. squeue: every job and its nodes (%A|%N), those
    // of $STANDIN_SQUEUE_PLACED and the peer's, $STANDIN_SQUEUE_JOBS (none unless a test says
    // so); what it was asked goes to $STANDIN_SQUEUE_ASKED, and it fails as one that cannot reach
    // slurmctld when $STANDIN_SQUEUE_FAILS is set. sinfo: the peer is node peer1, reached at
    // 127.0.0.1 (as it is named here), beside gpu1 and gpu2.
    ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("bin/squeue"), R"(#!/bin/sh
[ -n "$STANDIN_SQUEUE_ASKED" ] && echo "$*" > "$STANDIN_SQUEUE_ASKED"
if [ -n "$STANDIN_SQUEUE_FAILS" ]; then
  echo "squeue: error: slurm_load_jobs error: Unable to contact slurm controller" >&2
  exit 1
fi
[ -n "$STANDIN_SQUEUE_PLACED" ] && echo "$STANDIN_SQUEUE_PLACED"
for id in $STANDIN_SQUEUE_JOBS; do echo "$id|peer1"; done
exit 0
)",
                                    0755));
    ASSERT_TRUE(fs_.WriteFileAtomic(dir_.File("bin/sinfo"), R"(#!/bin/sh
echo 'gpu[1-2]|gpu1|gpu1'
echo 'peer1|localhost|127.0.0.1'
)",
                                    0755));
  }
  void TearDown() override {
    for (const char* name :
         {"STANDIN_IB_DEVICES", "STANDIN_IB_GBITS", "STANDIN_IB_HANG", "STANDIN_SQUEUE_JOBS",
          "STANDIN_SQUEUE_ASKED", "STANDIN_SQUEUE_FAILS"}) {
      ::unsetenv(name);
    }
  }
  IbPairIo Io() {
    return {.tools = {.runner = &runner_,
                      .find_program =
                          [this](const std::string& name) {
                            return name == "ib_write_bw" || name == "squeue" || name == "sinfo"
                                       ? dir_.File("bin/" + name)
                                       : sys::FindProgram(name);
                          }},
            .read_file = [this](const std::string& path) -> std::optional<std::string> {
              auto text = fs_.ReadFile(path, 4096);
              return text ? std::optional(*text) : std::nullopt;
            },
            .list_dir =
                [this](const std::string& path) {
                  auto names = fs_.ListDir(path);
                  return names ? *names : std::vector<std::string>();
                }};
  }
  // The peer on loopback: its server here, its devices its own (`env` as the launcher).
  IbPairOptions Loopback(const std::string& peer_devices) {
    return {.peer = "127.0.0.1",
            .launch = {"env", "STANDIN_IB_DEVICES=" + peer_devices,
                       "PATH=" + dir_.File("bin") + ":/usr/bin:/bin"},
            .port = testing::FreePort(3),  // rail i on port + i
            .seconds = 1,
            .start_within = 10s,
            .sysfs = dir_.File("sys")};
  }
  static const RailResult* Rail(const IbPairVerdict& v, const std::string& name) {
    for (const RailResult& r : v.rails) {
      if (r.rail == name) return &r;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
};

TEST_F(IbPairRun, EveryRailOfThisHostIsTestedAgainstThePeerAndJudgedByItsPortsRate) {
  ::setenv("STANDIN_IB_GBITS", "mlx5_0=392.1,mlx5_1=180", 1);
  const IbPairOptions options = Loopback("mlx5_0,mlx5_1");
  const IbPairVerdict v = RunIbPairs(options, 20s, Io());
  ASSERT_EQ(v.rails.size(), 2U);  // the rails found in sysfs
  ASSERT_TRUE(Rail(v, "mlx5_0")->average_gbits) << Rail(v, "mlx5_0")->problem;
  EXPECT_DOUBLE_EQ(*Rail(v, "mlx5_0")->average_gbits, 392.1);
  EXPECT_EQ(Rail(v, "mlx5_0")->port_gbits, 400);
  ASSERT_TRUE(Rail(v, "mlx5_1")->average_gbits) << Rail(v, "mlx5_1")->problem;
  ASSERT_EQ(v.findings.size(), 1U);
  const Finding& f = v.findings[0];
  EXPECT_EQ(f.status, CheckStatus::kFail) << f.message;
  EXPECT_EQ(f.message,
            "ib_write_bw to 127.0.0.1 slow on mlx5_1 180.0 Gb/s (45 % of its 400.0 Gb/s port)");
  ASSERT_EQ(v.metrics.size(), 2U);
  EXPECT_EQ(v.metrics[1].labels.at("rail"), "mlx5_1");
  EXPECT_EQ(v.metrics[1].labels.at("peer"), "127.0.0.1");
  EXPECT_FALSE(v.second_look);
}

TEST_F(IbPairRun, ARailThePeerLacksAndAClientThatHangsAreUnknownNeverAFailure) {
  ::setenv("STANDIN_IB_HANG", "mlx5_1", 1);
  IbPairOptions options = Loopback("mlx5_0,mlx5_1");
  options.rails = {"mlx5_0", "mlx5_1", "mlx5_7"};
  // The peer has no mlx5_7; this host's mlx5_7 is not in the sysfs tree either.
  ::setenv("STANDIN_IB_DEVICES", "mlx5_0,mlx5_1,mlx5_7", 1);
  const auto begun = std::chrono::steady_clock::now();
  const IbPairVerdict v = RunIbPairs(options, 2s, Io());
  ASSERT_EQ(v.rails.size(), 3U);
  EXPECT_TRUE(Rail(v, "mlx5_0")->average_gbits) << Rail(v, "mlx5_0")->problem;
  const RailResult* hung = Rail(v, "mlx5_1");
  EXPECT_FALSE(hung->average_gbits);
  EXPECT_TRUE(hung->hung);
  EXPECT_NE(hung->problem.find("gave no result within 3 s and was killed"), std::string::npos)
      << hung->problem;
  EXPECT_TRUE(v.second_look);
  const RailResult* missing = Rail(v, "mlx5_7");
  EXPECT_FALSE(missing->average_gbits);
  EXPECT_NE(missing->problem.find("the server on 127.0.0.1 ended (exit 1): IB device mlx5_7 not "
                                  "found"),
            std::string::npos)
      << missing->problem;
  ASSERT_EQ(v.findings.size(), 1U);
  EXPECT_EQ(v.findings[0].status, CheckStatus::kUnknown) << v.findings[0].message;
  // The hang cost its deadline, not the server's: the next rail did not wait for it.
  EXPECT_LT(std::chrono::steady_clock::now() - begun, 20s);
}

TEST_F(IbPairRun, WithoutIbWriteBwHereOrAnyRailNothingRuns) {
  IbPairIo io = Io();
  io.tools.find_program = [](const std::string&) { return std::string(); };
  IbPairVerdict v = RunIbPairs(Loopback("mlx5_0"), 2s, io);
  ASSERT_EQ(v.findings.size(), 1U);
  EXPECT_EQ(v.findings[0].status, CheckStatus::kSkip);
  EXPECT_EQ(v.findings[0].message, "ib_write_bw (perftest) is not on PATH: not run");
  IbPairOptions none = Loopback("mlx5_0");
  none.sysfs = dir_.File("no-sys");
  v = RunIbPairs(none, 2s, Io());
  ASSERT_EQ(v.findings.size(), 1U);
  EXPECT_EQ(v.findings[0].status, CheckStatus::kSkip);
  EXPECT_TRUE(v.rails.empty());
}

// A peer that Slurm says runs someone else's job is left alone; this node's own job there (a
// pair's one job) is not someone else's; --force-peer tests it anyway. A Slurm that cannot say does
// not stop the test, and the finding says it ran without knowing.
TEST_F(IbPairRun, APeerThatRunsOthersJobsIsLeftAloneUnlessForced) {
  ::setenv("STANDIN_IB_GBITS", "mlx5_0=392.1", 1);
  ::setenv("STANDIN_SQUEUE_JOBS", "4242 777", 1);
  ::setenv("STANDIN_SQUEUE_ASKED", dir_.File("asked").c_str(), 1);
  IbPairOptions options = Loopback("mlx5_0");
  options.rails = {"mlx5_0"};
  options.own_job = "777";
  IbPairVerdict v = RunIbPairs(options, 20s, Io());
  ASSERT_EQ(v.findings.size(), 1U);
  EXPECT_EQ(v.findings[0].status, CheckStatus::kSkip);
  EXPECT_EQ(v.findings[0].message,
            "others' Slurm jobs run on 127.0.0.1 (job 4242), whose traffic the test would "
            "disturb: not run (--force-peer tests its rails)");
  EXPECT_TRUE(v.rails.empty());
  EXPECT_EQ(fs_.ReadFile(dir_.File("asked"), 4096).value(),
            "-a --local -h -t RUNNING,CONFIGURING,SUSPENDED,STOPPED,COMPLETING -o %A|%N\n");

  ::setenv("STANDIN_SQUEUE_JOBS", "777", 1);  // only this node's own job
  v = RunIbPairs(options, 20s, Io());
  ASSERT_EQ(v.rails.size(), 1U);
  EXPECT_TRUE(v.rails[0].average_gbits) << v.rails[0].problem;

  ::setenv("STANDIN_SQUEUE_JOBS", "4242", 1);
  options.force = true;
  v = RunIbPairs(options, 20s, Io());
  ASSERT_EQ(v.rails.size(), 1U);
  EXPECT_TRUE(v.rails[0].average_gbits) << v.rails[0].problem;

  options.force = false;
  ::setenv("STANDIN_SQUEUE_FAILS", "1", 1);
  v = RunIbPairs(options, 20s, Io());
  ASSERT_EQ(v.rails.size(), 1U);
  EXPECT_TRUE(v.rails[0].average_gbits) << v.rails[0].problem;
  ASSERT_EQ(v.findings.size(), 1U);
  EXPECT_NE(v.findings[0].message.find(
                "(tested without knowing all of what runs on 127.0.0.1: not checked for others' "
                "Slurm jobs: squeue exit 1: squeue: error: slurm_load_jobs error"),
            std::string::npos)
      << v.findings[0].message;
}

// `cmax health --active --peer` end to end, the real binary: no GPU here (NVML cannot load), so
// the GPU checks skip, and the rails to the peer still run: a node's adapters need no GPU.
TEST_F(IbPairRun, TheCommandTestsTheRailsToItsPeer) {
  const std::string bin_path = "PATH=" + dir_.File("bin") + ":/usr/bin:/bin";
  // The command as gpu1 runs it, with `flag` (or none) and a setting for the stand-ins.
  const auto command = [&](const std::string& flag, const std::string& setting) {
    std::vector<std::string> argv = {CMAX_BINARY,
                                     "--db",
                                     dir_.File("cmax.db"),
                                     "health",
                                     "--active",
                                     "--nvml-lib",
                                     dir_.File("no-libnvidia-ml.so"),
                                     "--peer",
                                     "127.0.0.1",
                                     "--peer-launch",
                                     "env STANDIN_IB_DEVICES=mlx5_0 " + bin_path,
                                     "--rails",
                                     "mlx5_0",
                                     "--ib-seconds",
                                     "1",
                                     "--ib-port",
                                     std::to_string(testing::FreePort()),
                                     "--node",
                                     "gpu1",
                                     "--json"};
    if (!flag.empty()) argv.push_back(flag);
    return runner_.Run(
        {.argv = argv,
         // Not in a Slurm job, whatever the test runs in: ssh's launcher.
         .env_add = {bin_path, "STANDIN_IB_GBITS=mlx5_0=391.5", setting, "SLURM_JOB_ID"},
         .timeout = 60s});
  };
  const auto ran = command("", "STANDIN_NOTHING=1");
  ASSERT_TRUE(ran) << ran.error().message;
  const auto report = nlohmann::json::parse(ran->stdout_text, nullptr, false);
  ASSERT_TRUE(report.is_object()) << ran->stdout_text << ran->stderr_text;
  bool measured = false;
  for (const auto& m : report["metrics"]) {
    measured = measured || (m["name"] == "active.ib_write_bw_gbits" && m["value"] == 391.5 &&
                            m["labels"]["rail"] == "mlx5_0");
  }
  EXPECT_TRUE(measured) << ran->stdout_text;
  // This machine's /sys has no mlx5_0 to give the port's rate: the figure is kept, not judged.
  std::string message;
  for (const auto& f : report["findings"]) {
    if (f["check_id"] == "active.ib-write-bw") message = f["message"];
  }
  EXPECT_EQ(message,
            "ib_write_bw to 127.0.0.1: no figure to judge for mlx5_0: 391.5 Gb/s measured, but "
            "its port's rate cannot be read");
  EXPECT_EQ(ran->exit_code, 3) << ran->stderr_text;  // UNKNOWN: a check could not be judged

  // --force is for this node's GPUs: a peer running others' jobs is left alone; --force-peer is
  // the word for that.
  std::string message_of_rails;
  const auto peer_run = [&](const std::string& flag, const std::string& jobs) {
    auto r = command(flag, jobs);
    EXPECT_TRUE(r) << r.error().message;
    std::string status;
    for (const auto& f : nlohmann::json::parse(r ? r->stdout_text : "{}", nullptr, false)
                             .value("findings", nlohmann::json::array())) {
      if (f["check_id"] == "active.ib-write-bw") {
        status = f["status"];
        message_of_rails = f["message"];
      }
    }
    return status;
  };
  EXPECT_EQ(peer_run("--force", "STANDIN_SQUEUE_JOBS=4242"), "SKIP");
  EXPECT_NE(peer_run("--force-peer", "STANDIN_SQUEUE_JOBS=4242"), "SKIP");
  // This node without GPUs: whether it has a tenant, whose traffic the rails would disturb, is
  // Slurm's word alone; --force is the word for this node.
  EXPECT_EQ(peer_run("--force-peer", "STANDIN_SQUEUE_PLACED=777|gpu[1-2]"), "SKIP");
  EXPECT_EQ(message_of_rails,
            "others' Slurm jobs run on gpu1 (job 777); --force runs the checks beside them");
  EXPECT_NE(peer_run("--force", "STANDIN_SQUEUE_PLACED=777|gpu[1-2]"), "SKIP");
  // The job this runs for, told (an ssh session that pam_slurm_adopt put in job 777 has no
  // $SLURM_JOB_ID), is not another's.
  EXPECT_EQ(peer_run("--own-job=777", "STANDIN_SQUEUE_PLACED=777|gpu[1-2]"), "UNKNOWN");
  EXPECT_EQ(message_of_rails.rfind("ib_write_bw to 127.0.0.1: no figure to judge", 0), 0U)
      << message_of_rails;

  // A launcher whose quote is not closed is a usage error, said before anything runs.
  const auto unclosed =
      runner_.Run({.argv = {CMAX_BINARY, "--db", dir_.File("cmax.db"), "health", "--active",
                            "--nvml-lib", dir_.File("no-libnvidia-ml.so"), "--peer", "127.0.0.1",
                            "--peer-launch", "ssh -o 'ProxyCommand {peer}"},
                   .timeout = 60s});
  ASSERT_TRUE(unclosed) << unclosed.error().message;
  EXPECT_EQ(unclosed->exit_code, 2) << unclosed->stderr_text;
  EXPECT_NE(unclosed->stderr_text.find("--peer-launch: a quote is not closed"), std::string::npos)
      << unclosed->stderr_text;
}

// Two hosts for real: the peer a network namespace of the lab, its server started there by `ip
// netns exec`, the client here connecting to its address across the veth and the bridge.
TEST_F(IbPairRun, AcrossTwoNetworkNamespaces) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  auto plan = net::PlanNetnsLab("ib" + std::to_string(getpid() % 1000), 1);
  ASSERT_TRUE(plan) << plan.error().message;
  net::NetnsLab lab(*plan, runner_);
  auto up = lab.Up(fs_);
  ASSERT_TRUE(up) << up.error().message;
  const net::NetnsHost& peer = lab.Plan().hosts.at(0);
  ::setenv("STANDIN_IB_GBITS", "mlx5_0=391,mlx5_1=389.5", 1);
  const IbPairOptions options{.peer = peer.netns,
                              .address = peer.address,
                              .launch = {"ip", "netns", "exec", "{peer}", "env",
                                         "PATH=" + dir_.File("bin") + ":/usr/bin:/bin"},
                              .port = 18515,
                              .seconds = 1,
                              .start_within = 10s,
                              .sysfs = dir_.File("sys")};
  const IbPairVerdict v = RunIbPairs(options, 20s, Io());
  ASSERT_EQ(v.findings.size(), 1U);
  EXPECT_EQ(v.findings[0].status, CheckStatus::kPass) << v.findings[0].message;
  ASSERT_EQ(v.rails.size(), 2U);
  EXPECT_DOUBLE_EQ(v.rails[1].average_gbits.value_or(0), 389.5);
  // The client reached the peer's own address: nothing listens on it from this namespace.
  EXPECT_NE(peer.address, "127.0.0.1");
}

}  // namespace
}  // namespace cmax::active
