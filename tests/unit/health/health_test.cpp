#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "health/conditions.hpp"
#include "health/log_scanner.hpp"
#include "health/node_facts.hpp"
#include "health/passive_check.hpp"
#include "health/xid_catalog.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/line_reader.hpp"
#include "sys/process_runner.hpp"

namespace cmax::health {
namespace {

using namespace std::chrono_literals;

KernelEvent Xid(int code, std::string device = "0000:17:00") {
  KernelEvent e;
  e.kind = KernelEventKind::kXid;
  e.code = code;
  e.device = std::move(device);
  return e;
}

TEST(XidCatalog, BuiltinCatalogueLoadsAndMapsActions) {
  const XidCatalog& catalog = XidCatalog::Builtin();
  EXPECT_GE(catalog.XidCount(), 150u);
  EXPECT_EQ(catalog.Xid(79).action, RecommendedAction::kRebootNode);
  EXPECT_EQ(catalog.Xid(79).severity, Severity::kCritical);
  EXPECT_EQ(catalog.Xid(48).action, RecommendedAction::kResetGpu);
  EXPECT_EQ(catalog.Xid(13).action, RecommendedAction::kRestartApp);
  EXPECT_EQ(catalog.Xid(43).action, RecommendedAction::kNone);
  EXPECT_EQ(catalog.Xid(119).action, RecommendedAction::kResetGpu);
  EXPECT_NE(catalog.Xid(79).source.find("RESTART_BM"), std::string::npos);
}

TEST(XidCatalog, UnknownCodesAreNeverIgnored) {
  const EventMeaning unknown = XidCatalog::Builtin().Xid(4242);
  EXPECT_FALSE(unknown.known);
  EXPECT_EQ(unknown.action, RecommendedAction::kContactSupport);
  EXPECT_GE(unknown.severity, Severity::kHigh);
}

TEST(XidCatalog, Xid154TextOverridesTheCatalogue) {
  const XidCatalog& catalog = XidCatalog::Builtin();
  KernelEvent e = Xid(154);
  e.recovery_action = "Node Reboot Required";
  EXPECT_EQ(catalog.Explain(e).action, RecommendedAction::kRebootNode);
  e.recovery_action = "GPU Reset Required";
  EXPECT_EQ(catalog.Explain(e).action, RecommendedAction::kResetGpu);
  e.recovery_action = "Drain P2P";
  EXPECT_EQ(catalog.Explain(e).action, RecommendedAction::kRestartApp);
  e.recovery_action = "None";
  EXPECT_EQ(catalog.Explain(e).action, RecommendedAction::kNone);
  EXPECT_NE(catalog.Explain(e).source.find("Xid 154 text"), std::string::npos);
}

TEST(XidCatalog, NvLink5ErrorsFollowTheirFatalField) {
  KernelEvent e = Xid(145);
  e.fatal = false;
  EXPECT_EQ(XidCatalog::Builtin().Explain(e).action, RecommendedAction::kNone);
  e.fatal = true;
  EXPECT_EQ(XidCatalog::Builtin().Explain(e).action, RecommendedAction::kResetGpu);
}

TEST(XidCatalog, RejectsMalformedCatalogues) {
  EXPECT_FALSE(XidCatalog::Parse("not json"));
  EXPECT_FALSE(XidCatalog::Parse(R"({"schema":"other"})"));
  EXPECT_FALSE(XidCatalog::Parse(R"({"schema":1,"xids":[]})"));
  EXPECT_FALSE(XidCatalog::Parse(
      R"({"schema":"cmax.xid-catalog/v1","xids":[{"code":1,"name":5,"severity":"low","action":"none"}]})"));
  EXPECT_FALSE(XidCatalog::Parse(R"({"schema":"cmax.xid-catalog/v1"})"));
  EXPECT_FALSE(XidCatalog::Parse(
      R"({"schema":"cmax.xid-catalog/v1","xids":[{"code":1,"severity":"bad","action":"none"}]})"));
  EXPECT_FALSE(XidCatalog::Parse(
      R"({"schema":"cmax.xid-catalog/v1","xids":[{"code":1,"severity":"low","action":"explode"}]})"));
  EXPECT_FALSE(XidCatalog::Parse(
      R"({"schema":"cmax.xid-catalog/v1","xids":[{"code":1,"severity":"low","action":"none"},
          {"code":1,"severity":"low","action":"none"}]})"));
  // 4294967375 read as an int is 79: an "info" entry of that code made a GPU fallen off the bus
  // a PASS. Codes are read whole, and held to a range.
  for (const char* code : {"4294967375", "-79", "18446744073709551615", "100001"}) {
    auto wide =
        XidCatalog::Parse(std::string(R"({"schema":"cmax.xid-catalog/v1","xids":[{"code":)") +
                          code + R"(,"severity":"info","action":"none"}]})");
    ASSERT_FALSE(wide) << code;
    EXPECT_NE(wide.error().message.find("XID code"), std::string::npos) << wide.error().message;
  }
  auto custom = XidCatalog::Parse(
      R"({"schema":"cmax.xid-catalog/v1","xids":[{"code":13,"name":"X","severity":"critical",
          "action":"drain-and-rma","source":"site policy"}]})");
  ASSERT_TRUE(custom) << custom.error().message;
  EXPECT_EQ(custom->Xid(13).action, RecommendedAction::kDrainAndRma);
  EXPECT_FALSE(custom->Explain(KernelEvent{.kind = KernelEventKind::kSoftLockup}).known)
      << "a kind without a rule is reported, not dropped";
}

TEST(Conditions, RepeatsAreCountedNotLost) {
  ConditionTracker tracker(XidCatalog::Builtin());
  KernelRecord record;
  int opened = 0;
  for (int i = 0; i < 100000; ++i) {
    record.monotonic_us = i;
    opened += tracker.Observe(Xid(13), record).opened ? 1 : 0;
  }
  opened += tracker.Observe(Xid(79, "0000:18:00"), record).opened ? 1 : 0;
  EXPECT_EQ(opened, 2);
  const auto conditions = tracker.Conditions();
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[0].code, 79) << "worst first";
  EXPECT_EQ(conditions[1].count, 100000u);
  EXPECT_EQ(conditions[1].first_monotonic_us, 0);
  EXPECT_EQ(conditions[1].last_monotonic_us, 99999);
  EXPECT_EQ(tracker.EventsSeen(), 100001u);
}

TEST(Conditions, RecoveryMarksTheConditionAndALaterFaultReopensIt) {
  ConditionTracker tracker(XidCatalog::Builtin());
  KernelRecord record;
  KernelEvent down{.kind = KernelEventKind::kNicLinkDown, .device = "0000:3b:00.0"};
  KernelEvent up{.kind = KernelEventKind::kNicLinkUp, .device = "0000:3b:00.0"};
  tracker.Observe(down, record);
  tracker.Observe(up, record);
  EXPECT_TRUE(tracker.Conditions()[0].recovered);
  tracker.Observe(down, record);
  EXPECT_FALSE(tracker.Conditions()[0].recovered);
  EXPECT_EQ(tracker.Conditions()[0].count, 2u);
}

TEST(LogScanner, SinceFiltersOnEitherClockAndKeepsUndatedRecords) {
  const WallTime now{std::chrono::milliseconds(1795944148000)};
  auto since = ParseSince("10m", now, 5'000'000'000);
  ASSERT_TRUE(since) << since.error().message;
  EXPECT_EQ(*since->wall, now - std::chrono::minutes(10));
  EXPECT_EQ(*since->monotonic_us, 5'000'000'000 - 600'000'000);
  EXPECT_TRUE(ParseSince("2026-11-29T09:00:00Z", now, 0));
  for (const char* bad : {"", "10", "10x", "-5m", "0m", "soon", "9999-12-31T23:59:59Z"})
    EXPECT_FALSE(ParseSince(bad, now, 0)) << bad;

  LogScanner scanner(XidCatalog::Builtin(), *since, std::nullopt);
  KernelRecord old_record{.monotonic_us = 1'000'000,
                          .message = "NVRM: Xid (PCI:0000:17:00): 79, x"};
  KernelRecord new_record{.monotonic_us = 4'900'000'000,
                          .message = "NVRM: Xid (PCI:0000:17:00): 13, x"};
  KernelRecord undated{.message = "NVRM: Xid (PCI:0000:17:00): 31, x"};
  scanner.Add(old_record);
  scanner.Add(new_record);
  scanner.Add(undated);
  EXPECT_EQ(scanner.Summary().skipped_by_since, 1u);
  EXPECT_EQ(scanner.Summary().undated, 1u);
  EXPECT_EQ(scanner.Tracker().Conditions().size(), 2u);
}

TEST(LogScanner, DatesKmsgRecordsFromTheBootTime) {
  const WallTime boot{std::chrono::milliseconds(1795944000000)};
  LogScanner scanner(XidCatalog::Builtin(), {}, boot);
  scanner.Add(
      KernelRecord{.monotonic_us = 2'500'000, .message = "NVRM: Xid (PCI:0000:17:00): 79, x"});
  const auto conditions = scanner.Tracker().Conditions();
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(*conditions[0].first_wall, boot + std::chrono::milliseconds(2500));
}

TEST(LogScanner, SavedLogSkipsOtherProgramsAndKeepsRecentXids) {
  cmax::testing::TempDir dir;
  ASSERT_TRUE(sys::LocalFileSystem().WriteFileAtomic(
      dir.File("syslog"),
      "Nov 30 09:22:38 node systemd[1]: Started x.\n"
      "Nov 30 09:22:39 node kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=a, gone\n"
      "Nov 30 09:22:40 node kernel: nvidia-nvswitch0: SXid (PCI:0000:85:00.0): 20034, Fatal, "
      "Link 11 LTSSM Fault Up\n",
      0644));
  auto reader = sys::LineReader::Open(dir.File("syslog"), {});
  ASSERT_TRUE(reader);
  LogScanner scanner(XidCatalog::Builtin(), {}, std::nullopt);
  ASSERT_TRUE(ScanLines(*reader, scanner, 2026));
  EXPECT_EQ(scanner.Summary().not_kernel, 1u);
  EXPECT_EQ(scanner.Summary().records, 2u);
  ASSERT_EQ(scanner.Summary().recent_xids.size(), 2u);
  EXPECT_EQ(scanner.Summary().recent_xids[1].kind, KernelEventKind::kSxid);
}

// Issue 13: a huge line before an Xid 79 hid the Xid (the line was read whole, and with a
// memory limit the read failed quietly, so the dead GPU passed).
TEST(LogScanner, AnXidAfterAHugeLineIsStillFound) {
  cmax::testing::TempDir dir;
  std::string text = "[ 1.0] " + std::string(3 << 20, 'z') + "\n";
  text += "[ 2.0] NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=a, GPU has fallen off the bus.\n";
  ASSERT_TRUE(sys::LocalFileSystem().WriteFileAtomic(dir.File("dmesg"), text, 0644));
  auto reader = OpenSavedLog(dir.File("dmesg"), {});
  ASSERT_TRUE(reader);
  LogScanner scanner(XidCatalog::Builtin(), {}, std::nullopt);
  ASSERT_TRUE(ScanLines(*reader, scanner, 2026));
  EXPECT_EQ(scanner.Summary().cut_lines, 1u);
  ASSERT_EQ(scanner.Tracker().Conditions().size(), 1u);
  EXPECT_EQ(scanner.Tracker().Conditions()[0].code, 79);
}

// Issue 13: an Xid whose code had more than nine digits was not an event, so it vanished.
TEST(LogScanner, AnXidWithACodeTooLongToReadIsKeptAsAnUnknownXid) {
  LogScanner scanner(XidCatalog::Builtin(), {}, std::nullopt);
  scanner.Add(KernelRecord{.monotonic_us = 1,
                           .message = "NVRM: Xid (PCI:0000:17:00): 4294967375, pid=1, name=a, x"});
  const auto conditions = scanner.Tracker().Conditions();
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].code, kUnreadableCode);
  EXPECT_EQ(conditions[0].meaning.severity, Severity::kHigh);
  EXPECT_NE(conditions[0].meaning.meaning.find("too many digits"), std::string::npos);
}

TEST(PassiveFindings, AnUnreadableLogIsUnknownNeverAPass) {
  PassiveFacts facts;
  facts.log.source = "/var/log/kern.log";
  facts.log.records = 12;
  facts.log_error = "cannot read /var/log/kern.log after 4096 bytes: Input/output error";
  const auto findings = PassiveFindings(facts, {});
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].check_id, "health.kernel_log");
  EXPECT_EQ(findings[0].status, CheckStatus::kUnknown);
  EXPECT_NE(findings[0].message.find("Input/output error"), std::string::npos);
  facts.log_error.reset();
  facts.log.cut_lines = 2;
  EXPECT_EQ(PassiveFindings(facts, {})[0].status, CheckStatus::kWarn);
}

TEST(NodeFacts, ProbeMountsWithEscapes) {
  const auto mounts = ParseProbeMounts(
      "proc /proc proc rw 0 0\n"
      "10.0.0.5:/export /mnt/home\\040dir nfs4 rw,vers=4.2 0 0\n"
      "10.0.0.2@o2ib:/lustre /lustre lustre rw 0 0\n"
      "/dev/vda / ext4 rw 0 0\n"
      "tmpfs /run tmpfs rw 0 0\n"
      "overlay /var/lib/docker/x overlay rw 0 0\n"
      "server:/x /s fuse.sshfs rw 0 0\n");
  ASSERT_EQ(mounts.size(), 4u);
  EXPECT_EQ(mounts[0].mount_point, "/mnt/home dir");
  EXPECT_EQ(mounts[1].fs_type, "lustre");
  EXPECT_EQ(mounts[2].mount_point, "/");
  EXPECT_EQ(mounts[3].fs_type, "fuse.sshfs");
  EXPECT_TRUE(IsNetworkFilesystem("nfs4"));
  EXPECT_FALSE(IsNetworkFilesystem("ext4"));
}

TEST(NodeFacts, AHungMountCostsOnlyTheTimeout) {
  // A stand-in `stat` that never answers, first on PATH: the probe must give up on time.
  testing::TempDir dir;
  sys::LocalFileSystem fs;
  ASSERT_TRUE(fs.WriteFileAtomic(dir.File("stat"), "#!/bin/sh\nexec sleep 30\n", 0755));
  const std::string old_path = std::getenv("PATH");
  ::setenv("PATH", (dir.Path() + ":" + old_path).c_str(), 1);
  sys::PosixProcessRunner runner;
  const auto start = std::chrono::steady_clock::now();
  const MountProbe hung = ProbeMount(runner, {"10.0.0.5:/export", "/mnt/home", "nfs4"}, 300ms);
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_FALSE(hung.answered);
  EXPECT_NE(hung.detail.find("no answer within"), std::string::npos) << hung.detail;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  PassiveFacts facts;
  facts.mounts = {hung};
  const auto findings = PassiveFindings(facts, {});
  bool failed = false;
  for (const Finding& f : findings) {
    failed |= f.check_id == "health.filesystem.mount" && f.status == CheckStatus::kFail;
  }
  EXPECT_TRUE(failed);
}

TEST(NodeFacts, PcieLinksAndIbPortsFromSysfs) {
  sys::MemoryFileSystem fs;
  const std::string gpu = "/sys/bus/pci/devices/0000:18:00.0";
  fs.AddFile(gpu + "/vendor", "0x10de\n");
  fs.AddFile(gpu + "/class", "0x030200\n");
  fs.AddFile(gpu + "/current_link_width", "8\n");
  fs.AddFile(gpu + "/max_link_width", "16\n");
  fs.AddFile(gpu + "/current_link_speed", "32.0 GT/s PCIe\n");
  const std::string nic = "/sys/bus/pci/devices/0000:19:00.0";
  fs.AddFile(nic + "/vendor", "0x15b3\n");
  fs.AddFile(nic + "/class", "0x020700\n");
  fs.AddFile(nic + "/current_link_width", "16\n");
  fs.AddFile(nic + "/max_link_width", "16\n");
  fs.AddFile("/sys/bus/pci/devices/0000:00:01.0/vendor", "0x1af4\n");
  fs.AddFile("/sys/bus/pci/devices/0000:00:01.0/class", "0x020000\n");  // virtio: no width
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  fs.AddFile("/sys/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
  fs.AddFile("/sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
  fs.AddFile("/sys/class/infiniband/mlx5_1/ports/1/phys_state", "2: Polling\n");
  PassiveFacts facts;
  facts.links = CollectPcieLinks(fs);
  facts.ports = CollectIbPorts(fs);
  ASSERT_EQ(facts.links.size(), 2u);
  ASSERT_EQ(facts.ports.size(), 2u);
  EXPECT_EQ(facts.ports[1].phys_state, "Polling");
  const auto findings = PassiveFindings(facts, {});
  auto find = [&](const std::string& id) {
    for (const Finding& f : findings) {
      if (f.check_id == id) return f;
    }
    ADD_FAILURE() << "no " << id;
    return Finding{};
  };
  EXPECT_EQ(find("health.pcie.gpu_link_width").status, CheckStatus::kFail);
  EXPECT_EQ(find("health.pcie.gpu_link_width").observed, "x8");
  EXPECT_EQ(find("health.ib.port").status, CheckStatus::kWarn);
  EXPECT_NE(find("health.ib.port").message.find("mlx5_1"), std::string::npos);
}

TEST(PassiveCheck, FindingsFollowConditionsAndStayBounded) {
  ConditionTracker tracker(XidCatalog::Builtin());
  KernelRecord record{.message = "NVRM: Xid (PCI:0000:17:00): 79, gone"};
  for (int i = 0; i < 80; ++i) {
    tracker.Observe(Xid(13, "0000:" + std::to_string(10 + i) + ":00"), record);
  }
  tracker.Observe(Xid(79), record);
  PassiveFacts facts;
  facts.log.source = "test";
  facts.log.records = 81;
  facts.conditions = tracker.Conditions();
  const auto findings = PassiveFindings(facts, {.max_condition_findings = 10});
  int condition_findings = 0;
  for (const Finding& f : findings) condition_findings += f.check_id == "health.gpu.xid" ? 1 : 0;
  EXPECT_EQ(condition_findings, 10);
  EXPECT_EQ(findings[1].status, CheckStatus::kFail) << "the Xid 79 comes first";
  EXPECT_EQ(findings[1].links.size(), 1u);
  bool summary = false;
  for (const Finding& f : findings)
    summary |= f.check_id == "health.conditions" && f.observed == "71 more";
  EXPECT_TRUE(summary);
  // Evidence keeps every condition, with code and pci for Xids.
  const auto evidence = PassiveEvidence(facts);
  EXPECT_NE(evidence[1].value_json.find("\"code\":79"), std::string::npos);
  EXPECT_NE(evidence[1].value_json.find("\"pci\":\"0000:17:00\""), std::string::npos);
}

TEST(PassiveCheck, LostRecordsAndUnreadableLogsAreReported) {
  PassiveFacts lost;
  lost.log.lost = 12;
  EXPECT_EQ(PassiveFindings(lost, {})[0].status, CheckStatus::kWarn);
  PassiveFacts unreadable;
  unreadable.log_error = "cannot open /dev/kmsg: Permission denied";
  EXPECT_EQ(PassiveFindings(unreadable, {})[0].status, CheckStatus::kUnknown);
}

TEST(NodeFacts, MountProbeAnswersAndTimesOut) {
  sys::PosixProcessRunner runner;
  const MountProbe ok = ProbeMount(runner, {"tmpfs", "/tmp", "tmpfs"}, 2s);
  EXPECT_TRUE(ok.answered) << ok.detail;
  const MountProbe missing = ProbeMount(runner, {"x", "/no/such/mount", "nfs"}, 2s);
  EXPECT_FALSE(missing.answered);
  EXPECT_FALSE(missing.detail.empty());
}

}  // namespace
}  // namespace cmax::health
