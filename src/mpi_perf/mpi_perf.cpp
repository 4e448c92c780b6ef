// cmax-mpi-perf: a CPU stand-in for nccl-tests, over MPI (OpenMPI here). Where there is no GPU
// (CI, the namespace lab), the network sweep, its analysis and the bad-node finder run this
// instead of all_reduce_perf: the same collectives on host memory through MPI, timed the way
// nccl-tests times them (warm-up, then the mean of `iters` calls, averaged over ranks), checked
// once per size and placement, and printed in nccl-tests' own format with its bus-bandwidth
// factors, so that everything downstream reads it as it reads NCCL's output.
//
//   mpirun -np 4 cmax-mpi-perf all_reduce -b 8 -e 64M -f 2 -n 20 -w 5
//
// Collectives: all_reduce, all_gather, reduce_scatter, alltoall, broadcast (float, sum), sizes up
// to 4 GiB (MPI's counts are int). Exit 1
// when a result was wrong, 2 for bad arguments. CMAX_MPI_PERF_HOST names a rank's host where
// the processor name does not (network namespaces share the machine's host name).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/nccl_tests_format.hpp"

namespace {

using cmax::net::NcclTestsPlacement;

constexpr int kHostChars = 256;
constexpr uint64_t kMaxBytes = uint64_t{4} << 30;

struct Options {
  std::string collective;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{32} << 20;
  int factor = 2;
  int iters = 20;
  int warmup = 5;
};

// "64M" -> 67108864; none when it is not a size.
std::optional<uint64_t> Bytes(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t scale = 1;
  switch (text.back()) {
    case 'K':
    case 'k': scale = uint64_t{1} << 10; break;
    case 'M':
    case 'm': scale = uint64_t{1} << 20; break;
    case 'G':
    case 'g': scale = uint64_t{1} << 30; break;
    default: break;
  }
  if (scale != 1) text.remove_suffix(1);
  if (text.empty() || text.size() > 12) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > UINT64_MAX / scale) return std::nullopt;
  return value * scale;
}

std::optional<Options> Parse(int argc, char** argv, std::string& error) {
  Options o;
  if (argc < 2) {
    error = "usage: cmax-mpi-perf COLLECTIVE [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]";
    return std::nullopt;
  }
  o.collective = argv[1];
  if (std::ranges::find(cmax::net::kCpuCollectives, o.collective) ==
      std::end(cmax::net::kCpuCollectives)) {
    error = "unknown collective '" + o.collective +
            "' (all_reduce, all_gather, reduce_scatter, alltoall, broadcast)";
    return std::nullopt;
  }
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      error = flag + " needs a value";
      return std::nullopt;
    }
    const auto value = Bytes(argv[i + 1]);
    if (!value) {
      error = flag + ": not a number: " + argv[i + 1];
      return std::nullopt;
    }
    if (flag == "-b") {
      o.min_bytes = *value;
    } else if (flag == "-e") {
      o.max_bytes = *value;
    } else if (flag == "-f" && *value >= 2 && *value <= 1024) {
      o.factor = static_cast<int>(*value);
    } else if (flag == "-n" && *value >= 1 && *value <= 1000000) {
      o.iters = static_cast<int>(*value);
    } else if (flag == "-w" && *value <= 1000000) {
      o.warmup = static_cast<int>(*value);
    } else {
      error = "unknown flag or value out of range: " + flag + " " + argv[i + 1];
      return std::nullopt;
    }
  }
  // MPI's counts are int: 4 GiB of floats is 2^30 elements, within them; 8 GiB is not.
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes || o.max_bytes > kMaxBytes) {
    error = "sizes must be 1 <= -b <= -e <= 4G";
    return std::nullopt;
  }
  return o;
}

// One collective at one size: how to run it on the front of the run's buffers, and how to
// check it. The buffers are the largest size's, allocated once, as nccl-tests allocates them:
// fresh pages at every size would be timed too.
class Collective {
 public:
  Collective(std::string name, int rank, int ranks, uint64_t size_bytes, std::vector<float>& send,
             std::vector<float>& recv)
      : name_(std::move(name)), rank_(rank), ranks_(ranks), send_(send), recv_(recv) {
    const auto n = static_cast<uint64_t>(ranks);
    elements_ = std::min<uint64_t>(size_bytes / sizeof(float), send.size());
    if (cmax::net::SizeIsTotalOverRanks(name_)) elements_ -= elements_ % n;  // whole blocks
    per_rank_ = cmax::net::SizeIsTotalOverRanks(name_) ? elements_ / n : elements_;
  }
  uint64_t Elements() const { return elements_; }
  uint64_t Bytes() const { return elements_ * sizeof(float); }
  // nccl-tests' count column: one rank's elements for all_gather, the receive count for
  // reduce_scatter, the whole buffer otherwise.
  uint64_t CountColumn() const { return per_rank_; }
  bool Empty() const { return per_rank_ == 0; }

  void Fill(bool in_place) {
    const float mine = static_cast<float>(rank_ + 1);
    const uint64_t n = static_cast<uint64_t>(ranks_);
    const auto end = static_cast<std::ptrdiff_t>(elements_);
    std::fill(recv_.begin(), recv_.begin() + end, 0.0F);
    std::vector<float>& input = in_place ? recv_ : send_;
    if (name_ == "all_gather") {
      // Each rank contributes its block; in place it sits at the rank's own offset.
      const uint64_t at = in_place ? per_rank_ * static_cast<uint64_t>(rank_) : 0;
      std::fill_n(input.begin() + static_cast<std::ptrdiff_t>(at), per_rank_, mine);
    } else if (name_ == "alltoall") {
      for (uint64_t peer = 0; peer < n; ++peer) {
        std::fill_n(input.begin() + static_cast<std::ptrdiff_t>(peer * per_rank_), per_rank_,
                    static_cast<float>(rank_ * 1000 + static_cast<int>(peer)));
      }
    } else if (name_ == "broadcast") {
      std::fill(recv_.begin(), recv_.begin() + end, rank_ == 0 ? 7.0F : 0.0F);
    } else {
      std::fill(input.begin(), input.begin() + end, mine);
    }
  }

  void Run(bool in_place) {
    const int per = static_cast<int>(per_rank_);
    const void* send = in_place ? MPI_IN_PLACE : send_.data();
    if (name_ == "all_reduce") {
      MPI_Allreduce(send, recv_.data(), static_cast<int>(elements_), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    } else if (name_ == "all_gather") {
      MPI_Allgather(send, per, MPI_FLOAT, recv_.data(), per, MPI_FLOAT, MPI_COMM_WORLD);
    } else if (name_ == "reduce_scatter") {
      MPI_Reduce_scatter_block(send, recv_.data(), per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (name_ == "alltoall") {
      MPI_Alltoall(send, per, MPI_FLOAT, recv_.data(), per, MPI_FLOAT, MPI_COMM_WORLD);
    } else {
      MPI_Bcast(recv_.data(), static_cast<int>(elements_), MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
  }

  // Elements of this rank's result that are not what the collective should have produced.
  int64_t Wrong() const {
    const float sum = static_cast<float>(ranks_ * (ranks_ + 1) / 2);
    int64_t wrong = 0;
    const auto expect = [&](uint64_t i, float want) {
      if (recv_[i] != want) ++wrong;
    };
    if (name_ == "all_reduce") {
      for (uint64_t i = 0; i < elements_; ++i) expect(i, sum);
    } else if (name_ == "all_gather") {
      for (uint64_t i = 0; i < elements_; ++i) expect(i, static_cast<float>(i / per_rank_ + 1));
    } else if (name_ == "reduce_scatter") {
      for (uint64_t i = 0; i < per_rank_; ++i) expect(i, sum);
    } else if (name_ == "alltoall") {
      for (uint64_t i = 0; i < elements_; ++i) {
        expect(i, static_cast<float>(static_cast<int>(i / per_rank_) * 1000 + rank_));
      }
    } else {
      for (uint64_t i = 0; i < elements_; ++i) expect(i, 7.0F);
    }
    return wrong;
  }

 private:
  std::string name_;
  int rank_;
  int ranks_;
  std::vector<float>& send_;
  std::vector<float>& recv_;
  uint64_t elements_ = 0;
  uint64_t per_rank_ = 0;
};

// One placement of one size: warm-up, then the mean of `iters` calls, averaged over the ranks
// (nccl-tests' default, -a 1); then one checked call on fresh buffers. Bus bandwidth is the
// caller's: algbw times the collective's factor.
NcclTestsPlacement Measure(Collective& c, bool in_place, const Options& o, int ranks) {
  c.Fill(in_place);
  for (int i = 0; i < o.warmup; ++i) c.Run(in_place);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i) c.Run(in_place);
  const double mine = (MPI_Wtime() - start) / o.iters;
  double sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double seconds = sum / ranks;
  c.Fill(in_place);
  c.Run(in_place);
  int64_t wrong = c.Wrong();
  int64_t all_wrong = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  NcclTestsPlacement p;
  p.time_us = seconds * 1e6;
  p.algbw_gbs = seconds > 0 ? static_cast<double>(c.Bytes()) / 1e9 / seconds : 0;
  p.wrong = all_wrong;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string error;
  const std::optional<Options> options = Parse(argc, argv, error);
  if (!options) {
    if (rank == 0) std::fprintf(stderr, "cmax-mpi-perf: %s\n", error.c_str());
    MPI_Finalize();
    return 2;
  }
  const Options& o = *options;
  const double factor = cmax::net::BusBandwidthFactor(o.collective, ranks).value_or(1);

  // Who ran where: each rank's host and pid, gathered for rank 0's header.
  char host[kHostChars] = {};
  if (const char* named = std::getenv("CMAX_MPI_PERF_HOST"); named != nullptr && *named != 0) {
    std::snprintf(host, sizeof host, "%s", named);
  } else {
    int length = 0;
    MPI_Get_processor_name(host, &length);
  }
  const int pid = static_cast<int>(getpid());
  std::vector<char> hosts(static_cast<size_t>(kHostChars) * static_cast<size_t>(ranks));
  std::vector<int> pids(static_cast<size_t>(ranks));
  MPI_Gather(host, kHostChars, MPI_CHAR, hosts.data(), kHostChars, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (rank == 0) {
    cmax::net::NcclTestsRunHeader head{.collective = o.collective,
                                       .version = "cmax-mpi-perf-1",
                                       .min_bytes = o.min_bytes,
                                       .max_bytes = o.max_bytes,
                                       .step_factor = o.factor,
                                       .warmup_iters = o.warmup,
                                       .iters = o.iters};
    for (int r = 0; r < ranks; ++r) {
      std::string name(&hosts[static_cast<size_t>(r) * kHostChars],
                       strnlen(&hosts[static_cast<size_t>(r) * kHostChars], kHostChars));
      head.ranks.push_back({r, pids[static_cast<size_t>(r)], name, "CPU (cmax-mpi-perf)"});
    }
    std::fputs(cmax::net::NcclTestsHead(head).c_str(), stdout);
    std::fflush(stdout);
  }
  int64_t wrong_total = 0;
  double busbw_sum = 0;
  int busbw_count = 0;
  std::vector<float> send(o.max_bytes / sizeof(float), 0.0F);
  std::vector<float> recv(send.size(), 0.0F);
  for (uint64_t size = o.min_bytes; size <= o.max_bytes; size *= static_cast<uint64_t>(o.factor)) {
    Collective c(o.collective, rank, ranks, size, send, recv);
    if (c.Empty()) continue;
    cmax::net::NcclTestsRowValues row{
        .size_bytes = c.Bytes(),
        .count = c.CountColumn(),
        .redop = o.collective == "all_reduce" || o.collective == "reduce_scatter" ? "sum" : "none",
        .root = o.collective == "broadcast" ? 0 : -1};
    row.out_of_place = Measure(c, false, o, ranks);
    row.in_place = Measure(c, true, o, ranks);
    for (NcclTestsPlacement* p : {&row.out_of_place, &row.in_place}) {
      p->busbw_gbs = p->algbw_gbs * factor;
      wrong_total += p->wrong;
      busbw_sum += p->busbw_gbs;
      ++busbw_count;
    }
    if (rank == 0) {
      std::fputs(cmax::net::NcclTestsRow(row).c_str(), stdout);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::fputs(cmax::net::NcclTestsFoot(o.collective, wrong_total,
                                        busbw_count > 0 ? busbw_sum / busbw_count : 0)
                   .c_str(),
               stdout);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return wrong_total == 0 ? 0 : 1;
}
