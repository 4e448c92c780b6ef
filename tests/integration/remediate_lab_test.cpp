// The Slurm adapter against the real lab (slurmctld and five slurmd, one of them a spare):
// drain and resume, an operator's drain left alone, the job on a failed node requeued,
// validation inside a MAINT reservation on a node that other work cannot reach, and a spare
// moved into service and back.
#include <unistd.h>

#include <gtest/gtest.h>
#include <thread>

#include "lab/lab.hpp"
#include "remediate/slurm.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;

constexpr int kPortBase = 26817;  // the lab tests' ports; CTest runs them one at a time

class RemediateLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the lab needs root";
    spec_.dir = dir_.Path() + "/lab";
    spec_.nodes = 4;
    spec_.spares = 1;
    spec_.controller_port = kPortBase;
    spec_.first_node_port = kPortBase + 1;
    ASSERT_TRUE(lab::Up(spec_, ctx_, 30s));
    ::setenv("SLURM_CONF", lab::PathsFor(spec_.dir).slurm_conf.c_str(), 1);
  }
  void TearDown() override {
    if (::geteuid() != 0) return;
    ::unsetenv("SLURM_CONF");
    (void)lab::Down(spec_.dir, ctx_);
  }
  std::string Run(std::vector<std::string> argv) {
    sys::ProcessSpec spec{.argv = std::move(argv)};
    spec.timeout = 30s;
    spec.cwd = dir_.Path();
    auto r = runner_.Run(spec);
    EXPECT_TRUE(r && r->Succeeded()) << (r ? r->stderr_text : r.error().message);
    return r ? r->stdout_text : "";
  }
  SchedulerNode Node(const std::string& name) {
    const std::vector<SchedulerNode> nodes = slurm_.Nodes().value();  // a named copy: the
    for (const SchedulerNode& n : nodes) {  // Result would die before the loop ends (C++20)
      if (n.name == name) return n;
    }
    return {};
  }
  // Polls until pred holds or 20 s pass.
  template <class Pred>
  bool Eventually(Pred pred) {
    for (int i = 0; i < 200; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  testing::TempDir dir_;
  lab::LabSpec spec_;
  SystemClock clock_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  lab::LabContext ctx_{fs_, runner_, clock_, {}};
  SlurmScheduler slurm_{runner_, SlurmOptions{}};
};

TEST_F(RemediateLabTest, DrainOnceResumeOwnAndLeaveTheOperatorsAlone) {
  EXPECT_EQ(slurm_.Drain("gpu2", "cmax: Xid 79 on 0000:17:00").value(), "drained");
  EXPECT_EQ(slurm_.Drain("gpu2", "cmax: Xid 79 on 0000:17:00").value(), "already drained by cmax");
  SchedulerNode n = Node("gpu2");
  EXPECT_TRUE(n.drain);
  EXPECT_EQ(n.reason, "cmax: Xid 79 on 0000:17:00");
  EXPECT_EQ(slurm_.Resume("gpu2").value(), "resumed");
  EXPECT_FALSE(Node("gpu2").drain);
  EXPECT_NE(slurm_.Resume("gpu2").value().find("nothing to resume"), std::string::npos);

  Run({"scontrol", "update", "nodename=gpu3", "state=drain", "reason=bad fan, ticket 123"});
  EXPECT_NE(slurm_.Drain("gpu3", "cmax: x").value().find("someone else"), std::string::npos);
  auto resumed = slurm_.Resume("gpu3");
  ASSERT_FALSE(resumed);
  EXPECT_EQ(resumed.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(Node("gpu3").reason, "bad fan, ticket 123");

  auto gone = slurm_.Drain("gpu42", "cmax: x");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

TEST_F(RemediateLabTest, JobOnTheFailedNodeIsRequeued) {
  std::string id = Run({"sbatch", "--parsable", "-N1", "-o", "/dev/null", "--wrap", "sleep 60"});
  id = id.substr(0, id.find('\n'));
  std::string node;
  ASSERT_TRUE(Eventually([&] {
    node = Run({"squeue", "-h", "-j", id, "-t", "RUNNING", "-o", "%N"});
    node = node.substr(0, node.find('\n'));
    return !node.empty();
  }));
  EXPECT_EQ(slurm_.Drain(node, "cmax: Xid 79").value(), "drained");
  EXPECT_EQ(slurm_.RequeueJobs(node).value(), "requeued " + id);
  const std::string job = Run({"scontrol", "show", "job", "-o", id});
  EXPECT_EQ(ScontrolField(job, "Restarts"), "1") << job;
  EXPECT_EQ(slurm_.RequeueJobs(node).value(), "no jobs on the node");
  Run({"scancel", id});
}

TEST_F(RemediateLabTest, ValidationRunsInsideAReservationOnTheDrainedNode) {
  ASSERT_EQ(slurm_.Drain("gpu2", "cmax: Xid 79").value(), "drained");
  const std::string job = slurm_.StartValidation("gpu2", {"sleep 2; true", 60s}).value();
  EXPECT_EQ(slurm_.StartValidation("gpu2", {"sleep 2; true", 60s}).value(), job);  // once
  // Other work cannot land on the node while it validates.
  std::string other =
      Run({"sbatch", "--parsable", "-w", "gpu2", "-o", "/dev/null", "--wrap", "true"});
  other = other.substr(0, other.find('\n'));
  ValidationStatus status;
  ASSERT_TRUE(Eventually([&] {
    status = slurm_.PollValidation("gpu2", job).value();
    return status.state != ValidationState::kRunning;
  }));
  EXPECT_EQ(status.state, ValidationState::kPassed) << status.detail;
  EXPECT_EQ(ScontrolField(Run({"scontrol", "show", "job", "-o", other}), "JobState"), "PENDING");
  EXPECT_EQ(slurm_.EndValidation("gpu2", true, "cmax: validation failed").value(),
            "reservation cmax-validate-gpu2 deleted");
  EXPECT_FALSE(Node("gpu2").drain);
  // With the reservation gone the waiting job runs.
  EXPECT_TRUE(Eventually([&] {
    const std::string state =
        ScontrolField(Run({"scontrol", "show", "job", "-o", other}), "JobState");
    return state == "COMPLETED" || state == "RUNNING";
  }));
}

TEST_F(RemediateLabTest, FailedValidationLeavesTheNodeDrained) {
  ASSERT_EQ(slurm_.Drain("gpu3", "cmax: Xid 79").value(), "drained");
  const std::string job = slurm_.StartValidation("gpu3", {"exit 3", 60s}).value();
  ValidationStatus status;
  ASSERT_TRUE(Eventually([&] {
    status = slurm_.PollValidation("gpu3", job).value();
    return status.state != ValidationState::kRunning;
  }));
  EXPECT_EQ(status.state, ValidationState::kFailed);
  EXPECT_EQ(status.detail, "failed (exit 3:0)");
  EXPECT_EQ(slurm_.EndValidation("gpu3", false, "cmax: validation failed").value(),
            "drained; reservation cmax-validate-gpu3 deleted");
  const SchedulerNode n = Node("gpu3");
  EXPECT_TRUE(n.drain);
  EXPECT_EQ(n.reason, "cmax: validation failed");
}

TEST_F(RemediateLabTest, SpareMovesIntoServiceAndBack) {
  const std::string spare = slurm_.PickSpare().value();
  EXPECT_EQ(spare, "gpu5");
  EXPECT_EQ(slurm_.SwapInSpare(spare).value(), "gpu5 moved into partition gpu");
  EXPECT_EQ(slurm_.SwapInSpare(spare).value(), "gpu5 already in partition gpu");
  EXPECT_EQ(ScontrolField(Run({"scontrol", "show", "partition", "-o", "gpu"}), "TotalNodes"), "5");
  auto none = slurm_.PickSpare();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(slurm_.ReturnSpare(spare).value(), "gpu5 back in partition spare only");
  EXPECT_EQ(ScontrolField(Run({"scontrol", "show", "partition", "-o", "gpu"}), "Nodes"),
            "gpu[1-4]");
}

}  // namespace
}  // namespace cmax::remediate
