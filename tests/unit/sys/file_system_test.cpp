#include "sys/file_system.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>

#include "support/stop_while_blocked.hpp"
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

TEST(ReadInputFile, SaysWhyAnAnalysersFileWasNotRead) {
  MemoryFileSystem fs;
  fs.AddFile("/logs/big.log", std::string(100, 'x'));
  fs.AddFile("/logs/ok.log", "text");
  const auto never = [] { return false; };
  const auto always = [] { return true; };

  auto ok = ReadInputFile(fs, "/logs/ok.log", 1000, never);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "text");
  EXPECT_TRUE(ReadInputFile(fs, "/logs/ok.log", 1000, {}));  // no signal to hear

  auto missing = ReadInputFile(fs, "/logs/gone.log", 1000, never);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message.rfind("/logs/gone.log: ", 0), 0U) << missing.error().message;

  auto too_big = ReadInputFile(fs, "/logs/big.log", 10, never);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, ErrorCode::kInvalidArgument);

  // A read that failed while the user asked to stop is the stop, whatever else failed.
  auto cut = ReadInputFile(fs, "/logs/gone.log", 1000, always);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, ErrorCode::kInterrupted);
  EXPECT_EQ(cut.error().message, "interrupted reading /logs/gone.log; nothing was recorded");
  EXPECT_TRUE(ReadInputFile(fs, "/logs/ok.log", 1000, always));  // what was read is kept

  EXPECT_EQ(StoppedNothingRecorded().value().code, ErrorCode::kInterrupted);
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

// A scratch folder is a new one of this process's own each time (mode 0700 whatever the umask),
// never one that was there; removing it removes only an empty one.
TEST(TempDir, EachIsNewAndPrivateAndOnlyAnEmptyOneIsRemoved) {
  testing::TempDir dir;
  const mode_t old = ::umask(0);
  auto first = MakeTempDir(dir.Path(), "scratch-");
  auto second = MakeTempDir(dir.Path(), "scratch-");
  ::umask(old);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_NE(*first, *second);
  EXPECT_TRUE(first->starts_with(dir.File("scratch-")));
  struct stat st {};
  ASSERT_EQ(::stat(first->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteFileAtomic(*first + "/kept", "x", 0600));
  EXPECT_FALSE(RemoveEmptyDir(*first));  // not empty: kept, and said
  EXPECT_TRUE(fs.Exists(*first + "/kept"));
  ASSERT_TRUE(RemoveEmptyDir(*second));
  EXPECT_FALSE(fs.Exists(*second));
  EXPECT_TRUE(RemoveEmptyDir(*second));  // already gone
  EXPECT_FALSE(MakeTempDir(dir.File("nowhere"), "scratch-"));
}

// A writer killed mid-write leaves PATH.tmp.PID: the next write of PATH removes it once its
// process is gone and it has lain untouched for ten minutes; a live writer's, a fresh one
// (perhaps a live writer on another host sharing the folder) and another file's are kept.
TEST(LocalFileSystem, AtomicWriteRemovesWhatAKilledWriterLeft) {
  testing::TempDir dir;
  LocalFileSystem fs;
  const auto dead_pid = [] {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    return std::to_string(child);
  };
  const std::string dead = dead_pid();
  const std::string dead_fresh = dead_pid();
  const auto leave = [&](const std::string& name, bool old) {
    ASSERT_TRUE(fs.WriteFileAtomic(dir.File(name), "half", 0644));
    if (old) {
      const timeval long_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
      ASSERT_EQ(::utimes(dir.File(name).c_str(), long_ago), 0);
    }
  };
  leave("out.json.tmp." + dead, true);
  leave("out.json.tmp." + dead_fresh, false);
  leave("out.json.tmp.1", true);  // init's: alive
  leave("other.json.tmp." + dead, true);
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("out.json"), "whole", 0644));
  std::vector<std::string> kept = {"other.json.tmp." + dead, "out.json", "out.json.tmp.1",
                                   "out.json.tmp." + dead_fresh};
  std::ranges::sort(kept);
  EXPECT_EQ(fs.ListDir(dir.Path()).value(), kept);
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

// Issue 13: `cmax report -o /dev/null` as root replaced the device with a regular file.
TEST(LocalFileSystem, OutputFileWritesThroughCharacterDevicesAndNeverReplacesThem) {
  cmax::testing::TempDir dir;
  // A device node of our own (the null device's numbers), so the test never touches /dev.
  const std::string device = dir.File("null");
  ASSERT_EQ(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << "tests run as root";
  LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteOutputFile(device, "<html>", 0644));
  struct stat st {};
  ASSERT_EQ(::lstat(device.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced";
  // /dev/full: the write fails with the device's own error, and the device stays.
  const std::string full = dir.File("full");
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  auto failed = fs.WriteOutputFile(full, "<html>", 0644);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("No space left"), std::string::npos);
  ASSERT_EQ(::lstat(full.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(LocalFileSystem, OutputFileWritesThroughSymlinksKeepingTheLink) {
  cmax::testing::TempDir dir;
  const std::string target = dir.File("real.json");
  const std::string link = dir.File("link.json");
  ASSERT_TRUE(LocalFileSystem().WriteFileAtomic(target, "old contents that are longer", 0644));
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteOutputFile(link, "new", 0644));
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was replaced by a file";
  EXPECT_EQ(*fs.ReadFile(target, 1024), "new");  // truncated, not overwritten in place
  // A dangling link creates its target, as the shell's > does.
  const std::string dangling = dir.File("dangling");
  ASSERT_EQ(::symlink(dir.File("made-through-link").c_str(), dangling.c_str()), 0);
  ASSERT_TRUE(fs.WriteOutputFile(dangling, "x", 0644));
  EXPECT_EQ(*fs.ReadFile(dir.File("made-through-link"), 16), "x");
  ASSERT_EQ(::lstat(dangling.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST(LocalFileSystem, OutputFileWritesThroughFifos) {
  cmax::testing::TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buffer[64];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) got.append(buffer, static_cast<size_t>(n));
    ::close(fd);
  });
  auto ok = LocalFileSystem().WriteOutputFile(fifo, "through the pipe", 0644);
  reader.join();
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(got, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// A device is no file to read (/dev/zero fed a GiB before the size limit said no; opening a
// watchdog starts it): refused before it is opened, whatever the limit.
TEST(LocalFileSystem, ReadFileRefusesDevices) {
  LocalFileSystem fs;
  for (const char* device : {"/dev/zero", "/dev/null", "/dev/urandom"}) {
    auto read = fs.ReadFile(device, size_t{1} << 30);
    ASSERT_FALSE(read) << device;
    EXPECT_EQ(read.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(read.error().message, std::string(device) + " is a device; name a file to read");
  }
}

// A FIFO given as an input waits for its writer in open(); a stop asked meanwhile (Ctrl-C,
// SIGTERM) ends the wait as an interruption.
TEST(LocalFileSystem, AStopWhileAFifoWaitsForItsWriterIsAnInterruption) {
  cmax::testing::TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto read =
      cmax::testing::WithAStopWhileBlocked([&] { return LocalFileSystem().ReadFile(fifo, 1000); });
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kInterrupted) << read.error().message;
}

TEST(LocalFileSystem, OutputFileRefusesDirectoriesBlockDevicesAndSockets) {
  cmax::testing::TempDir dir;
  LocalFileSystem fs;
  auto folder = fs.WriteOutputFile(dir.Path(), "x", 0644);
  ASSERT_FALSE(folder);
  EXPECT_EQ(folder.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(folder.error().message.find("is a directory"), std::string::npos);
  // Through a link to a folder too.
  ASSERT_EQ(::symlink(dir.Path().c_str(), dir.File("to-dir").c_str()), 0);
  EXPECT_FALSE(fs.WriteOutputFile(dir.File("to-dir"), "x", 0644));
  // A block device of our own numbers (loop0's): never written.
  const std::string disk = dir.File("disk");
  ASSERT_EQ(::mknod(disk.c_str(), S_IFBLK | 0600, makedev(7, 0)), 0);
  auto block = fs.WriteOutputFile(disk, "x", 0644);
  ASSERT_FALSE(block);
  EXPECT_EQ(block.error().code, ErrorCode::kInvalidArgument);
  const std::string socket_path = dir.File("sock");
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", socket_path.c_str());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_FALSE(fs.WriteOutputFile(socket_path, "x", 0644));
  ::close(sock);
}

TEST(LocalFileSystem, OutputFileReplacesRegularFilesAtomicallyAndNeverFollowsAPlantedTemp) {
  cmax::testing::TempDir dir;
  const std::string out = dir.File("report.html");
  LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteOutputFile(out, "first", 0644));
  // A link planted where the temporary file will be made must not be written through.
  const std::string victim = dir.File("victim");
  ASSERT_TRUE(fs.WriteFileAtomic(victim, "keep me", 0644));
  const std::string temp = out + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::symlink(victim.c_str(), temp.c_str()), 0);
  ASSERT_TRUE(fs.WriteOutputFile(out, "second", 0644));
  EXPECT_EQ(*fs.ReadFile(out, 64), "second");
  EXPECT_EQ(*fs.ReadFile(victim, 64), "keep me");
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
