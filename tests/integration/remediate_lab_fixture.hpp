// Fixtures for tests against the real lab: a lab of four nodes and a spare, the Slurm adapter,
// and the cmax binary with a store in the test's folder.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <gtest/gtest.h>
#include <thread>

#include "lab/lab.hpp"
#include "remediate/journal.hpp"
#include "remediate/slurm.hpp"
#include "store/store.hpp"
#include "support/conditions.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::remediate {

using namespace std::chrono_literals;

class RemediateLabTest : public ::testing::Test {
 protected:
  // The lab tests' ports; CTest runs the tests that share them one at a time.
  virtual int PortBase() const { return 26817; }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the lab needs root";
    spec_.dir = dir_.Path() + "/lab";
    spec_.nodes = 4;
    spec_.spares = 1;
    spec_.controller_port = PortBase();
    spec_.first_node_port = PortBase() + 1;
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
  // A batch job (on `on`, or any node), and the node it runs on once it runs (empty when it did
  // not start).
  std::pair<std::string, std::string> StartJob(const std::string& on = "") {
    std::vector<std::string> argv = {"sbatch", "--parsable", "-N1", "-o", "/dev/null"};
    if (!on.empty()) argv.push_back("--nodelist=" + on);
    argv.insert(argv.end(), {"--wrap", "sleep 300"});
    std::string id = Run(argv);
    id = id.substr(0, id.find('\n'));
    std::string node;
    Eventually([&] {
      node = Run({"squeue", "-h", "-j", id, "-t", "RUNNING", "-o", "%N"});
      node = node.substr(0, node.find('\n'));
      return !node.empty();
    });
    return {id, node};
  }
  // Polls until pred holds or 20 s pass.
  template <class Pred>
  bool Eventually(Pred pred) {
    return testing::WaitUntil(pred, 20s, 100ms);
  }

  testing::TempDir dir_;
  lab::LabSpec spec_;
  SystemClock clock_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  lab::LabContext ctx_{fs_, runner_, clock_, {}};
  SlurmScheduler slurm_{runner_, SlurmOptions{}};
};

class ControllerLabTest : public RemediateLabTest {
 protected:
  void SetUp() override {
    RemediateLabTest::SetUp();
    db_ = dir_.File("cmax.db");
    auto s = store::Store::Open({.path = db_});
    ASSERT_TRUE(s) << s.error().message;
  }
  // What the agent on `node` writes when the kernel logs an Xid.
  void Xid(const std::string& node, int code, const std::string& action) {
    auto s = store::Store::Open({.path = db_});
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->SaveConditions({testing::XidCondition(node, code, action, clock_.Now())}, {}));
  }
  sys::ProcessResult Cmax(std::vector<std::string> args) {
    std::vector<std::string> argv{CMAX_BINARY, "--db", db_};
    argv.insert(argv.end(), args.begin(), args.end());
    sys::ProcessSpec spec{.argv = argv};
    spec.timeout = 60s;
    auto r = runner_.Run(spec);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : sys::ProcessResult{};
  }
  std::vector<std::string> Act(std::string validation = "sleep 1; true") {
    return {
        "remediate",       "run",  "--once", "--act", "--validation-command", std::move(validation),
        "--reset-command", "true", "-q"};
  }
  remediate::NodeState State(const std::string& node) {
    auto s = store::Store::Open({.path = db_});
    return remediate::Journal(s->Db()).Node(node, clock_.Now()).value().record.state;
  }
  // Runs the controller once a second until the node reaches `state`: 30 passes of a few
  // seconds each at most.
  bool RunUntil(const std::string& node, remediate::NodeState state,
                const std::string& validation = "sleep 1; true") {
    return testing::WaitUntil(
        [&] {
          Cmax(Act(validation));
          return State(node) == state;
        },
        120s, 1s);
  }
  std::vector<remediate::ActionRow> Actions(const std::string& node) {
    auto s = store::Store::Open({.path = db_});
    return remediate::Journal(s->Db()).Actions(node, 1000).value();
  }
  int Count(const std::string& node, remediate::ActionKind kind) {
    const auto actions = Actions(node);
    return static_cast<int>(std::ranges::count_if(
        actions, [&](const remediate::ActionRow& a) { return a.action.kind == kind; }));
  }

  std::string db_;
};

}  // namespace cmax::remediate
