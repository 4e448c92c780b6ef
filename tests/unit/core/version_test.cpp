#include "core/version.hpp"

#include <gtest/gtest.h>

namespace cmax {
namespace {

struct OrderCase {
  const char* older;
  const char* newer;
};

class VersionOrderTest : public ::testing::TestWithParam<OrderCase> {};

TEST_P(VersionOrderTest, OlderSortsBeforeNewer) {
  const OrderCase& c = GetParam();
  auto forward = CompareVersionText(c.older, c.newer);
  auto backward = CompareVersionText(c.newer, c.older);
  ASSERT_TRUE(forward) << forward.error().message;
  ASSERT_TRUE(backward) << backward.error().message;
  EXPECT_LT(*forward, 0) << c.older << " should be older than " << c.newer;
  EXPECT_GT(*backward, 0) << c.newer << " should be newer than " << c.older;
}

INSTANTIATE_TEST_SUITE_P(
    Table, VersionOrderTest,
    ::testing::Values(
        // Dotted versions compare numerically per part.
        OrderCase{"1.9", "1.10"}, OrderCase{"1.2", "1.2.1"}, OrderCase{"2.0", "10.0"},
        OrderCase{"0.9.99", "1.0"},
        // NVIDIA driver branches: same branch, later build; and later branch.
        OrderCase{"570.86.15", "570.211.01"}, OrderCase{"535.183.06", "570.86.15"},
        OrderCase{"550.54.14", "550.127.05"}, OrderCase{"570.133.20", "575.51.03"},
        // Debian revisions and epochs.
        OrderCase{"22.05.8-4", "22.05.8-4+deb12u3"}, OrderCase{"1.0-1", "1.0-2"},
        OrderCase{"9.9-9", "1:0.1-1"}, OrderCase{"2:1.0", "10:0.1"}, OrderCase{"1.0~rc1", "1.0"},
        OrderCase{"1.0~rc1", "1.0~rc2"}, OrderCase{"1.0~~", "1.0~"}, OrderCase{"1.0", "1.0a"},
        OrderCase{"1.0a", "1.0+b1"}, OrderCase{"3.40.1-2", "3.40.1-2+deb12u2"},
        // A leading v is the same version; long digit runs compare exactly.
        OrderCase{"v1.2.3", "1.2.4"},
        OrderCase{"1.99999999999999999999998", "1.99999999999999999999999"}));

TEST(Version, EqualVersionsCompareEqual) {
  for (auto [a, b] : {std::pair{"1.0", "1.0"}, std::pair{"1.00", "1.0"}, std::pair{"v2.1", "2.1"},
                      std::pair{"0:1.0", "1.0"}, std::pair{"1.0-0", "1.0"},
                      std::pair{"570.86.15", "570.86.015"}}) {
    auto cmp = CompareVersionText(a, b);
    ASSERT_TRUE(cmp) << a;
    EXPECT_EQ(*cmp, 0) << a << " vs " << b;
  }
}

TEST(Version, ParsesEpochUpstreamRevision) {
  auto v = ParseVersion("1:22.05.8-4+deb12u3");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->epoch, 1u);
  EXPECT_EQ(v->upstream, "22.05.8");
  EXPECT_EQ(v->revision, "4+deb12u3");
  EXPECT_EQ(FormatVersion(*v), "1:22.05.8-4+deb12u3");
}

TEST(Version, RejectsMalformedText) {
  for (const char* bad : {"", " ", "abc", "1.0 beta", "a:1.0", ":1.0", "1.0-", "1:2:3",
                          "99999999999999999999999:1.0", "1.0\n", "-1", "v", "1.0/2",
                          // found by the fuzzer: a colon in the revision does not read back
                          "0:22.05.8-4+deb12:22.u3"}) {
    auto v = ParseVersion(bad);
    EXPECT_FALSE(v) << "'" << bad << "' should be rejected";
    if (!v) {
      EXPECT_EQ(v.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

TEST(Version, CompareNamesTheBadSide) {
  auto cmp = CompareVersionText("1.0", "x1");
  ASSERT_FALSE(cmp);
  EXPECT_NE(cmp.error().message.find("x1"), std::string::npos);
}

TEST(Version, MajorIsTheDriverBranch) {
  EXPECT_EQ(MajorVersion("570.86.15").value(), 570u);
  EXPECT_EQ(MajorVersion("2:535.1-1").value(), 535u);
  EXPECT_FALSE(MajorVersion("nope"));
}

}  // namespace
}  // namespace cmax
