// The exclusive file lock two cmax processes share a host by: a second taker is refused (or
// waits its deadline out) while the first holds it, takes it once the first lets go, and never
// follows a link planted where the lock file goes (as root, in a world-writable /run/lock).
#include "sys/file_lock.hpp"

#include <unistd.h>

#include <filesystem>
#include <gtest/gtest.h>
#include <optional>

#include "support/temp_dir.hpp"

namespace cmax::sys {
namespace {

using namespace std::chrono_literals;

TEST(FileLock, OneHolderAtATime) {
  testing::TempDir dir;
  const std::string path = dir.File("x.lock");
  std::optional<FileLock> first;
  {
    auto taken = FileLock::TryTake(path);
    ASSERT_TRUE(taken) << taken.error().message;
    first.emplace(std::move(*taken));
  }
  auto second = FileLock::TryTake(path);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kBusy);
  const auto begun = std::chrono::steady_clock::now();
  auto waited = FileLock::Take(path, 100ms);
  ASSERT_FALSE(waited);
  EXPECT_EQ(waited.error().code, ErrorCode::kBusy);
  EXPECT_GE(std::chrono::steady_clock::now() - begun, 100ms);
  first.reset();
  EXPECT_TRUE(FileLock::Take(path, 100ms));
}

TEST(FileLock, ALinkWhereTheLockGoesIsNotFollowed) {
  testing::TempDir dir;
  const std::string target = dir.File("victim");
  std::filesystem::create_symlink(target, dir.File("x.lock"));
  auto taken = FileLock::TryTake(dir.File("x.lock"));
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, ErrorCode::kIo);
  EXPECT_FALSE(std::filesystem::exists(target)) << "the link was followed and its target made";
}

}  // namespace
}  // namespace cmax::sys
