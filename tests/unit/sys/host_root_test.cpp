// The host read through its root folder (sys/host_root.hpp): where each path is found, writes
// refused, and programs run through chroot(8) (the spec, and chroot really run).
#include "sys/host_root.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <thread>

#include "support/temp_dir.hpp"

namespace cmax::sys {
namespace {

TEST(HostRootPath, FilesBelowTheRootTheKernelsOwnAsTheyAre) {
  const struct {
    std::string root, path, want;
  } cases[] = {
      {"/host", "/etc/os-release", "/host/etc/os-release"},
      {"/host/", "/usr/bin/runc", "/host/usr/bin/runc"},
      {"/host", "/proc/cpuinfo", "/proc/cpuinfo"},
      {"/host", "/proc", "/proc"},
      {"/host", "/sys/class/infiniband", "/sys/class/infiniband"},
      {"/host", "/dev/nvidiactl", "/dev/nvidiactl"},
      {"/host", "/proc/self/mounts", "/proc/1/mounts"},
      {"/host", "/proc/mounts", "/proc/1/mounts"},
      {"/host", "/proc/self/mountinfo", "/proc/1/mountinfo"},
      {"/host", "/processes/x", "/host/processes/x"},  // a name that only starts like /proc
      {"/host", "/system", "/host/system"},
      {"/", "/etc/os-release", "/etc/os-release"},
      {"", "/etc/os-release", "/etc/os-release"},
      {"/host", "relative/path", "relative/path"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(HostRootPath(c.root, c.path), c.want) << c.root << " " << c.path;
  }
}

TEST(HostRootFileSystem, ReadsBelowTheRootAndWritesNothing) {
  testing::TempDir root;
  LocalFileSystem local;
  ASSERT_TRUE(local.CreateDirs(root.File("etc"), 0755));
  ASSERT_TRUE(local.WriteFileAtomic(root.File("etc/os-release"), "ID=rooted\n", 0644));
  HostRootFileSystem host(local, root.Path());
  auto read = host.ReadFile("/etc/os-release", 1 << 20);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(*read, "ID=rooted\n");
  EXPECT_TRUE(host.IsDirectory("/etc"));
  EXPECT_TRUE(host.Exists("/proc/self"));  // the kernel's, as it is
  auto listed = host.ListDir("/etc");
  ASSERT_TRUE(listed);
  EXPECT_EQ(*listed, std::vector<std::string>{"os-release"});
  EXPECT_FALSE(host.WriteFileAtomic("/etc/os-release", "ID=changed\n", 0644));
  EXPECT_FALSE(host.CreateDirs("/etc/new", 0755));
  EXPECT_FALSE(host.RemoveFile("/etc/os-release"));
  EXPECT_FALSE(host.WriteOutputFile("/etc/x", "x", 0644));
  EXPECT_EQ(*local.ReadFile(root.File("etc/os-release"), 1 << 20), "ID=rooted\n");
}

// What the audit reads of a host is a regular file: a FIFO planted in the root blocked the audit
// until SIGTERM, and a link to a device opened the real host's device, as root.
TEST(HostRootFileSystem, ReadsOnlyRegularFiles) {
  testing::TempDir root;
  LocalFileSystem local;
  ASSERT_TRUE(local.CreateDirs(root.File("etc"), 0755));
  ASSERT_EQ(::symlink("/dev/null", root.File("etc/nccl.conf").c_str()), 0);
  const std::string fifo = root.File("etc/os-release");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Were the FIFO opened, this writer would meet the reader and end its read at once (a failure,
  // not a hang); it is released below when nothing opened it.
  std::thread writer([&fifo] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  });
  HostRootFileSystem host(local, root.Path());
  for (const char* path : {"/etc/os-release", "/etc/nccl.conf"}) {
    auto read = host.ReadFile(path, 1 << 20);
    EXPECT_FALSE(read) << path;  // not ASSERT: the writer must still be joined
    if (read) continue;
    EXPECT_NE(read.error().message.find("is not a regular file"), std::string::npos)
        << read.error().message;
  }
  const int release = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  writer.join();
  if (release >= 0) ::close(release);
  EXPECT_TRUE(host.ReadFile("/proc/self/status", 1 << 20)) << "the kernel's files are regular";
}

// Links are followed as the host follows them: an absolute target starts again at the host's
// "/" (the root folder), never the container's; ".." stops at it; into /proc it leaves the root.
TEST(HostRootFileSystem, FollowsLinksInsideTheRoot) {
  testing::TempDir root;
  LocalFileSystem local;
  ASSERT_TRUE(local.CreateDirs(root.File("usr/lib"), 0755));
  ASSERT_TRUE(local.CreateDirs(root.File("usr/sbin"), 0755));
  ASSERT_TRUE(local.CreateDirs(root.File("etc/alternatives"), 0755));
  ASSERT_TRUE(local.WriteFileAtomic(root.File("usr/lib/os-release"), "ID=hostos\n", 0644));
  ASSERT_TRUE(local.WriteFileAtomic(root.File("usr/sbin/runc"), "#!runc\n", 0755));
  const auto link = [&](const std::string& target, const std::string& at) {
    ASSERT_EQ(::symlink(target.c_str(), root.File(at).c_str()), 0) << at;
  };
  link("../usr/lib/os-release", "etc/os-release");  // relative, as Debian has it
  link("/etc/alternatives/runc", "usr/bin-runc");   // absolute: the host's /etc, not ours
  link("/usr/sbin/runc", "etc/alternatives/runc");
  link("../../../../../usr/lib", "etc/up");  // climbs past the root
  link("/proc/self", "etc/self");            // into the kernel's files
  link("loop-b", "etc/loop-a");
  link("loop-a", "etc/loop-b");
  HostRootFileSystem host(local, root.Path());
  EXPECT_EQ(host.ReadFile("/etc/os-release", 1 << 20).value_or(""), "ID=hostos\n");
  EXPECT_EQ(host.ReadFile("/usr/bin-runc", 1 << 20).value_or(""), "#!runc\n");
  EXPECT_TRUE(host.IsRegularFile("/usr/bin-runc"));
  EXPECT_TRUE(host.IsDirectory("/etc/up"));
  EXPECT_EQ(host.ReadFile("/etc/up/os-release", 1 << 20).value_or(""), "ID=hostos\n");
  EXPECT_TRUE(host.Exists("/etc/self/status"));  // this process's, through /proc
  EXPECT_FALSE(host.ReadFile("/etc/loop-a", 1 << 20));
  // ReadLink gives the link itself, as the host has it.
  EXPECT_EQ(host.ReadLink("/usr/bin-runc").value_or(""), "/etc/alternatives/runc");
  // The machine's own /etc/alternatives is never read for the host's: a name only there is
  // not found below the root.
  EXPECT_FALSE(host.Exists("/etc/alternatives/editor"));
  // The mount table is the host's init's, also when a link leads to it (/etc/mtab).
  link("../proc/self/mounts", "etc/mtab");
  const auto init_mounts = local.ReadFile("/proc/1/mounts", 1 << 20);
  ASSERT_TRUE(init_mounts) << init_mounts.error().message;
  EXPECT_EQ(host.ReadFile("/proc/self/mounts", 1 << 20).value_or(""), *init_mounts);
  EXPECT_EQ(host.ReadFile("/etc/mtab", 1 << 20).value_or(""), *init_mounts);
}

TEST(HostRootProcessRunner, RunsEachProgramChrootedIntoTheRoot) {
  const ProcessSpec smi = HostRootProcessRunner::Rooted(
      {.argv = {"nvidia-smi", "-q"}, .env_add = {"LC_ALL=C"}}, "/host");
  EXPECT_EQ(smi.argv, (std::vector<std::string>{"chroot", "/host", "nvidia-smi", "-q"}));
  // The host's search path and libraries, not the image's; the caller's own variables after.
  // The container's own variables removed ("NAME" alone), so that the host's Slurm reads the
  // host's slurm.conf, not the container's SLURM_CONF; HOME the host's root's.
  const std::vector<std::string> host_env = {"PATH=" + std::string(kHostPath),
                                             "HOME=/root",
                                             "LD_LIBRARY_PATH=",
                                             "LD_PRELOAD=",
                                             "NVIDIA_VISIBLE_DEVICES",
                                             "SLURM_CONF",
                                             "KUBECONFIG",
                                             "KUBERNETES_SERVICE_HOST"};
  std::vector<std::string> with_caller = host_env;
  with_caller.emplace_back("LC_ALL=C");
  EXPECT_EQ(smi.env_add, with_caller);
  // Every other loader variable of this process is blanked too.
  EXPECT_EQ(HostRootProcessRunner::Rooted({.argv = {"nvcc"}}, "/host",
                                          {"LD_AUDIT=/x.so", "HOME=/root", "LD_LIBRARY_PATH=/cuda",
                                           "LD_BIND_NOW=1", "OLD_LD_X=1"})
                .env_add,
            [&] {
              std::vector<std::string> blanked = host_env;
              blanked.insert(blanked.end(), {"LD_AUDIT=", "LD_BIND_NOW="});
              return blanked;
            }());
  const ProcessSpec shell =
      HostRootProcessRunner::Rooted({.argv = {"echo $HOME"}, .use_shell = true}, "/host");
  EXPECT_FALSE(shell.use_shell);
  EXPECT_EQ(shell.argv,
            (std::vector<std::string>{"chroot", "/host", "/bin/sh", "-c", "echo $HOME"}));
  const ProcessSpec in_folder =
      HostRootProcessRunner::Rooted({.argv = {"ls"}, .cwd = "/etc"}, "/host");
  EXPECT_TRUE(in_folder.cwd.empty());
  EXPECT_EQ(in_folder.argv, (std::vector<std::string>{"chroot", "/host", "/bin/sh", "-c",
                                                      R"(cd "$0" && exec "$@")", "/etc", "ls"}));
  // No root: as it was.
  EXPECT_EQ(HostRootProcessRunner::Rooted({.argv = {"ls"}}, "/").argv,
            std::vector<std::string>{"ls"});

  // Really run (the tests run as root): "/" as the root, and the working folder honoured.
  PosixProcessRunner posix;
  HostRootProcessRunner host(posix, "/");
  auto ran = host.Run({.argv = {"/bin/sh", "-c", "echo rooted"}});
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->stdout_text, "rooted\n");
  testing::TempDir dir;
  HostRootProcessRunner chrooted(posix, dir.Path());
  auto missing = chrooted.Run({.argv = {"/bin/true"}});  // an empty root has no programs
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_NE(missing->exit_code, 0);
  EXPECT_NE(missing->stderr_text.find("chroot"), std::string::npos) << missing->stderr_text;
}

}  // namespace
}  // namespace cmax::sys
