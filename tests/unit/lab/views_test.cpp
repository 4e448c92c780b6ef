// What `cmax lab` prints from its results: text, JSON, stderr and the exit code of each case.
#include "lab/views.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lab/lab.hpp"

namespace cmax::lab {
namespace {

LabState Running(int nodes, int spares) {
  LabState s;
  s.spec.dir = "/var/lib/cmax/lab";
  s.spec.nodes = nodes;
  s.spec.spares = spares;
  s.spec.gpus_per_node = 8;
  s.spec.controller_port = 16817;
  s.started_at = WallTime(std::chrono::milliseconds(1'780'000'000'000));
  s.daemons = {{.name = "munged", .pid = 10}, {.name = "slurmctld", .pid = 11}};
  return s;
}

TEST(LabViews, UpNewAlreadyRunningAndFailed) {
  LabSpec asked = Running(4, 0).spec;
  const LabView fresh =
      UpView(asked, UpResult{Running(4, 1), false, std::chrono::seconds(3)}, false);
  EXPECT_EQ(fresh.exit_code, 0);
  EXPECT_EQ(fresh.out.rfind("lab up in /var/lib/cmax/lab: gpu[1-5] idle (4 in partition gpu, 1 in "
                            "partition spare), 8 GPUs each, controller 127.0.0.1:16817",
                            0),
            0U)
      << fresh.out;
  EXPECT_NE(fresh.out.find("export SLURM_CONF="), std::string::npos) << fresh.out;
  const LabView again = UpView(asked, UpResult{Running(2, 0), true, {}}, false);
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.err, "note: it has 2 nodes and 0 spares, not the 4 and 0 asked for\n");
  const LabView json = UpView(asked, UpResult{Running(4, 0), true, {}}, true);
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], "cmax.lab/v1");
  EXPECT_EQ(doc["already_running"], true);
  EXPECT_EQ(doc["daemons"].size(), 2U);
  const LabView bad = UpView(asked, Fail(ErrorCode::kInvalidArgument, "not root"), false);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "cmax lab up: not root\n");
  EXPECT_EQ(UpView(asked, Fail(ErrorCode::kIo, "slurmctld died"), false).exit_code, 3);
}

TEST(LabViews, StatusSaysWhichDaemonIsGone) {
  LabStatus status;
  status.state = Running(2, 0);
  status.daemons = {{status.state.daemons[0], true}, {status.state.daemons[1], false}};
  status.nodes = {{"gpu1", "idle"}, {"gpu2", "down\x1b[2J"}};
  const LabView v = StatusView("/lab", status, false);
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.out.find("  slurmctld      pid 11       gone\n"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find('\x1b'), std::string::npos)
      << "a node state from sinfo reached the terminal";
  const LabView none = StatusView("/lab", Fail(ErrorCode::kNotFound, "no lab in /lab"), true);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(none.out)["running"], false);
}

TEST(LabViews, DownWithNothingToStopIsFine) {
  const LabView none = DownView("/lab", Fail(ErrorCode::kNotFound, "no lab"), false);
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "no lab in /lab; nothing to stop\n");
  DownResult r;
  r.stopped = {"slurmctld", "munged"};
  r.not_ours = {"slurmd-gpu1"};
  const LabView v = DownView("/lab", r, false);
  EXPECT_EQ(v.out,
            "lab in /lab stopped: slurmctld, munged\n"
            "  left alone (pid reused by another process): slurmd-gpu1\n");
  EXPECT_EQ(DownView("/lab", Fail(ErrorCode::kIo, "kill failed"), false).exit_code, 3);
}

TEST(LabViews, TheEnvLineNamesTheFolderAsOneShellWord) {
  EXPECT_EQ(EnvLine("/tmp/some-lab"), "export SLURM_CONF=/tmp/some-lab/etc/slurm.conf");
  EXPECT_EQ(EnvLine("/tmp/x;echo INJECTED;#"),
            "export SLURM_CONF='/tmp/x;echo INJECTED;#/etc/slurm.conf'");
}

TEST(LabViews, TheFolder) {
  EXPECT_EQ(LabDir("", "/home/u", "/root/.local/share/cmax"), "/root/.local/share/cmax/lab");
  EXPECT_EQ(LabDir("/abs/lab", "/home/u", "/d"), "/abs/lab");
  EXPECT_EQ(LabDir("rel/lab/", "/home/u", "/d"), "/home/u/rel/lab");
  EXPECT_EQ(LabDir("rel", "", "/d"), "rel");
  EXPECT_EQ(LabDir("../other/./lab", "/home/u", "/d"), "/home/other/lab");
  EXPECT_EQ(LabDir("/abs//lab/../lab2/", "/home/u", "/d"), "/abs/lab2");
}

}  // namespace
}  // namespace cmax::lab
