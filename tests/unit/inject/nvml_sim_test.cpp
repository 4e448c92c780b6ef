// Faults for the simulated NVML: each changes the state file as described, and the simulated
// library (loaded through the same dlopen path as the real one) then reports the fault.
#include "inject/nvml_sim.hpp"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "sys/nvml.hpp"

namespace cmax::inject {
namespace {

using nlohmann::json;

json TwoGpus() {
  return json::parse(R"({"driver_version": "570.86.15", "gpus": [
    {"uuid": "GPU-a", "bus_id": "0000:17:00.0", "minor": 0},
    {"uuid": "GPU-b", "bus_id": "0000:3B:00.0", "minor": 1,
     "ecc": {"enabled": true, "volatile": {"sbe": 0, "dbe": 2}, "aggregate": {"dbe": 5}}}]})");
}

TEST(NvmlSimFault, EachFaultChangesWhatItSays) {
  auto c = ApplySimFault(TwoGpus(), {"row-remap-failure", 0, "1"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->state["gpus"][1]["remapped_rows"]["failure"].get<bool>());
  EXPECT_EQ(c->description, "GPU 0000:3B:00.0: remapped_rows.failure unset -> true");
  c = ApplySimFault(TwoGpus(), {"dbe", 0, "3b:00.0"});  // by address, any case and form
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->state["gpus"][1]["ecc"]["volatile"]["dbe"], 3);
  EXPECT_EQ(c->state["gpus"][1]["ecc"]["aggregate"]["dbe"], 6);
  c = ApplySimFault(TwoGpus(), {"lost", 0, "0000:17:00"});
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->state["gpus"][0]["lost"].get<bool>());
  EXPECT_EQ(c->bus_id, "0000:17:00.0");
  c = ApplySimFault(TwoGpus(), {"pcie-width", 8, "0"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->state["gpus"][0]["pcie"]["width"], 8);
  c = ApplySimFault(TwoGpus(), {"recovery-action", 2, "0"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->state["gpus"][0]["recovery_action"], 2);
  c = ApplySimFault(c->state, {"xid", 79, "1"});
  ASSERT_TRUE(c);
  c = ApplySimFault(c->state, {"xid", 48, "1"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->state["events"].size(), 2U);
  EXPECT_EQ(c->state["events"][1], json::parse(R"({"seq": 2, "gpu": 1, "type": 8, "data": 48})"));
  EXPECT_EQ(c->state["gpus"][0]["recovery_action"], 2);  // earlier changes kept
}

TEST(NvmlSimFault, RefusesWhatItCannotDo) {
  EXPECT_EQ(ApplySimFault(TwoGpus(), {"melt", 0, "0"}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ApplySimFault(TwoGpus(), {"lost", 0, "2"}).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(ApplySimFault(TwoGpus(), {"lost", 0, "0000:99:00.0"}).error().code,
            ErrorCode::kNotFound);
  EXPECT_FALSE(ApplySimFault(TwoGpus(), {"pcie-width", 0, "0"}));
  EXPECT_FALSE(ApplySimFault(TwoGpus(), {"recovery-action", 9, "0"}));
  EXPECT_FALSE(ApplySimFault(TwoGpus(), {"xid", 0, "0"}));
  EXPECT_FALSE(ApplySimFault(json::object(), {"lost", 0, "0"}));
}

TEST(NvmlSimFault, OnTheFileWithABackupThatRestores) {
  sys::MemoryFileSystem fs;
  const std::string original = TwoGpus().dump();
  fs.AddFile("/lab/sim.json", original);
  ASSERT_TRUE(ApplySimFaultToFile(fs, "/lab/sim.json", {"lost", 0, "0"}, /*dry_run=*/true));
  EXPECT_EQ(fs.ReadFile("/lab/sim.json", 1 << 20).value(), original);  // a dry run writes nothing
  EXPECT_FALSE(fs.Exists("/lab/sim.json.cmax-backup"));
  ASSERT_TRUE(ApplySimFaultToFile(fs, "/lab/sim.json", {"lost", 0, "0"}));
  ASSERT_TRUE(ApplySimFaultToFile(fs, "/lab/sim.json", {"dbe", 0, "1"}));
  EXPECT_EQ(fs.ReadFile("/lab/sim.json.cmax-backup", 1 << 20).value(),
            original);  // the first original
  EXPECT_TRUE(
      nlohmann::json::parse(fs.ReadFile("/lab/sim.json", 1 << 20).value())["gpus"][0]["lost"]);
  ASSERT_TRUE(RestoreSimState(fs, "/lab/sim.json"));
  EXPECT_EQ(fs.ReadFile("/lab/sim.json", 1 << 20).value(), original);
  EXPECT_FALSE(fs.Exists("/lab/sim.json.cmax-backup"));
  EXPECT_EQ(RestoreSimState(fs, "/lab/sim.json").error().code, ErrorCode::kNotFound);
  fs.AddFile("/lab/bad.json", "{not json");
  EXPECT_FALSE(ApplySimFaultToFile(fs, "/lab/bad.json", {"lost", 0, "0"}));
  EXPECT_FALSE(ApplySimFaultToFile(fs, "/lab/none.json", {"lost", 0, "0"}));
}

TEST(NvmlSimFault, TheSimulatedLibraryReportsIt) {
  testing::TempDir dir;
  const std::string path = dir.File("state.json");
  std::ofstream(path) << TwoGpus().dump();
  ::setenv("CMAX_NVML_SIM_STATE", path.c_str(), 1);
  auto nvml = sys::Nvml::Load(CMAX_NVML_SIM_LIB);
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto before = (*nvml)->Snapshot();
  ASSERT_TRUE(before);
  EXPECT_NE(before->gpus[1].remapped_rows_failure, std::optional<bool>(true));
  const SimChange c = ApplySimFault(TwoGpus(), {"row-remap-failure", 0, "1"}).value();
  std::ofstream(path + ".new") << c.state.dump();
  std::rename((path + ".new").c_str(), path.c_str());
  auto after = (*nvml)->Snapshot();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->gpus[1].remapped_rows_failure, std::optional<bool>(true));
  ::unsetenv("CMAX_NVML_SIM_STATE");
}

}  // namespace
}  // namespace cmax::inject
