#include "core/hostlist.hpp"

#include <gtest/gtest.h>

namespace cmax {
namespace {

using Names = std::vector<std::string>;

TEST(HostList, ExpandsAsSlurmWritesThem) {
  const std::pair<std::string_view, Names> cases[] = {
      {"gpu1", {"gpu1"}},
      {"a,b", {"a", "b"}},
      {"gpu[01-03,7]", {"gpu01", "gpu02", "gpu03", "gpu7"}},  // widths kept
      {"x[8-10]y", {"x8y", "x9y", "x10y"}},
      {"gpu[1-2],login1,cpu[003-004]", {"gpu1", "gpu2", "login1", "cpu003", "cpu004"}},
      {"n[1000000000-1000000001]", {"n1000000000", "n1000000001"}},  // past nine digits
      {"", {}},
  };
  for (const auto& [text, names] : cases) {
    auto expanded = ExpandHostList(text);
    ASSERT_TRUE(expanded) << text << ": " << expanded.error().message;
    EXPECT_EQ(*expanded, names) << text;
  }
}

TEST(HostList, RefusesWhatIsNotOne) {
  for (std::string_view text :
       {"t[3-1]", "t[1-x]", "t[1-2", "t]1[", "t[1-2][3-4]", "t[1-9999999]", "t[[1]]",
        // Three ranges of 100,000 names each: past the 200,000 a list may hold.
        "t[0-99999,0-99999,0-99999]"}) {
    EXPECT_FALSE(ExpandHostList(text)) << text;
  }
}

}  // namespace
}  // namespace cmax
