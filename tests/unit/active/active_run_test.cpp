// `cmax health --active`'s work on a node: stand-in dcgmi and nvbandwidth (shell scripts in a
// test folder, not NVIDIA's tools) run for real, NVML's view given as a snapshot, the run
// recorded in a real SQLite store. A node without a GPU or with GPUs in use is not exercised
// (the stand-ins leave a mark when they run: none may be left).
#include "active/active_run.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>

#include "core/strings.hpp"
#include "store/store.hpp"
#include "support/corpus.hpp"
#include "support/temp_dir.hpp"

namespace cmax::active {
namespace {

class ActiveRun : public ::testing::Test {
 protected:
  void SetUp() override {
    StandIn("dcgmi", "touch '" + dir_.File("ran-dcgmi") + "'\ncat '" +
                         Data("dcgm_diag/dcgm4-level1-fail.json") + "'\nexit 226");
    StandIn("nvbandwidth", "touch '" + dir_.File("ran-nvbandwidth") + "'\ncat '" +
                               Data("active/nvbandwidth/h100-healthy.txt") + "'");
    StandIn("all_reduce_perf", "echo \"$NCCL_P2P_DISABLE $@\" >> '" +
                                   dir_.File("ran-all_reduce_perf") + "'\ncat '" +
                                   Data("active/nccl/h100-local-16g.txt") + "'");
  }
  // A stand-in that never answers, as DCGM's diagnostic does on some parts: it opens a FIFO
  // no one writes to, which blocks until it is killed (no timer of its own to wait out).
  void StandInThatHangs(const std::string& name) {
    const std::string fifo = dir_.File(name + ".never");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    StandIn(name, "exec cat '" + fifo + "'");
  }
  void StandIn(const std::string& name, const std::string& body) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
  }
  static std::string Data(const std::string& relative) {
    return std::string(CMAX_TEST_DATA) + "/" + relative;
  }
  bool Ran(const std::string& tool) { return std::filesystem::exists(dir_.File("ran-" + tool)); }

  // Eight idle H100s, unless changed.
  static sys::NvmlSnapshot Gpus(int busy_index = -1) {
    sys::NvmlSnapshot s;
    for (unsigned i = 0; i < 8; ++i) {
      sys::GpuReading g{.index = i, .name = "NVIDIA H100 80GB HBM3"};
      g.compute_processes = static_cast<int>(i) == busy_index ? 1U : 0U;
      g.utilization_percent = static_cast<int>(i) == busy_index ? 35U : 0U;
      s.gpus.push_back(g);
    }
    return s;
  }
  ActiveRunIo Io(std::function<Result<sys::NvmlSnapshot>()> snapshot) {
    return {.db_path = dir_.File("cmax.db"),
            .cmax_version = "test",
            .host = "gpu1",
            .clock = &clock_,
            .tools = {.runner = &runner_,
                      .find_program =
                          [this](const std::string& name) {
                            struct stat st {};
                            const std::string path = dir_.File(name);
                            return ::stat(path.c_str(), &st) == 0 ? path : std::string();
                          }},
            .snapshot = std::move(snapshot)};
  }
  static const Finding* Find(const RunRecord& r, const std::string& check_id) {
    for (const Finding& f : r.findings) {
      if (f.check_id.starts_with(check_id)) return &f;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  sys::PosixProcessRunner runner_;
  ManualClock clock_{WallTime{} + std::chrono::hours(24 * 365 * 56)};
};

TEST_F(ActiveRun, AnIdleNodeIsExercisedJudgedAndRecorded) {
  auto report = RunActiveHealth({}, Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(Ran("dcgmi"));
  EXPECT_TRUE(Ran("nvbandwidth"));
  EXPECT_EQ(report->exit_code, 1);  // the diagnostic's memory test failed on GPU 3
  EXPECT_EQ(report->record.run.command, "health");
  EXPECT_EQ(report->record.run.target, "active checks (quick)");
  const Finding* diag = nullptr;
  for (const Finding& f : report->record.findings) {
    if (f.check_id == "active.dcgm-diag" && f.status == CheckStatus::kFail) diag = &f;
  }
  ASSERT_NE(diag, nullptr);
  EXPECT_NE(diag->message.find("GPU 3"), std::string::npos);
  const Finding* p2p = Find(report->record, "active.nvbandwidth.device_to_device");
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->status, CheckStatus::kPass);
  EXPECT_EQ(p2p->expected, "at least 335 GB/s (h100-sxm)");
  bool class_recorded = false;
  for (const EvidenceItem& e : report->record.evidence) {
    if (e.key == "active.gpu_class") class_recorded = e.value_json == "\"h100-sxm\"";
  }
  EXPECT_TRUE(class_recorded);
  EXPECT_FALSE(report->second_look);
  const Finding* all_reduce = Find(report->record, "active.nccl.local-all-reduce");
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_EQ(all_reduce->status, CheckStatus::kPass);
  // Quick: one all-reduce, over NVLink, of the eight GPUs NVML lists.
  EXPECT_EQ(testing::SlurpFile(dir_.File("ran-all_reduce_perf")),
            " -b 16G -e 16G -f 2 -g 8 -c 1\n");
  EXPECT_EQ(Find(report->record, "active.nccl.ib-loopback"), nullptr);
}

// Each check's findings are in the store as the check ends, not when the whole run does: a run
// killed during nvbandwidth keeps the diagnostic's. The stand-in nvbandwidth reads the store
// with sqlite3 as it starts.
TEST_F(ActiveRun, EachChecksFindingsAreStoredAsItEnds) {
  StandIn("nvbandwidth", "sqlite3 '" + dir_.File("cmax.db") +
                             "' \"SELECT r.state || ' ' || f.check_id || ' ' || f.status FROM "
                             "findings f JOIN runs r ON r.id = f.run_id\" > '" +
                             dir_.File("seen-by-nvbandwidth") + "'\ncat '" +
                             Data("active/nvbandwidth/h100-healthy.txt") + "'");
  auto report = RunActiveHealth({}, Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(report) << report.error().message;
  const std::string seen = testing::SlurpFile(dir_.File("seen-by-nvbandwidth"));
  EXPECT_NE(seen.find("running active.dcgm-diag FAIL"), std::string::npos) << seen;
  // The diagnostic's findings (its FAIL and its WARN) once each: not written again at the end.
  EXPECT_EQ(
      std::ranges::count_if(report->record.findings,
                            [](const Finding& f) { return f.check_id == "active.dcgm-diag"; }),
      2);
  EXPECT_NE(seen.find("running active.dcgm-diag WARN"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("active.nvbandwidth"), std::string::npos) << seen;
  EXPECT_EQ(report->record.run.state, RunState::kChecksFailed);
  EXPECT_NE(Find(report->record, "active.nvbandwidth.device_to_device"), nullptr);
}

TEST_F(ActiveRun, TheFullLevelRunsTheLongDiagnosticAndTheAdaptersToo) {
  StandIn("dcgmi", "echo \"$@\" > '" + dir_.File("ran-dcgmi") + "'\ncat '" +
                       Data("dcgm_diag/dcgm4-level1-pass.json") + "'");
  auto report = RunActiveHealth({.level = ActiveLevel::kFull},
                                Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(testing::SlurpFile(dir_.File("ran-dcgmi")), "diag -r 3 -j\n");
  EXPECT_EQ(report->record.run.target, "active checks (full)");
  // H100 has no published limit for an all-reduce through its adapters: not run.
  EXPECT_EQ(testing::SlurpFile(dir_.File("ran-all_reduce_perf")),
            " -b 16G -e 16G -f 2 -g 8 -c 1\n");
  EXPECT_EQ(Find(report->record, "active.nccl.ib-loopback"), nullptr);
  EXPECT_EQ(report->exit_code, 0);

  // GB200 has one (Azure's 48 GB/s): run with NVLink and shared memory off, and judged.
  std::filesystem::remove(dir_.File("ran-all_reduce_perf"));
  auto gb200 = RunActiveHealth({.level = ActiveLevel::kFull, .gpu_class = "gb200"},
                               Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(gb200) << gb200.error().message;
  EXPECT_EQ(testing::SlurpFile(dir_.File("ran-all_reduce_perf")),
            " -b 16G -e 16G -f 2 -g 8 -c 1\n1 -b 16G -e 16G -f 2 -g 8 -c 1\n");
  const Finding* ib = Find(gb200->record, "active.nccl.ib-loopback-all-reduce");
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->status, CheckStatus::kPass);
}

TEST_F(ActiveRun, ANodeWithAGpuInUseIsNotExercisedUnlessForced) {
  auto report = RunActiveHealth({}, Io([] { return Result<sys::NvmlSnapshot>(Gpus(2)); }));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(Ran("dcgmi"));
  EXPECT_FALSE(Ran("nvbandwidth"));
  ASSERT_EQ(report->record.findings.size(), 4U);
  for (const Finding& f : report->record.findings) {
    EXPECT_EQ(f.status, CheckStatus::kSkip);
    EXPECT_EQ(f.message,
              "GPUs in use or of unknown use: GPU 2 (1 process, 35 % busy); --force "
              "exercises them");
  }
  EXPECT_EQ(report->exit_code, 0);

  // Use that cannot be read counts as use.
  auto unknown = RunActiveHealth({}, Io([] {
                                   sys::NvmlSnapshot s = Gpus();
                                   s.gpus[5].compute_processes.reset();
                                   return Result<sys::NvmlSnapshot>(s);
                                 }));
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(Ran("dcgmi"));
  EXPECT_NE(unknown->record.findings[0].message.find("GPU 5 (use unknown)"), std::string::npos);

  auto forced =
      RunActiveHealth({.force = true}, Io([] { return Result<sys::NvmlSnapshot>(Gpus(2)); }));
  ASSERT_TRUE(forced);
  EXPECT_TRUE(Ran("dcgmi"));
}

// NVML sees a moment: a node Slurm gave to another's job may have idle GPUs (the job loading
// its data). Slurm's word (a stand-in squeue here; the lab's real one in active_schedule_test)
// leaves it alone; the job cmax runs in is its own; a Slurm that cannot say is noted.
TEST_F(ActiveRun, ANodeGivenToAnothersJobIsLeftAloneThoughItsGpusAreIdle) {
  StandIn("squeue", "echo \"$*\" > '" + dir_.File("squeue-args") + "'\necho '4321|gpu[1-2]'");
  const auto idle = [] { return Result<sys::NvmlSnapshot>(Gpus()); };
  auto report = RunActiveHealth({}, Io(idle));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(Ran("dcgmi"));
  ASSERT_EQ(report->record.findings.size(), 4U);
  for (const Finding& f : report->record.findings) {
    EXPECT_EQ(f.status, CheckStatus::kSkip);
    EXPECT_EQ(f.message,
              "others' Slurm jobs run on gpu1 (job 4321); --force runs the checks beside them");
  }
  EXPECT_EQ(testing::SlurpFile(dir_.File("squeue-args")),
            "-a --local -h -t RUNNING,CONFIGURING,SUSPENDED,STOPPED,COMPLETING -o %A|%N\n");

  auto own = RunActiveHealth({.own_job = "4321"}, Io(idle));
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_TRUE(Ran("dcgmi"));

  std::filesystem::remove(dir_.File("ran-dcgmi"));
  StandIn("squeue", "echo 'squeue: error: Unable to contact slurm controller' >&2\nexit 1");
  auto unknown = RunActiveHealth({}, Io(idle));
  ASSERT_TRUE(unknown) << unknown.error().message;
  EXPECT_TRUE(Ran("dcgmi"));
  EXPECT_TRUE(std::ranges::any_of(unknown->notes, [](const std::string& note) {
    return note.starts_with(
        "not checked for others' Slurm jobs: squeue exit 1: "
        "squeue: error: Unable to contact slurm controller");
  })) << Join(unknown->notes, "\n");
}

// Over ssh, or on a cluster whose NodeNames are not its host names, the node is known here by
// its host name (ip-10-0-1-5): sinfo's NodeHostname ties it to the node Slurm's jobs name (gpu1).
TEST_F(ActiveRun, ANodeKnownByItsHostNameIsFoundThroughSinfo) {
  StandIn("squeue", "echo '4321|gpu[1-2]'");
  StandIn("sinfo",
          "echo 'gpu1|ip-10-0-1-5.ec2.internal|10.0.1.5'\necho 'gpu2|ip-10-0-1-6|10.0.1.6'");
  ActiveRunIo io = Io([] { return Result<sys::NvmlSnapshot>(Gpus()); });
  io.host = "ip-10-0-1-5";
  auto report = RunActiveHealth({}, io);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(Ran("dcgmi"));
  ASSERT_FALSE(report->record.findings.empty());
  EXPECT_EQ(report->record.findings.front().message,
            "others' Slurm jobs run on ip-10-0-1-5 (job 4321); --force runs the checks beside "
            "them");
  EXPECT_TRUE(report->notes.empty()) << Join(report->notes, "\n");

  // A host Slurm knows by no name is said, and NVML's answer stands.
  io.host = "login1";
  report = RunActiveHealth({}, io);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(Ran("dcgmi"));
  EXPECT_TRUE(std::ranges::any_of(report->notes, [](const std::string& note) {
    return note == "no Slurm node by these names, so not checked for others' jobs: login1";
  })) << Join(report->notes, "\n");
}

TEST_F(ActiveRun, ANodeWithoutAGpuSaysSoAndRunsNothing) {
  auto report = RunActiveHealth({}, Io([] {
                                  return Result<sys::NvmlSnapshot>(tl::unexpected(Error{
                                      ErrorCode::kUnavailable, "libnvidia-ml.so.1: not found"}));
                                }));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(Ran("dcgmi"));
  ASSERT_EQ(report->record.findings.size(), 4U);
  EXPECT_EQ(report->record.findings[0].status, CheckStatus::kSkip);
  EXPECT_EQ(report->record.findings[0].message,
            "no NVIDIA GPU to exercise (NVML: libnvidia-ml.so.1: not found)");
}

TEST_F(ActiveRun, AGpuClassCanBeNamedAndAWrongOneIsRefused) {
  auto other = RunActiveHealth({.gpu_class = "h200"}, Io([] {
                                 sys::NvmlSnapshot s = Gpus();
                                 for (auto& g : s.gpus) g.name = "NVIDIA H200 (engineering sample)";
                                 return Result<sys::NvmlSnapshot>(s);
                               }));
  ASSERT_TRUE(other) << other.error().message;
  const Finding* h2d = Find(other->record, "active.nvbandwidth.host_to_device");
  ASSERT_NE(h2d, nullptr);
  EXPECT_EQ(h2d->expected, "at least 48 GB/s (h200)");

  auto wrong = RunActiveHealth({.gpu_class = "h1000"}, Io(nullptr));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong.error().message.find("h100-sxm, h200"), std::string::npos)
      << wrong.error().message;
}

TEST_F(ActiveRun, TheProbesRunAndAtFullLevelTheBurnLastTheirFiguresRecorded) {
  // cmax-probe for real, loading the stand-in probe library (figures from a file); NVML's
  // watch given as looks that see nothing amiss.
  std::ofstream(dir_.File("probes.json"))
      << R"({"devices": ["0000:17:00.0", "0000:3d:00.0"], "gemm_bf16": [700, 702],
             "hbm_copy": [3000, 3010], "host_to_device": [55, 55], "device_to_host": [54, 54],
             "burn": [650, 655]})";
  ActiveRunIo io = Io([] {
    sys::NvmlSnapshot s = Gpus();
    s.gpus.resize(2);
    s.gpus[0].pci_bus_id = "0000:17:00.0";
    s.gpus[1].pci_bus_id = "0000:3d:00.0";
    return Result<sys::NvmlSnapshot>(s);
  });
  io.probe_program = CMAX_PROBE_BIN;
  io.probe_env = {"CMAX_PROBES_LIB=" CMAX_PROBES_SIM_LIB,
                  "CMAX_PROBES_SIM=" + dir_.File("probes.json")};
  int looks = 0;
  io.watch_gpus = [&looks]() -> Result<LookAtGpus> {
    return LookAtGpus([&looks](Duration) -> Result<GpuLook> {
      ++looks;
      return GpuLook{.gpus = {sys::GpuReading{.index = 0}, sys::GpuReading{.index = 1}}};
    });
  };
  io.watch_every = std::chrono::milliseconds(10);
  auto report = RunActiveHealth({.level = ActiveLevel::kFull, .burn_s = 0.2}, io);
  ASSERT_TRUE(report) << report.error().message;
  const Finding* gemm = Find(report->record, "active.probe.gemm-bf16");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->status, CheckStatus::kFail);  // 700 < 80 % of the H100's 989
  EXPECT_EQ(gemm->observed, "700 TFLOP/s");
  EXPECT_EQ(Find(report->record, "active.probe.hbm-copy")->status, CheckStatus::kPass);
  const Finding* burn = Find(report->record, "active.burn");
  ASSERT_NE(burn, nullptr);
  EXPECT_EQ(burn->status, CheckStatus::kPass) << burn->message;
  EXPECT_EQ(report->record.findings.back().check_id, "active.burn.clocks");
  EXPECT_GT(looks, 1);
  // Each GPU's figures, by NVML's index: four probes and the burn's TFLOP/s.
  int gemm_metrics = 0;
  for (const Metric& m : report->record.metrics) {
    if (m.name == "active.probe.gemm_bf16_tflops") ++gemm_metrics;
  }
  EXPECT_EQ(gemm_metrics, 2);
  // And each check's wall time: five checks (no adapters' all-reduce for H100).
  std::vector<std::string> timed;
  for (const Metric& m : report->record.metrics) {
    if (m.name == "active.check_seconds") timed.push_back(m.labels.at("check"));
  }
  EXPECT_EQ(timed, (std::vector<std::string>{"dcgm-diag", "nvbandwidth", "probes",
                                             "local-all-reduce", "burn"}));
  EXPECT_EQ(report->record.metrics.size(), 10U + 5U);

  // Quick: no burn; a burn asked for without NVML to watch it is not run.
  auto quick = RunActiveHealth({}, io);
  ASSERT_TRUE(quick);
  EXPECT_EQ(Find(quick->record, "active.burn"), nullptr);
  io.watch_gpus = []() -> Result<LookAtGpus> {
    return tl::unexpected(Error{ErrorCode::kUnavailable, "libnvidia-ml.so.1: not found"});
  };
  auto unwatched = RunActiveHealth({.burn_s = 5}, io);
  ASSERT_TRUE(unwatched);
  const Finding* skipped = Find(unwatched->record, "active.burn");
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->status, CheckStatus::kSkip);
  EXPECT_NE(skipped->message.find("libnvidia-ml.so.1: not found"), std::string::npos);
  // Where the probes could not run at all, the burn (the same program) is not tried.
  io.probe_env = {"CMAX_PROBES_LIB=" + dir_.File("no-such-probes.so")};
  auto no_cuda = RunActiveHealth({.burn_s = 5}, io);
  ASSERT_TRUE(no_cuda);
  const Finding* not_tried = Find(no_cuda->record, "active.burn");
  ASSERT_NE(not_tried, nullptr);
  EXPECT_EQ(not_tried->status, CheckStatus::kSkip);
  EXPECT_NE(
      not_tried->message.find("the burn runs in cmax-probe, which could not run the probes: "),
      std::string::npos)
      << not_tried->message;
  EXPECT_NE(not_tried->message.find("no-such-probes.so"), std::string::npos) << not_tried->message;
}

TEST(ActiveConditions, AFailOpensOrCountsAHangIsLowAPassRecovers) {
  const WallTime t0 = WallTime{} + std::chrono::hours(1000);
  const std::vector<Finding> first = {
      {.check_id = "active.burn",
       .status = CheckStatus::kFail,
       .severity = Severity::kCritical,
       .message = "Xid 79 on GPU 3"},
      {.check_id = "active.probe.gemm-bf16",
       .status = CheckStatus::kFail,
       .severity = Severity::kMedium,
       .message = "GPU 1 BF16 GEMM: 640 TFLOP/s"},
      {.check_id = "active.nccl.local-all-reduce", .status = CheckStatus::kPass},
      {.check_id = "active.dcgm-diag", .status = CheckStatus::kUnknown}};
  const auto opened = ActiveConditions(first, true, "gpu1", t0, {});
  ASSERT_EQ(opened.size(), 3U);
  EXPECT_EQ(opened[0].key, "active/active.burn");
  EXPECT_EQ(opened[0].severity, Severity::kCritical);
  EXPECT_EQ(opened[0].component, "gpu");
  EXPECT_EQ(opened[0].action, "none");
  EXPECT_EQ(opened[0].count, 1U);
  EXPECT_EQ(opened[1].severity, Severity::kHigh);  // a FAIL is serious: quarantined
  EXPECT_EQ(opened[2].key, "active/second-look");
  EXPECT_EQ(opened[2].severity, Severity::kLow);  // never a drain for a hang alone

  // The GEMM fails again, the burn passes, nothing hangs: counted, recovered, recovered.
  const WallTime t1 = t0 + std::chrono::hours(168);
  const std::vector<Finding> second = {{.check_id = "active.burn", .status = CheckStatus::kPass},
                                       {.check_id = "active.probe.gemm-bf16",
                                        .status = CheckStatus::kFail,
                                        .severity = Severity::kHigh,
                                        .message = "GPU 1 BF16 GEMM: 600 TFLOP/s"}};
  const auto next = ActiveConditions(second, false, "gpu1", t1, opened);
  ASSERT_EQ(next.size(), 3U);
  EXPECT_EQ(next[0].key, "active/active.probe.gemm-bf16");
  EXPECT_EQ(next[0].count, 2U);
  EXPECT_EQ(next[0].first_seen, t0);
  EXPECT_EQ(next[0].last_seen, t1);
  EXPECT_TRUE(next[1].recovered);
  EXPECT_EQ(next[1].key, "active/active.burn");
  EXPECT_TRUE(next[2].recovered);
  EXPECT_EQ(next[2].key, "active/second-look");
  // Another node's conditions are not touched; a check not run does not recover.
  EXPECT_TRUE(ActiveConditions({}, false, "gpu2", t1, opened).empty());
  EXPECT_EQ(ActiveConditions({}, false, "gpu1", t1, opened).size(), 1U);  // the second look
}

TEST_F(ActiveRun, AFailedCheckBecomesANodeConditionInTheStoreThatRemediationReads) {
  auto report = RunActiveHealth({}, Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(report) << report.error().message;
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store);
  auto conditions = store->LoadConditions("gpu1");
  ASSERT_TRUE(conditions);
  ASSERT_EQ(conditions->size(), 1U);  // the diagnostic's memory test on GPU 3
  EXPECT_EQ((*conditions)[0].key, "active/active.dcgm-diag");
  EXPECT_GE((*conditions)[0].severity, Severity::kHigh);
  EXPECT_FALSE((*conditions)[0].recovered);
  // And said on stderr, as the operator sees it.
  EXPECT_NE(std::ranges::find(report->notes,
                              fmt::format("node condition active/active.dcgm-diag on gpu1 ({}, "
                                          "seen 1 time)",
                                          SeverityName((*conditions)[0].severity))),
            report->notes.end())
      << Join(report->notes, "\n");

  // The diagnostic passes the next time: the condition recovers.
  StandIn("dcgmi", "cat '" + Data("dcgm_diag/dcgm4-level1-pass.json") + "'");
  report = RunActiveHealth({}, Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(report);
  conditions = store->LoadConditions("gpu1");
  ASSERT_TRUE(conditions);
  ASSERT_EQ(conditions->size(), 1U);
  EXPECT_TRUE((*conditions)[0].recovered);
  EXPECT_NE(std::ranges::find(report->notes,
                              "node condition active/active.dcgm-diag on gpu1 "
                              "recovered"),
            report->notes.end())
      << Join(report->notes, "\n");
}

TEST_F(ActiveRun, AHungToolAsksForASecondLook) {
  StandInThatHangs("dcgmi");
  auto report =
      RunActiveHealth({.deadline_s = 0.3}, Io([] { return Result<sys::NvmlSnapshot>(Gpus()); }));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->second_look);
  EXPECT_EQ(report->exit_code, 3);  // a check that could not be read
  EXPECT_TRUE(std::ranges::any_of(report->notes, [](const std::string& note) {
    return note.starts_with("a tool hung and was killed at cmax's deadline");
  })) << Join(report->notes, "\n");
}

}  // namespace
}  // namespace cmax::active
