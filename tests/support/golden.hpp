// Golden-file comparison: the expected output of a renderer lives in tests/data/<domain>/.
// CMAX_UPDATE_GOLDEN=1 rewrites the files instead of comparing; review the diff like code.
#pragma once

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace cmax::testing {

inline void ExpectGolden(const std::string& relative_path, const std::string& actual) {
  const std::string path = std::string(CMAX_TEST_DATA) + "/" + relative_path;
  if (std::getenv("CMAX_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden file " << path
                         << " (run with CMAX_UPDATE_GOLDEN=1 to create it)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "differs from " << path;
}

}  // namespace cmax::testing
