// cmax-mpi-perf, the CPU stand-in for nccl-tests, run for real under OpenMPI's mpirun on this
// machine: every collective on 2 and 4 ranks, its output read back by the nccl-tests parser as
// one concluded table with every size checked right, bus bandwidth by nccl-tests' factor, and
// the analysis taking its curve; bad arguments are exit 2.
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "net/nccl_analysis.hpp"
#include "net/nccl_tests_format.hpp"
#include "net/nccl_tests_output.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

sys::ProcessResult MpiRun(int ranks, const std::vector<std::string>& args,
                          const std::vector<std::string>& mpirun_options = {}) {
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe",
                                   "--mca",  "btl", "self,vader,tcp"};
  argv.insert(argv.end(), mpirun_options.begin(), mpirun_options.end());
  argv.emplace_back(CMAX_MPI_PERF);
  argv.insert(argv.end(), args.begin(), args.end());
  sys::PosixProcessRunner runner;
  // Tests run as root, which mpirun refuses unless told; the benchmark is not what leaks.
  auto r = runner.Run({.argv = argv,
                       .env_add = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                   "OMPI_MCA_plm_rsh_agent=false"},
                       .timeout = 120s});
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : sys::ProcessResult{};
}

TEST(MpiPerf, EveryCollectiveReadsBackAsNcclTestsOutput) {
  for (const int ranks : {2, 4}) {
    for (const std::string_view collective : net::kCpuCollectives) {
      SCOPED_TRACE(std::string(collective) + " on " + std::to_string(ranks) + " ranks");
      const auto r =
          MpiRun(ranks, {std::string(collective), "-b", "64", "-e", "256K", "-n", "5", "-w", "1"});
      ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
      const net::NcclTestsOutput out = net::ParseNcclTestsOutput(r.stdout_text);
      EXPECT_TRUE(out.problems.empty()) << out.problems.front();
      ASSERT_EQ(out.tables.size(), 1U) << r.stdout_text;
      const net::NcclTable& table = out.tables[0];
      EXPECT_EQ(table.collective, std::string(collective) + "_perf");
      EXPECT_EQ(table.ranks, ranks);
      EXPECT_EQ(table.hosts.size(), 1U);
      EXPECT_TRUE(table.concluded);
      EXPECT_EQ(table.out_of_bounds_ok, true);
      ASSERT_EQ(table.rows.size(), 13U);  // 64 B to 256 KiB, doubling
      const double factor = *net::BusBandwidthFactor(collective, ranks);
      for (const net::NcclRow& row : table.rows) {
        for (const net::NcclPlacement* p : {&row.out_of_place, &*row.in_place}) {
          ASSERT_TRUE(p->wrong && p->busbw_gbs && p->algbw_gbs && p->time_us);
          EXPECT_EQ(*p->wrong, 0) << row.size_bytes;
          EXPECT_GT(*p->time_us, 0);
          // Both printed with two decimals: the factor holds to their rounding.
          EXPECT_NEAR(*p->busbw_gbs, *p->algbw_gbs * factor, 0.011 * (1 + factor))
              << row.size_bytes;
        }
      }
      EXPECT_GT(*table.peak_busbw_gbs, 0);
      const net::NcclAnalysis analysis = net::AnalyzeNccl({{.name = "mpi", .output = out}}, {});
      ASSERT_EQ(analysis.curves.size(), 1U);
      EXPECT_EQ(analysis.curves[0].nodes, 1);
      EXPECT_EQ(analysis.curves[0].points.size(), 13U);
    }
  }
}

TEST(MpiPerf, RanksNameTheHostTheyAreToldTo) {
  const auto r =
      MpiRun(2, {"all_reduce", "-b", "1K", "-e", "1K"}, {"-x", "CMAX_MPI_PERF_HOST=host-a"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const auto out = net::ParseNcclTestsOutput(r.stdout_text);
  ASSERT_EQ(out.tables.size(), 1U);
  EXPECT_EQ(out.tables[0].hosts, std::vector<std::string>{"host-a"});
}

TEST(MpiPerf, BadArgumentsAreExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"bogus"},
                                               {"all_reduce", "-b", "1M", "-e", "1K"},
                                               {"all_reduce", "-b", "12Q"}}) {
    const auto r = MpiRun(2, args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_NE(r.stderr_text.find("cmax-mpi-perf: "), std::string::npos) << r.stderr_text;
    EXPECT_EQ(r.stdout_text.find("# Collective test starting"), std::string::npos);
  }
}

}  // namespace
}  // namespace cmax
