#include "sys/file_system.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "support/temp_dir.hpp"

namespace cmax::sys {
namespace {

TEST(LocalFileSystem, ReadsProcFilesThatReportSizeZero) {
  LocalFileSystem fs;
  auto text = fs.ReadFile("/proc/self/status", kDefaultReadLimit);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_NE(text->find("Name:"), std::string::npos);
}

TEST(LocalFileSystem, MissingAndOversizedFilesAreErrors) {
  testing::TempDir dir;
  LocalFileSystem fs;
  auto missing = fs.ReadFile(dir.File("nope"), kDefaultReadLimit);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("big"), std::string(100, 'x'), 0644));
  EXPECT_FALSE(fs.ReadFile(dir.File("big"), 10));
}

TEST(LocalFileSystem, AtomicWriteSetsModeWhateverTheUmask) {
  testing::TempDir dir;
  LocalFileSystem fs;
  const mode_t old = ::umask(0);
  auto ok = fs.WriteFileAtomic(dir.File("secret"), "s3cret", 0600);
  ::umask(old);
  ASSERT_TRUE(ok);
  struct stat st {};
  ASSERT_EQ(::stat(dir.File("secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(fs.ReadFile(dir.File("secret"), 100).value(), "s3cret");
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("secret"), "new", 0600));
  EXPECT_EQ(fs.ReadFile(dir.File("secret"), 100).value(), "new");
  // No temporary file is left beside it.
  EXPECT_EQ(fs.ListDir(dir.Path()).value(), std::vector<std::string>{"secret"});
}

TEST(LocalFileSystem, CreateDirsIsLikeMkdirP) {
  testing::TempDir dir;
  LocalFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs(dir.File("a/b/c"), 0700));
  EXPECT_TRUE(fs.IsDirectory(dir.File("a/b/c")));
  EXPECT_TRUE(fs.CreateDirs(dir.File("a/b/c"), 0700));
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("file"), "x", 0644));
  EXPECT_FALSE(fs.CreateDirs(dir.File("file"), 0700));
}

TEST(MemoryFileSystem, ServesFilesFoldersAndLinks) {
  MemoryFileSystem fs;
  fs.AddFile("/sys/bus/pci/devices/0000:00:01.0/vendor", "0x10de\n");
  fs.AddLink("/sys/bus/pci/devices/0000:00:01.0/driver", "../../bus/pci/drivers/nvidia");
  EXPECT_TRUE(fs.IsDirectory("/sys/bus/pci/devices"));
  EXPECT_EQ(fs.ListDir("/sys/bus/pci/devices").value(), std::vector<std::string>{"0000:00:01.0"});
  EXPECT_EQ(fs.ListDir("/sys/bus/pci/devices/0000:00:01.0").value(),
            (std::vector<std::string>{"driver", "vendor"}));
  EXPECT_EQ(fs.ReadLink("/sys/bus/pci/devices/0000:00:01.0/driver").value(),
            "../../bus/pci/drivers/nvidia");
  EXPECT_FALSE(fs.ReadFile("/nope", 10));
  EXPECT_FALSE(fs.ListDir("/nope"));
  EXPECT_FALSE(fs.Exists("/sys/bus/pc"));
}

}  // namespace
}  // namespace cmax::sys
