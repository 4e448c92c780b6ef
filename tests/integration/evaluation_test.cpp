// The evaluation behind `cmax run --plan`, as a library call against real components: this
// host's inventory, audit and kernel log, serve-sim (a stand-in inference server) in a thread
// as the provider's endpoint, a port nothing answers on as a dead one, and a real SQLite store.
// Every phase the plan names is accounted for in one run: the live endpoint ran, the dead one
// failed and the others still ran, a scenario that cannot be read and the phases cmax does not
// have yet are UNTESTED with their reasons, and the run is rated.
#include "evaluate/evaluation.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <vector>

#include "active/schedule.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "support/free_port.hpp"
#include "support/sim_fixture.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::evaluate {
namespace {

using testing::SimFixture;
using testing::TempDir;

struct Shell {
  TempDir dir;
  sys::LocalFileSystem fs;
  sys::PosixProcessRunner runner;
  SystemClock clock;
  std::vector<std::string> lines;

  EvaluationIo Io() {
    return {.host = {.db_path = dir.File("cmax.db"),
                     .cmax_version = "test",
                     .fs = &fs,
                     .runner = &runner,
                     .clock = &clock,
                     .interrupted = [] { return false; },
                     .interrupt_signal = [] { return 0; },
                     .path = "/usr/sbin:/usr/bin:/sbin:/bin",
                     .env = [](const std::string&) { return std::string(); }},
            .progress = [this](std::string_view line) { lines.emplace_back(line); }};
  }
  std::string Plan(const std::string& yaml) {
    const std::string path = dir.File("plan.yaml");
    EXPECT_TRUE(fs.WriteFileAtomic(path, yaml, 0600));
    return path;
  }
  // A folder of stand-in nccl-tests binaries (shell scripts, named as such): all_reduce_perf
  // prints a real run's table.
  std::string NcclTestsStandIn() {
    const std::string tests = dir.File("nccl-tests");
    EXPECT_TRUE(fs.CreateDirs(tests, 0755));
    EXPECT_TRUE(
        fs.WriteFileAtomic(tests + "/all_reduce_perf",
                           "#!/bin/sh\n# A stand-in for nccl-tests' all_reduce_perf.\ncat " +
                               std::string(CMAX_TEST_DATA) + "/nccl/modern_all_reduce.txt\n",
                           0755));
    return tests;
  }
};

const PhaseOutcome* Find(const std::vector<PhaseOutcome>& phases, const std::string& name) {
  for (const PhaseOutcome& p : phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

// A plan's network entry with a sweep: `cmax nccl sweep` run as a phase, under the real mpirun on
// this machine ("localhost" and "127.0.0.1" are two hosts to it), with stand-in nccl-tests
// binaries (shell scripts, named as such): all_reduce prints a table, alltoall fails.
TEST(Evaluation, ANetworkSweepRunsAsAPhaseAndKeepsItsLogs) {
  Shell shell;
  const std::string tests = shell.NcclTestsStandIn();
  ASSERT_TRUE(shell.fs.WriteFileAtomic(
      tests + "/alltoall_perf",
      "#!/bin/sh\n# A stand-in for nccl-tests' alltoall_perf, failing.\necho 'Test NCCL failure "
      "common.cu:1' >&2\nexit 3\n",
      0755));
  const std::string plan = shell.Plan(fmt::format(
      "schema: cmax.plan/v1\n"
      "health: false\n"
      "network:\n"
      "  - name: fabric\n"
      "    sweep: {{hosts: [localhost, 127.0.0.1], nccl_tests: '{}', gpus_per_node: 1,\n"
      "            step_timeout_s: 60, nodes: [2]}}\n",
      tests));
  const auto evaluation = Evaluate({.probe_timeout_s = 2, .plan = plan}, shell.Io());
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  const PhaseOutcome* fabric = Find(evaluation->phases, "fabric");
  ASSERT_NE(fabric, nullptr);
  EXPECT_EQ(fabric->state, PhaseState::kFailed) << fabric->reason;  // the failed step
  EXPECT_GT(fabric->run_id, 0);
  bool busbw = false;
  bool step_failed = false;
  for (const Metric& m : evaluation->record.metrics) {
    if (m.name == "nccl.busbw_peak") busbw = m.labels.at("phase") == "fabric";
  }
  for (const Finding& f : evaluation->record.findings) {
    if (f.check_id == "network.nccl-step") step_failed = f.status == CheckStatus::kFail;
  }
  EXPECT_TRUE(busbw);
  EXPECT_TRUE(step_failed);
  // The logs kept beside the store, a folder for the phase.
  const auto folders = shell.fs.ListDir(shell.dir.Path());
  ASSERT_TRUE(folders);
  const auto logs = std::ranges::find_if(
      *folders, [](const std::string& f) { return f.starts_with("nccl-sweep-fabric-"); });
  ASSERT_NE(logs, folders->end());
  EXPECT_TRUE(shell.fs.Exists(shell.dir.File(*logs + "/all_reduce-default-2n.log")));
  EXPECT_TRUE(std::ranges::any_of(shell.lines, [](const std::string& l) {
    return l.starts_with("network fabric: step 2/2: alltoall over 2 nodes");
  }));
}

// A plan's network entry with find_bad_node: `cmax nccl find-bad-node` run as a phase over two
// hosts with the stand-in all_reduce_perf (a shell script printing a real run's table): held
// against a reference, the pair is fast and the rubric's networking.nccl-bad-node metric says
// none is slow; with nothing to hold it against, the phase runs and scores nothing.
TEST(Evaluation, ABadNodeSearchRunsAsAPhaseAndCountsTheSlowNodes) {
  Shell shell;
  const std::string tests = shell.NcclTestsStandIn();
  const std::string plan = shell.Plan(fmt::format(
      "schema: cmax.plan/v1\n"
      "health: false\n"
      "network:\n"
      "  - name: pairs\n"
      "    find_bad_node: {{hosts: [localhost, 127.0.0.1], nccl_tests: '{}', gpus_per_node: 1,\n"
      "                    step_timeout_s: 60, reference_gbs: 250}}\n"
      "  - name: alone\n"
      "    find_bad_node: {{hosts: [localhost, 127.0.0.1], nccl_tests: '{}', gpus_per_node: 1,\n"
      "                    step_timeout_s: 60}}\n",
      tests, tests));
  const auto evaluation = Evaluate({.probe_timeout_s = 2, .plan = plan}, shell.Io());
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  const PhaseOutcome* pairs = Find(evaluation->phases, "pairs");
  ASSERT_NE(pairs, nullptr);
  EXPECT_EQ(pairs->state, PhaseState::kRan) << pairs->reason;
  EXPECT_GT(pairs->run_id, 0);
  const PhaseOutcome* alone = Find(evaluation->phases, "alone");
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->state, PhaseState::kRan) << alone->reason;
  std::map<std::string, double> slow_nodes;
  for (const Metric& m : evaluation->record.metrics) {
    if (m.name == "nccl.slow_nodes") slow_nodes[m.labels.at("phase")] = m.value;
  }
  EXPECT_EQ(slow_nodes, (std::map<std::string, double>{{"pairs", 0}}));
  const auto folders = shell.fs.ListDir(shell.dir.Path());
  ASSERT_TRUE(folders);
  EXPECT_TRUE(std::ranges::any_of(
      *folders, [](const std::string& f) { return f.starts_with("nccl-find-pairs-"); }));
  EXPECT_TRUE(std::ranges::any_of(shell.lines, [](const std::string& l) {
    return l == "network pairs: measured 127.0.0.1,localhost: 257.82 GB/s";
  })) << ::testing::PrintToString(shell.lines);
}

TEST(Evaluation, EveryPhaseOfThePlanIsAccountedForInOneRun) {
  SimFixture sim;
  ASSERT_TRUE(sim.Up());
  const int dead_port = testing::FreePort();
  ASSERT_GT(dead_port, 0);
  Shell shell;
  const std::string plan = shell.Plan(fmt::format(
      "schema: cmax.plan/v1\n"
      "provider: Sim Cloud\n"
      "health: {{since: 1h}}\n"
      "endpoints:\n"
      "  - {{name: live, url: '{}', model: m, concurrency: 2, requests: 6, input_len: 20,\n"
      "     output_len: 4, timeout_s: 10}}\n"
      "  - {{name: dead, url: 'http://127.0.0.1:{}/v1', model: m, requests: 2, timeout_s: 5}}\n"
      "reliability:\n"
      "  - {{name: xid, scenario: no-such-scenario.yaml}}\n"
      "network:\n"
      "  - {{name: all-reduce, logs: ['{}'], platform: h100-nvlink}}\n"
      "  - {{name: sweep}}\n"
      "training:\n"
      "  - {{name: titan-log, logs: ['{}'], reference: llama3_8b-h100-8gpu-fsdp-ac-selective}}\n"
      "  - {{name: titan-trace, traces: ['{}']}}\n"
      "  - {{name: titan-run, command: [/bin/sh, '{}', forever], steps: 20, deadline_s: 120}}\n"
      "  - {{name: nothing}}\n",
      sim.Url("/v1"), dead_port,
      std::string(CMAX_TEST_DATA) + "/nccl/tuning_lines_with_a_switch.txt",
      std::string(CMAX_TEST_DATA) + "/train/run_train_rank0_coloured.log",
      std::string(CMAX_TEST_DATA) + "/train/trace/h100_moe_all_to_all_exposed.trace.json",
      std::string(CMAX_TEST_DATA) + "/train/standin_train.sh"));

  const auto evaluation = Evaluate({.probe_timeout_s = 2, .plan = plan}, shell.Io());
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  // The dead endpoint's FAIL is the run's: it ends "checks failed", and the others still ran.
  EXPECT_EQ(evaluation->exit_code, 1);
  EXPECT_FALSE(evaluation->interrupted);
  const RunRecord& record = evaluation->record;
  EXPECT_EQ(record.run.command, "run");
  EXPECT_EQ(record.run.provider, "Sim Cloud");

  const auto& phases = evaluation->phases;
  std::vector<std::string> names;
  for (const PhaseOutcome& p : phases) names.push_back(p.kind + "/" + p.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "host/host", "health/health", "active/active", "active/active-fleet",
                       "endpoint/live", "endpoint/dead", "reliability/xid", "network/all-reduce",
                       "network/sweep", "training/titan-log", "training/titan-trace",
                       "training/titan-run", "training/nothing"}));
  const PhaseOutcome* host = Find(phases, "host");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->state, PhaseState::kRan);
  EXPECT_EQ(host->run_id, record.run.id);
  // The kernel log's verdict is this machine's; the phase ran as a run of its own either way.
  const PhaseOutcome* health = Find(phases, "health");
  ASSERT_NE(health, nullptr);
  EXPECT_GT(health->run_id, 0) << health->reason;
  const PhaseOutcome* live = Find(phases, "live");
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live->state, PhaseState::kRan) << live->reason;
  const PhaseOutcome* dead = Find(phases, "dead");
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->state, PhaseState::kFailed);
  EXPECT_EQ(dead->reason, "a check failed");
  const PhaseOutcome* xid = Find(phases, "xid");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->state, PhaseState::kUntested);
  EXPECT_NE(xid->reason.find("no-such-scenario.yaml"), std::string::npos) << xid->reason;
  // The logs analysed as a run of their own (a switch-point kink, no fault); no logs: UNTESTED.
  const PhaseOutcome* network = Find(phases, "all-reduce");
  ASSERT_NE(network, nullptr);
  EXPECT_EQ(network->state, PhaseState::kRan) << network->reason;
  EXPECT_GT(network->run_id, 0);
  const PhaseOutcome* sweep = Find(phases, "sweep");
  ASSERT_NE(sweep, nullptr);
  EXPECT_EQ(sweep->state, PhaseState::kUntested);
  EXPECT_NE(sweep->reason.find("neither logs of a sweep"), std::string::npos) << sweep->reason;
  bool busbw = false;
  for (const Metric& m : record.metrics) {
    if (m.name == "nccl.busbw_peak") busbw = m.labels.at("phase") == "all-reduce";
  }
  EXPECT_TRUE(busbw);
  // Training: a log read, a trace analysed (its exposed all-to-all a WARN, not a failure), the
  // stand-in training job run to its step budget; an entry with nothing: UNTESTED.
  for (const char* name : {"titan-log", "titan-trace", "titan-run"}) {
    const PhaseOutcome* t = Find(phases, name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->state, PhaseState::kRan) << name << ": " << t->reason;
    EXPECT_GT(t->run_id, 0) << name;
  }
  const PhaseOutcome* nothing = Find(phases, "nothing");
  ASSERT_NE(nothing, nullptr);
  EXPECT_EQ(nothing->state, PhaseState::kUntested);
  EXPECT_NE(nothing->reason.find("neither logs"), std::string::npos) << nothing->reason;
  std::map<std::string, double> tokens;
  double exposed = -1;
  for (const Metric& m : record.metrics) {
    if (m.name == "train.tokens_per_s_per_gpu") tokens[m.labels.at("phase")] = m.value;
    if (m.name == "train.exposed_comm_pct" && m.labels.at("phase") == "titan-trace") {
      exposed = m.value;
    }
  }
  EXPECT_EQ(tokens.at("titan-log"), 5846);
  bool share = false;
  for (const Metric& m : record.metrics) {
    share = share || (m.name == "train.share_of_reference" && m.labels.at("phase") == "titan-log");
  }
  EXPECT_TRUE(share);
  EXPECT_TRUE(tokens.contains("titan-run"));
  EXPECT_NEAR(exposed, 23.5, 0.5);

  // The phases' runs are folded into this one: metrics labelled by phase, findings named.
  std::map<std::string, double> completed;
  for (const Metric& m : record.metrics) {
    if (m.name == "endpoint.completed") completed[m.labels.at("phase")] = m.value;
  }
  EXPECT_EQ(completed, (std::map<std::string, double>{{"dead", 0}, {"live", 6}}));
  bool dead_errors = false;
  size_t untested = 0;
  for (const Finding& f : record.findings) {
    if (f.check_id == "endpoint.errors" && f.observed.starts_with("dead: ")) {
      dead_errors = f.status == CheckStatus::kFail;
    }
    if (f.check_id.starts_with("evaluation.") && f.message.starts_with("UNTESTED: ")) {
      EXPECT_TRUE(f.observed.ends_with(": UNTESTED")) << f.observed;
      EXPECT_EQ(f.status, CheckStatus::kSkip) << f.check_id;
      ++untested;
    }
  }
  EXPECT_TRUE(dead_errors);
  // The scenario, the network sweep, the training entry with nothing; this host's active checks
  // (not asked for) and the fleet's (no view in the store).
  EXPECT_EQ(untested, 5U);
  std::map<std::string, std::string> evidence;
  for (const EvidenceItem& e : record.evidence) evidence[e.key] = e.value_json;
  ASSERT_TRUE(evidence.contains("evaluation.phases"));
  EXPECT_EQ(nlohmann::json::parse(evidence["evaluation.phases"]).size(), phases.size());
  EXPECT_TRUE(evidence.contains("phase.live.endpoint.result"));
  EXPECT_TRUE(evidence.contains("phase.dead.endpoint.result"));
  EXPECT_TRUE(evidence.contains("rating"));
  ASSERT_TRUE(evaluation->rating);

  // Each phase's own run is kept, for its detail, and evaluates the same provider.
  auto store = store::Store::Open({.path = shell.dir.File("cmax.db"), .create = false});
  ASSERT_TRUE(store);
  for (const PhaseOutcome* p : {health, live, dead}) {
    auto run = store->LoadRun(p->run_id);
    ASSERT_TRUE(run) << p->name;
    EXPECT_EQ(run->run.provider, "Sim Cloud") << p->name;
  }
  // And the operator saw each phase start and end.
  bool said = false;
  for (const std::string& line : shell.lines)
    said = said || line == "phase endpoint dead: failed (a check failed)";
  EXPECT_TRUE(said);
}

TEST(Evaluation, ABadPlanIsRefusedBeforeAnythingRuns) {
  Shell shell;
  // "": no plan file at all. The last two: a time the plan's form allows that lies, on this
  // clock, more than ten years back, or ahead.
  for (const std::string& yaml :
       {std::string("schema: cmax.plan/v1\nendpoints:\n  - {name: e, url: x, model: m}\n"),
        std::string(),
        std::string("schema: cmax.plan/v1\nhealth: {since: \"2000-01-01T00:00:00Z\"}\n"),
        std::string("schema: cmax.plan/v1\nhealth: {since: \"2999-01-01T00:00:00Z\"}\n")}) {
    const std::string plan = yaml.empty() ? shell.dir.File("no-such-plan.yaml") : shell.Plan(yaml);
    const auto evaluation = Evaluate({.plan = plan}, shell.Io());
    ASSERT_FALSE(evaluation);
    EXPECT_EQ(evaluation.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(evaluation.error().message.find(plan), std::string::npos)
        << evaluation.error().message;
  }
  auto store = store::Store::Open({.path = shell.dir.File("cmax.db"), .create = false});
  EXPECT_FALSE(store);  // not even a store was made
}

// The active phases: this host exercised as `cmax health --active` does (the simulated NVML's
// two idle H200s, cmax-probe loading the probes' stand-in library; dcgmi, nvbandwidth and
// nccl-tests are not installed here, so those checks SKIP), and the fleet's newest view from
// `cmax health schedule` folded in, which the rating's monitoring items then score. A view older
// than the plan allows, and GPUs in use, leave their phase UNTESTED with the reason.
class ActivePhases : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteNvml(false);
    shell_.fs.WriteFileAtomic(shell_.dir.File("probes.json"),
                              R"({"devices": ["0000:3d:00.0", "0000:17:00.0"],
                                  "gemm_bf16": [805, 810], "hbm_copy": [4200, 4210],
                                  "host_to_device": [55, 55.5], "device_to_host": [53, 54]})",
                              0600);
    for (const auto& [name, value] : {std::pair{"CMAX_NVML_LIB", std::string(CMAX_NVML_SIM_LIB)},
                                      {"CMAX_NVML_SIM_STATE", shell_.dir.File("nvml.json")},
                                      {"CMAX_PROBES_LIB", std::string(CMAX_PROBES_SIM_LIB)},
                                      {"CMAX_PROBES_SIM", shell_.dir.File("probes.json")}}) {
      ::setenv(name, value.c_str(), 1);
    }
  }
  void TearDown() override {
    for (const char* name :
         {"CMAX_NVML_LIB", "CMAX_NVML_SIM_STATE", "CMAX_PROBES_LIB", "CMAX_PROBES_SIM"}) {
      ::unsetenv(name);
    }
  }
  void WriteNvml(bool busy) {
    const std::string gpu =
        fmt::format(R"("name": "NVIDIA H200", "utilization_percent": {}, "compute_processes": {})",
                    busy ? 60 : 0, busy ? 1 : 0);
    ASSERT_TRUE(shell_.fs.WriteFileAtomic(
        shell_.dir.File("nvml.json"),
        fmt::format(
            R"({{"gpus": [{{"bus_id": "0000:3d:00.0", {0}}}, {{"bus_id": "0000:17:00.0", {0}}}]}})",
            gpu),
        0600));
  }
  // A fleet view as `cmax health schedule` records it, `age` ago: gpu1 checked and passed,
  // gpu2 never checked.
  int64_t RecordFleet(Duration age, const std::string& provider = "") {
    const WallTime at = std::chrono::time_point_cast<WallTime::duration>(shell_.clock.Now() - age);
    std::vector<active::ScheduleDecision> nodes(2);
    nodes[0] = {.node = "gpu1",
                .state = "idle",
                .last_check = active::LastCheck{
                    .at = at - std::chrono::hours(24), .run_id = 1, .counts = {.pass = 5}}};
    nodes[1] = {.node = "gpu2", .state = "mixed"};
    const active::FleetView view = active::ViewFleet(nodes, at, std::chrono::hours(24 * 7));
    auto recorded = store::RecordWholeRun(shell_.dir.File("cmax.db"),
                                          {.command = "health",
                                           .target = "active schedule",
                                           .host = "login1",
                                           .started_at = at,
                                           .cmax_version = "test",
                                           .provider = provider},
                                          {{"active.fleet", view.evidence_json}}, {view.finding},
                                          view.metrics, at);
    EXPECT_TRUE(recorded) << recorded.error().message;
    return recorded ? recorded->record.run.id : 0;
  }
  Result<Evaluation> Run(const std::string& active, const std::string& provider = "") {
    EvaluationIo io = shell_.Io();
    io.probe_program = CMAX_PROBE_BIN;
    return Evaluate(
        {.probe_timeout_s = 2,
         .plan = shell_.Plan("schema: cmax.plan/v1\nhealth: false\nactive: " + active + "\n" +
                             (provider.empty() ? "" : "provider: " + provider + "\n"))},
        io);
  }

  Shell shell_;
};

TEST_F(ActivePhases, ThisHostExercisedAndTheFleetViewFoldedInAndRated) {
  const int64_t fleet = RecordFleet(std::chrono::hours(30));
  const auto evaluation = Run("{level: quick, deadline_s: 30}");
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  const PhaseOutcome* here = Find(evaluation->phases, "active");
  const PhaseOutcome* view = Find(evaluation->phases, "active-fleet");
  ASSERT_TRUE(here != nullptr && view != nullptr);
  EXPECT_EQ(here->state, PhaseState::kRan) << here->reason;
  EXPECT_GT(here->run_id, fleet);
  EXPECT_EQ(view->state, PhaseState::kRan) << view->reason;
  EXPECT_EQ(view->run_id, fleet);
  // The probes' figures, judged, are the evaluation's; the fleet's rows are its evidence.
  std::map<std::string, CheckStatus> found;
  for (const Finding& f : evaluation->record.findings) found[f.check_id] = f.status;
  EXPECT_EQ(found["active.probe.hbm-copy"], CheckStatus::kPass);
  EXPECT_EQ(found["active.nvbandwidth"], CheckStatus::kSkip);  // not installed here
  EXPECT_EQ(found["active.fleet"], CheckStatus::kWarn);        // gpu2 never checked
  bool probed = false;
  for (const Metric& m : evaluation->record.metrics) {
    if (m.name == "active.probe.gemm_bf16_tflops") probed = m.labels.at("phase") == "active";
  }
  EXPECT_TRUE(probed);
  bool rows = false;
  for (const EvidenceItem& e : evaluation->record.evidence) {
    rows = rows || e.key == "phase.active-fleet.active.fleet";
  }
  EXPECT_TRUE(rows);
  ASSERT_TRUE(evaluation->rating);
  bool weekly = false;
  for (const rate::ItemRating& item : evaluation->rating->items) {
    if (item.id != "monitoring.active-checks-weekly") continue;
    weekly = true;
    ASSERT_TRUE(item.score) << item.evidence;
    EXPECT_DOUBLE_EQ(*item.score, 0.3) << item.evidence;  // half the nodes checked this week
  }
  EXPECT_TRUE(weekly);
}

// An evaluation of a provider reads that provider's fleet view only: another's says nothing of it.
TEST_F(ActivePhases, TheEvaluatedProvidersOwnFleetView) {
  const int64_t beta = RecordFleet(std::chrono::hours(2), "Beta");
  RecordFleet(std::chrono::hours(1), "Alpha");
  auto evaluation = Run("{fleet: true}", "Beta");
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  EXPECT_EQ(Find(evaluation->phases, "active-fleet")->run_id, beta);
  evaluation = Run("{fleet: true}", "Gamma");
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  const PhaseOutcome* none = Find(evaluation->phases, "active-fleet");
  EXPECT_EQ(none->state, PhaseState::kUntested);
  EXPECT_NE(none->reason.find("no fleet view of Gamma in the store: cmax --provider Gamma health "
                              "schedule"),
            std::string::npos)
      << none->reason;
}

TEST_F(ActivePhases, BusyGpusAndAStaleFleetViewAreUntestedWithTheirReasons) {
  RecordFleet(std::chrono::hours(24 * 10));
  WriteNvml(true);
  const auto evaluation = Run("{level: quick}");
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  const PhaseOutcome* here = Find(evaluation->phases, "active");
  const PhaseOutcome* view = Find(evaluation->phases, "active-fleet");
  ASSERT_TRUE(here != nullptr && view != nullptr);
  EXPECT_EQ(here->state, PhaseState::kUntested);
  EXPECT_GT(here->run_id, 0);  // the skips are kept, in a run of their own
  EXPECT_NE(here->reason.find("every check skipped: GPUs in use or of unknown use: GPU 0"),
            std::string::npos)
      << here->reason;
  EXPECT_EQ(view->state, PhaseState::kUntested);
  EXPECT_NE(view->reason.find("is 10.0 days old, more than 8"), std::string::npos) << view->reason;
  // The plan can turn both off.
  const auto off = Run("false");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(Find(off->phases, "active-fleet")->reason, "the plan turns it off");
}

TEST(Evaluation, WithoutAPlanTheHostIsEvaluatedAndTheRestSaidUntested) {
  Shell shell;
  const auto evaluation = Evaluate({.probe_timeout_s = 2}, shell.Io());
  ASSERT_TRUE(evaluation) << evaluation.error().message;
  std::map<std::string, PhaseState> states;
  for (const PhaseOutcome& p : evaluation->phases) states[p.kind] = p.state;
  EXPECT_EQ(states.at("host"), PhaseState::kRan);
  for (const char* kind : {"endpoint", "reliability", "network", "training"}) {
    EXPECT_EQ(states.at(kind), PhaseState::kUntested) << kind;
  }
}

}  // namespace
}  // namespace cmax::evaluate
