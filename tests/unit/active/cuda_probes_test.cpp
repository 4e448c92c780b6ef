// cmax's CUDA probes as an active check. The judging is pure (tables); the chain is real:
// cmax-probe, the program cmax runs, loads a probe library through dlopen and prints its
// figures. Without a GPU the library it loads is the stand-in (libcmax-probes-sim.so, figures
// from a JSON file, named as a stand-in), and the real one (libcmax-probes.so, where nvcc built
// it) must say plainly that there is no CUDA here. The burn is watched through the simulated
// NVML (libnvml-sim.so, a stand-in for the driver's library), flipped mid-burn.
#include "active/cuda_probes.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <gtest/gtest.h>
#include <string>

#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace cmax::active {
namespace {

const GpuClass* H200() {
  return ActiveThresholds::Builtin().Find("h200");
}

ProbeLine Line(std::string probe, int device, std::optional<double> value, std::string error = "") {
  return {.probe = std::move(probe),
          .device = device,
          .bus_id = device == 0 ? "0000:17:00.0" : "0000:3d:00.0",
          .value = value,
          .seconds = 0.5,
          .error = std::move(error)};
}

// NVML numbers the GPUs the other way round from CUDA here: the findings must use NVML's.
const std::map<std::string, unsigned> kGpus = {{"0000:17:00.0", 1}, {"0000:3d:00.0", 0}};

const Finding* Find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.check_id == id) return &f;
  }
  return nullptr;
}

bool Says(const Finding* f, const std::string& words) {
  return f != nullptr && f->message.find(words) != std::string::npos;
}

TEST(ProbeOutput, LinesAreReadHeartbeatsPassedOverAndGarbageNamed) {
  auto out = ParseProbeOutput(
      "{\"devices\":[\"0000:17:00.0\",\"0000:3D:00.0\"]}\n"
      "{\"probe\":\"gemm_bf16\",\"device\":0,\"bus_id\":\"0000:17:00.0\",\"value\":812.5,"
      "\"seconds\":0.7}\n"
      "{\"heartbeat\":3}\n"
      "{\"probe\":\"burn\",\"device\":1,\"bus_id\":\"0000:3D:00.0\",\"value\":700,"
      "\"seconds\":60,\"mismatches\":2}\n"
      "{\"probe\":\"hbm_copy\",\"device\":1,\"bus_id\":\"0000:3d:00.0\",\"error\":\"cudaMalloc: "
      "out of memory\"}\n"
      "{\"stopped\":true}\n");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->devices, (std::vector<std::string>{"0000:17:00.0", "0000:3d:00.0"}));
  ASSERT_EQ(out->lines.size(), 3U);
  EXPECT_EQ(out->lines[0].value, 812.5);
  EXPECT_EQ(out->lines[1].bus_id, "0000:3d:00.0");
  EXPECT_EQ(out->lines[1].mismatches, 2U);
  EXPECT_FALSE(out->lines[2].value);
  EXPECT_EQ(out->lines[2].error, "cudaMalloc: out of memory");
  EXPECT_TRUE(out->stopped);

  auto none = ParseProbeOutput("{\"unavailable\":\"CUDA sees no GPU\"}\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->unavailable, "CUDA sees no GPU");

  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"", "neither its devices"},
           {"{\"heartbeat\":1}\n", "neither its devices"},
           {"{\"devices\":[]}\nSegmentation fault\n", "line 2: not a JSON object"},
           {"{\"devices\":[]}\n{\"probe\":\"gemm_bf16\",\"device\":0}\n",
            "neither a value nor an error"},
           {"{\"devices\":[]}\n{\"probe\":\"gemm_bf16\"}\n", "without its name or device"},
           {"{\"devices\":\"0000:17:00.0\"}\n", "devices is not a list"},
           {"{\"what\":1}\n", "not a line cmax-probe writes"},
       }) {
    auto r = ParseProbeOutput(bad.text);
    ASSERT_FALSE(r) << bad.text;
    EXPECT_EQ(r.error().code, ErrorCode::kCorrupt);
    EXPECT_NE(r.error().message.find(bad.says), std::string::npos) << r.error().message;
  }
}

TEST(JudgeProbes, EachProbeIsHeldToItsShareOfPeakOrLimitSlowestNamedByNvmlsIndex) {
  ProbeOutput out{.devices = {"0000:17:00.0", "0000:3d:00.0"}};
  // GEMM: 80 % of the H200's 989 TFLOP/s is 791.2; CUDA's device 1 is NVML's GPU 0.
  out.lines = {
      Line("gemm_bf16", 0, 812.5), Line("gemm_bf16", 1, 700),
      // copy: 85 % of 4,800 GB/s is 4,080.
      Line("hbm_copy", 0, 4300), Line("hbm_copy", 1, 4100),
      // host copies: nvbandwidth's limits, 48 GB/s with a 5 % warning band.
      Line("host_to_device", 0, 55.2), Line("host_to_device", 1, 49), Line("device_to_host", 0, 54),
      Line("device_to_host", 1, std::nullopt, "cudaMemcpyAsync: unspecified launch failure")};
  const ProbeVerdict v = JudgeProbes(out, kGpus, H200(), ActiveThresholds::Builtin());
  ASSERT_EQ(v.findings.size(), 4U);
  const Finding* gemm = Find(v.findings, "active.probe.gemm-bf16");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->status, CheckStatus::kFail);
  EXPECT_EQ(gemm->observed, "700 TFLOP/s");
  EXPECT_EQ(gemm->message,
            "GPU 0 BF16 GEMM: 700 TFLOP/s, below 791.2 TFLOP/s (70.8 % of the published peak "
            "989 TFLOP/s)");
  EXPECT_NE(gemm->expected.find("791.2"), std::string::npos) << gemm->expected;
  EXPECT_EQ(Find(v.findings, "active.probe.hbm-copy")->status, CheckStatus::kPass);
  const Finding* h2d = Find(v.findings, "active.probe.host-to-device");
  EXPECT_EQ(h2d->status, CheckStatus::kWarn) << h2d->message;  // 49 < 48 x 1.05
  const Finding* d2h = Find(v.findings, "active.probe.device-to-host");
  EXPECT_EQ(d2h->status, CheckStatus::kFail);
  EXPECT_TRUE(Says(d2h, "GPU 0: cudaMemcpyAsync: unspecified launch failure")) << d2h->message;
  // A figure a GPU, labelled by NVML's index.
  ASSERT_EQ(v.metrics.size(), 7U);
  EXPECT_EQ(v.metrics[0].name, "active.probe.gemm_bf16_tflops");
  EXPECT_EQ(v.metrics[0].labels.at("gpu"), "1");
  EXPECT_EQ(v.metrics[0].value, 812.5);
  EXPECT_EQ(v.metrics[2].name, "active.probe.hbm_copy_gbs");

  // A GPU the table does not know: no verdict, never a pass.
  const ProbeVerdict unknown = JudgeProbes(out, kGpus, nullptr, ActiveThresholds::Builtin());
  EXPECT_EQ(Find(unknown.findings, "active.probe.hbm-copy")->status, CheckStatus::kUnknown);
  // A probe missing from the output is said, not passed.
  out.lines.erase(out.lines.begin(), out.lines.begin() + 2);
  const ProbeVerdict partial = JudgeProbes(out, kGpus, H200(), ActiveThresholds::Builtin());
  EXPECT_EQ(Find(partial.findings, "active.probe.gemm-bf16")->status, CheckStatus::kUnknown);
}

sys::GpuReading Reading(unsigned index) {
  sys::GpuReading g{.index = index};
  g.temperature_c = 40;
  g.sm_clock_mhz = 1980;
  g.clock_event_reasons = 0;
  g.ecc_dbe_volatile = 0;
  g.ecc_sbe_volatile = 0;
  return g;
}

TEST(ObserveBurn, AnXidALostGpuOrNewDoubleBitErrorsStopTheBurn) {
  const GpuLook first{.gpus = {Reading(0), Reading(1)}};
  BurnWatch watch;
  GpuLook hot = first;
  hot.gpus[0].temperature_c = 81;
  hot.gpus[0].sm_clock_mhz = 1500;
  hot.gpus[0].clock_event_reasons = 0x4 | 0x40;  // power cap (normal) and thermal slowdown
  hot.gpus[1].ecc_sbe_volatile = 3;
  EXPECT_EQ(ObserveBurn(first, hot, 5, watch), "");
  EXPECT_EQ(watch.peak_temperature_c.at(0), 81U);
  EXPECT_EQ(watch.lowest_sm_clock_mhz.at(0), 1500U);
  EXPECT_EQ(watch.trouble_reasons.at(0), 0x40U);
  EXPECT_EQ(watch.new_sbe.at(1), 3U);

  GpuLook bad = first;
  bad.gpus[1].lost = true;
  bad.events = {{.gpu_index = 1, .type = 0x8, .data = 79}};
  EXPECT_EQ(ObserveBurn(first, bad, 12.5, watch),
            "Xid 79 on GPU 1, GPU 1 lost (fallen off the bus)");
  EXPECT_EQ(watch.stopped_because, "Xid 79 on GPU 1, GPU 1 lost (fallen off the bus) after 12.5 s");
  // The same lost GPU is not news at the next look.
  GpuLook still = first;
  still.gpus[1].lost = true;
  EXPECT_EQ(ObserveBurn(first, still, 13, watch), "");

  BurnWatch ecc;
  GpuLook dbe = first;
  dbe.gpus[0].ecc_dbe_volatile = 1;
  EXPECT_EQ(ObserveBurn(first, dbe, 3, ecc), "1 new double-bit ECC error on GPU 0");
}

TEST(JudgeBurn, WhatTheWatchSawAndWrongResultsFailCriticallySlowGpusWarn) {
  ProbeOutput out{.devices = {"0000:17:00.0", "0000:3d:00.0"}};
  out.lines = {Line("burn", 0, 700), Line("burn", 1, 690)};
  BurnWatch calm;
  calm.looks = 60;
  calm.peak_temperature_c = {{0, 71}, {1, 69}};
  ProbeVerdict ok = JudgeBurn(out, calm, kGpus, 60);
  EXPECT_EQ(Find(ok.findings, "active.burn")->status, CheckStatus::kPass);
  EXPECT_EQ(Find(ok.findings, "active.burn")->observed, "2 GPUs, 60 s, 695 TFLOP/s median");
  EXPECT_EQ(Find(ok.findings, "active.burn.clocks")->status, CheckStatus::kPass);
  EXPECT_EQ(ok.metrics.size(), 4U);  // TFLOP/s and peak temperature, a GPU each

  // Wrong results: silent data corruption, however fast.
  ProbeOutput corrupt = out;
  corrupt.lines[1].mismatches = 12;
  const ProbeVerdict corrupted = JudgeBurn(corrupt, calm, kGpus, 60);
  const Finding* sdc = Find(corrupted.findings, "active.burn");
  EXPECT_EQ(sdc->status, CheckStatus::kFail);
  EXPECT_EQ(sdc->severity, Severity::kCritical);
  EXPECT_TRUE(Says(sdc, "GPU 0 gave wrong results (12 elements")) << sdc->message;

  BurnWatch fell;
  fell.xids = {{.gpu = 1, .xid = 79, .at_s = 12.5}};
  fell.lost_at_s = {{1, 12.5}};
  fell.stopped_because = "Xid 79 on GPU 1, GPU 1 lost (fallen off the bus) after 12.5 s";
  ProbeOutput died = out;
  died.lines[0] = Line("burn", 0, std::nullopt, "the burn: unspecified launch failure");
  const ProbeVerdict fallen = JudgeBurn(died, fell, kGpus, 60);
  const Finding* lost = Find(fallen.findings, "active.burn");
  EXPECT_EQ(lost->status, CheckStatus::kFail);
  EXPECT_EQ(lost->severity, Severity::kCritical);
  EXPECT_TRUE(Says(lost,
                   "Xid 79 on GPU 1 at 12.5 s; GPU 1 fell off the bus at 12.5 s; "
                   "the burn was stopped: Xid 79"))
      << lost->message;

  // A GPU well below its siblings, and one held down by hardware: a warning each.
  ProbeOutput slow = out;
  slow.lines.push_back(Line("burn", 0, 520));
  slow.lines.back().bus_id = "0000:9a:00.0";
  BurnWatch hot = calm;
  hot.trouble_reasons = {{0, 0x40}};
  const ProbeVerdict slowed = JudgeBurn(slow, hot, kGpus, 60);
  const Finding* clocks = Find(slowed.findings, "active.burn.clocks");
  EXPECT_EQ(clocks->status, CheckStatus::kWarn);
  EXPECT_TRUE(Says(clocks, "GPU 0: hw_thermal_slowdown")) << clocks->message;
  EXPECT_TRUE(Says(clocks, "CUDA device 0 at 520 TFLOP/s, 75 % of the node's median 690"))
      << clocks->message;
}

// The real program and a real library loaded by it.
class ProbeChain : public ::testing::Test {
 protected:
  void WriteSim(const std::string& json) {
    std::ofstream(dir_.File("probes.json.new")) << json;
    std::filesystem::rename(dir_.File("probes.json.new"), dir_.File("probes.json"));
  }
  ProbeRunIo Io(const std::string& library) {
    std::vector<std::string> env = {"CMAX_PROBES_SIM=" + dir_.File("probes.json"),
                                    "CMAX_PROBES_SIM_BURNING=" + dir_.File("burning")};
    if (!library.empty()) env.push_back("CMAX_PROBES_LIB=" + library);
    return {.tools = {.runner = &runner_}, .program = CMAX_PROBE_BIN, .env = env};
  }
  testing::TempDir dir_;
  sys::PosixProcessRunner runner_;
};

TEST_F(ProbeChain, TheStandInsFiguresComeThroughCmaxProbeAndAreJudged) {
  WriteSim(R"({"devices": ["0000:3d:00.0", "0000:17:00.0"],
               "gemm_bf16": [805, 640], "hbm_copy": [4200, 4210],
               "host_to_device": [55, 55.5], "device_to_host": [53, 54]})");
  const ProbeVerdict v = RunCudaProbes(kGpus, H200(), ActiveThresholds::Builtin(),
                                       std::chrono::seconds(30), Io(CMAX_PROBES_SIM_LIB));
  ASSERT_EQ(v.findings.size(), 4U);
  const Finding* gemm = Find(v.findings, "active.probe.gemm-bf16");
  EXPECT_EQ(gemm->status, CheckStatus::kFail) << gemm->message;
  EXPECT_TRUE(Says(gemm, "GPU 1 BF16 GEMM")) << gemm->message;  // CUDA's 1 is 0000:17
  EXPECT_EQ(Find(v.findings, "active.probe.hbm-copy")->status, CheckStatus::kPass);
  EXPECT_EQ(Find(v.findings, "active.probe.device-to-host")->status, CheckStatus::kPass);
  EXPECT_EQ(v.metrics.size(), 8U);

  // A probe that fails on the device: CUDA's words, a FAIL.
  WriteSim(R"({"devices": ["0000:3d:00.0"], "gemm_bf16": [805], "hbm_copy": [4200],
               "host_to_device": [55], "device_to_host": [53],
               "errors": {"hbm_copy": "the copies: an illegal memory access was encountered"}})");
  const ProbeVerdict failed = RunCudaProbes(kGpus, H200(), ActiveThresholds::Builtin(),
                                            std::chrono::seconds(30), Io(CMAX_PROBES_SIM_LIB));
  const Finding* copy = Find(failed.findings, "active.probe.hbm-copy");
  EXPECT_EQ(copy->status, CheckStatus::kFail);
  EXPECT_TRUE(Says(copy, "GPU 0: the copies: an illegal memory access")) << copy->message;
}

TEST_F(ProbeChain, WithoutCudaEveryProbeIsASkipSayingWhy) {
  // The library cmax-probe finds beside itself: nvcc's build where the toolkit was there
  // (no driver here, so CUDA says so), else none at all.
  ProbeVerdict v =
      RunCudaProbes(kGpus, H200(), ActiveThresholds::Builtin(), std::chrono::seconds(30), Io(""));
  ASSERT_EQ(v.findings.size(), 4U);
  for (const Finding& f : v.findings) {
    EXPECT_EQ(f.status, CheckStatus::kSkip) << f.check_id << ": " << f.message;
#ifdef CMAX_PROBES_BUILT
    EXPECT_TRUE(Says(&f, "no CUDA to run the probes with: CUDA: cudaGetDeviceCount: "))
        << f.message;
#else
    EXPECT_TRUE(Says(&f, "cmax was built without the CUDA toolkit (nvcc)")) << f.message;
#endif
  }
  // The stand-in saying there is no device; a library named that is not there.
  WriteSim(R"({"unavailable": "no CUDA-capable device is detected"})");
  v = RunCudaProbes(kGpus, H200(), ActiveThresholds::Builtin(), std::chrono::seconds(30),
                    Io(CMAX_PROBES_SIM_LIB));
  EXPECT_TRUE(Says(&v.findings[0], "CUDA: no CUDA-capable device is detected"))
      << v.findings[0].message;
  v = RunCudaProbes(kGpus, H200(), ActiveThresholds::Builtin(), std::chrono::seconds(30),
                    Io(dir_.File("libnone.so")));
  EXPECT_EQ(v.findings[0].status, CheckStatus::kSkip);
  EXPECT_TRUE(Says(&v.findings[0], "libnone.so is not there")) << v.findings[0].message;
  // No cmax-probe at all.
  ProbeRunIo missing = Io(CMAX_PROBES_SIM_LIB);
  missing.program = dir_.File("cmax-probe");
  v = RunCudaProbes(kGpus, H200(), ActiveThresholds::Builtin(), std::chrono::seconds(30), missing);
  EXPECT_EQ(v.findings[0].status, CheckStatus::kSkip);
  EXPECT_TRUE(Says(&v.findings[0], "cmax-probe is not installed beside cmax"))
      << v.findings[0].message;
}

class BurnChain : public ProbeChain {
 protected:
  void SetUp() override {
    WriteSim(R"({"devices": ["0000:17:00.0", "0000:3d:00.0"], "burn": [702, 698]})");
    WriteNvml(false);
    ::setenv("CMAX_NVML_SIM_STATE", dir_.File("nvml.json").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("CMAX_NVML_SIM_STATE"); }
  // Two idle H200s; with `fell`, GPU 0 lost and its Xid 79 sent.
  void WriteNvml(bool fell) {
    const std::string gpu =
        R"("name": "NVIDIA H200", "temperature_c": 45, "clocks_mhz": {"sm": 1980, "mem": 2619},
           "ecc": {"enabled": true, "volatile": {"sbe": 0, "dbe": 0}})";
    std::ofstream(dir_.File("nvml.json.new"))
        << R"({"gpus": [{"bus_id": "0000:3d:00.0", "lost": )" << (fell ? "true" : "false") << ", "
        << gpu << R"(}, {"bus_id": "0000:17:00.0", )" << gpu << "}]"
        << (fell ? R"(, "events": [{"seq": 1, "gpu": 0, "type": 8, "data": 79}])" : "") << "}";
    std::filesystem::rename(dir_.File("nvml.json.new"), dir_.File("nvml.json"));
  }
};

TEST_F(BurnChain, ABurnThatRunsItsTimeUnderAWatchThatSawNothingPasses) {
  auto look = NvmlLook(CMAX_NVML_SIM_LIB);
  ASSERT_TRUE(look) << look.error().message;
  const ProbeVerdict v = RunBurn(kGpus, 0.3, std::chrono::seconds(20),
                                 std::chrono::milliseconds(20), *look, Io(CMAX_PROBES_SIM_LIB));
  const Finding* burn = Find(v.findings, "active.burn");
  ASSERT_NE(burn, nullptr);
  EXPECT_EQ(burn->status, CheckStatus::kPass) << burn->message;
  EXPECT_EQ(burn->observed, "2 GPUs, 0.3 s, 700 TFLOP/s median");
  EXPECT_EQ(Find(v.findings, "active.burn.clocks")->status, CheckStatus::kPass);
}

TEST_F(BurnChain, AGpuThatFallsOffTheBusMidBurnStopsItAndItsXidIsReported) {
  auto look = NvmlLook(CMAX_NVML_SIM_LIB);
  ASSERT_TRUE(look) << look.error().message;
  // A burn of a minute: it can only end this soon because the watch stopped it.
  const auto started = std::chrono::steady_clock::now();
  auto burning = std::async(std::launch::async, [&] {
    return RunBurn(kGpus, 60, std::chrono::seconds(5), std::chrono::milliseconds(20), *look,
                   Io(CMAX_PROBES_SIM_LIB));
  });
  ASSERT_TRUE(testing::WaitUntil([&] { return std::filesystem::exists(dir_.File("burning")); }));
  WriteNvml(true);
  const ProbeVerdict v = burning.get();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  const Finding* burn = Find(v.findings, "active.burn");
  ASSERT_NE(burn, nullptr);
  EXPECT_EQ(burn->status, CheckStatus::kFail);
  EXPECT_EQ(burn->severity, Severity::kCritical);
  EXPECT_TRUE(Says(burn, "Xid 79 on GPU 0 at ")) << burn->message;
  EXPECT_TRUE(Says(burn, "GPU 0 fell off the bus at ")) << burn->message;
  EXPECT_TRUE(Says(burn, "the burn was stopped: Xid 79 on GPU 0")) << burn->message;
}

}  // namespace
}  // namespace cmax::active
