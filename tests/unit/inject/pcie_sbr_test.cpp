// The secondary-bus-reset plan: made only when the target is certainly one NVIDIA GPU alone
// under a PCI bridge; sysfs trees held in memory (a stand-in for the host's /sys).
#include "inject/pcie_sbr.hpp"

#include <gtest/gtest.h>

namespace cmax::inject {
namespace {

const std::string kDev = "/sys/bus/pci/devices/";

// A GPU (with its audio function) alone under bridge 0000:16:02.0.
sys::MemoryFileSystem GpuUnderABridge() {
  sys::MemoryFileSystem fs;
  fs.AddFile(kDev + "0000:17:00.0/vendor", "0x10de\n");
  fs.AddFile(kDev + "0000:17:00.0/class", "0x030200\n");
  fs.AddLink(kDev + "0000:17:00.0",
             "../../../devices/pci0000:15/0000:15:01.0/0000:16:02.0/0000:17:00.0");
  fs.AddFile(kDev + "0000:16:02.0/class", "0x060400\n");
  fs.AddFile(kDev + "0000:16:02.0/0000:17:00.0/vendor", "0x10de\n");
  fs.AddFile(kDev + "0000:16:02.0/0000:17:00.1/vendor", "0x10de\n");
  fs.AddFile(kDev + "0000:16:02.0/power/control", "on\n");
  return fs;
}

TEST(PcieSbr, APlanForOneGpuAloneUnderItsBridge) {
  const auto fs = GpuUnderABridge();
  auto plan = PlanSecondaryBusReset(fs, "17:00.0");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->gpu, "0000:17:00.0");
  EXPECT_EQ(plan->bridge, "0000:16:02.0");
  EXPECT_EQ(plan->assert_reset,
            (std::vector<std::string>{"setpci", "-s", "0000:16:02.0", "BRIDGE_CONTROL=0x40:0x40"}));
  EXPECT_EQ(plan->release_reset.back(), "BRIDGE_CONTROL=0x00:0x40");
}

TEST(PcieSbr, RefusesWheneverTheTargetIsNotCertain) {
  auto fs = GpuUnderABridge();
  EXPECT_EQ(PlanSecondaryBusReset(fs, "0000:99:00.0").error().code, ErrorCode::kNotFound);

  fs = GpuUnderABridge();
  fs.AddFile(kDev + "0000:17:00.0/vendor", "0x15b3\n");  // a Mellanox NIC
  EXPECT_EQ(PlanSecondaryBusReset(fs, "0000:17:00.0").error().code, ErrorCode::kPermissionDenied);

  fs = GpuUnderABridge();
  fs.AddFile(kDev + "0000:17:00.0/class", "0x068000\n");  // an NVSwitch, not a GPU
  EXPECT_FALSE(PlanSecondaryBusReset(fs, "0000:17:00.0"));

  fs = GpuUnderABridge();  // another device shares the bus
  fs.AddFile(kDev + "0000:16:02.0/0000:18:00.0/vendor", "0x15b3\n");
  auto shared = PlanSecondaryBusReset(fs, "0000:17:00.0");
  ASSERT_FALSE(shared);
  EXPECT_NE(shared.error().message.find("0000:18:00.0"), std::string::npos);

  fs = GpuUnderABridge();  // on a root bus: no bridge
  fs.AddLink(kDev + "0000:17:00.0", "../../../devices/pci0000:17/0000:17:00.0");
  EXPECT_FALSE(PlanSecondaryBusReset(fs, "0000:17:00.0"));

  fs = GpuUnderABridge();  // the parent is not a bridge
  fs.AddFile(kDev + "0000:16:02.0/class", "0x060000\n");
  EXPECT_FALSE(PlanSecondaryBusReset(fs, "0000:17:00.0"));

  EXPECT_FALSE(PlanSecondaryBusReset(fs, "not-an-address"));
}

}  // namespace
}  // namespace cmax::inject
