// The goodput expense formulas on worked examples computed by hand here, and SemiAnalysis's
// published comparison: at the same price, a Gold-like cloud (MTBF 25,000 GPU-hours, detect and
// replace in 15 minutes) costs a large training job 5-15% less than a Silver-like one (15,000,
// one hour each).
#include "rate/goodput.hpp"

#include <gtest/gtest.h>

#include "rate/rating.hpp"

namespace cmax::rate {
namespace {

TEST(Goodput, TheThreeFormulasByHand) {
  const GoodputInputs in{.detect_h = 0.5,
                         .checkpoint_interval_h = 2,
                         .job_init_h = 0.25,
                         .repair_h = 4,
                         .failover_h = 0.1,
                         .job_gpus = 512,
                         .blast_radius_gpus = 8,
                         .failures = 10,
                         .gpu_hour_usd = 2};
  const GoodputExpense g = ComputeGoodputExpense(in);
  // cold: (0.5 + 1 + 0.25 + 4) * 512 * 10 * 2 = 5.75 * 10240 = 58880
  EXPECT_DOUBLE_EQ(g.cold_usd, 58880);
  // hot: ((0.5 + 1 + 0.25) * 512 + 4 * 8) * 10 * 2 = (896 + 32) * 20 = 18560
  EXPECT_DOUBLE_EQ(g.hot_usd, 18560);
  // fault tolerant: ((0.5 + 0.1) * 512 + 4 * 8) * 10 * 2 = (307.2 + 32) * 20 = 6784
  EXPECT_DOUBLE_EQ(g.tolerant_usd, 6784);
  EXPECT_DOUBLE_EQ(ExpectedFailures(512, 730, 25000), 512.0 * 730 / 25000);
  EXPECT_EQ(ExpectedFailures(512, 730, 0), 0);
  // 512 GPUs for 100 h at 2 USD lose 58880 / 2 = 29440 of 51200 GPU-hours: 2 * 51200 / 21760.
  EXPECT_DOUBLE_EQ(*EffectivePricePerUsefulGpuHour(2, 512, 100, 58880), 2.0 * 51200 / 21760);
  EXPECT_EQ(EffectivePricePerUsefulGpuHour(2, 512, 10, 58880), std::nullopt);  // all lost
  EXPECT_EQ(EffectivePricePerUsefulGpuHour(0, 512, 100, 0), std::nullopt);
}

TEST(Goodput, GoldCostsALargeTrainingJobFiveToFifteenPercentLessThanSilver) {
  const double gpus = 1024;
  const double hours = 730;
  const double price = 2.49;
  const auto total = [&](double mtbf, double detect_h, double repair_h) {
    const GoodputInputs in{.detect_h = detect_h,
                           .checkpoint_interval_h = 1,
                           .job_init_h = 0.2,
                           .repair_h = repair_h,
                           .job_gpus = gpus,
                           .blast_radius_gpus = 8,
                           .failures = ExpectedFailures(gpus, hours, mtbf),
                           .gpu_hour_usd = price};
    return gpus * hours * price + ComputeGoodputExpense(in).cold_usd;
  };
  const double gold = total(25000, 0.25, 0.25);
  const double silver = total(15000, 1, 1);
  // By hand: contract 1,861,324.8; gold adds 1.2 h * 1024 * 29.9008 * 2.49 = 91,487.5;
  // silver 2.7 h * 1024 * 49.8347 * 2.49 = 343,079.3.
  EXPECT_NEAR(gold, 1861324.8 + 91487.5, 1);
  EXPECT_NEAR(silver, 1861324.8 + 343079.3, 1);
  const double saving = 1 - gold / silver;
  EXPECT_GT(saving, 0.05);
  EXPECT_LT(saving, 0.15);
}

TEST(Goodput, TheRatingUsesMeasuredTimesAndTheAttestedPrice) {
  const Rubric& rubric = Rubric::Builtin();
  ASSERT_TRUE(rubric.Goodput());
  RunRecord reliability;
  reliability.run.id = 9;
  reliability.metrics = {{"reliability.detect", {}, 90, "s"},
                         {"reliability.detect", {}, 180, "s"},
                         {"reliability.back_in_service", {}, 1980, "s"}};
  Attestation priced;
  priced.source = "S";
  priced.facts["pricing.gpu_hour_usd"] = 2.0;
  const Rating r = RateEvidence(rubric, {{&reliability}, &priced});
  ASSERT_TRUE(r.goodput) << r.goodput_missing;
  const auto input = [&](std::string_view prefix) {
    return *std::ranges::find_if(r.goodput->inputs,
                                 [&](const auto& i) { return i.name.starts_with(prefix); });
  };
  EXPECT_DOUBLE_EQ(input("t_id").value, 180.0 / 3600);  // the slowest detection
  EXPECT_EQ(input("t_id").source, "measured: reliability.detect, run 9");
  EXPECT_DOUBLE_EQ(input("t_repair").value, (1980.0 - 180) / 3600);
  EXPECT_EQ(input("price").source, "attested by S");
  const GoodputAssumptions& a = *rubric.Goodput();
  const GoodputInputs by_hand{.detect_h = 0.05,
                              .checkpoint_interval_h = a.checkpoint_interval_h,
                              .job_init_h = a.job_init_h,
                              .repair_h = 0.5,
                              .failover_h = a.failover_h,
                              .job_gpus = a.job_gpus,
                              .blast_radius_gpus = a.blast_radius_gpus,
                              .failures = a.job_gpus * a.contract_hours / a.mtbf_gpu_hours,
                              .gpu_hour_usd = 2};
  EXPECT_NEAR(r.goodput->expense.cold_usd, ComputeGoodputExpense(by_hand).cold_usd, 1e-6);
  // A lab's times are at its scale (its bars over 60): the contract's hours are at the real one.
  const Rating lab = RateEvidence(rubric.WithTimesScaled(1.0 / 60), {{&reliability}, &priced});
  ASSERT_TRUE(lab.goodput);
  const auto lab_input = [&](std::string_view prefix) {
    return *std::ranges::find_if(lab.goodput->inputs,
                                 [&](const auto& i) { return i.name.starts_with(prefix); });
  };
  EXPECT_DOUBLE_EQ(lab_input("t_id").value, 180.0 * 60 / 3600);
  EXPECT_EQ(lab_input("t_id").source,
            "measured: reliability.detect, run 9 (180 s at the lab's scale, x60)");
  EXPECT_DOUBLE_EQ(lab_input("t_repair").value, (1980.0 - 180) * 60 / 3600);
  EXPECT_DOUBLE_EQ(lab_input("t_chkpt").value, a.checkpoint_interval_h);  // assumed: as it is
  // No price: none, and why.
  const Rating unpriced = RateEvidence(rubric, {{&reliability}, nullptr});
  EXPECT_FALSE(unpriced.goodput);
  EXPECT_EQ(unpriced.goodput_missing, "no GPU-hour price attested (pricing.gpu_hour_usd)");
}

}  // namespace
}  // namespace cmax::rate
