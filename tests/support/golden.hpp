// Golden-file comparison: the expected output of a renderer lives in tests/data/<domain>/.
// CMAX_UPDATE_GOLDEN=1 rewrites the files instead of comparing; review the diff like code.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

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

// The cases of a golden folder under tests/data/: the stems of its files ending in
// `input_ext`, sorted. Tests are parameterised over the folder, never over a list written by
// hand, so a new input cannot be left untested (its missing golden file fails it).
inline std::vector<std::string> GoldenStems(const std::string& folder,
                                            const std::string& input_ext) {
  std::vector<std::string> stems;
  const std::filesystem::path dir = std::filesystem::path(CMAX_TEST_DATA) / folder;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > input_ext.size() && name.ends_with(input_ext))
      stems.push_back(name.substr(0, name.size() - input_ext.size()));
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

// Golden files whose input is gone: each is an error (a renamed or deleted input would
// otherwise leave its expectation behind, checked by nothing).
inline void ExpectNoOrphanGoldens(const std::string& folder, const std::string& input_ext,
                                  const std::string& golden_ext) {
  const auto inputs = GoldenStems(folder, input_ext);
  const auto goldens = GoldenStems(folder, golden_ext);
  EXPECT_FALSE(inputs.empty()) << "no " << input_ext << " inputs in " << folder;
  for (const std::string& stem : goldens) {
    EXPECT_TRUE(std::binary_search(inputs.begin(), inputs.end(), stem))
        << folder << "/" << stem << golden_ext << " has no " << input_ext << " beside it";
  }
}

}  // namespace cmax::testing
