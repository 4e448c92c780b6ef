// A file written as it grows: Open appends to what is there, Create empties it first (through a
// link, as the shell's > does), Close syncs and says whether it went through.
#include "sys/append_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace cmax::sys {
namespace {

TEST(AppendFile, OpenAppendsCreateEmptiesFirstCloseEndsIt) {
  testing::TempDir dir;
  const std::string path = dir.File("requests.jsonl");
  std::ofstream(path) << "old\n";
  {
    auto file = AppendFile::Open(path);
    ASSERT_TRUE(file);
    ASSERT_TRUE(file->Append("more\n"));
  }
  EXPECT_EQ(testing::FileText(path), "old\nmore\n");
  std::filesystem::create_symlink(path, dir.File("link.jsonl"));
  auto file = AppendFile::Create(dir.File("link.jsonl"));
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->Append("new\n"));
  EXPECT_EQ(testing::FileText(path), "new\n");  // emptied behind the link, which stays
  EXPECT_TRUE(std::filesystem::is_symlink(dir.File("link.jsonl")));
  ASSERT_TRUE(file->Close());
  EXPECT_FALSE(file->Append("late\n"));
  EXPECT_FALSE(file->Close());
  EXPECT_EQ(testing::FileText(path), "new\n");
}

TEST(AppendFile, ADeviceThatTakesNothingIsSaid) {
  auto file = AppendFile::Create("/dev/full");
  ASSERT_TRUE(file);
  const auto written = file->Append("line\n");
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find("No space left on device"), std::string::npos);
  EXPECT_TRUE(file->Close());  // a device is not synced
}

TEST(AppendFile, AFolderThatIsNotThereIsNotFound) {
  testing::TempDir dir;
  const auto file = AppendFile::Create(dir.File("no/such/file"));
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace cmax::sys
