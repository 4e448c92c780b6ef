// Each step kind goes to its injector, and `cmax inject`'s safety rules hold for steps.
#include "reliability/injector.hpp"

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "support/fake_process_runner.hpp"
#include "support/temp_dir.hpp"
#include "sys/host.hpp"

namespace cmax::reliability {
namespace {

Step MakeStep(InjectKind kind) {
  Step s;
  s.name = "step";
  s.inject = kind;
  s.node = "gpu1";
  s.pci = "0000:17:00.0";
  s.code = 79;
  return s;
}

inject::TargetFacts LabNode() {
  inject::TargetFacts t;
  t.node = "gpu1";
  t.root = true;
  t.lab = true;
  t.local = true;
  t.scheduler_known = true;
  t.in_scheduler = true;
  return t;
}

TEST(StepRefusals, TheRulesOfCmaxInject) {
  sys::MemoryFileSystem fs;
  EXPECT_TRUE(StepRefusals(MakeStep(InjectKind::kXid), LabNode(), {}, fs).empty());
  inject::TargetFacts production = LabNode();
  production.lab = false;
  production.node = "gpu1";
  EXPECT_FALSE(StepRefusals(MakeStep(InjectKind::kXid), production, {}, fs).empty())
      << "a node that is not a lab's needs --yes";
  EXPECT_TRUE(StepRefusals(MakeStep(InjectKind::kXid), production, {.yes = true}, fs).empty());
  // A bus reset is destructive, and needs its GPU's bridge in sysfs (none here).
  const auto reset = StepRefusals(MakeStep(InjectKind::kPcieSbr), LabNode(), {}, fs);
  ASSERT_GE(reset.size(), 2U);
  bool destructive = false;
  for (const std::string& why : reset) destructive |= why.find("destructive") != std::string::npos;
  EXPECT_TRUE(destructive);
  // On a lab node never: it has no GPU, and the address would be this host's.
  const auto lab_reset =
      StepRefusals(MakeStep(InjectKind::kPcieSbr), LabNode(), {.allow_destructive = true}, fs);
  EXPECT_TRUE(std::ranges::any_of(lab_reset, [](const std::string& why) {
    return why.find("the bus reset would be this host's") != std::string::npos;
  }));
  EXPECT_EQ(StepRefusals(MakeStep(InjectKind::kPcieSbr), production,
                         {.yes = true, .allow_destructive = true}, fs)
                .size(),
            1U)
      << "still refused: the GPU's bridge is not known";
}

// A scenario's earlier steps take minutes: every step is asked about again just before it, and a
// node that now runs a tenant's job gets no fault (a bus reset ends the job; a fault in the log,
// the provider's drain and requeue do); without the question, nothing is refused.
TEST(StepInjector, EachStepIsAskedAboutAgainJustBeforeIt) {
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  std::vector<std::string> asked;
  std::vector<std::string> refusals = {"gpu1 runs jobs (--force to go ahead anyway)"};
  StepInjector injector(fs, runner, "/nowhere", [&](const Step& step) {
    asked.push_back(step.name);
    return refusals;
  });
  auto reset = injector.MayInjectNow(MakeStep(InjectKind::kPcieSbr));
  ASSERT_FALSE(reset);
  EXPECT_EQ(reset.error().code, ErrorCode::kBusy);
  EXPECT_EQ(reset.error().message,
            "refused just before the step: gpu1 runs jobs (--force to go ahead anyway)");
  EXPECT_FALSE(injector.MayInjectNow(MakeStep(InjectKind::kXid)));
  EXPECT_EQ(asked, (std::vector<std::string>{"step", "step"}));
  refusals.clear();
  EXPECT_TRUE(injector.MayInjectNow(MakeStep(InjectKind::kXid)));
  EXPECT_TRUE(injector.MayInjectNow(MakeStep(InjectKind::kPcieSbr)));
  EXPECT_TRUE(StepInjector(fs, runner, "/nowhere").MayInjectNow(MakeStep(InjectKind::kPcieSbr)));
  EXPECT_TRUE(runner.calls.empty());
}

TEST(StepInjector, KernelRecordsGoToTheKernelLog) {
  testing::TempDir dir;
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  const std::string kmsg = dir.File("kmsg");
  std::ofstream(kmsg).close();
  StepInjector injector(fs, runner, kmsg);
  ASSERT_TRUE(injector.Inject(MakeStep(InjectKind::kXid), "<3>NVRM: Xid (PCI:0000:17:00): 79"));
  ASSERT_TRUE(injector.Inject(MakeStep(InjectKind::kSxid), "<3>nvidia-nvswitch0: SXid"));
  std::stringstream written;
  written << std::ifstream(kmsg).rdbuf();
  EXPECT_EQ(written.str(), "<3>NVRM: Xid (PCI:0000:17:00): 79\n<3>nvidia-nvswitch0: SXid\n");
  EXPECT_TRUE(runner.calls.empty());
}

TEST(StepInjector, SimulatedGpusAreChangedAndRestored) {
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  const std::string healthy = R"({"gpus": [{"bus_id": "0000:17:00.0"}]})";
  ASSERT_TRUE(fs.WriteFileAtomic("/sim.json", healthy, 0644));
  StepInjector injector(fs, runner, "/nowhere");
  Step step = MakeStep(InjectKind::kNvmlSim);
  step.fault = "lost";
  step.pci = "0";
  step.state = "/sim.json";
  ASSERT_TRUE(injector.Inject(step, "simulated"));
  EXPECT_NE(fs.ReadFile("/sim.json", 1 << 20).value(), healthy);
  const StepInjector::Restored restored = injector.Restore();
  EXPECT_EQ(restored.paths, std::vector<std::string>{"/sim.json"});
  EXPECT_TRUE(restored.failures.empty());
  EXPECT_EQ(fs.ReadFile("/sim.json", 1 << 20).value(), healthy);
  EXPECT_TRUE(injector.Restore().paths.empty()) << "restored once";
}

// A DCGM step goes to dcgmi, which this machine (and CI's) does not have: the injector says so
// and runs nothing.
TEST(StepInjector, DcgmStepsGoToDcgmi) {
  if (!sys::FindProgram("dcgmi").empty()) GTEST_SKIP() << "dcgmi is installed here";
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;
  StepInjector injector(fs, runner, "/nowhere");
  Step step = MakeStep(InjectKind::kDcgm);
  step.fault = "230";
  step.value = 1;
  step.pci = "0";
  auto done = injector.Inject(step, "dcgmi test --inject");
  ASSERT_FALSE(done);
  EXPECT_NE(done.error().message.find("dcgmi is not on PATH"), std::string::npos)
      << done.error().message;
  EXPECT_TRUE(runner.calls.empty());
}

}  // namespace
}  // namespace cmax::reliability
