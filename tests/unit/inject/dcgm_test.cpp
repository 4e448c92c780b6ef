// DCGM field injection: names to field ids (dcgm_fields.h) and the exact dcgmi command.
#include "inject/dcgm.hpp"

#include <gtest/gtest.h>

namespace cmax::inject {
namespace {

TEST(DcgmInject, FieldNamesAreDcgmsIds) {
  EXPECT_EQ(DcgmFieldId("xid").value(), 230);
  EXPECT_EQ(DcgmFieldId("power-violation").value(), 240);
  EXPECT_EQ(DcgmFieldId("temperature").value(), 150);
  EXPECT_EQ(DcgmFieldId("pcie-replay").value(), 202);
  EXPECT_EQ(DcgmFieldId("ecc-dbe").value(), 311);
  EXPECT_EQ(DcgmFieldId("row-remap-failure").value(), 395);
  EXPECT_EQ(DcgmFieldId("1001").value(), 1001);
  for (const char* bad : {"", "x", "-3", "0", "70000", "12a"})
    EXPECT_FALSE(DcgmFieldId(bad)) << bad;
}

TEST(DcgmInject, GpuIdsAreWholeNumbers) {
  EXPECT_EQ(DcgmGpuId("0").value(), 0);
  EXPECT_EQ(DcgmGpuId("7").value(), 7);
  for (const char* bad : {"", "-1", "3abc", " 3", "3 ", "GPU3", "0000:3b:00.0", "99999999999"}) {
    EXPECT_FALSE(DcgmGpuId(bad)) << bad;  // std::stoi read "3abc" as 3
  }
}

TEST(DcgmInject, TheCommand) {
  EXPECT_EQ(DcgmInjectArgv("xid", 95, 0, std::nullopt).value(),
            (std::vector<std::string>{"dcgmi", "test", "--inject", "--gpuid", "0", "-f", "230",
                                      "-v", "95"}));
  EXPECT_EQ(DcgmInjectArgv("ecc-dbe", 1, 7, 10).value().back(), "10");
  EXPECT_FALSE(DcgmInjectArgv("xid", 95, -1, std::nullopt));
  EXPECT_FALSE(DcgmInjectArgv("xid", 95, 0, -5));
}

}  // namespace
}  // namespace cmax::inject
