// This process's host: the file names it is given, made absolute and told apart.
#include "sys/host.hpp"

#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace cmax::sys {
namespace {

using Files = std::vector<std::string>;

// A file named twice is found however it is named: through a link, a "./", a hard link; a
// missing one by its path; standard input by "-".
TEST(FirstRepeatedFile, FindsTheSameFileUnderAnyName) {
  testing::TempDir dir;
  const std::string a = dir.File("a.log");
  const std::string b = dir.File("b.log");
  std::ofstream(a) << "a\n";
  std::ofstream(b) << "b\n";
  ASSERT_EQ(::symlink(a.c_str(), dir.File("link.log").c_str()), 0);
  ASSERT_EQ(::link(a.c_str(), dir.File("hard.log").c_str()), 0);
  EXPECT_EQ(FirstRepeatedFile({}), "");
  EXPECT_EQ(FirstRepeatedFile({a, b, "-"}), "");
  EXPECT_EQ(FirstRepeatedFile({a, b, a}), a);
  EXPECT_EQ(FirstRepeatedFile({a, dir.File("link.log")}), dir.File("link.log"));
  EXPECT_EQ(FirstRepeatedFile({a, dir.File("hard.log")}), dir.File("hard.log"));
  EXPECT_EQ(FirstRepeatedFile({a, dir.Path() + "/./a.log"}), dir.Path() + "/./a.log");
  EXPECT_EQ(FirstRepeatedFile({"-", b, "-"}), "-");
  const std::string missing = dir.File("none.log");
  EXPECT_EQ(FirstRepeatedFile({missing, dir.Path() + "/x/../none.log"}),
            dir.Path() + "/x/../none.log");
  EXPECT_EQ(FirstRepeatedFile({missing, b}), "");
}

TEST(AbsolutePath, IsTakenFromTheWorkingFolderWithoutDots) {
  EXPECT_EQ(AbsolutePath("/a/./b/../c"), "/a/c");
  EXPECT_EQ(AbsolutePath("x/y"), CurrentDirectory() + "/x/y");
  EXPECT_EQ(AbsolutePath(""), "");
}

}  // namespace
}  // namespace cmax::sys
