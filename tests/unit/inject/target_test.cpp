// Every safety rule of the injectors, one refusal each, and which GPU an injection is for.
#include "inject/target.hpp"

#include <gtest/gtest.h>

#include "inject/target_facts.hpp"
#include "support/fake_process_runner.hpp"
#include "sys/host.hpp"

namespace cmax::inject {
namespace {

TargetFacts LabNode() {
  TargetFacts t;
  t.node = "gpu1";
  t.root = true;
  t.lab = true;
  t.local = true;
  t.scheduler_known = true;
  t.in_scheduler = true;
  return t;
}

bool Mentions(const std::vector<std::string>& why, std::string_view word) {
  for (const std::string& w : why) {
    if (w.find(word) != std::string::npos) return true;
  }
  return false;
}

TEST(InjectSafety, ALabNodeAsRootMayGoAhead) {
  EXPECT_TRUE(Refusals(LabNode(), {}).empty());
}

TEST(InjectSafety, EachRuleRefusesOnItsOwn) {
  TargetFacts t = LabNode();
  t.root = false;
  EXPECT_TRUE(Mentions(Refusals(t, {}), "root"));
  EXPECT_TRUE(Refusals(t, {.dry_run = true}).empty());  // a dry run needs no root

  t = LabNode();
  t.lab = false;
  EXPECT_TRUE(Mentions(Refusals(t, {}), "--yes"));
  EXPECT_TRUE(Refusals(t, {.yes = true}).empty());
  EXPECT_TRUE(Refusals(t, {.dry_run = true}).empty());

  t = LabNode();
  t.local = false;
  EXPECT_TRUE(Mentions(Refusals(t, {}), "not this host"));
  EXPECT_TRUE(Mentions(Refusals(t, {.dry_run = true}), "not this host"));

  t = LabNode();
  t.in_scheduler = false;
  EXPECT_TRUE(Mentions(Refusals(t, {.yes = true}), "not a node the scheduler knows"));

  t = LabNode();
  t.drained = true;
  t.drain_reason = "cmax: Xid 79";
  EXPECT_TRUE(Mentions(Refusals(t, {.yes = true, .force = true}), "stack"));
  EXPECT_TRUE(Mentions(Refusals(t, {.dry_run = true}), "cmax: Xid 79"));

  t = LabNode();
  t.lab = false;  // a lab node is never reset (below)
  EXPECT_TRUE(Mentions(Refusals(t, {.yes = true, .destructive = true}), "--allow-destructive"));
  EXPECT_TRUE(Refusals(t, {.yes = true, .allow_destructive = true, .destructive = true}).empty());
  t.runs_jobs = true;
  EXPECT_TRUE(Mentions(Refusals(t, {.yes = true, .allow_destructive = true, .destructive = true}),
                       "--force"));
  EXPECT_TRUE(
      Refusals(t, {.yes = true, .force = true, .allow_destructive = true, .destructive = true})
          .empty());
  t = LabNode();
  t.runs_jobs = true;
  // Jobs on the node stop the kernel-log injectors too: the provider's answer ends them.
  EXPECT_TRUE(Mentions(Refusals(t, {}), "runs jobs"));
  EXPECT_TRUE(Refusals(t, {.force = true}).empty());
}

// A lab's nodes share this host's kernel log and have no GPUs: on a host with GPUs of its own, a
// lab's fault would be read as real by the host's checks (--yes says that is meant), and a bus
// reset "for a lab node" would reset one of the host's real GPUs (never).
TEST(InjectSafety, ALabOnAHostWithGpusIsNotALabForItsFaults) {
  TargetFacts t = LabNode();
  t.lab_beside_gpus = true;
  EXPECT_TRUE(Mentions(Refusals(t, {}), "this host has NVIDIA GPUs"));
  EXPECT_TRUE(Refusals(t, {.yes = true}).empty());
  EXPECT_TRUE(Refusals(t, {.dry_run = true}).empty());
  for (const TargetFacts& lab : {LabNode(), t}) {
    EXPECT_TRUE(Mentions(Refusals(lab, {.yes = true,
                                        .force = true,
                                        .allow_destructive = true,
                                        .destructive = true,
                                        .resets_gpu = true}),
                         "the bus reset would be this host's"));
    // A reboot is destructive and goes through the scheduler: a lab's may be asked for.
    EXPECT_TRUE(
        Refusals(lab, {.yes = true, .force = true, .allow_destructive = true, .destructive = true})
            .empty());
  }
}

// What GatherFacts sees: a lab (SLURM_CONF inside a `cmax lab` folder), and whether this host's
// PCI devices include an NVIDIA GPU (a display or 3D controller; its audio function is not).
TEST(InjectSafety, ALabBesideGpusIsSeenInSysfs) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/lab/lab.json", "{}");
  fs.AddFile("/sys/bus/pci/devices/0000:17:00.1/vendor", "0x10de\n");
  fs.AddFile("/sys/bus/pci/devices/0000:17:00.1/class", "0x040300\n");
  const sys::ScopedEnv conf("SLURM_CONF", "/lab/etc/slurm.conf");
  testing::FakeProcessRunner runner;
  TargetFacts t = GatherFacts("gpu1", fs, runner, /*ask_slurm=*/false);
  EXPECT_TRUE(t.lab);
  EXPECT_FALSE(t.lab_beside_gpus);
  fs.AddFile("/sys/bus/pci/devices/0000:17:00.0/vendor", "0x10de\n");
  fs.AddFile("/sys/bus/pci/devices/0000:17:00.0/class", "0x030200\n");
  t = GatherFacts("gpu1", fs, runner, /*ask_slurm=*/false);
  EXPECT_TRUE(t.lab_beside_gpus);
}

// No scheduler to ask is no refusal for a fault in the kernel log; a destructive one, on a node
// whose jobs no one could see, needs --force (unknown is not idle).
TEST(InjectSafety, NoSchedulerIsNotARefusalUnlessTheFaultIsDestructive) {
  TargetFacts t = LabNode();
  t.scheduler_known = false;
  t.in_scheduler = false;
  EXPECT_TRUE(Refusals(t, {}).empty());
  t.lab = false;
  const std::vector<std::string> unknown =
      Refusals(t, {.yes = true, .allow_destructive = true, .destructive = true});
  ASSERT_EQ(unknown.size(), 1U);
  EXPECT_NE(unknown[0].find("no scheduler said whether gpu1 runs jobs"), std::string::npos)
      << unknown[0];
  EXPECT_TRUE(
      Refusals(t, {.yes = true, .force = true, .allow_destructive = true, .destructive = true})
          .empty());
}

TEST(InjectGpu, ByIndexOrAddressFromTheNodesOwnList) {
  sys::MemoryFileSystem fs;
  const std::vector<std::string> gpus = {"0000:17:00.0", "0000:3b:00.0"};
  EXPECT_EQ(ResolveGpu("1", gpus, fs, false, false).value(), "0000:3b:00.0");
  EXPECT_EQ(ResolveGpu("3B:00.0", gpus, fs, false, false).value(), "0000:3b:00.0");
  EXPECT_EQ(ResolveGpu("2", gpus, fs, false, false).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(ResolveGpu("0000:99:00.0", gpus, fs, false, false).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(ResolveGpu("0000:99:00.0", gpus, fs, false, /*force=*/true));
  EXPECT_FALSE(ResolveGpu("0", {}, fs, true, false));  // an index needs NVML
  EXPECT_FALSE(ResolveGpu("not-pci", gpus, fs, true, true));
}

TEST(InjectGpu, WithoutNvmlSysfsMustShowAnNvidiaDevice) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/sys/bus/pci/devices/0000:17:00.0/vendor", "0x10de\n");
  fs.AddFile("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x8086\n");
  EXPECT_EQ(ResolveGpu("0000:17:00", {}, fs, false, false).value(), "0000:17:00.0");
  EXPECT_FALSE(ResolveGpu("0000:18:00.0", {}, fs, false, false));
  EXPECT_FALSE(ResolveGpu("0000:19:00.0", {}, fs, false, false));
  EXPECT_TRUE(ResolveGpu("0000:19:00.0", {}, fs, /*lab=*/true, false));  // a lab has no GPUs
}

}  // namespace
}  // namespace cmax::inject
