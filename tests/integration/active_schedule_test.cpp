// `cmax health schedule` against the real Slurm daemons of the lab: a node with a tenant's job
// is never chosen, the idle ones get a whole-node check that runs `cmax health --active` (the
// real binary, in a real job) and records into the store, a second pass within the interval
// submits nothing, and a node that gets a job between the look and the start has its check
// cancelled instead of waiting in the tenant's way.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "active/schedule.hpp"
#include "core/strings.hpp"
#include "lab/lab.hpp"
#include "report/render.hpp"
#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "support/free_port.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"

namespace cmax::active {
namespace {

using namespace std::chrono_literals;

// Its own ports: the reliability lab (27817) and the evaluation (28917) run under other locks.
constexpr int kPortBase = 29817;
constexpr const char* kProvider = "Lab Cloud";

// The lab's real process runner, with one thing added: just before the check for `node` is
// submitted, a tenant's job takes that node whole, as one could at any moment.
class TenantArrives : public sys::ProcessRunner {
 public:
  TenantArrives(sys::ProcessRunner& real, std::vector<std::string> env, std::string node)
      : real_(real), env_(std::move(env)), node_(std::move(node)) {}
  Result<sys::ProcessResult> Run(const sys::ProcessSpec& spec) override {
    if (!spec.argv.empty() && spec.argv[0] == "sbatch" &&
        std::ranges::find(spec.argv, "--nodelist=" + node_) != spec.argv.end()) {
      sys::ProcessSpec tenant{
          .argv = {"sbatch", "--exclusive", "--nodelist=" + node_, "--job-name=tenant", "-o",
                   "/dev/null", "--wrap", "sleep 311"},
          .env_add = env_};
      tenant_submitted = real_.Run(tenant).has_value();
    }
    return real_.Run(spec);
  }
  bool tenant_submitted = false;

 private:
  sys::ProcessRunner& real_;
  std::vector<std::string> env_;
  std::string node_;
};

class ActiveSchedule : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the lab needs root";
    spec_.dir = dir_.Path() + "/lab";
    spec_.nodes = 4;
    spec_.spares = 0;
    spec_.controller_port = kPortBase;
    spec_.first_node_port = kPortBase + 1;
    auto up = lab::Up(spec_, ctx_, 30s);
    ASSERT_TRUE(up) << up.error().message;
  }
  void TearDown() override {
    if (::geteuid() == 0) (void)lab::Down(spec_.dir, ctx_);  // its jobs end with it
  }
  Result<sys::ProcessResult> Slurm(std::vector<std::string> argv) {
    sys::ProcessSpec spec{.argv = std::move(argv), .env_add = lab::SlurmEnv(spec_.dir)};
    spec.timeout = 30s;
    return runner_.Run(spec);
  }
  std::string State(const std::string& node) {
    auto r = Slurm({"sinfo", "-h", "-N", "-n", node, "-o", "%T"});
    return r ? std::string(Trim(r->stdout_text)) : "?";
  }
  ScheduleIo Io(sys::ProcessRunner& runner) {
    return {.runner = &runner,
            .slurm_env = lab::SlurmEnv(spec_.dir),
            .db_path = dir_.File("cmax.db"),
            .cmax_binary = CMAX_BINARY,
            .clock = &clock_};
  }
  // Each node's latest check (of `provider`'s, when named).
  std::map<std::string, store::RunSummary> Checked(const std::string& provider = "") {
    auto store = store::Store::Open({.path = dir_.File("cmax.db")});
    if (!store) return {};
    auto last = store->LatestRunByHost("health", "active checks", provider);
    return last ? *last : std::map<std::string, store::RunSummary>{};
  }
  // What the checks' jobs wrote, for a failure's message.
  std::string JobLogs() {
    std::string out;
    std::error_code ignored;
    for (const auto& entry :
         std::filesystem::directory_iterator(dir_.File("active-checks"), ignored)) {
      auto text = fs_.ReadFile(entry.path().string(), 1 << 16);
      out += "\n--- " + entry.path().filename().string() + "\n" + (text ? *text : "?");
    }
    return out;
  }
  static const ScheduleDecision* Of(const ScheduleReport& r, const std::string& node) {
    for (const ScheduleDecision& d : r.decisions) {
      if (d.node == node) return &d;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  lab::LabSpec spec_;
  SystemClock clock_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
  lab::LabContext ctx_{fs_, runner_, clock_, {}};
};

TEST_F(ActiveSchedule, ANodeWithAJobIsNeverChosenTheIdleOnesAreCheckedOnceAWeek) {
  // A tenant's job on gpu2.
  auto tenant = Slurm({"sbatch", "--nodelist=gpu2", "-o", "/dev/null", "--wrap", "sleep 313"});
  ASSERT_TRUE(tenant && tenant->Succeeded()) << (tenant ? tenant->stderr_text : "");
  std::string taken;  // "mixed" or "allocated", as the job's cores and the node's count
  ASSERT_TRUE(testing::WaitUntil([&] {
    taken = State("gpu2");
    return taken == "mixed" || taken == "allocated";
  })) << taken;

  // Another provider's cluster has a gpu1 too, checked a moment ago: that says nothing of this
  // one's gpu1.
  auto other =
      store::RecordWholeRun(dir_.File("cmax.db"),
                            {.command = "health",
                             .target = "active checks (quick)",
                             .host = "gpu1",
                             .started_at = clock_.Now(),
                             .provider = "Other Cloud"},
                            {}, {{.check_id = "active.probe.gemm-bf16"}}, {}, clock_.Now());
  ASSERT_TRUE(other) << other.error().message;

  // As `cmax --provider "Lab Cloud" health schedule` sets it: the pass and its jobs record it.
  const sys::ScopedEnv provider("CMAX_PROVIDER", kProvider);
  auto report = ScheduleActiveChecks({}, Io(runner_));
  ASSERT_TRUE(report) << report.error().message;
  // Each decision and outcome with any failure: this test once failed under ctest -j2 alone.
  const std::string said = ScheduleText(*report, false);
  EXPECT_EQ(report->submitted, 3) << said;
  EXPECT_EQ(report->started, 3) << said;
  const ScheduleDecision* busy = Of(*report, "gpu2");
  ASSERT_NE(busy, nullptr) << said;
  EXPECT_FALSE(busy->submit);
  // Slurm moves a node between the two as the job's cores are counted.
  EXPECT_TRUE(busy->why == "mixed: a job runs there" || busy->why == "allocated: a job runs there")
      << busy->why;
  EXPECT_TRUE(busy->job_id.empty());
  for (const char* node : {"gpu1", "gpu3", "gpu4"}) {
    const ScheduleDecision* d = Of(*report, node);
    ASSERT_NE(d, nullptr) << node;
    EXPECT_TRUE(d->submit) << node << "\n" << said;
    EXPECT_EQ(d->outcome, "started") << node << "\n" << said;
    EXPECT_FALSE(d->job_id.empty()) << node;
  }

  // Each job ran `cmax health --active` on its node and recorded it: no run for gpu2.
  ASSERT_TRUE(testing::WaitUntil([&] { return Checked(kProvider).size() == 3; }, 60s))
      << said << JobLogs();
  EXPECT_FALSE(Checked(kProvider).contains("gpu2"));
  // And their jobs have ended: a check records before its process (slower to exit under ASan)
  // and its job are done, and a node still held by it is not idle for the next pass.
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto queue = Slurm({"squeue", "-h", "-n", "cmax-active-check", "-o", "%i"});
        return queue && queue->Succeeded() && Trim(queue->stdout_text).empty();
      },
      60s))
      << said << JobLogs();
  EXPECT_TRUE(std::filesystem::exists(
      dir_.File("active-checks/gpu1-" + Of(*report, "gpu1")->job_id + ".out")));
  // Slurm took the job's time limit: a quick check's bound, 19 minutes.
  auto job = Slurm({"scontrol", "show", "job", Of(*report, "gpu1")->job_id});
  ASSERT_TRUE(job && job->Succeeded()) << (job ? job->stderr_text : job.error().message);
  EXPECT_NE(job->stdout_text.find("TimeLimit=00:19:00"), std::string::npos) << job->stdout_text;

  // Within the week, nothing more for those three; gpu2 still busy.
  auto again = ScheduleActiveChecks({}, Io(runner_));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->submitted, 0) << ScheduleText(*again, false);
  EXPECT_NE(Of(*again, "gpu1")->why.find("last checked"), std::string::npos)
      << Of(*again, "gpu1")->why;
  EXPECT_NE(Of(*again, "gpu1")->why.find("every 7 days"), std::string::npos);
  // The fleet as the rating reads it, recorded. No GPU here: the three checks skipped every
  // part, so they exercised nothing and count as no check (never as passed); gpu2 was never
  // checked. The order of the three follows their checks' times.
  EXPECT_EQ(again->fleet.finding.status, CheckStatus::kWarn);
  const std::string& message = again->fleet.finding.message;
  EXPECT_EQ(message.rfind("not checked every 7 days: gpu2, ", 0), 0U) << message;
  const size_t skipped = message.find(" (the latest check skipped every part on ");
  ASSERT_NE(skipped, std::string::npos) << message;
  for (const char* node : {"gpu1", "gpu3", "gpu4"}) {
    EXPECT_NE(message.find(node, skipped), std::string::npos) << node << ": " << message;
  }
  EXPECT_EQ(message.find("gpu2", skipped), std::string::npos) << message;
  EXPECT_EQ(again->exit_code, 0);
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store);
  auto run = store->LoadRun(again->run_id);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->run.target, "active schedule");
  EXPECT_EQ(run->run.provider, kProvider);
  for (const auto& [node, check] : Checked()) {        // every node's newest check, anyone's
    EXPECT_EQ(check.run.provider, kProvider) << node;  // Slurm handed the job the environment
  }
  std::map<std::string, double> metrics;
  for (const Metric& m : run->metrics) metrics[m.name] = m.value;
  EXPECT_DOUBLE_EQ(metrics.at("active.fleet_checked_share"), 0.0);
  EXPECT_FALSE(metrics.contains("active.fleet_pass_share"));  // no node checked: no share
  EXPECT_EQ(metrics.at("active.fleet_nodes"), 4);
  // The page's per-node table: gpu2 (never checked, a tenant there) on top, then the three
  // checked nodes, each with the run of its check: a check that exercised nothing (no GPU in the
  // lab: every check a SKIP) is said as SKIP, not folded away with the passes.
  const std::string html = report::RenderHtml(*run);
  const size_t gpu2 = html.find("<code>gpu2</code>");
  ASSERT_NE(gpu2, std::string::npos) << html;
  EXPECT_EQ(html.find("passed a check within the interval"), std::string::npos);
  for (const auto& [node, check] : Checked(kProvider)) {
    const size_t row = html.find("<code>" + node + "</code>");
    EXPECT_GT(row, gpu2) << node;
    const size_t end = html.find("</tr>", row);
    const std::string cells = html.substr(row, end - row);
    EXPECT_NE(cells.find("<span class=\"status SKIP\">SKIP</span>"), std::string::npos) << cells;
    EXPECT_NE(cells.find(fmt::format("<code>cmax report {}</code>", check.run.id)),
              std::string::npos)
        << node << "\n"
        << cells;
  }
  // The schedule's own runs are not checks: still three nodes with one.
  EXPECT_EQ(Checked(kProvider).size(), 3U);

  // A fleet whose nodes are new (cmax run --lab's): checks made before `not_before` do not
  // count, so every idle node is due again; a pass that does not submit still records the view.
  const ScheduleOptions view_only{.submit = false, .not_before = clock_.Now()};
  auto fresh = ScheduleActiveChecks(view_only, Io(runner_));
  ASSERT_TRUE(fresh) << fresh.error().message;
  EXPECT_EQ(fresh->submitted, 0) << ScheduleText(*fresh, false);
  EXPECT_GT(fresh->run_id, again->run_id);
  for (const char* node : {"gpu1", "gpu3", "gpu4"}) {
    const ScheduleDecision* d = Of(*fresh, node);
    ASSERT_NE(d, nullptr) << node;
    EXPECT_TRUE(d->submit) << node << ": " << d->why;
    EXPECT_FALSE(d->last_check.has_value()) << node;
    EXPECT_EQ(d->outcome, "not submitted: this pass records the fleet's view only") << node;
    EXPECT_TRUE(d->job_id.empty()) << node;
  }
  EXPECT_EQ(fresh->fleet.finding.status, CheckStatus::kWarn);
}

TEST_F(ActiveSchedule, ACheckThatCannotStartBecauseATenantArrivedIsCancelled) {
  TenantArrives runner(runner_, lab::SlurmEnv(spec_.dir), "gpu3");
  ScheduleOptions options{.nodes = {"gpu3"}, .start_within = 2s};
  auto report = ScheduleActiveChecks(options, Io(runner));
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_TRUE(runner.tenant_submitted);
  ASSERT_EQ(report->decisions.size(), 1U);
  const ScheduleDecision& d = report->decisions[0];
  EXPECT_EQ(report->submitted, 1);
  EXPECT_EQ(report->started, 0);
  EXPECT_EQ(d.outcome.rfind("cancelled: it did not start within 2.00s", 0), 0U) << d.outcome;
  // Gone from the queue: nothing of ours waits behind the tenant.
  auto queue = Slurm({"squeue", "-h", "-n", "cmax-active-check", "-o", "%i"});
  ASSERT_TRUE(queue);
  EXPECT_EQ(Trim(queue->stdout_text), "");
}

// The queue cannot be read after the check was submitted (slurmctld too busy to answer): the
// check is not taken to have started; it is cancelled at the deadline, saying why.
TEST_F(ActiveSchedule, AQueueThatCannotBeReadStartsNothingAndTheCheckIsCancelled) {
  struct QueueUnreadable : TenantArrives {
    using TenantArrives::TenantArrives;
    Result<sys::ProcessResult> Run(const sys::ProcessSpec& spec) override {
      if (spec.argv.size() > 2 && spec.argv[0] == "squeue" && spec.argv[2] == "-j") {
        sys::ProcessResult failed;
        failed.exit_code = 1;
        failed.stderr_text = "squeue: error: slurm_load_jobs error: Socket timed out";
        return failed;
      }
      return TenantArrives::Run(spec);
    }
  };
  QueueUnreadable runner(runner_, lab::SlurmEnv(spec_.dir), "gpu3");
  auto report = ScheduleActiveChecks({.nodes = {"gpu3"}, .start_within = 2s}, Io(runner));
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->decisions.size(), 1U);
  EXPECT_EQ(report->submitted, 1);
  EXPECT_EQ(report->started, 0);
  const std::string& outcome = report->decisions[0].outcome;
  EXPECT_EQ(outcome.rfind("cancelled if it still waited: not seen to start within 2.00s (Slurm "
                          "could not say whether it started: squeue: exit 1",
                          0),
            0U)
      << outcome;
  EXPECT_NE(outcome.find("Socket timed out"), std::string::npos) << outcome;
  auto queue = Slurm({"squeue", "-h", "-n", "cmax-active-check", "-o", "%i"});
  ASSERT_TRUE(queue);
  EXPECT_EQ(Trim(queue->stdout_text), "");
}

// Ctrl-C just after a check was submitted to a node a tenant has just taken: the check waiting
// for it is cancelled (the interrupt does not cut that scancel, or the look before it, short),
// nothing more is submitted, nothing is recorded, and the error says what became of each.
TEST_F(ActiveSchedule, ACtrlCCancelsTheChecksStillWaitingAndRecordsNothing) {
  struct Interrupting : TenantArrives {
    using TenantArrives::TenantArrives;
    Result<sys::ProcessResult> Run(const sys::ProcessSpec& spec) override {
      auto result = TenantArrives::Run(spec);
      if (!spec.argv.empty() && spec.argv[0] == "sbatch") sys::RequestInterrupt(SIGINT);
      return result;
    }
  };
  struct ClearAtEnd {
    ~ClearAtEnd() { sys::ClearInterrupt(); }
  } clear;
  Interrupting runner(runner_, lab::SlurmEnv(spec_.dir), "gpu3");
  ScheduleIo io = Io(runner);
  io.interrupted = sys::Interrupted;
  const ScheduleOptions options{.nodes = {"gpu3", "gpu4"}, .start_within = 60s};
  auto report = ScheduleActiveChecks(options, io);
  sys::ClearInterrupt();
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kInterrupted);
  const std::string& said = report.error().message;
  EXPECT_NE(said.find("cancelled: interrupted before it started"), std::string::npos) << said;
  EXPECT_NE(said.find("gpu4: not submitted: interrupted"), std::string::npos) << said;
  // Nothing of ours waits behind the tenant, and no view was recorded.
  auto queue = Slurm({"squeue", "-h", "-n", "cmax-active-check", "-o", "%i"});
  ASSERT_TRUE(queue);
  EXPECT_EQ(Trim(queue->stdout_text), "");
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store);
  EXPECT_FALSE(store->LatestRunId("health", "active schedule"));
}

// --pairs: two idle nodes in one two-node job; each node's check runs as a step on it and tests
// its rails against the other's (the ib_write_bw stand-in: no InfiniBand here; the server
// started by `env`, on loopback, as the lab's nodes all are). Both record, each naming its peer.
TEST_F(ActiveSchedule, PairsTestEachOthersRailsInOneJob) {
  const std::string bin = dir_.File("bin");
  std::filesystem::create_directories(bin);
  std::filesystem::create_symlink(IB_WRITE_BW_STANDIN, bin + "/ib_write_bw");
  const std::string path = "PATH=" + bin + ":/usr/bin:/bin";
  ScheduleIo io = Io(runner_);
  // sbatch hands the job this environment: the stand-in on PATH, its devices and figure.
  io.slurm_env.insert(io.slurm_env.end(),
                      {path, "STANDIN_IB_DEVICES=mlx5_0", "STANDIN_IB_GBITS=mlx5_0=391.5"});
  const ScheduleOptions options{
      .nodes = {"gpu1", "gpu2"},
      .check_args = {"--peer-address", "127.0.0.1", "--peer-launch",
                     "env STANDIN_IB_DEVICES=mlx5_0 " + path, "--rails", "mlx5_0", "--ib-seconds",
                     "1", "--ib-port", std::to_string(testing::FreePort())},
      .pairs = true};
  auto report = ScheduleActiveChecks(options, io);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->decisions.size(), 2U);
  EXPECT_EQ(report->submitted, 2);
  EXPECT_EQ(Of(*report, "gpu1")->peer, "gpu2");
  EXPECT_EQ(Of(*report, "gpu2")->peer, "gpu1");
  EXPECT_EQ(Of(*report, "gpu1")->job_id, Of(*report, "gpu2")->job_id);  // one job
  // The lab's nodes count GPUs (gres gpu:8): the job and each step asked Slurm for them.
  EXPECT_EQ(Of(*report, "gpu1")->gpus, spec_.gpus_per_node);
  EXPECT_EQ(Of(*report, "gpu2")->gpus, spec_.gpus_per_node);
  EXPECT_NE(ScheduleText(*report, false).find(", with gpu2"), std::string::npos);

  ASSERT_TRUE(testing::WaitUntil([&] { return Checked().size() == 2; }, 90s))
      << ScheduleText(*report, false);
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store);
  for (const auto& [node, peer] :
       std::map<std::string, std::string>{{"gpu1", "gpu2"}, {"gpu2", "gpu1"}}) {
    auto run = store->LoadRun(Checked().at(node).run.id);
    ASSERT_TRUE(run) << run.error().message;
    bool measured = false;
    for (const Metric& m : run->metrics) {
      measured = measured || (m.name == "active.ib_write_bw_gbits" && m.value == 391.5);
    }
    EXPECT_TRUE(measured) << node;
    std::string message;
    for (const Finding& f : run->findings) {
      if (f.check_id == "active.ib-write-bw") message = f.message;
    }
    EXPECT_EQ(message.rfind("ib_write_bw to " + peer + ":", 0), 0U) << node << ": " << message;
    // The real squeue answered, and the pair's own job on the peer is not someone else's.
    EXPECT_EQ(message.find("without knowing"), std::string::npos) << node << ": " << message;
  }
}

TEST(FleetView, SharesCheckedAndPassedTheFailedNamedFirst) {
  const WallTime now = WallTime{} + std::chrono::hours(24 * 400);
  const auto days_ago = [&](int days, int fail) {
    return LastCheck{.at = now - std::chrono::hours(24 * days),
                     .run_id = days,
                     .counts = {.pass = 9, .fail = fail}};
  };
  const std::vector<ScheduleDecision> decisions = {
      {.node = "gpu1", .state = "idle", .last_check = days_ago(2, 0)},
      {.node = "gpu2", .state = "mixed", .last_check = days_ago(3, 1)},
      {.node = "gpu3", .state = "idle", .last_check = days_ago(12, 0)},
      {.node = "gpu4", .state = "drained"}};
  const FleetView v = ViewFleet(decisions, now, std::chrono::hours(24 * 7));
  std::map<std::string, double> m;
  for (const Metric& metric : v.metrics) m[metric.name] = metric.value;
  EXPECT_DOUBLE_EQ(m.at("active.fleet_checked_share"), 0.5);  // gpu1 and gpu2 this week
  EXPECT_DOUBLE_EQ(m.at("active.fleet_pass_share"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.at("active.fleet_oldest_check_days"), 12);
  EXPECT_EQ(v.finding.status, CheckStatus::kFail);
  EXPECT_EQ(v.finding.message, "latest active check failed on gpu2");
  EXPECT_EQ(v.finding.observed, "2 of 4 nodes checked every 7 days; 2 of 3 checked passed");
  const auto rows = nlohmann::json::parse(v.evidence_json);
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[1]["fail"], 1);
  EXPECT_TRUE(rows[3]["last_check"].is_null());
  // No node listed: no share to give, never a made-up one.
  const FleetView none = ViewFleet({}, now, std::chrono::hours(24 * 7));
  ASSERT_EQ(none.metrics.size(), 1U);
  EXPECT_EQ(none.metrics[0].name, "active.fleet_nodes");
}

// A node whose latest check skipped every part (no GPU tool, no CUDA) exercised nothing: it is
// neither checked nor passed, and the warning says why it is named.
TEST(FleetView, ACheckThatSkippedEverythingIsNoCheck) {
  const WallTime now = WallTime{} + std::chrono::hours(24 * 400);
  const std::vector<ScheduleDecision> decisions = {
      {.node = "gpu1",
       .state = "idle",
       .last_check = LastCheck{.at = now - std::chrono::hours(24), .counts = {.pass = 9}}},
      {.node = "cpu1",
       .state = "idle",
       .last_check = LastCheck{.at = now - std::chrono::hours(24), .counts = {.skip = 6}}}};
  const FleetView v = ViewFleet(decisions, now, std::chrono::hours(24 * 7));
  std::map<std::string, double> m;
  for (const Metric& metric : v.metrics) m[metric.name] = metric.value;
  EXPECT_DOUBLE_EQ(m.at("active.fleet_checked_share"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("active.fleet_pass_share"), 1.0);  // of the one node checked
  EXPECT_EQ(v.finding.status, CheckStatus::kWarn);
  EXPECT_EQ(v.finding.message,
            "not checked every 7 days: cpu1 (the latest check skipped every part on cpu1)");
  const auto rows = nlohmann::json::parse(v.evidence_json);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[1].at("exercised"), false);
  EXPECT_EQ(rows[1]["skip"], 6);
  EXPECT_EQ(rows[1]["overdue"], true);
  EXPECT_EQ(rows[0].at("exercised"), true);
}

TEST(PairedChecks, TheDueNodesTwoByTwoInTheirOrderTheOddOneAlone) {
  std::vector<ScheduleDecision> plan = {{.node = "gpu3", .submit = true},
                                        {.node = "gpu1", .submit = true},
                                        {.node = "gpu4", .submit = true},
                                        {.node = "gpu2", .state = "mixed"}};
  PairDueNodes(plan);
  EXPECT_EQ(plan[0].peer, "gpu1");
  EXPECT_EQ(plan[1].peer, "gpu3");
  EXPECT_EQ(plan[2].peer, "");  // odd: alone
  EXPECT_EQ(plan[3].peer, "");  // not due

  const ScheduleOptions options{
      .nice = 10000, .burn_s = 0, .deadline_s = 90.5, .check_args = {"-v"}, .pairs = true};
  const ScheduleIo io{.db_path = "/var/lib/cmax/cmax.db", .cmax_binary = "/usr/bin/cmax"};
  const ScheduleDecision gpu3{.node = "gpu3", .gpus = 8};
  const ScheduleDecision gpu1{.node = "gpu1", .gpus = 4};
  const std::vector<std::string> argv = ActiveCheckPairJob(gpu3, gpu1, options, io);
  const std::vector<std::string> head = {"sbatch",
                                         "--parsable",
                                         "--exclusive",
                                         "--nodes=2",
                                         "--nodelist=gpu3,gpu1",
                                         "--nice=10000",
                                         "--job-name=cmax-active-check",
                                         "--output=/var/lib/cmax/active-checks/gpu3+gpu1-%j.out",
                                         "--time=92",
                                         "--wrap"};
  ASSERT_EQ(argv.size(), head.size() + 1);
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.end() - 1), head);  // no common --gres
  const std::string step =
      "'/usr/bin/cmax' health --active --level quick --node '{}' --db "
      "'/var/lib/cmax/cmax.db' --peer '{}' --burn 0 --deadline 90.5 '-v'";
  // Each step asks for its node's GPUs: a whole-node job's steps get none unless asked.
  EXPECT_EQ(argv.back(), "srun --nodes=1 --ntasks=1 '--nodelist=gpu3' --gres=gpu:8 " +
                             fmt::format(fmt::runtime(step), "gpu3", "gpu1") +
                             "; srun --nodes=1 --ntasks=1 '--nodelist=gpu1' --gres=gpu:4 " +
                             fmt::format(fmt::runtime(step), "gpu1", "gpu3"));
  const ScheduleDecision gpu5{.node = "gpu5", .gpus = 8};
  const auto same = ActiveCheckPairJob(gpu3, gpu5, options, io);
  EXPECT_EQ(same[same.size() - 3], "--gres=gpu:8");  // alike: the job asks for them too
  const auto alone = ActiveCheckJob(gpu1, options, io);
  EXPECT_EQ(alone[alone.size() - 3], "--gres=gpu:4");
  const auto none = ActiveCheckJob(ScheduleDecision{.node = "cpu1"}, options, io);
  EXPECT_TRUE(
      std::ranges::none_of(none, [](const std::string& a) { return a.starts_with("--gres"); }));
  // Two commands, each of whose words comes back whole through the shell.
  const std::string script = argv.back();
  const size_t separator = script.find("; ");
  ASSERT_NE(separator, std::string::npos);
  for (const std::string& command : {script.substr(0, separator), script.substr(separator + 2)}) {
    const auto words = SplitShellWords(command);
    ASSERT_TRUE(words) << command;
    EXPECT_EQ(std::ranges::count(*words, std::string("--peer")), 1) << command;
  }
}

TEST(SinfoStates, TheGpusInEachNodesGenericResources) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"gpu:8", 8},
      {"gpu:h100:8(S:0-1)", 8},
      {"gpu:a100:4(S:0,2),gpu:1g.10gb:7", 11},
      {"gpu:h100:8,nic:2", 8},
      {"(null)", 0},
      {"", 0},
      {"gpu", 0},
      {"gpu:h100:x", 0},
      {"gpu:99999999999999999999", 0},
      {"nvme:gpu:3", 0},
  };
  for (const auto& [gres, gpus] : cases) EXPECT_EQ(GpusInGres(gres), gpus) << gres;
  auto states = ParseSinfoNodeStates("gpu1|idle|gpu:h100:8(S:0-1)\ngpu2|mixed|(null)\n");
  ASSERT_TRUE(states) << states.error().message;
  ASSERT_EQ(states->size(), 2U);
  EXPECT_EQ((*states)[0].state, "idle");
  EXPECT_EQ((*states)[0].gpus, 8);
  EXPECT_EQ((*states)[1].state, "mixed");
  EXPECT_EQ((*states)[1].gpus, 0);
  EXPECT_FALSE(ParseSinfoNodeStates("gpu1||gpu:8\n"));
}

TEST(SinfoStates, EachNodeOnceAndOnlyPlainIdleIsChosen) {
  auto states = ParseSinfoNodeStates(
      "gpu1|idle\ngpu2|mixed\ngpu3|drained\ngpu4|idle*\ngpu5|idle~\ngpu1|idle\ngpu6|allocated\n");
  ASSERT_TRUE(states) << states.error().message;
  ASSERT_EQ(states->size(), 6U);
  const WallTime now = WallTime{} + std::chrono::hours(24 * 400);
  const auto plan =
      PlanActiveChecks(*states, {{"gpu1", LastCheck{.at = now - std::chrono::hours(24 * 9)}}}, now,
                       std::chrono::hours(24 * 7));
  ASSERT_EQ(plan.size(), 6U);
  EXPECT_EQ(plan[0].node, "gpu1");
  EXPECT_TRUE(plan[0].submit);
  EXPECT_EQ(plan[0].why, "idle; last checked 9 days ago");
  for (size_t i = 1; i < plan.size(); ++i) EXPECT_FALSE(plan[i].submit) << plan[i].node;
  EXPECT_EQ(plan[1].why, "mixed: a job runs there");
  EXPECT_FALSE(ParseSinfoNodeStates("gpu1 idle\n"));
  EXPECT_FALSE(ParseSinfoNodeStates("|idle\n"));
}

// What Slurm's programs said (node names, states, job ids) reaches a terminal shown, not obeyed:
// no escape sequence, no line of its own.
TEST(ScheduleText, WhatSlurmSaidIsShownOnOneLineAndNeverObeyed) {
  ScheduleReport report;
  report.decisions = {{.node = "gpu1\x1b]0;title\x07", .submit = true, .why = "idle"},
                      {.node = "gpu2", .why = "drain\x1b[2J\nFAKE LINE"},
                      {.node = "gpu3",
                       .submit = true,
                       .why = "idle",
                       .job_id = "7\xC2\x9B"
                                 "2J",
                       .outcome = "started"}};
  report.fleet.finding.message = "gpu1\x1b[31m failed";
  for (const bool dry_run : {true, false}) {
    const std::string shown = ScheduleText(report, dry_run);
    EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
    EXPECT_EQ(shown.find('\x07'), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\xC2\x9B"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\nFAKE LINE"), std::string::npos) << shown;
    EXPECT_NE(shown.find("gpu1"), std::string::npos) << shown;
  }
}

// A check's job asks Slurm for no more than the check can take: every tool at its deadline and
// killed, the burn, the rails to a peer, and cmax's own start, questions and store.
TEST(CheckTimeLimit, TheLongestACheckCanTakeRoundedUpToMinutes) {
  using std::chrono::seconds;
  // quick: dcgmi diag -r 1 120 s, nvbandwidth 300, probes 180, all_reduce 300, 4 kills' grace
  // 40, and 180 of cmax's own.
  EXPECT_EQ(LongestActiveRun({}), seconds(1120));
  // full: dcgmi diag -r 3 1800, the adapters' all_reduce 310 more, the burn 120 and its grace 60.
  EXPECT_EQ(LongestActiveRun({.level = ActiveLevel::kFull}), seconds(3290));
  EXPECT_EQ(LongestActiveRun({.level = ActiveLevel::kFull, .burn_s = 0}), seconds(3110));
  // --deadline 60: each tool's.
  EXPECT_EQ(LongestActiveRun({.deadline_s = 60}), seconds(4 * 60 + 40 + 180));
  // A peer: each rail the launcher's 20 s, the test's 5, the client's 60, 10 for the server and
  // 10 for a kill; kMostRails of them unless the rails are named.
  EXPECT_EQ(LongestActiveRun({.ib_pair = IbPairOptions{}}), seconds(1120 + 16 * 105));
  EXPECT_EQ(LongestActiveRun({.ib_pair = IbPairOptions{.rails = {"mlx5_0", "mlx5_1"}}}),
            seconds(1120 + 2 * 105));

  EXPECT_EQ(ActiveCheckJobMinutes({}, false), 19);  // 1120 s
  EXPECT_EQ(ActiveCheckJobMinutes({}, true), 94);   // twice 2800 s
  EXPECT_EQ(ActiveCheckJobMinutes({.time_limit_min = 45}, true), 45);
  const ScheduleOptions unlimited{.time_limit_min = 0};
  EXPECT_EQ(ActiveCheckJobMinutes(unlimited, false), 0);
  const auto argv = ActiveCheckJob({.node = "gpu1"}, unlimited, {.db_path = "/d/cmax.db"});
  EXPECT_TRUE(
      std::ranges::none_of(argv, [](const std::string& a) { return a.starts_with("--time"); }));
  EXPECT_EQ(std::ranges::count(ActiveCheckJob({.node = "gpu1"}, {}, {.db_path = "/d/cmax.db"}),
                               std::string("--time=19")),
            1);

  // No job asks past its partition's own limit (MaxTime, as sinfo's %l says it).
  EXPECT_EQ(ActiveCheckJobMinutes({.partition_limit_min = 60}, true), 60);
  EXPECT_EQ(ActiveCheckJobMinutes({.partition_limit_min = 60}, false), 19);
  EXPECT_EQ(ActiveCheckJobMinutes({.time_limit_min = 120, .partition_limit_min = 60}, true), 120);
  EXPECT_EQ(ActiveCheckJobMinutes({.partition_limit_min = 0}, false), 19);  // MaxTime=0: none

  // The dry run says what each job asks for.
  ScheduleReport report{.decisions = {{.node = "gpu1", .submit = true, .why = "idle"}},
                        .job_minutes = 19,
                        .pair_job_minutes = 94};
  EXPECT_NE(ScheduleText(report, true)
                .find("time limit (sbatch --time): 19 min a node, 94 min a "
                      "pair\n"),
            std::string::npos)
      << ScheduleText(report, true);
}

TEST(CheckTimeLimit, SlurmsTimeLimitsAsSinfoWritesThem) {
  const struct {
    std::string text;
    std::optional<int64_t> minutes;
  } cases[] = {
      {"infinite", std::nullopt},
      {"UNLIMITED", std::nullopt},
      {"n/a", std::nullopt},
      {"", std::nullopt},
      {"15", 15},
      {"30:00", 30},
      {"30:59", 30},
      {"1:00:00", 60},
      {"12:30:59", 750},
      {"2-00:00:00", 2880},
      {"1-12", 2160},
      {"1-12:30", 2190},
      {"1:2:3:4", std::nullopt},
      {"-5", std::nullopt},
      {"1-x", std::nullopt},
      {"1-", std::nullopt},
      {"7000000000000000-0", std::nullopt},
      {" 45 ", 45},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseSlurmTimeLimit(c.text), c.minutes) << c.text;

  const std::string sinfo = "debug|30:00\ngpu*|2-00:00:00\nlong|infinite\n";
  EXPECT_EQ(PartitionTimeLimit(sinfo, ""), 2880);  // the default partition's
  EXPECT_EQ(PartitionTimeLimit(sinfo, "debug"), 30);
  EXPECT_EQ(PartitionTimeLimit(sinfo, "gpu"), 2880);
  EXPECT_EQ(PartitionTimeLimit(sinfo, "long"), std::nullopt);
  EXPECT_EQ(PartitionTimeLimit(sinfo, "other"), std::nullopt);
  EXPECT_EQ(PartitionTimeLimit("debug|30:00\n", ""), std::nullopt);  // no default: no limit known

  ScheduleReport report{.decisions = {{.node = "gpu1", .submit = true, .why = "idle"}},
                        .job_minutes = 19,
                        .pair_job_minutes = 30,
                        .cut_to_partition_limit = 30};
  EXPECT_NE(ScheduleText(report, true)
                .find("19 min a node, 30 min a pair (the partition's limit, 30 min, is shorter "
                      "than a check can take: a check may be stopped there)"),
            std::string::npos)
      << ScheduleText(report, true);
}

}  // namespace
}  // namespace cmax::active
