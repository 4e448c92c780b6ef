// NVML through the real dlopen path, with libnvml-sim.so (the simulated NVML, a stand-in)
// answering from a state file the test rewrites while the library is loaded.
#include "sys/nvml.hpp"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "health/nvml_checks.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"

namespace cmax::health {
namespace {

using namespace std::chrono_literals;

constexpr const char* kHealthy = R"({"driver_version": "570.86.15", "gpus": [
  {"uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "name": "NVIDIA H200",
   "bus_id": "0000:17:00.0", "temperature_c": 41, "power_mw": 123456,
   "ecc": {"enabled": true, "volatile": {"sbe": 4, "dbe": 0}},
   "remapped_rows": {"correctable": 1}, "nvlink": {"links": 18}, "recovery_action": 0},
  {"uuid": "GPU-bbbbbbbb-0000-0000-0000-000000000000", "name": "NVIDIA H200",
   "bus_id": "0000:2A:00.0", "nvlink": {"links": 18}, "utilization_percent": 97,
   "compute_processes": 3}]})";

class NvmlSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.File("state.json");
    Write(kHealthy);
    ::setenv("CMAX_NVML_SIM_STATE", state_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("CMAX_NVML_SIM_STATE"); }
  void Write(const std::string& json) { ASSERT_TRUE(fs_.WriteFileAtomic(state_, json, 0644)); }
  std::unique_ptr<sys::Nvml> Load() {
    auto nvml = sys::Nvml::Load(CMAX_NVML_SIM_LIB);
    EXPECT_TRUE(nvml) << (nvml ? "" : nvml.error().message);
    return nvml ? std::move(*nvml) : nullptr;
  }
  static Finding Find(const std::vector<Finding>& findings, const std::string& id) {
    for (const Finding& f : findings) {
      if (f.check_id == id) return f;
    }
    ADD_FAILURE() << "no finding " << id;
    return {};
  }

  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  std::string state_;
};

TEST_F(NvmlSimTest, HealthyGpusReadThroughDlopen) {
  auto nvml = Load();
  ASSERT_TRUE(nvml);
  auto snapshot = nvml->Snapshot();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  EXPECT_EQ(snapshot->driver_version, "570.86.15");
  ASSERT_EQ(snapshot->gpus.size(), 2u);
  const sys::GpuReading& g = snapshot->gpus[0];
  EXPECT_EQ(g.uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000000");
  EXPECT_EQ(g.pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(snapshot->gpus[1].pci_bus_id, "0000:2a:00.0") << "lowercased";
  EXPECT_EQ(g.temperature_c, 41u);
  EXPECT_EQ(g.power_mw, 123456u);
  EXPECT_EQ(g.ecc_sbe_volatile, 4u);
  EXPECT_EQ(g.ecc_dbe_volatile, 0u);
  EXPECT_EQ(g.remapped_rows_correctable, 1u);
  EXPECT_EQ(g.nvlink_links, 18u);
  EXPECT_EQ(g.nvlink_inactive, 0u);
  EXPECT_EQ(g.recovery_action, 0u);
  EXPECT_EQ(g.utilization_percent, 0u);
  EXPECT_EQ(g.compute_processes, 0u);
  EXPECT_EQ(snapshot->gpus[1].utilization_percent, 97u);
  EXPECT_EQ(snapshot->gpus[1].compute_processes, 3u) << "counted through INSUFFICIENT_SIZE";
  EXPECT_TRUE(g.errors.empty());
  const auto findings = NvmlFindings({*snapshot, ""});
  EXPECT_EQ(Find(findings, "gpu.nvml").status, CheckStatus::kPass);
  EXPECT_EQ(Find(findings, "gpu.health").status, CheckStatus::kPass);
  EXPECT_FALSE(NvmlMetrics({*snapshot, ""}).empty());
}

TEST_F(NvmlSimTest, FaultsFlippedWhileLoadedBecomeFindings) {
  auto nvml = Load();
  ASSERT_TRUE(nvml);
  ASSERT_TRUE(nvml->Snapshot());
  // GPU 1 gets a double-bit ECC error and a failed row remap; GPU 0 falls off the bus.
  Write(R"({"gpus": [
    {"bus_id": "0000:17:00.0", "lost": true},
    {"bus_id": "0000:2a:00.0", "ecc": {"enabled": true, "volatile": {"dbe": 3}},
     "remapped_rows": {"uncorrectable": 2, "pending": true, "failure": true},
     "recovery_action": 2}]})");
  auto snapshot = nvml->Snapshot();
  ASSERT_TRUE(snapshot);
  EXPECT_TRUE(snapshot->gpus[0].lost);
  EXPECT_EQ(snapshot->gpus[1].ecc_dbe_volatile, 3u);
  const auto findings = NvmlFindings({*snapshot, ""});
  EXPECT_EQ(Find(findings, "gpu.lost").status, CheckStatus::kFail);
  EXPECT_EQ(Find(findings, "gpu.lost").severity, Severity::kCritical);
  EXPECT_EQ(Find(findings, "gpu.ecc.dbe").status, CheckStatus::kFail);
  EXPECT_EQ(Find(findings, "gpu.memory.remap_failure").status, CheckStatus::kFail);
  EXPECT_EQ(Find(findings, "gpu.memory.remap_pending").status, CheckStatus::kWarn);
  EXPECT_EQ(Find(findings, "gpu.recovery_action").observed, "node reboot");
  for (const Finding& f : findings) EXPECT_NE(f.check_id, "gpu.health");
}

TEST_F(NvmlSimTest, UnsupportedCallsLeaveReadingsEmptyWithoutErrors) {
  Write(R"({"gpus": [{"bus_id": "0000:17:00.0",
    "unsupported": ["temperature", "power", "ecc", "remapped_rows", "retired_pages", "pcie",
                    "nvlink", "recovery_action", "clocks", "utilization", "processes"]}]})");
  auto nvml = Load();
  ASSERT_TRUE(nvml);
  auto snapshot = nvml->Snapshot();
  ASSERT_TRUE(snapshot);
  const sys::GpuReading& g = snapshot->gpus[0];
  EXPECT_FALSE(g.temperature_c);
  EXPECT_FALSE(g.ecc_enabled);
  EXPECT_FALSE(g.remapped_rows_failure);
  EXPECT_FALSE(g.pcie_width);
  EXPECT_FALSE(g.nvlink_links);
  EXPECT_FALSE(g.recovery_action);
  EXPECT_FALSE(g.utilization_percent);
  EXPECT_FALSE(g.compute_processes);
  EXPECT_TRUE(g.errors.empty());
}

TEST_F(NvmlSimTest, AMalformedStateFileIsNoCrash) {
  Write(R"({"driver_version": 570, "gpus": [{"lost": 1, "uuid": 5, "bus_id": []}, 7,
            {"ecc": "yes", "remapped_rows": [1], "nvlink": {"links": "x"}}]})");
  auto nvml = Load();
  ASSERT_TRUE(nvml);
  auto snapshot = nvml->Snapshot();
  ASSERT_TRUE(snapshot) << snapshot.error().message;
  ASSERT_EQ(snapshot->gpus.size(), 3u);
  EXPECT_TRUE(snapshot->gpus[0].lost) << "lost: 1 counts as true";
  EXPECT_FALSE(snapshot->gpus[1].errors.empty()) << "a GPU entry that is not an object";
}

TEST_F(NvmlSimTest, XidEventsArriveThroughTheEventSet) {
  auto nvml = Load();
  ASSERT_TRUE(nvml);
  ASSERT_TRUE(nvml->WatchEvents());
  auto none = nvml->WaitEvent(50ms);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  Write(std::string(kHealthy).substr(0, std::string(kHealthy).size() - 1) +
        R"(, "events": [{"seq": 1, "gpu": 1, "type": 8, "data": 79}]})");
  auto event = nvml->WaitEvent(2s);
  ASSERT_TRUE(event) << event.error().message;
  ASSERT_TRUE(*event);
  EXPECT_EQ((*event)->gpu_index, 1u);
  EXPECT_EQ((*event)->type, 8u);
  EXPECT_EQ((*event)->data, 79u);
  EXPECT_EQ((*event)->pci_bus_id, "0000:2a:00.0");
  auto again = nvml->WaitEvent(50ms);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "each event is delivered once";
}

TEST_F(NvmlSimTest, LoadFailuresSayWhy) {
  auto missing = sys::Nvml::Load("/no/such/libnvidia-ml.so.1");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kUnavailable);
  auto not_nvml = sys::Nvml::Load("libc.so.6");
  ASSERT_FALSE(not_nvml);
  EXPECT_NE(not_nvml.error().message.find("not an NVML library"), std::string::npos);
  Write(R"({"init_error": 9})");
  auto no_driver = sys::Nvml::Load(CMAX_NVML_SIM_LIB);
  ASSERT_FALSE(no_driver);
  EXPECT_NE(no_driver.error().message.find("Driver Not Loaded"), std::string::npos);
  const auto findings = NvmlFindings({std::nullopt, no_driver.error().message});
  EXPECT_EQ(findings[0].status, CheckStatus::kSkip);
  EXPECT_NE(findings[0].message.find("Driver Not Loaded"), std::string::npos);
}

TEST(NvmlChecks, BusIdsAndReasons) {
  EXPECT_EQ(sys::NormalizeBusId("00000000:17:00.0"), "0000:17:00.0");
  EXPECT_EQ(sys::NormalizeBusId("00000001:AB:00.0"), "0001:ab:00.0");
  EXPECT_EQ(TroubleReasons(0x1 | 0x4), "");
  EXPECT_EQ(TroubleReasons(0x8 | 0x40 | 0x80),
            "hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown");
}

}  // namespace
}  // namespace cmax::health
