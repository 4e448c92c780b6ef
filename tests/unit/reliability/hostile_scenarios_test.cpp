// The hostile-input corpus for scenarios (tests/data/hostile/scenario): every file is refused
// with its reason and the line it is on, never run with a default in place of what was meant.
#include <gtest/gtest.h>

#include "reliability/scenario.hpp"
#include "support/corpus.hpp"

namespace cmax::reliability {
namespace {

TEST(HostileScenarios, EveryFileIsRefusedWithItsReason) {
  for (const auto& c : testing::HostileCorpus("scenario")) {
    auto scenario = ParseScenario(c.input);
    ASSERT_FALSE(scenario) << c.name << " was taken";
    EXPECT_NE(scenario.error().message.find(c.error), std::string::npos)
        << c.name << ": " << scenario.error().message << "\n  expected: " << c.error;
    for (const char ch : scenario.error().message) {
      EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 && ch != '\n')
          << c.name << ": a control character in the message";
    }
  }
}

}  // namespace
}  // namespace cmax::reliability
