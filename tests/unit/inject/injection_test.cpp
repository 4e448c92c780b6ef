// `cmax inject`'s work as a library call: a refusal injects and records nothing, a dry run shows
// exactly what it would write and writes nothing, and an injection is recorded in the store
// (real SQLite) before its record reaches the kernel log (a regular file stands in for
// /dev/kmsg here; the lab tests write the real one).
#include "inject/injection.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "support/fake_process_runner.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"

namespace cmax::inject {
namespace {

struct Shell {
  Shell() { std::ofstream(dir.File("kmsg")).flush(); }  // the stand-in kmsg exists, as /dev/kmsg
  testing::TempDir dir;
  sys::MemoryFileSystem fs;           // no sysfs: the GPU's address cannot be confirmed
  testing::FakeProcessRunner runner;  // no scheduler answers
  SystemClock clock;
  std::vector<std::string> out;
  std::vector<std::string> refused;
  InjectionIo Io() {
    return {.db_path = dir.File("cmax.db"),
            .fs = &fs,
            .runner = &runner,
            .clock = &clock,
            .node_gpus = [] { return std::vector<std::string>{}; },
            .out = [this](std::string_view line) { out.emplace_back(line); },
            .refused = [this](std::string_view line) { refused.emplace_back(line); }};
  }
  std::string Kmsg() const {
    std::ifstream in(dir.File("kmsg"));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool Stored() const { return std::filesystem::exists(dir.File("cmax.db")); }
};

KernelEventOptions Xid79(const Shell& shell) {
  KernelEventOptions o;
  o.code = 79;
  o.gpu = "0000:17:00.0";
  o.kmsg = shell.dir.File("kmsg");
  o.safety.force = true;  // accept the address sysfs cannot confirm here
  return o;
}

TEST(Injection, ANodeThatIsNotALabsIsRefusedWithoutYes) {
  Shell shell;
  const auto done = InjectKernelEvent(Xid79(shell), shell.Io());
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, ErrorCode::kInvalidArgument);
  ASSERT_FALSE(shell.refused.empty());
  EXPECT_NE(shell.refused[0].find("--yes"), std::string::npos) << shell.refused[0];
  EXPECT_FALSE(shell.Stored());
  EXPECT_EQ(shell.Kmsg(), "");
}

TEST(Injection, ADryRunShowsTheRecordAndWritesNothing) {
  Shell shell;
  KernelEventOptions o = Xid79(shell);
  o.safety.dry_run = true;
  ASSERT_TRUE(InjectKernelEvent(o, shell.Io()));
  ASSERT_EQ(shell.out.size(), 2U);
  EXPECT_EQ(shell.out[0], "cmax inject xid: node " + sys::Hostname() + ", GPU 0000:17:00.0");
  EXPECT_EQ(
      shell.out[1].rfind("  would write to " + o.kmsg + ": <3>NVRM: Xid (PCI:0000:17:00): 79", 0),
      0U)
      << shell.out[1];
  EXPECT_FALSE(shell.Stored());
  EXPECT_EQ(shell.Kmsg(), "");
}

TEST(Injection, AnInjectionIsRecordedThenWrittenAndSaysHowToUndoIt) {
  Shell shell;
  KernelEventOptions o = Xid79(shell);
  o.safety.yes = true;
  const auto done = InjectKernelEvent(o, shell.Io());
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_NE(shell.Kmsg().find("NVRM: Xid (PCI:0000:17:00): 79"), std::string::npos);
  auto store = store::Store::Open({.path = shell.dir.File("cmax.db"), .create = false});
  ASSERT_TRUE(store);
  const auto events = store->LoadEvents(sys::Hostname(), 10);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1U);
  EXPECT_EQ(events->at(0).source, "inject");
  EXPECT_EQ(events->at(0).kind, "xid");
  EXPECT_NE(events->at(0).payload_json.find("\"code\":79"), std::string::npos);
  ASSERT_FALSE(shell.out.empty());
  EXPECT_EQ(shell.out.back().rfind("  to undo: ", 0), 0U) << shell.out.back();
}

TEST(Injection, AWriteThatFailsIsRecordedAsFailedAndIsNotTheUsers) {
  Shell shell;
  KernelEventOptions o = Xid79(shell);
  o.safety.yes = true;
  o.kmsg = shell.dir.File("no/such/folder/kmsg");
  const auto done = InjectKernelEvent(o, shell.Io());
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().code, ErrorCode::kInvalidArgument);
  auto store = store::Store::Open({.path = shell.dir.File("cmax.db"), .create = false});
  ASSERT_TRUE(store);
  const auto events = store->LoadEvents(sys::Hostname(), 10);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 2U);  // the attempt, then its failure
  std::vector<std::string> kinds = {events->at(0).kind, events->at(1).kind};
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"xid", "xid-failed"}));
}

TEST(Injection, ABusResetNeedsItsFlagAndItsBridge) {
  Shell shell;
  const auto done = InjectPcieSbr({.gpu = "0000:17:00.0", .safety = {.yes = true}}, shell.Io());
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().code, ErrorCode::kInvalidArgument);
  bool destructive = false;
  for (const std::string& line : shell.refused) {
    destructive |= line.find("--allow-destructive") != std::string::npos;
  }
  EXPECT_TRUE(destructive);
  EXPECT_GE(shell.refused.size(), 2U);  // and no bridge for the GPU in sysfs
  EXPECT_FALSE(shell.Stored());
}

TEST(Injection, TheSimulatedNvmlNeedsAStateFile) {
  Shell shell;
  ::unsetenv("CMAX_NVML_SIM_STATE");
  const auto done = InjectNvmlSim({.fault = "lost", .gpu = "0"}, shell.Io());
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message.find("--state"), std::string::npos);
}

}  // namespace
}  // namespace cmax::inject
