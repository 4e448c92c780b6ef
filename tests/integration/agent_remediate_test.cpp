// `cmax agent --remediate`: the agent reads the real /dev/kmsg and remediates its own node on
// the real lab, with no central service. Its own executable, on its own ports, so that it can
// hold the kernel-log lock without holding the lab tests' ports.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <gtest/gtest.h>

#include "integration/remediate_lab_fixture.hpp"
#include "support/wait.hpp"

namespace cmax::remediate {
namespace {

class AgentRemediateTest : public ControllerLabTest {
 protected:
  int PortBase() const override { return 23817; }  // below the ephemeral range (32768+)
};

TEST_F(AgentRemediateTest, AgentRemediatesItsOwnNode) {
  // The per-node case: the agent reads the real /dev/kmsg and acts for its node, no service.
  auto pid =
      sys::SpawnDaemon({.argv = {CMAX_BINARY, "--db", db_, "agent", "--node", "gpu2", "--no-nvml",
                                 "--metrics-listen", "none", "--remediate", "--validation-command",
                                 "sleep 1", "--reset-command", "true"},
                        .env_add = {"SLURM_CONF=" + lab::PathsFor(spec_.dir).slurm_conf},
                        .log_path = dir_.File("agent.log")});
  ASSERT_TRUE(pid) << pid.error().message;
  // Its ready line: /dev/kmsg is open, a record written now is read.
  ASSERT_TRUE(testing::WaitForText(dir_.File("agent.log"), "agent ready: kernel log open"))
      << testing::FileText(dir_.File("agent.log"));
  {
    std::ofstream kmsg("/dev/kmsg");
    kmsg << "<3>NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=cmax-test, An uncorrectable double "
            "bit error\n";
  }
  EXPECT_TRUE(Eventually([&] { return State("gpu2") == remediate::NodeState::kReintroduced; }));
  ::kill(*pid, SIGTERM);
  EXPECT_EQ(Count("gpu2", remediate::ActionKind::kDrain), 1);
  EXPECT_EQ(Count("gpu2", remediate::ActionKind::kStartValidation), 1);
  EXPECT_FALSE(Node("gpu2").drain);
  for (const char* other : {"gpu1", "gpu3", "gpu4"}) EXPECT_FALSE(Node(other).drain) << other;
}

}  // namespace
}  // namespace cmax::remediate
