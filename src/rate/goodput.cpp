#include "rate/goodput.hpp"

namespace cmax::rate {

GoodputExpense ComputeGoodputExpense(const GoodputInputs& in) {
  const double lost_work_h = in.detect_h + in.checkpoint_interval_h / 2;
  const double per_failure = in.failures * in.gpu_hour_usd;
  return {
      .cold_usd = (lost_work_h + in.job_init_h + in.repair_h) * in.job_gpus * per_failure,
      .hot_usd =
          ((lost_work_h + in.job_init_h) * in.job_gpus + in.repair_h * in.blast_radius_gpus) *
          per_failure,
      .tolerant_usd =
          ((in.detect_h + in.failover_h) * in.job_gpus + in.repair_h * in.blast_radius_gpus) *
          per_failure,
  };
}

double ExpectedFailures(double job_gpus, double hours, double mtbf_gpu_hours) {
  return mtbf_gpu_hours > 0 ? job_gpus * hours / mtbf_gpu_hours : 0;
}

std::optional<double> EffectivePricePerUsefulGpuHour(double gpu_hour_usd, double job_gpus,
                                                     double hours, double expense_usd) {
  const double bought = job_gpus * hours;
  if (gpu_hour_usd <= 0 || bought <= 0) return std::nullopt;
  const double useful = bought - expense_usd / gpu_hour_usd;
  if (useful <= 0) return std::nullopt;
  return gpu_hour_usd * bought / useful;
}

}  // namespace cmax::rate
