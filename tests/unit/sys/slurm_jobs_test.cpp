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

}  // namespace
}  // namespace cmax::sys
