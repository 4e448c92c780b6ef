#include "sys/line_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::sys {
namespace {

std::vector<std::string> AllLines(LineReader& reader) {
  std::vector<std::string> lines;
  while (true) {
    auto line = reader.Next();
    EXPECT_TRUE(line) << line.error().message;
    if (!line || !*line) return lines;
    lines.emplace_back(**line);
  }
}

TEST(LineReader, ReadsLinesAcrossReadsAndTheLastWithoutItsEnd) {
  cmax::testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  text += "no end";
  ASSERT_TRUE(LocalFileSystem().WriteFileAtomic(dir.File("log"), text, 0644));
  auto reader = LineReader::Open(dir.File("log"), {});
  ASSERT_TRUE(reader);
  const auto lines = AllLines(*reader);
  ASSERT_EQ(lines.size(), 20001U);
  EXPECT_EQ(lines[12345], "line 12345");
  EXPECT_EQ(lines.back(), "no end");
  EXPECT_EQ(reader->CutLines(), 0U);
  EXPECT_EQ(reader->Bytes(), text.size());
}

TEST(LineReader, CutsLongLinesToTheLimitAndCountsThem) {
  cmax::testing::TempDir dir;
  // A 50 MB line between two short ones: memory holds the limit, never the line.
  const int fd = ::open(dir.File("log").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "first\n", 6), 6);
  const std::string mb(1 << 20, 'a');
  for (int i = 0; i < 50; ++i) ASSERT_EQ(::write(fd, mb.data(), mb.size()), 1 << 20);
  ASSERT_EQ(::write(fd, "\nafter\n", 7), 7);
  ::close(fd);
  auto reader = LineReader::Open(dir.File("log"), {.max_line_bytes = 1000});
  ASSERT_TRUE(reader);
  const auto lines = AllLines(*reader);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0], "first");
  EXPECT_EQ(lines[1], std::string(1000, 'a'));
  EXPECT_EQ(lines[2], "after");
  EXPECT_EQ(reader->CutLines(), 1U);
  EXPECT_EQ(reader->Lines(), 3U);
}

TEST(LineReader, ALongLineCanBeAnErrorInsteadOfCut) {
  auto reader =
      LineReader::Open("/dev/zero", {.max_line_bytes = 1 << 20, .long_line_is_error = true});
  ASSERT_TRUE(reader);
  auto line = reader->Next();
  ASSERT_FALSE(line);
  EXPECT_EQ(line.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(line.error().message.find("/dev/zero line 1 is longer than 1048576 bytes"),
            std::string::npos)
      << line.error().message;
  EXPECT_LE(reader->Bytes(), (2U << 20)) << "stopped at the limit, not at the end of the file";
}

TEST(LineReader, MissingFilesAndDirectoriesAreTheUsersMistake) {
  cmax::testing::TempDir dir;
  auto missing = LineReader::Open(dir.File("none"), {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  auto folder = LineReader::Open(dir.Path(), {});
  ASSERT_FALSE(folder);
  EXPECT_EQ(folder.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(folder.error().message.find("is a directory"), std::string::npos);
}

TEST(LineReader, AReadErrorIsAnErrorNotTheEnd) {
  // Reading this process's own memory at offset 0 fails with EIO: a real read error.
  auto reader = LineReader::Open("/proc/self/mem", {});
  ASSERT_TRUE(reader) << reader.error().message;
  auto line = reader->Next();
  ASSERT_FALSE(line);
  EXPECT_NE(line.error().message.find("cannot read /proc/self/mem"), std::string::npos)
      << line.error().message;
}

TEST(LineReader, AnEndlessLineStopsWhenInterruptedWithMemoryBounded) {
  int reads = 0;
  auto reader = LineReader::Open(
      "/dev/zero", {.max_line_bytes = 4096, .interrupted = [&reads] { return ++reads > 200; }});
  ASSERT_TRUE(reader);
  auto line = reader->Next();  // 200 reads of 64 KiB: one line of NULs, never ending
  ASSERT_FALSE(line);
  EXPECT_EQ(line.error().code, ErrorCode::kInterrupted);
  EXPECT_EQ(reader->CutLines(), 1U);
  EXPECT_EQ(reader->Bytes(), 200U * 65536U);
}

}  // namespace
}  // namespace cmax::sys
