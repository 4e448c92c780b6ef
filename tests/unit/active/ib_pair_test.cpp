// The pure parts of the per-rail ib_write_bw pair: a port's rate as sysfs says it, the two ends'
// command lines, and the judgement over the rails.
#include "active/ib_pair.hpp"

#include <gtest/gtest.h>

namespace cmax::active {
namespace {

TEST(IbPair, APortsRateAsSysfsSaysIt) {
  EXPECT_EQ(ParsePortRate("400 Gb/sec (4X NDR)\n"), 400);
  EXPECT_EQ(ParsePortRate("200 Gb/sec (4X HDR)"), 200);
  EXPECT_EQ(ParsePortRate("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_EQ(ParsePortRate("25 Gb/sec (1X EDR)"), 25);
  for (const char* bad : {"", "400", "400 Mb/sec", "fast Gb/sec", "0 Gb/sec (1X)", "-1 Gb/sec"}) {
    EXPECT_FALSE(ParsePortRate(bad)) << bad;
  }
}

TEST(IbPair, TheServerRunsOnThePeerThroughItsLauncherTheClientHere) {
  const IbPairOptions options{.peer = "gpu7",
                              .launch = {"ssh", "-o", "BatchMode=yes", "{peer}"},
                              .seconds = 3,
                              .extra = {"-x", "3"}};
  EXPECT_EQ(IbServerArgv(options, "mlx5_2", 18517, 93),
            (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "gpu7", "timeout",
                                      "--kill-after=5", "93", "ib_write_bw", "-d", "mlx5_2", "-p",
                                      "18517", "--report_gbits", "-F", "-D", "3", "-x", "3"}));
  EXPECT_EQ(IbClientArgv(options, "mlx5_2", 18517),
            (std::vector<std::string>{"ib_write_bw", "-d", "mlx5_2", "-p", "18517",
                                      "--report_gbits", "-F", "-D", "3", "-x", "3", "gpu7"}));
  IbPairOptions srun = options;
  srun.launch = {"srun", "--overlap", "--nodelist={peer}", "-N1"};
  srun.address = "10.1.0.7";
  EXPECT_EQ(IbServerArgv(srun, "mlx5_0", 1, 60)[2], "--nodelist=gpu7");
  EXPECT_EQ(IbClientArgv(srun, "mlx5_0", 1).back(), "10.1.0.7");
}

TEST(IbPair, ThePeersLauncherIsSrunInAJobSshElsewhereOrTheOneGiven) {
  EXPECT_EQ(*PeerLauncher("", true), (std::vector<std::string>{"srun", "--overlap", "--nodes=1",
                                                               "--ntasks=1", "--nodelist={peer}"}));
  EXPECT_EQ(*PeerLauncher("", false),
            (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "{peer}"}));
  EXPECT_EQ(*PeerLauncher("  ip netns exec  {peer} ", true),
            (std::vector<std::string>{"ip", "netns", "exec", "{peer}"}));
  // Quoted as a shell would take it: an ssh option with spaces stays one word.
  EXPECT_EQ(*PeerLauncher("ssh -o 'ProxyCommand ssh -W %h:%p jump' {peer}", false),
            (std::vector<std::string>{"ssh", "-o", "ProxyCommand ssh -W %h:%p jump", "{peer}"}));
  for (const char* bad : {"ssh -o 'ProxyCommand {peer}", "ssh {peer} 2>/dev/null", "'' {peer}"}) {
    auto refused = PeerLauncher(bad, false);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(IbPair, EachRailAgainstItsPortsRate) {
  const auto rail = [](std::string name, std::optional<double> gbits, std::optional<double> port,
                       std::string problem = "") {
    return RailResult{.rail = std::move(name),
                      .average_gbits = gbits,
                      .port_gbits = port,
                      .problem = std::move(problem)};
  };
  Finding f = JudgeIbPairs({rail("mlx5_0", 392.1, 400), rail("mlx5_1", 388, 400)}, "gpu7");
  EXPECT_EQ(f.status, CheckStatus::kPass) << f.message;
  EXPECT_EQ(f.observed, "2 of 2 rails: 388.0 Gb/s to 392.1 Gb/s");

  f = JudgeIbPairs({rail("mlx5_0", 392.1, 400), rail("mlx5_1", 180, 400),
                    rail("mlx5_2", std::nullopt, 400, "Couldn't connect to gpu7:18517")},
                   "gpu7");
  EXPECT_EQ(f.status, CheckStatus::kFail);
  EXPECT_EQ(f.severity, Severity::kMedium);  // a pair cannot say which end is slow
  EXPECT_EQ(f.message,
            "ib_write_bw to gpu7 slow on mlx5_1 180.0 Gb/s (45 % of its 400.0 Gb/s port); no "
            "figure for mlx5_2: Couldn't connect to gpu7:18517");
  EXPECT_NE(f.remediation.find("test this node and gpu7 each against a third node"),
            std::string::npos);

  // Exactly at the share passes; just under fails.
  EXPECT_EQ(JudgeIbPairs({rail("mlx5_0", 360, 400)}, "p").status, CheckStatus::kPass);
  EXPECT_EQ(JudgeIbPairs({rail("mlx5_0", 359.9, 400)}, "p").status, CheckStatus::kFail);

  f = JudgeIbPairs({rail("mlx5_0", 392, std::nullopt), rail("mlx5_1", std::nullopt, 400, "hung")},
                   "gpu7");
  EXPECT_EQ(f.status, CheckStatus::kUnknown);
  EXPECT_EQ(f.message,
            "ib_write_bw to gpu7: no figure to judge for mlx5_0: 392.0 Gb/s measured, but its "
            "port's rate cannot be read; mlx5_1: hung");
  EXPECT_EQ(f.observed, "1 of 2 rails: 392.0 Gb/s to 392.0 Gb/s");

  f = JudgeIbPairs({}, "gpu7");
  EXPECT_EQ(f.status, CheckStatus::kSkip);
  EXPECT_EQ(f.message, "no InfiniBand or RoCE device on this node: not run");
}

}  // namespace
}  // namespace cmax::active
