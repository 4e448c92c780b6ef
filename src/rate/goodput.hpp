// Goodput expense: what failures cost a training job, by SemiAnalysis's published formulas for
// the three ways a provider can recover (a cold spare: the job waits for the repair; a hot
// spare: the job restarts at once on a spare while the node is repaired; fault tolerant: the job
// fails over without a restart), and what that makes one useful GPU-hour cost. Pure.
//
//   G_cold = [(t_id + t_chkpt/2) + t_init + t_repair] * j_size * failures * price
//   G_hot  = {[(t_id + t_chkpt/2) + t_init] * j_size + t_repair * b_radius} * failures * price
//   G_tol  = [(t_id + t_failover) * j_size + t_repair * b_radius] * failures * price
//
// t_id: time to detect; t_chkpt: checkpoint interval (half of it is lost work on average);
// t_init: job restart; t_repair: time to repair or replace; t_failover: a fault-tolerant job's
// failover; j_size: the job's GPUs; b_radius: the GPUs a failure takes out (a node's);
// failures: expected over the contract, j_size * hours / MTBF (in GPU-hours); price: USD per
// GPU-hour. Times in hours.
#pragma once

#include <optional>

namespace cmax::rate {

struct GoodputInputs {
  double detect_h = 0;
  double checkpoint_interval_h = 0;
  double job_init_h = 0;
  double repair_h = 0;
  double failover_h = 0;
  double job_gpus = 0;
  double blast_radius_gpus = 0;
  double failures = 0;
  double gpu_hour_usd = 0;
};

struct GoodputExpense {
  double cold_usd = 0;
  double hot_usd = 0;
  double tolerant_usd = 0;
};

GoodputExpense ComputeGoodputExpense(const GoodputInputs& in);

// Failures expected over `hours` on `job_gpus` GPUs with an MTBF of `mtbf_gpu_hours` per GPU.
double ExpectedFailures(double job_gpus, double hours, double mtbf_gpu_hours);

// The price of a GPU-hour of useful work: what the contract costs over the GPU-hours not lost
// to failures. None when failures eat the whole contract.
std::optional<double> EffectivePricePerUsefulGpuHour(double gpu_hour_usd, double job_gpus,
                                                     double hours, double expense_usd);

}  // namespace cmax::rate
