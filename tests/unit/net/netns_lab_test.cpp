// The namespace lab's plan and mpirun's command line, as values: names within Linux's 15
// characters, addresses from 198.18.0.0/15 only, the commands in order, the agent's mapping.
#include "net/netns_lab.hpp"

#include <algorithm>
#include <gtest/gtest.h>

#include "core/strings.hpp"
#include "net/mpi_launch.hpp"
#include "sys/process_runner.hpp"

namespace cmax::net {
namespace {

TEST(NetnsLabPlan, NamesAndAddresses) {
  const auto plan = PlanNetnsLab("t42", 200);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->bridge, "cxt42br");
  EXPECT_EQ(plan->hosts.size(), 200U);
  const NetnsHost& last = plan->hosts.back();
  EXPECT_EQ(last.name, "h200");
  EXPECT_EQ(last.netns, "cmax-t42-h200");
  EXPECT_EQ(last.address, "198.18.0.200");
  EXPECT_EQ(last.host_veth, "cxt42v200");
  EXPECT_LE(last.host_veth.size(), 15U);  // IFNAMSIZ less its terminator
  const auto longest = PlanNetnsLab("s99999", 200);
  ASSERT_TRUE(longest);
  EXPECT_LE(longest->hosts.back().host_veth.size(), 15U);
  EXPECT_LE(longest->bridge.size(), 15U);
  for (const auto& [tag, hosts] :
       {std::pair{"", 2}, {"abcdefg", 2}, {"A1", 2}, {"a-b", 2}, {"ok", 0}, {"ok", 201}}) {
    EXPECT_FALSE(PlanNetnsLab(tag, hosts)) << tag << " " << hosts;
  }
}

TEST(NetnsLabPlan, ABlockMovesEveryAddress) {
  const auto plan = PlanNetnsLab("x", 2, 257);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->subnet, "198.19.1.0/24");
  EXPECT_EQ(plan->bridge_address, "198.19.1.254");
  EXPECT_EQ(plan->hosts[1].address, "198.19.1.2");
  EXPECT_EQ(PlanNetnsLab("x", 2, 0)->subnet, "198.18.0.0/24");
  EXPECT_EQ(PlanNetnsLab("x", 2, 511)->subnet, "198.19.255.0/24");
  EXPECT_FALSE(PlanNetnsLab("x", 2, -1));
  EXPECT_FALSE(PlanNetnsLab("x", 2, 512));
}

// What `ip -o -4 addr show` and `ip -4 route show table all` print takes blocks: the CI
// sandbox's own bridge on 198.18.0.0/24, a leftover lab, wider prefixes, host routes.
TEST(NetnsLabPlan, TheFirstFreeBlockIsTaken) {
  EXPECT_EQ(FreeNetnsLabBlock(""), 0);
  EXPECT_EQ(FreeNetnsLabBlock("default via 192.0.2.1 dev eth0\n"
                              "192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2\n"
                              "198.17.255.0/24 dev x\n198.20.0.0/16 dev y\n"),
            0);
  // The sandbox of the CI run that this fixes: its bridge holds 198.18.0.0/24.
  EXPECT_EQ(FreeNetnsLabBlock("386: cxt733br    inet 198.18.0.254/24 scope global cxt733br\n"
                              "198.18.0.0/24 dev cxt733br proto kernel scope link src "
                              "198.18.0.254\n"),
            1);
  EXPECT_EQ(FreeNetnsLabBlock("local 198.18.1.7 dev lo table local\n198.18.0.0/24 dev a\n"), 2);
  EXPECT_EQ(FreeNetnsLabBlock("198.18.0.0/23 dev a\n"), 2);
  EXPECT_EQ(FreeNetnsLabBlock("198.18.0.0/16 dev a\n"), 256);
  EXPECT_EQ(FreeNetnsLabBlock("198.18.5.0/24 dev a\n"), 0);
  // Words that only look like addresses take nothing.
  EXPECT_EQ(FreeNetnsLabBlock("198.18.0 198.18.0.0.1 198.18.0.256 198.18.0.0/33 1.2.3.4/\n"), 0);
  for (const char* all :
       {"198.18.0.0/15 dev a\n", "198.0.0.0/8 via 10.0.0.1\n", "0.0.0.0/0 dev b\n"}) {
    const auto none = FreeNetnsLabBlock(all);
    ASSERT_FALSE(none) << all;
    EXPECT_NE(none.error().message.find("in use here already"), std::string::npos);
  }
}

TEST(NetnsLabPlan, CommandsUpDownAndTheSlowLink) {
  const auto plan = PlanNetnsLab("x", 2);
  ASSERT_TRUE(plan);
  const auto up = NetnsUpCommands(*plan);
  ASSERT_EQ(up.size(), 3U + 2 * 6);
  EXPECT_EQ(Join(up[0], " "), "ip link add cxxbr type bridge");
  EXPECT_EQ(Join(up[1], " "), "ip addr add 198.18.0.254/24 dev cxxbr");
  EXPECT_EQ(Join(up[4], " "), "ip link add cxxv1 type veth peer name eth0 netns cmax-x-h1");
  EXPECT_EQ(Join(up[6], " "), "ip -n cmax-x-h1 addr add 198.18.0.1/24 dev eth0");
  const auto down = NetnsDownCommands(*plan);
  ASSERT_EQ(down.size(), 5U);
  EXPECT_EQ(Join(down[0], " "), "ip link delete cxxv1");
  EXPECT_EQ(Join(down[2], " "), "ip netns delete cmax-x-h1");
  EXPECT_EQ(Join(down.back(), " "), "ip link delete cxxbr");
  const auto slow = SlowLinkCommands(plan->hosts[1], "200mbit");
  ASSERT_EQ(slow.size(), 2U);
  EXPECT_EQ(Join(slow[0], " "),
            "tc qdisc replace dev cxxv2 root tbf rate 200mbit burst 64kb latency 100ms");
  EXPECT_EQ(Join(slow[1], " "),
            "ip netns exec cmax-x-h2 tc qdisc replace dev eth0 root tbf rate "
            "200mbit burst 64kb latency 100ms");
}

TEST(NetnsLabPlan, TheAgentMapsEachAddressToItsNamespace) {
  const auto plan = PlanNetnsLab("x", 2);
  ASSERT_TRUE(plan);
  const std::string script = RshAgentScript(*plan);
  EXPECT_TRUE(script.starts_with("#!/bin/sh\n"));
  EXPECT_NE(script.find("  198.18.0.2) ns=cmax-x-h2; name=h2 ;;\n"), std::string::npos) << script;
  EXPECT_NE(script.find("exec ip netns exec \"$ns\" env CMAX_MPI_PERF_HOST=\"$name\""),
            std::string::npos);
  EXPECT_NE(script.find("no host $host"), std::string::npos);
}

// A process's tag names it, whatever its id: 12345 and 112345 (which the old pid % 100000 gave
// one tag, so that one lab's leftover clean-up took the other down) are two.
TEST(NetnsLabTag, EachProcessItsOwnAndReadBack) {
  EXPECT_EQ(NetnsTagOf(12345), "s9ix");
  EXPECT_NE(NetnsTagOf(12345), NetnsTagOf(112345));
  EXPECT_EQ(NetnsTagOf(4194304), "s2hwcg");  // Linux's largest pid_max: within 6 characters
  for (int pid : {1, 35, 36, 12345, 112345, 4194304, 60466175}) {
    EXPECT_EQ(NetnsTagProcess(NetnsTagOf(pid)), pid) << pid;
    EXPECT_TRUE(PlanNetnsLab(NetnsTagOf(pid), 200)) << pid;
  }
  for (const char* other : {"t405", "s", "s0", "s-1", "sABC", "s1234567", "ib42"}) {
    EXPECT_FALSE(NetnsTagProcess(other)) << other;
  }
}

TEST(NetnsLabTag, LeftoversAreTheLabsOfProcessesThatAreGone) {
  const std::string listed =
      "cmax-s9ix-h2 (id: 1)\ncmax-s9ix-h1 (id: 0)\ncmax-s9iy-h1\ncmax-t405-h1 (id: 4)\n"
      "cmax-s9iz-h3\nmine\ncmax-s9iz-hx\n";
  const auto gone = NetnsLeftovers(listed, [](int pid) { return pid == 12346; });  // s9iy lives
  ASSERT_EQ(gone.size(), 2U);
  EXPECT_EQ(gone[0].tag, "s9ix");
  EXPECT_EQ(gone[0].hosts, 2);
  EXPECT_EQ(gone[1].tag, "s9iz");
  EXPECT_EQ(gone[1].hosts, 3);
  EXPECT_TRUE(NetnsLeftovers("", [](int) { return false; }).empty());
}

// What a second Ctrl-C says it leaves: a line a person can paste to remove exactly this lab.
TEST(NetnsLabPlan, WhatItLeavesBehindIsSaidWithItsRemoval) {
  const auto plan = PlanNetnsLab("x", 2, 3);
  ASSERT_TRUE(plan);
  EXPECT_EQ(NetnsLeftBehind(*plan),
            "the namespace lab x (2 hosts, bridge cxxbr, 198.18.3.0/24): ip link delete cxxbr; "
            "for ns in $(ip netns list | grep -o '^cmax-x-h[0-9]*'); do ip netns delete "
            "\"$ns\"; done; rm -f " +
                NetnsAgentPath("x"));
}

TEST(MpiLaunch, OneRankPerHostUnboundOverTheLabsNetwork) {
  const MpiLaunch launch{
      .perf = "/b/cmax-mpi-perf", .agent = "/l/agent.sh", .subnet = "198.18.0.0/24"};
  EXPECT_EQ(Join(MpiRunArgv(launch, {"198.18.0.1", "198.18.0.3"}), " "),
            "mpirun --host 198.18.0.1,198.18.0.3 -np 2 --bind-to none --mca plm_rsh_agent "
            "/l/agent.sh --mca oob_tcp_if_include 198.18.0.0/24 --mca btl tcp,self --mca "
            "btl_tcp_if_include 198.18.0.0/24 --mca mpi_yield_when_idle 1 --mca routed direct "
            "/b/cmax-mpi-perf "
            "all_reduce -b 1M -e 16M -n 5 -w 1");
  EXPECT_EQ(Join(MpiRunArgv({.perf = "p"}, {"a"}), " "),
            "mpirun --host a -np 1 --bind-to none p all_reduce -b 1M -e 16M -n 5 -w 1");
  // Settings go to the ranks by name; a value may hold '=' and a name alone stays itself.
  EXPECT_EQ(Join(EnvNames({"A=1", "B=x=y", "C=", "D"}), " "), "A B C D");
}

// A launcher that dies of a signal `crashes` times, each before any rank printed, then runs
// (or, with `printed`, prints a rank's table header before each death).
class CrashingLauncher final : public sys::ProcessRunner {
 public:
  CrashingLauncher(int crashes, bool printed) : crashes_(crashes), printed_(printed) {}
  Result<sys::ProcessResult> Run(const sys::ProcessSpec& /*spec*/) override {
    ++starts;
    sys::ProcessResult r;
    if (crashes_-- > 0) {
      r.exit_code = 139;
      r.stdout_text = printed_ ? "# Collective test starting: all_reduce_perf\n" : "";
      r.stderr_text = "[vm:07646] *** Process received signal ***\n";
      return r;
    }
    r.exit_code = 0;
    r.stdout_text = "#  Rank  0 Group  0 Pid 1 on h1\n";
    return r;
  }
  int starts = 0;

 private:
  int crashes_;
  bool printed_;
};

// mpirun crashing as it starts its daemons in namespace hosts is started again, up to
// kLauncherCrashRetries times; a crash after a rank printed is the run's answer, not retried.
TEST(MpiLaunch, ALauncherThatCrashesBeforeAnyRankPrintedIsStartedAgain) {
  for (int crashes = 0; crashes <= kLauncherCrashRetries + 1; ++crashes) {
    CrashingLauncher launcher(crashes, false);
    int retried = 0;
    auto r = RunLauncher({.argv = {"mpirun"}}, kLauncherCrashRetries, launcher, retried);
    ASSERT_TRUE(r);
    const bool ran = crashes <= kLauncherCrashRetries;
    EXPECT_EQ(r->exit_code, ran ? 0 : 139) << crashes;
    EXPECT_EQ(retried, std::min(crashes, kLauncherCrashRetries)) << crashes;
    EXPECT_EQ(launcher.starts, std::min(crashes, kLauncherCrashRetries) + 1) << crashes;
  }
  CrashingLauncher printed(1, true);
  int retried = 0;
  auto r = RunLauncher({.argv = {"mpirun"}}, kLauncherCrashRetries, printed, retried);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 139);
  EXPECT_EQ(retried, 0);
  EXPECT_EQ(printed.starts, 1);
}

}  // namespace
}  // namespace cmax::net
