// Where `cmax run` puts a run's HTML page unless told: beside the store, the path whole.
#include <filesystem>
#include <gtest/gtest.h>

#include "evaluate/evaluation.hpp"

namespace cmax::evaluate {
namespace {

TEST(DefaultHtmlReportPath, BesideTheStoreAndWhole) {
  EXPECT_EQ(DefaultHtmlReportPath("/var/lib/cmax/cmax.db", 42),
            "/var/lib/cmax/reports/run-42.html");
  // A store named relative to the working folder: the page's path is printed to be opened from
  // anywhere, so it is made whole.
  EXPECT_EQ(DefaultHtmlReportPath("cmax.db", 7),
            std::filesystem::current_path().string() + "/reports/run-7.html");
}

}  // namespace
}  // namespace cmax::evaluate
