// Injected kernel-log records: the exact driver formats (golden), and that each one parses back
// through cmax's own passive parsers to the code, device and catalogue action it was made for.
#include "inject/kernel_lines.hpp"

#include <gtest/gtest.h>

#include "health/kernel_events.hpp"
#include "health/kernel_record.hpp"

namespace cmax::inject {
namespace {

const health::XidCatalog& Catalog() {
  return health::XidCatalog::Builtin();
}

// What a reader of /dev/kmsg gets for a record written as `written` ("<3>text").
health::KernelEvent ReadBack(const std::string& written) {
  const size_t close = written.find('>');
  const std::string raw = "11,42,123456,-;" + written.substr(close + 1) + "\n";
  auto record = health::ParseKmsgRecord(raw);
  EXPECT_TRUE(record) << record.error().message;
  health::KernelEventParser parser;
  const auto events = parser.Feed(*record);
  EXPECT_EQ(events.size(), 1U) << written;
  return events.empty() ? health::KernelEvent{} : events.front();
}

TEST(InjectLines, XidGolden) {
  EXPECT_EQ(XidRecord({.code = 79, .pci = "0000:17:00.0"}, Catalog()).value(),
            "<3>NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', name=cmax-inject, GPU has "
            "fallen off the bus");
  EXPECT_EQ(XidRecord({.code = 13, .pci = "3B:00.0", .pid = 4242, .text = "Graphics Exception"},
                      Catalog())
                .value(),
            "<3>NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=cmax-inject, Graphics Exception");
  // An unknown code still makes a record (a provider must react to it too).
  EXPECT_EQ(XidRecord({.code = 9998, .pci = "0000:17:00"}, Catalog()).value(),
            "<3>NVRM: Xid (PCI:0000:17:00): 9998, pid='<unknown>', name=cmax-inject, Unknown "
            "error");
  // Text from the command line cannot start a second record.
  EXPECT_EQ(XidRecord({.code = 48, .pci = "0000:17:00", .text = "a\nb"}, Catalog()).value(),
            "<3>NVRM: Xid (PCI:0000:17:00): 48, pid='<unknown>', name=cmax-inject, a b");
}

TEST(InjectLines, SxidGolden) {
  EXPECT_EQ(
      SxidRecord({.code = 12028, .pci = "0000:05:00.0", .switch_index = 3, .link = 32}).value(),
      "<3>nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress "
      "non-posted PRIV error (First)");
  EXPECT_EQ(SxidRecord({.code = 19, .pci = "05:00", .fatal = true, .text = "NVLink error"}).value(),
            "<3>nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 00019, Fatal, Link 0 NVLink error");
}

TEST(InjectLines, EveryCatalogueXidParsesBackToItsCodeDeviceAndAction) {
  for (int code : {13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 9998}) {
    const std::string written = XidRecord({.code = code, .pci = "0000:b3:00.0"}, Catalog()).value();
    const health::KernelEvent e = ReadBack(written);
    EXPECT_EQ(e.kind, health::KernelEventKind::kXid) << written;
    EXPECT_EQ(e.code, code) << written;
    EXPECT_EQ(e.device, "0000:b3:00") << written;
    EXPECT_EQ(e.process, "cmax-inject") << written;
    EXPECT_EQ(Catalog().Explain(e).action, Catalog().Xid(code).action) << written;
  }
}

TEST(InjectLines, SxidParsesBack) {
  for (bool fatal : {false, true}) {
    const std::string written =
        SxidRecord(
            {.code = 12028, .pci = "0000:05:00.0", .switch_index = 3, .fatal = fatal, .link = 32})
            .value();
    const health::KernelEvent e = ReadBack(written);
    EXPECT_EQ(e.kind, health::KernelEventKind::kSxid);
    EXPECT_EQ(e.code, 12028);
    EXPECT_EQ(e.device, "0000:05:00.0");
    EXPECT_EQ(e.fatal, fatal);
    EXPECT_EQ(e.link, 32);
  }
}

TEST(InjectLines, RefusesWhatIsNotAnAddressOrACode) {
  for (const char* bad : {"", "17", "0000:17", "zz:00.0", "0000:17:00.8", "0000:17:00.0.1",
                          "00000:17:00.0", "0000:17:0"}) {
    EXPECT_FALSE(XidBusAddress(bad)) << bad;
  }
  EXPECT_FALSE(XidRecord({.code = 0, .pci = "0000:17:00"}, Catalog()));
  EXPECT_FALSE(XidRecord({.code = 10000, .pci = "0000:17:00"}, Catalog()));
  EXPECT_FALSE(SxidRecord({.code = 100000, .pci = "0000:05:00.0"}));
  EXPECT_FALSE(SxidRecord({.code = 1, .pci = "0000:05:00.0", .switch_index = 99}));
  EXPECT_EQ(FullPciAddress("0000:05:00").value(), "0000:05:00.0");
}

}  // namespace
}  // namespace cmax::inject
