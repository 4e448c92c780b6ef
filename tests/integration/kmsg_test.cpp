// The real /dev/kmsg: an Xid written to the kernel log is read back, parsed and classified;
// a writer that outruns the reader makes the ring overwrite records, which are counted, and
// the reader keeps detecting afterwards. Needs root (the tests run as root in CI).
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "health/kernel_events.hpp"
#include "health/kernel_record.hpp"
#include "sys/kmsg_reader.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

// One write is one record. The line end matters: without it the kernel keeps the record open
// for a continuation, and readers of /dev/kmsg do not see it until the next record arrives.
bool WriteKmsg(int fd, const std::string& line) {
  const std::string record = line + "\n";
  return ::write(fd, record.data(), record.size()) == static_cast<ssize_t>(record.size());
}

// Reads records until one whose message contains marker, or the timeout; counts the records
// on the way whose message contains also_count.
std::optional<health::KernelRecord> ReadUntil(sys::KmsgReader& reader, const std::string& marker,
                                              Duration timeout, const std::string& also_count = "",
                                              uint64_t* counted = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto raw = reader.Next();
    if (!raw) return std::nullopt;
    if (!*raw) {
      (void)reader.Wait(100ms);
      continue;
    }
    auto record = health::ParseKmsgRecord(**raw);
    if (record && counted != nullptr && !also_count.empty() &&
        record->message.find(also_count) != std::string::npos) {
      ++*counted;
    }
    if (record && record->message.find(marker) != std::string::npos) return *record;
  }
  return std::nullopt;
}

class KmsgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "/dev/kmsg needs root";
  }
};

TEST_F(KmsgTest, AnXidWrittenToTheKernelLogIsReadAndParsed) {
  auto reader = sys::KmsgReader::Open("/dev/kmsg", sys::KmsgReader::Start::kNow);
  ASSERT_TRUE(reader) << reader.error().message;
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string marker = "cmax-kmsg-test-" + std::to_string(::getpid());
  ASSERT_TRUE(WriteKmsg(fd, "<3>NVRM: Xid (PCI:0000:AB:00): 79, pid=42, name=" + marker +
                                ", GPU has fallen off the bus."));
  ::close(fd);
  auto record = ReadUntil(*reader, marker, 5s);
  ASSERT_TRUE(record) << "the record never arrived";
  EXPECT_EQ(record->priority, 3);
  EXPECT_EQ(record->facility, 1) << "userspace writes get the user facility";
  health::KernelEventParser parser;
  const auto events = parser.Feed(*record);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, 79);
  EXPECT_EQ(events[0].device, "0000:ab:00");
  EXPECT_EQ(reader->Lost(), 0u);
}

TEST_F(KmsgTest, OverrunIsCountedAndDetectionGoesOn) {
  // The kernel rate-limits writes per open file unless printk_devkmsg is "on"; set it for the
  // storm and put it back.
  const std::string knob = "/proc/sys/kernel/printk_devkmsg";
  std::string saved;
  std::ifstream(knob) >> saved;
  // The knob wants its line end: "on" alone is refused with EINVAL.
  std::ofstream(knob) << "on\n";
  struct Restore {
    std::string path, value;
    ~Restore() { std::ofstream(path) << value << "\n"; }
  } restore{knob, saved.empty() ? "ratelimit" : saved};

  auto reader = sys::KmsgReader::Open("/dev/kmsg", sys::KmsgReader::Start::kNow);
  ASSERT_TRUE(reader) << reader.error().message;
  const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string tag = std::to_string(::getpid());
  // Far more than the ring holds (about 1,500 short lines here), written before we read.
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(WriteKmsg(fd, "<6>cmax-storm-" + tag + " line " + std::to_string(i)));
  }
  ASSERT_TRUE(WriteKmsg(
      fd, "<3>NVRM: Xid (PCI:0000:AC:00): 48, pid=1, name=after-storm-" + tag + ", Ch 00000001"));
  uint64_t storm_read = 0;
  auto after_storm =
      ReadUntil(*reader, "after-storm-" + tag, 10s, "cmax-storm-" + tag, &storm_read);
  ASSERT_TRUE(after_storm) << "the Xid after the storm was not detected";
  EXPECT_GE(reader->Overruns(), 1u);
  EXPECT_GT(reader->Lost(), 0u);
  // Every storm line was either read or counted as lost; the count may include the odd
  // kernel line that landed in the storm, never fewer.
  EXPECT_GE(storm_read + reader->Lost(), 20000u);
  EXPECT_LE(storm_read + reader->Lost(), 20000u + 20u);
  // Still detecting.
  ASSERT_TRUE(WriteKmsg(fd, "<3>NVRM: Xid (PCI:0000:AD:00): 13, pid=1, name=later-" + tag + ", x"));
  ::close(fd);
  EXPECT_TRUE(ReadUntil(*reader, "later-" + tag, 5s));
}

TEST(KmsgReader, MissingDeviceIsAnError) {
  auto reader = sys::KmsgReader::Open("/no/such/kmsg", sys::KmsgReader::Start::kBeginning);
  ASSERT_FALSE(reader);
  EXPECT_EQ(reader.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(sys::KmsgSequence("6,1234,5678,-;x"), 1234u);
  EXPECT_FALSE(sys::KmsgSequence("6;x"));
}

}  // namespace
}  // namespace cmax
