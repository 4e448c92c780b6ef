// The hostile-input corpus for the endpoint's readers (tests/data/hostile/{prices,trace,prompts}):
// every file is refused with its reason, never taken in part or crashed on.
#include <algorithm>
#include <gtest/gtest.h>
#include <string>

#include "endpoint/usage.hpp"
#include "endpoint/workload.hpp"
#include "support/corpus.hpp"

namespace cmax::endpoint {
namespace {

void ExpectRefused(const testing::CorpusCase& c, const Error* error) {
  ASSERT_NE(error, nullptr) << c.name << " was taken";
  EXPECT_NE(error->message.find(c.error), std::string::npos)
      << c.name << ": " << error->message << "\n  expected: " << c.error;
}

TEST(HostileFiles, PriceTables) {
  for (const auto& c : testing::HostileCorpus("prices")) {
    auto prices = ParsePrices(c.input);
    ExpectRefused(c, prices ? nullptr : &prices.error());
  }
}

TEST(HostileFiles, Traces) {
  for (const auto& c : testing::HostileCorpus("trace")) {
    auto trace = MakeTraceWorkload(c.input, {});
    ExpectRefused(c, trace ? nullptr : &trace.error());
  }
}

// Prompts are built when sent: a small trace of long prompts is not held whole in memory
// (2,000 lines of a million tokens were 12 GB of text before the first request).
TEST(HostileFiles, ATraceOfLongPromptsIsBuiltAsItIsSent) {
  std::string trace;
  for (int i = 0; i < 2000; ++i) {
    trace += "{\"timestamp\": " + std::to_string(i) +
             ", \"input_length\": 1000000, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
  }
  auto workload = MakeTraceWorkload(trace, {.block_tokens = 512});
  ASSERT_TRUE(workload) << workload.error().message;
  const auto first = (*workload)->Next();
  ASSERT_TRUE(first);
  EXPECT_EQ(std::count(first->turns[0].begin(), first->turns[0].end(), ' ') + 1, 1000000);
}

TEST(HostileFiles, PromptFiles) {
  for (const auto& c : testing::HostileCorpus("prompts")) {
    auto prompts = MakePromptFileWorkload(c.input, 16);
    ExpectRefused(c, prompts ? nullptr : &prompts.error());
  }
}

}  // namespace
}  // namespace cmax::endpoint
