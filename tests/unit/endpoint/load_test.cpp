// Arrival gaps for rate-shaped load: gamma with shape = burstiness and mean 1/rate, so the
// coefficient of variation is 1/sqrt(burstiness) (1: Poisson; below 1: burstier).
#include "endpoint/load.hpp"

#include <cmath>
#include <gtest/gtest.h>

namespace cmax::endpoint {
namespace {

TEST(Arrivals, GammaGapsHaveTheAskedMeanAndBurstiness) {
  for (const double burstiness : {0.5, 1.0, 4.0}) {
    std::mt19937_64 rng(11);
    const int n = 200000;
    double sum = 0;
    double sum_sq = 0;
    for (int i = 0; i < n; ++i) {
      const double gap = NextArrivalGap(20.0, burstiness, rng);
      ASSERT_GE(gap, 0);
      sum += gap;
      sum_sq += gap * gap;
    }
    const double mean = sum / n;
    const double sd = std::sqrt(sum_sq / n - mean * mean);
    EXPECT_NEAR(mean, 1.0 / 20, 0.001) << burstiness;
    EXPECT_NEAR(sd / mean, 1 / std::sqrt(burstiness), 0.02) << burstiness;
  }
  std::mt19937_64 rng(1);
  EXPECT_EQ(NextArrivalGap(0, 1, rng), 0);  // no rate: no gaps
}

}  // namespace
}  // namespace cmax::endpoint
