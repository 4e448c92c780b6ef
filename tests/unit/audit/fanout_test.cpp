// The audit on every node, its pure parts: evidence framed into lines and read back out of
// srun's merged output (in any order, among other lines, cut short or garbled), the worst node
// deciding each check, which nodes a step can reach, and the srun line.
#include "audit/fanout.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

#include "audit/slurm_audit.hpp"
#include "core/strings.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

json BigDocument(const std::string& node, int keys) {
  json doc = {{"node", node}, {"evidence", json::object()}};
  for (int i = 0; i < keys; ++i) {
    doc["evidence"]["key." + std::to_string(i)] =
        "value with \"quotes\", a newline\n and ünïcödé " + std::to_string(i);
  }
  return doc;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::string_view line : Split(text, '\n')) {
    if (!line.empty()) lines.emplace_back(line);
  }
  return lines;
}

TEST(Frames, EveryLineFitsOneSlurmMessageAndReadsBack) {
  const json doc = BigDocument("gpu1", 400);
  const std::string framed = FrameDocument("gpu1", doc);
  const std::vector<std::string> lines = Lines(framed);
  ASSERT_GT(lines.size(), 10U);
  for (const std::string& line : lines) EXPECT_LE(line.size() + 1, kFrameLineBytes) << line;
  const auto read = ReadFrames(framed);
  ASSERT_EQ(read.size(), 1U);
  ASSERT_TRUE(read.at("gpu1").document) << read.at("gpu1").problem;
  EXPECT_EQ(*read.at("gpu1").document, doc);
}

TEST(Frames, NodesInterleavedShuffledAndLabelledStillReadBack) {
  std::vector<std::string> lines;
  for (const char* node : {"gpu1", "gpu2", "gpu3"}) {
    for (const std::string& line : Lines(FrameDocument(node, BigDocument(node, 60)))) {
      lines.push_back(line);
    }
  }
  std::mt19937 random(7);
  std::ranges::shuffle(lines, random);
  std::string merged = "srun: job 12 queued and waiting for resources\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    merged += (i % 2 == 0 ? "3: " : "") + lines[i] + (i % 3 == 0 ? "\r\n" : "\n");
  }
  const auto read = ReadFrames(merged);
  ASSERT_EQ(read.size(), 3U);
  for (const char* node : {"gpu1", "gpu2", "gpu3"}) {
    ASSERT_TRUE(read.at(node).document) << node << ": " << read.at(node).problem;
    EXPECT_EQ(*read.at(node).document, BigDocument(node, 60));
  }
}

TEST(Frames, AMissingOrGarbledPieceIsSaidNotGuessed) {
  std::vector<std::string> lines = Lines(FrameDocument("gpu1", BigDocument("gpu1", 60)));
  ASSERT_GT(lines.size(), 3U);
  std::vector<std::string> cut(lines.begin(), lines.end() - 1);
  const auto short_read = ReadFrames(Join(cut, "\n"));
  EXPECT_FALSE(short_read.at("gpu1").document);
  EXPECT_NE(short_read.at("gpu1").problem.find(std::to_string(cut.size()) + " of " +
                                               std::to_string(lines.size()) + " pieces"),
            std::string::npos)
      << short_read.at("gpu1").problem;

  std::vector<std::string> garbled = lines;
  garbled[1].back() = garbled[1].back() == 'x' ? 'y' : 'x';
  const auto bad = ReadFrames(Join(garbled, "\n"));
  EXPECT_FALSE(bad.at("gpu1").document);
  EXPECT_NE(bad.at("gpu1").problem.find("digest"), std::string::npos);

  // A second, whole try of the same node wins over the broken one.
  const std::string retried =
      Join(cut, "\n") + "\n" + FrameDocument("gpu1", BigDocument("gpu1", 61));
  ASSERT_TRUE(ReadFrames(retried).at("gpu1").document);

  // Lines that only look like frames are skipped.
  EXPECT_TRUE(ReadFrames("#cmax-evidence/1 gpu1 0 1 abc {}\n"
                         "#cmax-evidence/1 gpu1 x 1 " +
                         std::string(64, 'a') + " {}\n#cmax-evidence/1 gpu1 1 1 " +
                         std::string(64, 'a') + " {}\n")
                  .empty());
}

TEST(Frames, NodeNamesAreOneWord) {
  const auto read = ReadFrames(FrameDocument("gpu 1;$(x)", json::object()));
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(read.begin()->first, "gpu_1___x_");
  EXPECT_EQ(ReadFrames(FrameDocument("", json::object())).begin()->first, "unnamed");
}

Finding Graded(const std::string& id, CheckStatus status, const std::string& message) {
  return {.check_id = id, .status = status, .observed = message + " seen", .message = message};
}

TEST(WorstNode, DecidesEachCheckAndSaysHowTheNodesCameOut) {
  using enum CheckStatus;
  const std::vector<NodeFindings> nodes = {
      {"gpu1", {Graded("a", kPass, "ok"), Graded("b", kPass, "ok"), Graded("c", kSkip, "n/a")}},
      {"gpu2",
       {Graded("a", kFail, "driver old"), Graded("b", kUnknown, "no evidence: down"),
        Graded("c", kSkip, "n/a")}},
      {"gpu3",
       {Graded("a", kUnknown, "no evidence: down"), Graded("b", kWarn, "odd"),
        Graded("c", kPass, "ok")}},
  };
  const std::vector<Finding> worst = WorstNodeFindings(nodes);
  ASSERT_EQ(worst.size(), 3U);
  EXPECT_EQ(worst[0].status, kFail);
  EXPECT_EQ(worst[0].observed, "driver old seen");
  EXPECT_EQ(worst[0].message, "gpu2: driver old (FAIL on 1, UNKNOWN on 1, PASS on 1 of 3 nodes)");
  EXPECT_EQ(worst[1].status, kUnknown);  // a node that cannot be read outweighs a warning
  EXPECT_EQ(worst[1].message,
            "gpu2: no evidence: down (UNKNOWN on 1, WARN on 1, PASS on 1 of 3 nodes)");
  EXPECT_EQ(worst[2].status, kPass);  // N/A on some nodes says nothing about the others
  const std::vector<Finding> same = WorstNodeFindings({nodes[0], {"gpu4", nodes[0].findings}});
  EXPECT_EQ(same[0].message, "ok (PASS on all 2 nodes)");
  EXPECT_EQ(WorstNodeFindings({nodes[1]})[0].message, "gpu2: driver old (on the 1 node)");
  EXPECT_TRUE(WorstNodeFindings({}).empty());

  const json per_node = PerNodeStatuses(nodes);
  EXPECT_EQ(per_node["a"]["FAIL"], json::array({"gpu2"}));
  EXPECT_EQ(per_node["c"]["SKIP"], json::array({"gpu1", "gpu2"}));
}

TEST(WorstNode, AnUnreachableNodeIsUnknownWithItsReasonWhereTheCheckApplies) {
  using enum CheckStatus;
  const std::vector<Finding> graded = UnreachableNodeFindings(
      {Graded("a", kUnknown, "not collected: x"), Graded("b", kSkip, "not on slurm")},
      "Slurm says it is not responding");
  EXPECT_EQ(graded[0].message, "no evidence: Slurm says it is not responding");
  EXPECT_EQ(graded[1].status, kSkip);
  EXPECT_EQ(graded[1].message, "not on slurm");
}

remediate::SchedulerNode Node(std::string name, std::string state, bool drain = false,
                              bool responding = true) {
  remediate::SchedulerNode n;
  n.name = std::move(name);
  n.state = std::move(state);
  n.drain = drain;
  n.responding = responding;
  n.partitions = {"gpu"};
  return n;
}

TEST(SlurmPlan, OnlyNodesThatCanTakeAStepNowAreAsked) {
  remediate::SchedulerNode drained = Node("gpu3", "drained", true);
  drained.reason = "cmax: Xid 79";
  remediate::SchedulerNode asleep = Node("gpu6", "idle");
  asleep.powered_down = true;
  remediate::SchedulerNode spare = Node("gpu7", "idle");
  spare.partitions = {"spare"};
  const SlurmNodePlan plan = PlanSlurmNodes({Node("gpu1", "idle"), Node("gpu2", "mixed"), drained,
                                             Node("gpu4", "allocated"),
                                             Node("gpu5", "idle", false, false), asleep, spare});
  EXPECT_EQ(plan.steps.size(), 2U);  // a job cannot span partitions: one step each
  EXPECT_EQ(plan.steps.at("gpu"), (std::vector<std::string>{"gpu1", "gpu2"}));
  EXPECT_EQ(plan.steps.at("spare"), (std::vector<std::string>{"gpu7"}));
  EXPECT_EQ(plan.ReachableNodes(), (std::vector<std::string>{"gpu1", "gpu2", "gpu7"}));
  EXPECT_EQ(PlanSlurmNodes({Node("gpu1", "idle"), spare}, "all").steps.size(), 1U);
  // -p gpu,spare: each node goes with the partition asked for that it is in.
  const SlurmNodePlan asked = PlanSlurmNodes({Node("gpu1", "idle"), spare}, "spare, gpu");
  EXPECT_EQ(asked.steps.at("gpu"), std::vector<std::string>{"gpu1"});
  EXPECT_EQ(asked.steps.at("spare"), std::vector<std::string>{"gpu7"});
  ASSERT_EQ(plan.unreachable.size(), 4U);
  EXPECT_EQ(plan.unreachable.at("gpu3"), "out of service (drained: cmax: Xid 79)");
  EXPECT_EQ(plan.unreachable.at("gpu4"), "cannot take a job step now (allocated)");
  EXPECT_EQ(plan.unreachable.at("gpu5"), "Slurm says it is not responding");
  EXPECT_EQ(plan.unreachable.at("gpu6"), "powered down by Slurm's power saving");
}

TEST(SlurmPlan, OneStepOneTaskPerNodeRunningCmaxItself) {
  AuditOptions options;
  options.probe_timeout_s = 2;
  SlurmAuditOptions slurm;
  slurm.node_timeout_s = 20;
  slurm.budget_s = 60;
  slurm.srun_args = {"--account=ops"};
  const std::vector<std::string> nodes = {"gpu1", "gpu2"};
  const std::string line =
      Join(SrunCommand("gpu", nodes, options, slurm, "/opt/cmax/bin/cmax"), " ");
  EXPECT_EQ(
      line,
      "srun --job-name=cmax-audit --nodes=2 --ntasks=2 --ntasks-per-node=1 "
      "--nodelist=gpu1,gpu2 --immediate=15 --kill-on-bad-exit=0 --quiet "
      "--export=ALL,CUDA_VISIBLE_DEVICES=,NVIDIA_VISIBLE_DEVICES=,NCCL_IB_QPS_PER_CONNECTION=,"
      "NCCL_TOPO_FILE=,NCCL_IB_HCA=,NCCL_SOCKET_IFNAME= "
      "--partition=gpu "
      "--account=ops -- /opt/cmax/bin/cmax audit --node-evidence --node-timeout=20 "
      "--probe-timeout=2");
  EXPECT_EQ(Join(SrunCommand("", nodes, options, slurm, "/c"), " ").find("--partition"),
            std::string::npos)
      << "no partition: Slurm's default";
}

TEST(SlurmSsh, EachNodeReachesTheNextOfItsJob) {
  EXPECT_EQ(NextNode("gpu1\ngpu2\ngpu3\n", "gpu1"), "gpu2");
  EXPECT_EQ(NextNode("gpu1\ngpu2\ngpu3\n", "gpu3"), "gpu1");    // the last, the first
  EXPECT_EQ(NextNode("gpu1\n", "gpu1"), std::nullopt);          // alone
  EXPECT_EQ(NextNode("gpu1\ngpu2\n", "login1"), std::nullopt);  // not in the job
  EXPECT_EQ(NextNode("", "gpu1"), std::nullopt);
}

TEST(SlurmProlog, ReadsTheJobsStartFromScontrol) {
  EXPECT_EQ(ParseJobStartTime("JobId=42 JobName=cmax-audit UserId=root(0) JobState=RUNNING "
                              "SubmitTime=2026-12-02T21:29:58 StartTime=2026-12-02T21:30:00 "
                              "EndTime=Unknown\n"),
            1796247000);
  EXPECT_EQ(ParseJobStartTime("JobId=42 StartTime=Unknown EndTime=Unknown"), std::nullopt);
  EXPECT_EQ(ParseJobStartTime("slurm_load_jobs error: Invalid job id specified"), std::nullopt);
  EXPECT_EQ(ParseJobStartTime(""), std::nullopt);
}

TEST(SlurmProlog, EachNodesTaskStartAgainstItsJobsStart) {
  const auto timing = [](json job_start, int64_t task_ms, std::string job = "42") {
    return AuditEvidence{{"scheduler.step.timing",
                          {{"job_id", std::move(job)},
                           {"job_start", std::move(job_start)},
                           {"task_started_ms", task_ms}}}};
  };
  std::map<std::string, AuditEvidence> nodes = {
      {"gpu1", timing(nullptr, 1796247000400)},        // 0.4 s: no prolog to speak of
      {"gpu2", timing(nullptr, 1796247041250)},        // 41.25 s
      {"gpu3", timing(1796247100, 1796247101500)},     // exported by Slurm itself
      {"gpu4", timing(nullptr, 1796246999000)},        // its clock a second behind: 0, not -1
      {"gpu7", timing(nullptr, 1796246990000)},        // ten seconds behind: not trusted
      {"gpu5", timing(nullptr, 1796247000000, "77")},  // a job the controller cannot show
      {"gpu6", {}}};                                   // an older cmax: no timing
  int asked = 0;
  const auto out = PrologSeconds(nodes, [&](const std::string& job) -> std::optional<int64_t> {
    ++asked;
    if (job == "42") return 1796247000;
    return std::nullopt;
  });
  EXPECT_EQ(out.at("gpu1"), (json{{"value", 0.4}, {"source", "scontrol show job"}}));
  EXPECT_EQ(out.at("gpu2")["value"], 41.3);
  EXPECT_EQ(out.at("gpu3"), (json{{"value", 1.5}, {"source", "SLURM_JOB_START_TIME"}}));
  EXPECT_EQ(out.at("gpu4")["value"], 0.0);
  EXPECT_EQ(out.at("gpu7")["value"], nullptr);
  EXPECT_EQ(out.at("gpu7")["note"], "the node's clock is 10.0 s behind the controller's");
  EXPECT_FALSE(out.contains("gpu5"));
  EXPECT_FALSE(out.contains("gpu6"));
  EXPECT_EQ(asked, 5);  // the lookup is the caller's to cache; it is asked only where needed
}

}  // namespace
}  // namespace cmax::audit
