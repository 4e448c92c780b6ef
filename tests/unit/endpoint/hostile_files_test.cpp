// The hostile-input corpus for the endpoint's readers (tests/data/hostile/{prices,trace,prompts}):
// every file is refused with its reason, never taken in part or crashed on.
#include <gtest/gtest.h>

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

TEST(HostileFiles, PromptFiles) {
  for (const auto& c : testing::HostileCorpus("prompts")) {
    auto prompts = MakePromptFileWorkload(c.input, 16);
    ExpectRefused(c, prompts ? nullptr : &prompts.error());
  }
}

}  // namespace
}  // namespace cmax::endpoint
