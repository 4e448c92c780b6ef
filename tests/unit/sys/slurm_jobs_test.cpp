#include "sys/slurm_jobs.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cmax::sys
