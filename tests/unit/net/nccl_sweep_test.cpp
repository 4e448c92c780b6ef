// The sweep's plan as values: node counts by powers of two, each collective and variant, the
// command lines for mpirun and srun, the variants' environments, and every plan refused.
#include "net/nccl_sweep.hpp"

#include <gtest/gtest.h>

#include "core/strings.hpp"
#include "net/mpi_launch.hpp"

namespace cmax::net {
namespace {

NcclSweepOptions NcclTests(int hosts) {
  NcclSweepOptions o;
  for (int i = 1; i <= hosts; ++i) o.hosts.push_back("n" + std::to_string(i));
  o.binaries = {{"all_reduce", "/nt/all_reduce_perf_mpi"}, {"alltoall", "/nt/alltoall_perf"}};
  return o;
}

TEST(NcclSweepPlan, PowersOfTwoThenAllForEachCollective) {
  const auto steps = PlanNcclSweep(NcclTests(6));
  ASSERT_TRUE(steps) << steps.error().message;
  std::vector<std::string> seen;
  for (const NcclSweepStep& s : *steps) {
    seen.push_back(s.collective + "/" + std::to_string(s.nodes.size()));
  }
  EXPECT_EQ(Join(seen, " "),
            "all_reduce/1 all_reduce/2 all_reduce/4 all_reduce/6 alltoall/1 alltoall/2 "
            "alltoall/4 alltoall/6");
  const NcclSweepStep& two = (*steps)[1];
  EXPECT_EQ(two.log_name, "all_reduce-default-2n.log");
  EXPECT_EQ(Join(two.argv, " "),
            "mpirun --host n1:8,n2:8 -np 16 --bind-to none /nt/all_reduce_perf_mpi -b 8 -e 16G "
            "-f 2 -n 20 -w 5 -g 1");
  EXPECT_EQ(Join((*steps)[3].nodes, ","), "n1,n2,n3,n4,n5,n6");
}

TEST(NcclSweepPlan, SrunCarriesTheEnvironmentAndTheVariants) {
  NcclSweepOptions o = NcclTests(4);
  o.launcher = NcclLauncher::kSrun;
  o.collectives = {"all_reduce"};
  o.variants = {"default", "nvlink", "network", "no-nvls"};
  o.env = {"NCCL_DEBUG=INFO"};
  o.gpus_per_node = 4;
  const auto steps = PlanNcclSweep(o);
  ASSERT_TRUE(steps) << steps.error().message;
  // default 1,2,4; nvlink 1 only; network 1,2,4; no-nvls 1,2,4.
  ASSERT_EQ(steps->size(), 10U);
  const NcclSweepStep& first = steps->front();
  EXPECT_EQ(Join(first.argv, " "),
            "srun --mpi=pmix --nodes=1 --nodelist=n1 --ntasks-per-node=4 --kill-on-bad-exit=1 "
            "--export=ALL --gpus-per-node=4 /nt/all_reduce_perf_mpi -b 8 -e 16G -f 2 -n 20 -w 5 "
            "-g 1");
  EXPECT_EQ(Join(first.env_add, " "), "NCCL_DEBUG=INFO");
  EXPECT_EQ((*steps)[3].variant, "nvlink");
  EXPECT_EQ((*steps)[3].nodes.size(), 1U);
  EXPECT_EQ((*steps)[4].log_name, "all_reduce-network-1n.log");
  EXPECT_EQ(Join((*steps)[4].env_add, " "),
            "NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1");
  EXPECT_EQ(Join(steps->back().env_add, " "), "NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0");
}

TEST(NcclSweepPlan, MpirunPassesTheEnvironmentToEveryRankByName) {
  NcclSweepOptions o = NcclTests(2);
  o.collectives = {"alltoall"};
  o.node_counts = {2};
  o.env = {"NCCL_IB_HCA=mlx5_0"};
  o.variants = {"network"};
  const auto steps = PlanNcclSweep(o);
  ASSERT_TRUE(steps) << steps.error().message;
  ASSERT_EQ(steps->size(), 1U);
  EXPECT_EQ(Join(steps->front().argv, " "),
            "mpirun --host n1:8,n2:8 -np 16 --bind-to none -x NCCL_IB_HCA -x "
            "NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE /nt/alltoall_perf -b 8 -e 16G -f 2 -n 20 "
            "-w 5 -g 1");
  // The values reach mpirun through its environment, never its argv (`ps`, the recorded command).
  EXPECT_EQ(Join(steps->front().env_add, " "),
            "NCCL_IB_HCA=mlx5_0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 OMPI_ALLOW_RUN_AS_ROOT=1 "
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
}

// A user's setting of a name the variant sets gives way: with the name twice in a process's
// environment, getenv would read the first and undo the variant.
TEST(NcclSweepPlan, TheVariantsSettingsWinOverTheUsers) {
  NcclSweepOptions o = NcclTests(2);
  o.collectives = {"all_reduce"};
  o.node_counts = {2};
  o.variants = {"network"};
  o.env = {"NCCL_P2P_DISABLE=0", "NCCL_DEBUG=INFO"};
  o.launcher = NcclLauncher::kSrun;
  const auto steps = PlanNcclSweep(o);
  ASSERT_TRUE(steps) << steps.error().message;
  EXPECT_EQ(Join(steps->front().env_add, " "),
            "NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1");
}

TEST(NcclSweepPlan, TheStandInRunsOneRankPerHostFromTwoHosts) {
  NcclSweepOptions o;
  o.hosts = {"h1", "h2", "h3", "h4", "h5"};
  o.addresses = {{"h1", "198.18.0.1"}, {"h2", "198.18.0.2"}};
  o.cpu_perf = "/b/cmax-mpi-perf";
  o.agent = "/l/agent.sh";
  o.subnet = "198.18.0.0/24";
  o.min_bytes = "64K";
  o.max_bytes = "1M";
  const auto steps = PlanNcclSweep(o);
  ASSERT_TRUE(steps) << steps.error().message;
  ASSERT_EQ(steps->size(), 5U * 3);  // five collectives over 2, 4 and 5 hosts
  EXPECT_EQ(Join(steps->front().argv, " "),
            "mpirun --host 198.18.0.1,198.18.0.2 -np 2 --bind-to none --mca plm_rsh_agent "
            "/l/agent.sh --mca oob_tcp_if_include 198.18.0.0/24 --mca btl tcp,self --mca "
            "btl_tcp_if_include 198.18.0.0/24 --mca mpi_yield_when_idle 1 --mca routed direct "
            "/b/cmax-mpi-perf "
            "all_reduce -b 64K -e 1M -f 2 -n 20 "
            "-w 5");
  EXPECT_EQ(Join(steps->front().env_add, " "),
            "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  EXPECT_EQ(Join((*steps)[1].nodes, ","), "h1,h2,h3,h4");  // a node without an address: its name
  EXPECT_NE(Join((*steps)[1].argv, " ").find("--host 198.18.0.1,198.18.0.2,h3,h4 "),
            std::string::npos);
}

TEST(NcclSweepPlan, WhatCannotBePlannedIsRefused) {
  const auto refused = [](NcclSweepOptions o, const std::string& says) {
    const auto steps = PlanNcclSweep(o);
    ASSERT_FALSE(steps) << says;
    EXPECT_NE(steps.error().message.find(says), std::string::npos) << steps.error().message;
  };
  refused(NcclSweepOptions{.cpu_perf = "/p"}, "no hosts");
  refused(NcclSweepOptions{.hosts = {"a", "b"}}, "neither nccl-tests nor the CPU stand-in");
  refused(NcclSweepOptions{.hosts = {"a"}, .cpu_perf = "/p"}, "two nodes or more");
  NcclSweepOptions o = NcclTests(2);
  o.collectives = {"all_reduce", "all_reduce_perf"};
  refused(o, "unknown collective 'all_reduce_perf'");
  o.collectives = {"broadcast"};
  refused(o, "no nccl-tests binary for broadcast");
  o = NcclTests(2);
  o.variants = {"nvls"};
  refused(o, "unknown variant 'nvls'");
  o.variants = {};
  refused(o, "no variant");
  o = NcclTests(2);
  o.node_counts = {1, 4};
  refused(o, "4 nodes: the sweep has 1 to 2");
  o = NcclTests(2);
  o.hosts = {"n1", "n2,n3"};
  refused(o, "host 'n2,n3': a host name is letters, digits");
  o.hosts = {"n1", "n1"};
  refused(o, "host n1 is listed twice");
  o = NcclTests(2);
  o.node_counts = {2, 2};
  refused(o, "a node count is given twice");
  o.node_counts = {2};
  o.variants = {"nvlink"};
  refused(o, "variant nvlink runs on one node");
  o = NcclTests(2);
  o.srun_mpi = "pmix;rm";
  refused(o, "srun's MPI plugin 'pmix;rm' is not a plugin's name");
  NcclSweepOptions cpu{.hosts = {"a", "b"}, .cpu_perf = "/p"};
  cpu.collectives = {"sendrecv"};
  refused(cpu, "the CPU stand-in does not run sendrecv");
  cpu.collectives = {};
  cpu.variants = {"network"};
  refused(cpu, "variant network needs nccl-tests");
  cpu.variants = {"default"};
  cpu.node_counts = {1};
  refused(cpu, "1 nodes: the sweep has 2 to 2");
}

TEST(NcclSweepPlan, TheJsonFileWhereTheBinaryOffersOne) {
  EXPECT_TRUE(NcclTestsHelpOffersJson(
      "USAGE: all_reduce_perf\n\t[-J,--output_file <file>] \n\t[-I,--report_timestamps]"));
  EXPECT_FALSE(NcclTestsHelpOffersJson("USAGE: all_reduce_perf\n\t[-t,--nthreads <num threads>]"));
  NcclSweepOptions o = NcclTests(1);
  o.collectives = {"alltoall"};
  o.json_dir = "/logs";
  const auto steps = PlanNcclSweep(o);
  ASSERT_TRUE(steps) << steps.error().message;
  EXPECT_TRUE(
      Join(steps->front().argv, " ").ends_with(" -g 1 -J /logs/alltoall-default-1n.log.json"))
      << Join(steps->front().argv, " ");
}

TEST(NcclSweepPlan, HostfilesAsMpirunAndPeopleWriteThem) {
  EXPECT_EQ(Join(ParseHostfile("# the rack\nnode1 slots=8\n\n  node2\tslots=8 # spare\n"
                               "node3#x\n#node4\n"),
                 ","),
            "node1,node2,node3");
  EXPECT_TRUE(ParseHostfile("").empty());
}

TEST(LauncherWhy, TheCauseNotTheBanner) {
  EXPECT_EQ(LauncherWhy("ssh: Could not resolve hostname n9: Name or service not known\n"
                        "-----------------\nORTE was unable to reliably start one or more "
                        "daemons.\n"),
            "ssh: Could not resolve hostname n9: Name or service not known");
  EXPECT_EQ(LauncherWhy("[vm:1] plm:rsh: Warning: setpgid(2,2) failed in parent\n"
                        "srun: error: Unable to allocate resources: Invalid node name\n"),
            "srun: error: Unable to allocate resources: Invalid node name");
  EXPECT_EQ(LauncherWhy("-----\nsomething happened here\n-----\n"), "something happened here");
  EXPECT_EQ(LauncherWhy(""), "");
  // A terminal's escape and a broken byte reach no one's terminal.
  EXPECT_EQ(LauncherWhy("\x1b[31mbad \xff byte error\n"),
            "\xEF\xBF\xBD[31mbad \xEF\xBF\xBD byte error");
}

// What a request leaves unsaid comes from where it runs; what it says is kept.
TEST(PlaceNcclRequest, FillsOnlyWhatTheRequestLeavesUnsaid) {
  const WallTime now = WallTime{} + std::chrono::milliseconds(1764787212745);
  const NcclSweepPlace place{.cpu_perf = "/opt/cmax/bin/cmax-mpi-perf",
                             .db_path = "/var/lib/cmax/cmax.db",
                             .own_job = "77",
                             .now = now};
  NcclSweepRequest bare;
  PlaceNcclRequest(bare, "nccl-sweep", place);
  EXPECT_EQ(bare.sweep.cpu_perf, "/opt/cmax/bin/cmax-mpi-perf");
  EXPECT_EQ(bare.out_dir, NcclLogFolder("/var/lib/cmax/cmax.db", "nccl-sweep", now));
  EXPECT_EQ(bare.out_dir.rfind("/var/lib/cmax/nccl-sweep-", 0), 0U) << bare.out_dir;
  EXPECT_EQ(bare.own_job, "77");

  NcclSweepRequest said{.nccl_tests_dir = "/opt/nccl-tests/build", .out_dir = "/tmp/mine"};
  said.own_job = "5";
  NcclSweepPlace elsewhere = place;
  elsewhere.logs_dir = "/srv/logs";
  PlaceNcclRequest(said, "nccl-find", elsewhere);
  EXPECT_TRUE(said.sweep.cpu_perf.empty());  // nccl-tests runs, not the stand-in
  EXPECT_EQ(said.out_dir, "/tmp/mine");
  EXPECT_EQ(said.own_job, "5");
  NcclSweepRequest in_logs_dir;
  PlaceNcclRequest(in_logs_dir, "nccl-find", elsewhere);
  EXPECT_EQ(in_logs_dir.out_dir, NcclLogFolderIn("/srv/logs", "nccl-find", now));
  EXPECT_EQ(in_logs_dir.out_dir.rfind("/srv/logs/nccl-find-", 0), 0U) << in_logs_dir.out_dir;
}

}  // namespace
}  // namespace cmax::net
