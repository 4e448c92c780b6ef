// The thresholds per GPU class: the built-in table, which GPU is which class, limits and shares
// of the peak, the judgement at the edges, and a table of files it refuses.
#include "active/thresholds.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace cmax::active {
namespace {

TEST(ActiveThresholds, TheBuiltInTableReadsAndNamesItsClassesByNvmlNames) {
  const ActiveThresholds& t = ActiveThresholds::Builtin();
  ASSERT_GE(t.Classes().size(), 4U);
  const struct {
    const char* name;
    const char* id;  // nullptr: not known
  } cases[] = {{"NVIDIA H100 80GB HBM3", "h100-sxm"},
               {"H100 80GB HBM3", "h100-sxm"},
               {"  NVIDIA H200 ", "h200"},
               {"NVIDIA H200 NVL", nullptr},  // the PCIe card: another part
               {"NVIDIA H100 PCIe", nullptr},
               {"NVIDIA GB200", "gb200"},
               {"NVIDIA A100-SXM4-80GB", "a100-sxm"},
               {"NVIDIA A100 80GB PCIe", nullptr},
               {"", nullptr}};
  for (const auto& c : cases) {
    const GpuClass* found = t.ClassOf(c.name);
    if (c.id == nullptr) {
      EXPECT_EQ(found, nullptr) << c.name;
    } else {
      ASSERT_NE(found, nullptr) << c.name;
      EXPECT_EQ(found->id, c.id) << c.name;
    }
  }
  // Every limit and every peak carries where it comes from.
  for (const GpuClass& c : t.Classes()) {
    EXPECT_FALSE(c.peaks_source.empty()) << c.id;
    for (const Limit& l : c.limits) EXPECT_TRUE(l.source.starts_with("https://")) << l.metric;
  }
}

TEST(ActiveThresholds, LimitsAndSharesOfThePeak) {
  const ActiveThresholds& t = ActiveThresholds::Builtin();
  const GpuClass* h100 = t.Find("h100-sxm");
  const GpuClass* h200 = t.Find("h200");
  const GpuClass* gb200 = t.Find("gb200");
  ASSERT_TRUE(h100 && h200 && gb200);

  const auto h2d = t.For(*h100, "nvbandwidth.host_to_device_gbs");
  ASSERT_TRUE(h2d);
  EXPECT_DOUBLE_EQ(h2d->min, 48);
  EXPECT_DOUBLE_EQ(h2d->warn_below, 48 * 1.05);
  EXPECT_EQ(h2d->words, "at least 48");

  const auto allreduce = t.For(*h200, "nccl.local_all_reduce_busbw_gbs");
  ASSERT_TRUE(allreduce);
  EXPECT_DOUBLE_EQ(allreduce->min, 431);
  EXPECT_DOUBLE_EQ(allreduce->warn_below, 431);  // no margin given: none

  const auto gemm = t.For(*h200, "probe.gemm_bf16_tflops");
  ASSERT_TRUE(gemm);
  EXPECT_DOUBLE_EQ(gemm->min, 989 * 0.80);
  EXPECT_EQ(gemm->words, "at least 791.2 (80 % of the peak 989)");
  EXPECT_NE(gemm->source.find("nvidia.com"), std::string::npos);

  const auto copy = t.For(*h200, "probe.hbm_copy_gbs");
  ASSERT_TRUE(copy);
  EXPECT_DOUBLE_EQ(copy->min, 4800 * 0.85);
  // No HBM peak given for A100 (its 40 and 80 GB parts differ), no P2P limit for it: no
  // threshold, never a made-up one.
  EXPECT_FALSE(t.For(*t.Find("a100-sxm"), "probe.hbm_copy_gbs"));
  EXPECT_DOUBLE_EQ(t.For(*gb200, "probe.hbm_copy_gbs")->min, 8000 * 0.85);
  EXPECT_FALSE(t.For(*t.Find("a100-sxm"), "nvbandwidth.device_to_device_read_gbs"));
  EXPECT_FALSE(t.For(*h100, "no.such.figure"));
}

TEST(ActiveThresholds, AFigureIsJudgedAtTheEdgesOfItsLimit) {
  const ActiveThresholds& t = ActiveThresholds::Builtin();
  const GpuClass* h100 = t.Find("h100-sxm");
  const auto limit = t.For(*h100, "nvbandwidth.host_to_device_gbs");
  const struct {
    double observed;
    CheckStatus status;
  } cases[] = {{0, CheckStatus::kFail},     {47.99, CheckStatus::kFail},
               {48, CheckStatus::kWarn},    {50.39, CheckStatus::kWarn},
               {50.41, CheckStatus::kPass}, {55.6, CheckStatus::kPass}};
  for (const auto& c : cases) {
    const Finding f = JudgeFigure(
        {"active.nvbandwidth", "GPU 3 host to device", c.observed, "GB/s"}, h100, limit);
    EXPECT_EQ(f.status, c.status) << c.observed;
    EXPECT_EQ(f.check_id, "active.nvbandwidth");
    EXPECT_EQ(f.expected, "at least 48 GB/s (h100-sxm)");
    ASSERT_EQ(f.links.size(), 1U);
    EXPECT_TRUE(f.links[0].starts_with("https://github.com/Azure/azurehpc-health-checks/"));
  }
  const Finding fail =
      JudgeFigure({"active.nvbandwidth", "GPU 3 host to device", 31.25, "GB/s"}, h100, limit);
  EXPECT_EQ(fail.observed, "31.2 GB/s");
  EXPECT_EQ(fail.message, "GPU 3 host to device: 31.2 GB/s, below 48 GB/s");

  const Finding unknown_gpu =
      JudgeFigure({"active.nvbandwidth", "GPU 0 host to device", 50, "GB/s"}, nullptr, limit);
  EXPECT_EQ(unknown_gpu.status, CheckStatus::kUnknown);
  EXPECT_NE(unknown_gpu.message.find("no threshold for this GPU model"), std::string::npos);
  const Finding no_limit =
      JudgeFigure({"active.x", "GPU 0 x", 50, "GB/s"}, h100, t.For(*h100, "x"));
  EXPECT_EQ(no_limit.status, CheckStatus::kUnknown);
  EXPECT_NE(no_limit.message.find("h100-sxm class has no threshold"), std::string::npos);
}

TEST(ActiveThresholds, RefusesWhatIsNotATableInWords) {
  const std::string good_class =
      R"({"id": "x", "gpu_names": ["X1"], "peaks": {"bf16_dense_tflops": 10, "source": "s"},
          "limits": [{"metric": "m", "min": 1, "source": "https://a"}]})";
  const auto doc = [](const std::string& classes, const std::string& extra = "") {
    return R"({"schema": "cmax.active-thresholds/v1", "classes": [)" + classes + "]" + extra + "}";
  };
  ASSERT_TRUE(ActiveThresholds::Parse(doc(good_class))) << doc(good_class);
  const struct {
    std::string text;
    std::string says;
  } cases[] = {
      {"not json", "not JSON"},
      {"{\n  \"schema\": \"cmax.active-thresholds/v1\",\n  \"classes\": [,]\n}", "at line 3"},
      {R"({"schema": "other/v1", "classes": []})", "not a cmax.active-thresholds/v1"},
      {doc(good_class, R"(, "clases": [])"), "did you mean 'classes'"},
      {doc(good_class + "," + good_class), "x given twice"},
      {doc(R"({"id": "x", "gpu_names": ["X1"], "limits": []},
              {"id": "y", "gpu_names": ["X1"], "limits": []})"),
       "GPU name X1 in two classes"},
      {doc(R"({"id": "x", "gpu_names": [], "limits": []})"), "\"gpu_names\" must be a list"},
      {doc(R"({"id": "x", "gpu_names": ["X1"], "limits": [{"metric": "m", "min": 0, "source": "s"}]})"),
       "\"min\" must be a number above 0"},
      {doc(R"({"id": "x", "gpu_names": ["X1"], "limits": [{"metric": "m", "min": 1, "warn_margin": 0.9, "source": "s"}]})"),
       "\"warn_margin\" must be a number of 1 or more"},
      {doc(R"({"id": "x", "gpu_names": ["X1"], "limits": [{"metric": "m", "min": 1}]})"),
       "\"source\" must be a non-empty string"},
      {doc(R"({"id": "x", "gpu_names": ["X1"], "limits": [{"metric": "m", "min": 1, "source": "s"}, {"metric": "m", "min": 2, "source": "s"}]})"),
       "m given twice"},
      {doc(R"({"id": "x", "gpu_names": ["X1"], "peaks": {"fp64": 1, "source": "s"}, "limits": []})"),
       "unknown key 'fp64'"},
      {doc(good_class,
           R"(, "shares_of_peak": [{"metric": "g", "peak": "bf16_dense_tflops", "min_share": 1.5, "source": "s"}])"),
       "within (0, 1]"},
      {doc(good_class,
           R"(, "shares_of_peak": [{"metric": "g", "peak": "hbm_gbs", "min_share": 0.5, "source": "s"}])"),
       "no class gives the peak hbm_gbs"},
  };
  for (const auto& c : cases) {
    const auto parsed = ActiveThresholds::Parse(c.text);
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << c.text;
    EXPECT_NE(parsed.error().message.find(c.says), std::string::npos)
        << c.text << "\n  said: " << parsed.error().message;
  }
}

}  // namespace
}  // namespace cmax::active
