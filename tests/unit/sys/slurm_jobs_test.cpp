#include "sys/slurm_jobs.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {
namespace {

TEST(SqueueJobNodes, EachJobWithItsNodesExpanded) {
  auto jobs = ParseSqueueJobNodes(
      "1234|gpu[1-2]\n"
      "  77|gpu7\r\n"
      "\n"
      "9|\n");  // a job being configured may have no node yet
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 3U);
  EXPECT_EQ((*jobs)[0].job, "1234");
  EXPECT_EQ((*jobs)[0].nodes, (std::vector<std::string>{"gpu1", "gpu2"}));
  EXPECT_EQ((*jobs)[1].job, "77");
  EXPECT_EQ((*jobs)[1].nodes, std::vector<std::string>{"gpu7"});
  EXPECT_TRUE((*jobs)[2].nodes.empty());
  EXPECT_TRUE(ParseSqueueJobNodes("")->empty());
}

TEST(SqueueJobNodes, RefusesWhatIsNotSqueuesOutput) {
  for (std::string_view text : {"1234 gpu1\n", "|gpu1\n", "12|gpu[1-\n", "12|gpu[2-1]\n"}) {
    EXPECT_FALSE(ParseSqueueJobNodes(text)) << text;
  }
}

const std::vector<SlurmJobPlacement> kJobs = {
    {.job = "100", .nodes = {"gpu1", "gpu2"}},  // the sweep's own allocation
    {.job = "200", .nodes = {"gpu2"}},         {.job = "300", .nodes = {"gpu3"}},
    {.job = "301", .nodes = {"gpu3"}},         {.job = "400", .nodes = {"10"}},
};

TEST(HostsInUse, OthersJobsNamedOwnAllocationNot) {
  const std::vector<HostInUse> in_use =
      HostsRunningOthersJobs(kJobs, {"gpu1", "gpu2", "gpu3", "gpu4"}, "100");
  ASSERT_EQ(in_use.size(), 2U);
  EXPECT_EQ(in_use[0].host, "gpu2");
  EXPECT_EQ(in_use[0].jobs, std::vector<std::string>{"200"});
  EXPECT_EQ(in_use[1].host, "gpu3");
  EXPECT_EQ(DescribeHostsInUse(in_use), "gpu2 (job 200), gpu3 (jobs 300, 301)");
  // Outside any allocation, the sweep's "own" job is someone's like any other.
  EXPECT_EQ(HostsRunningOthersJobs(kJobs, {"gpu1"}, "").size(), 1U);
  EXPECT_TRUE(HostsRunningOthersJobs(kJobs, {"gpu1", "gpu4"}, "100").empty());
  EXPECT_TRUE(HostsRunningOthersJobs({}, {"gpu1"}, "").empty());
}

TEST(HostsInUse, ADomainNameIsItsNodeAnAddressIsNot) {
  const auto in_use = HostsRunningOthersJobs(
      kJobs, {"gpu2.cluster.local", "10.0.0.5", "fe80::1", "gpu3", "gpu3"}, "100");
  ASSERT_EQ(in_use.size(), 2U);  // a host named twice is said once
  EXPECT_EQ(in_use[0].host, "gpu2.cluster.local");
  EXPECT_EQ(in_use[1].host, "gpu3");
}

TEST(HostsInUse, NamesAreMadeSafeForATerminal) {
  const auto in_use =
      HostsRunningOthersJobs({{.job = "1\x1b[2J", .nodes = {"gpu\n9"}}}, {"gpu\n9"}, "");
  ASSERT_EQ(in_use.size(), 1U);
  const std::string said = DescribeHostsInUse(in_use);
  EXPECT_EQ(said.find('\x1b'), std::string::npos) << said;
  EXPECT_EQ(said.find('\n'), std::string::npos) << said;
}

// gpu7, GPU7 and gpu7.cluster.local are one node, whichever side names it so; a node is also
// its host name and its address, as sinfo gives them; localhost may be several (a lab's).
TEST(HostsInUse, ANodeByAnyOfItsNames) {
  const std::vector<SlurmJobPlacement> jobs = {{.job = "5", .nodes = {"gpu7.cluster.local"}},
                                               {.job = "6", .nodes = {"n01"}},
                                               {.job = "8", .nodes = {"lab1", "lab2"}},
                                               {.job = "9", .nodes = {"n02"}}};
  const std::vector<SlurmNodeName> nodes = {
      {.name = "n01", .hostname = "compute-01.dc.example", .address = "10.1.0.1"},
      {.name = "lab1", .hostname = "localhost", .address = "127.0.0.1"},
      {.name = "lab2", .hostname = "localhost", .address = "127.0.0.1"},
      {.name = "n02", .hostname = "n02", .address = "N02-IB"}};
  const auto in_use = HostsRunningOthersJobs(
      jobs, {"GPU7", "compute-01", "10.1.0.1", "localhost", "10.1.0.2", "gpu8", "n02-ib"}, "",
      nodes);
  ASSERT_EQ(in_use.size(), 5U);
  EXPECT_EQ(in_use[4].host, "n02-ib");  // an address as a name: case aside
  EXPECT_EQ(in_use[0].host, "GPU7");
  EXPECT_EQ(in_use[1].host, "compute-01");
  EXPECT_EQ(in_use[1].jobs, std::vector<std::string>{"6"});
  EXPECT_EQ(in_use[2].host, "10.1.0.1");
  EXPECT_EQ(in_use[3].host, "localhost");
  EXPECT_EQ(in_use[3].jobs, std::vector<std::string>{"8"});  // one job on two of its nodes
  // Which hosts Slurm knows by none of its names: those it cannot speak for.
  EXPECT_EQ(HostsNamingNoNode({"n01", "10.1.0.2", "gpu8", "10.1.0.1", "gpu8"}, nodes),
            (std::vector<std::string>{"10.1.0.2", "gpu8"}));
}

TEST(SinfoNodeNames, NameHostnameAndAddress) {
  auto nodes = ParseSinfoNodeNames("n01|compute-01|10.1.0.1\nn02||\n\n");
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2U);
  EXPECT_EQ((*nodes)[0].hostname, "compute-01");
  EXPECT_EQ((*nodes)[0].address, "10.1.0.1");
  EXPECT_EQ((*nodes)[1].hostname, "n02");  // unset: the name, as Slurm takes it
  EXPECT_EQ((*nodes)[1].address, "n02");
  EXPECT_FALSE(ParseSinfoNodeNames("n01 compute-01\n"));
  EXPECT_FALSE(ParseSinfoNodeNames("|h|a\n"));
}

// The question goes to Slurm as asked whatever the caller's shell narrows: a SQUEUE_USERS=$USER
// would hide every other user's jobs. The stand-in squeue answers as squeue would.
TEST(SlurmJobsOnNodes, TheEnvironmentDoesNotNarrowTheQuestion) {
  testing::TempDir dir;
  LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("squeue"),
                                 "#!/bin/sh\n# A stand-in for squeue, which honours SQUEUE_USERS.\n"
                                 "[ -n \"$SQUEUE_USERS$SQUEUE_PARTITION\" ] && exit 0\n"
                                 "echo '41|gpu[1-2]'\n",
                                 0755));
  const ScopedEnv users("SQUEUE_USERS", "someone");
  const ScopedEnv partition("SQUEUE_PARTITION", "debug");
  PosixProcessRunner runner;
  auto jobs = SlurmJobsOnNodes(runner, dir.File("squeue"), std::chrono::seconds(10));
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1U);
  EXPECT_EQ((*jobs)[0].nodes, (std::vector<std::string>{"gpu1", "gpu2"}));
  ASSERT_TRUE(
      fs.WriteFileAtomic(dir.File("squeue"),
                         "#!/bin/sh\n# A stand-in for squeue, its controller away.\n"
                         "echo 'squeue: error: first' >&2\n"
                         "echo 'squeue: fatal: Could not establish a configuration source' >&2\n"
                         "exit 1\n",
                         0755));
  auto failed = SlurmJobsOnNodes(runner, dir.File("squeue"), std::chrono::seconds(10));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message,
            "squeue exit 1: squeue: fatal: Could not establish a configuration source");
}

// The one question, asked one way (stand-in squeue and sinfo): others' jobs on the hosts named
// by node name, host name or address, the caller's own job not among them; what Slurm could not
// say, a line each; no Slurm here, nothing said.
TEST(AskOthersJobsOn, JobsOnTheHostsByAnyNameAndWhatCouldNotBeSaid) {
  testing::TempDir dir;
  LocalFileSystem fs;
  const auto stand_in = [&](const std::string& name, const std::string& body) {
    ASSERT_TRUE(fs.WriteFileAtomic(dir.File(name), "#!/bin/sh\n" + body, 0755));
  };
  stand_in("squeue", "echo '41|gpu[1-2]'\necho '42|gpu3'\n");
  stand_in("sinfo", "echo 'gpu[1-3]|gpu1|gpu1'\necho 'gpu3|ip-10-0-1-7.internal|10.0.1.7'\n");
  PosixProcessRunner runner;
  OthersJobsQuestion question{
      .hosts = {"GPU1", "10.0.1.7", "ip-10-0-1-7", "login1"},
      .own_job = "41",
      .find_program = [&](const std::string& name) { return dir.File(name); }};
  OthersJobsAnswer answer = AskOthersJobsOn(question, runner);
  EXPECT_TRUE(answer.known);
  EXPECT_EQ(DescribeHostsInUse(answer.in_use), "10.0.1.7 (job 42), ip-10-0-1-7 (job 42)");
  EXPECT_EQ(answer.unchecked,
            (std::vector<std::string>{"no Slurm node by these names, so not checked for others' "
                                      "jobs: login1"}));

  question.own_job.clear();
  answer = AskOthersJobsOn(question, runner);
  EXPECT_EQ(DescribeHostsInUse(answer.in_use),
            "GPU1 (job 41), 10.0.1.7 (job 42), ip-10-0-1-7 (job 42)");

  stand_in("sinfo", "echo 'sinfo: error: Access denied' >&2\nexit 1\n");
  answer = AskOthersJobsOn(question, runner);
  EXPECT_EQ(DescribeHostsInUse(answer.in_use), "GPU1 (job 41)");
  EXPECT_EQ(answer.unchecked,
            (std::vector<std::string>{"sinfo exit 1: sinfo: error: Access denied: hosts matched "
                                      "to Slurm's nodes by node name only"}));

  stand_in("squeue", "echo 'squeue: error: Unable to contact slurm controller' >&2\nexit 1\n");
  answer = AskOthersJobsOn(question, runner);
  EXPECT_FALSE(answer.known);
  EXPECT_TRUE(answer.in_use.empty());
  EXPECT_EQ(answer.unchecked,
            (std::vector<std::string>{"not checked for others' Slurm jobs: squeue exit 1: squeue: "
                                      "error: Unable to contact slurm controller"}));

  question.find_program = [](const std::string&) { return std::string(); };
  answer = AskOthersJobsOn(question, runner);
  EXPECT_FALSE(answer.known);
  EXPECT_TRUE(answer.in_use.empty());
  EXPECT_TRUE(answer.unchecked.empty());
}

}  // namespace
}  // namespace cmax::sys
