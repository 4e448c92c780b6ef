// The Slurm adapter's parsing, and its behaviour against a scripted runner that records every
// command: no double drain, operator drains left alone, retries while the controller is away.
// The same adapter runs against the real lab in tests/integration/remediate_lab_test.cpp.
#include "remediate/slurm.hpp"

#include <algorithm>
#include <ctime>
#include <deque>
#include <gtest/gtest.h>

#include "core/strings.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;

TEST(SlurmParse, SinfoNodesMergePartitionsAndKeepTheWholeReason) {
  const auto nodes = ParseSinfoNodes(
      "gpu1|idle|gpu*|none\n"
      "gpu2|drained|gpu*|cmax: Xid 79 | fallen off the bus\n"
      "gpu2|drained|debug|cmax: Xid 79 | fallen off the bus\n"
      "gpu3|idle*|gpu*|none\n"
      "gpu4|draining|gpu*|maintenance by ops\n"
      "gpu5|maint|spare|none\n"
      "garbage line\n");
  ASSERT_EQ(nodes.size(), 5U);
  EXPECT_FALSE(nodes[0].drain);
  EXPECT_EQ(nodes[0].reason, "");
  EXPECT_TRUE(nodes[1].drain);
  EXPECT_EQ(nodes[1].reason, "cmax: Xid 79 | fallen off the bus");
  EXPECT_EQ(nodes[1].partitions, (std::vector<std::string>{"gpu", "debug"}));
  EXPECT_EQ(nodes[2].state, "idle");  // the not-responding mark is dropped from the state
  EXPECT_FALSE(nodes[2].responding);  // and kept here
  EXPECT_TRUE(nodes[0].responding);
  EXPECT_FALSE(nodes[0].powered_down);
  EXPECT_TRUE(ParseSinfoNodes("gpu6|idle~|gpu*|none\n")[0].powered_down);
  EXPECT_TRUE(nodes[3].drain);
  EXPECT_FALSE(IsCmaxReason(nodes[3].reason));
  EXPECT_EQ(nodes[4].state, "maint");
  EXPECT_TRUE(nodes[4].maintenance);
  EXPECT_FALSE(nodes[0].maintenance);
  // A node running a job inside a maintenance reservation: "mixed$".
  EXPECT_TRUE(ParseSinfoNodes("gpu4|mixed$|gpu*|none\n")[0].maintenance);
}

TEST(SlurmParse, MaintenanceNodesFromMaintReservationsThatHaveStarted) {
  // Times as UTC for the test; the adapter reads them in the controller's zone.
  const auto utc = [](std::string_view t) -> std::optional<WallTime> {
    auto parsed = ParseIso8601(std::string(t) + "Z");
    return parsed ? std::optional<WallTime>(*parsed) : std::nullopt;
  };
  const WallTime now = ParseIso8601("2026-11-30T13:31:05Z").value();
  const auto nodes = MaintenanceNodes(
      "ReservationName=cmax-validate-gpu2 StartTime=2026-11-30T13:31:00 "
      "EndTime=2026-12-01T13:31:00 "
      "Duration=1-00:00:00 Nodes=gpu[2-3] NodeCnt=2 CoreCnt=2 Features=(null) PartitionName=(null) "
      "Flags=MAINT,SPEC_NODES TRES=cpu=2 Users=root State=ACTIVE BurstBuffer=(null)\n"
      "ReservationName=just-made StartTime=2026-11-30T13:31:04 EndTime=2026-12-01T13:31:04 "
      "Nodes=gpu5 Flags=MAINT State=INACTIVE\n"
      "ReservationName=later StartTime=2027-01-01T00:00:00 EndTime=2027-01-02T00:00:00 "
      "Nodes=gpu4 Flags=MAINT State=INACTIVE\n"
      "ReservationName=users StartTime=2026-11-30T13:00:00 Nodes=gpu1 Flags=SPEC_NODES "
      "State=ACTIVE\n",
      now, utc);
  EXPECT_EQ(nodes, (std::set<std::string>{"gpu2", "gpu3", "gpu5"}));
  EXPECT_TRUE(MaintenanceNodes("No reservations in the system\n", now, utc).empty());
}

TEST(SlurmParse, CmaxTakeOutsOnlyWithOurReason) {
  const WallTime t{std::chrono::milliseconds(1'800'000'000'000)};
  const auto out = ParseCmaxTakeOuts(
      "gpu1|2026-11-30T11:45:48|cmax: Xid 79 | on 0000:17:00\n"
      "gpu2|2026-11-30T11:46:00|bad fan\n"
      "gpu3|Unknown|cmax: x\n"
      "junk\n",
      [&](std::string_view text) -> std::optional<WallTime> {
        if (text == "Unknown") return std::nullopt;
        return t;
      });
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].node, "gpu1");
  EXPECT_EQ(out[0].at, t);
}

TEST(SlurmParse, LocalTimeRoundTrips) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  const auto parsed = ParseSlurmLocalTime(text);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->time_since_epoch().count(), static_cast<int64_t>(now) * 1000);
  EXPECT_FALSE(ParseSlurmLocalTime("Unknown").has_value());
  EXPECT_FALSE(ParseSlurmLocalTime("2026-11-30T11:45:48junk").has_value());
}

TEST(SlurmParse, JobStates) {
  EXPECT_EQ(ParseJobState("JobId=7 JobName=x JobState=RUNNING Reason=None ExitCode=0:0").state,
            ValidationState::kRunning);
  EXPECT_EQ(ParseJobState("JobId=7 JobState=PENDING Reason=Resources ExitCode=0:0").state,
            ValidationState::kRunning);
  const auto passed = ParseJobState("JobId=7 JobState=COMPLETED Reason=None ExitCode=0:0");
  EXPECT_EQ(passed.state, ValidationState::kPassed);
  const auto failed = ParseJobState("JobId=7 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0");
  EXPECT_EQ(failed.state, ValidationState::kFailed);
  EXPECT_EQ(failed.detail, "failed (exit 3:0)");
  EXPECT_EQ(ParseJobState("JobId=7 JobState=TIMEOUT ExitCode=0:15").detail, "timeout (exit 0:15)");
  EXPECT_EQ(ParseJobState("").state, ValidationState::kFailed);
}

TEST(SlurmParse, ScontrolFieldMatchesWholeKeys) {
  const std::string text = "PartitionName=gpu AllowGroups=ALL Nodes=gpu[1-4] MaxNodes=UNLIMITED";
  EXPECT_EQ(ScontrolField(text, "Nodes"), "gpu[1-4]");
  EXPECT_EQ(ScontrolField(text, "PartitionName"), "gpu");
  EXPECT_EQ(ScontrolField(text, "Groups"), "");
}

// Answers by the first words of the command; records every command it was given.
class ScriptedRunner final : public sys::ProcessRunner {
 public:
  void On(std::string prefix, sys::ProcessResult result) {
    script_.push_back({std::move(prefix), std::move(result)});
  }
  Result<sys::ProcessResult> Run(const sys::ProcessSpec& spec) override {
    const std::string line = Join(spec.argv, " ");
    calls.push_back(line);
    for (auto it = script_.begin(); it != script_.end(); ++it) {
      if (line.starts_with(it->first)) {
        sys::ProcessResult r = it->second;
        if (!r.Succeeded() && ControllerUnreachable(r)) script_.erase(it);  // fails once
        return r;
      }
    }
    return sys::ProcessResult{.exit_code = 0};
  }
  std::vector<std::string> calls;

 private:
  std::deque<std::pair<std::string, sys::ProcessResult>> script_;
};

sys::ProcessResult Out(std::string text) {
  return {.exit_code = 0, .stdout_text = std::move(text)};
}
sys::ProcessResult Err(std::string text) {
  return {.exit_code = 1, .stderr_text = std::move(text)};
}

SlurmOptions Quick(std::vector<Duration>* slept = nullptr) {
  SlurmOptions o;
  o.sleep = [slept](Duration d) {
    if (slept) slept->push_back(d);
  };
  return o;
}

int Count(const std::vector<std::string>& calls, std::string_view prefix) {
  return static_cast<int>(
      std::ranges::count_if(calls, [&](const std::string& c) { return c.starts_with(prefix); }));
}

TEST(SlurmAdapter, DrainsOnceAndNeverTwice) {
  ScriptedRunner runner;
  runner.On("sinfo", Out("gpu2|drained|gpu*|cmax: Xid 79\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_EQ(slurm.Drain("gpu2", "cmax: Xid 79").value(), "already drained by cmax");
  EXPECT_EQ(Count(runner.calls, "scontrol update"), 0);
}

TEST(SlurmAdapter, DrainPassesTheReasonAsOneArgument) {
  ScriptedRunner runner;
  runner.On("sinfo", Out("gpu2|idle|gpu*|none\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_EQ(slurm.Drain("gpu2", "cmax: Xid 79; rm -rf /").value(), "drained");
  EXPECT_EQ(runner.calls.back(),
            "scontrol update nodename=gpu2 state=drain reason=cmax: Xid 79; rm -rf /");
}

TEST(SlurmAdapter, OperatorDrainIsNeitherOverwrittenNorResumed) {
  ScriptedRunner runner;
  runner.On("sinfo", Out("gpu4|drained|gpu*|bad fan, ticket 123\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_NE(slurm.Drain("gpu4", "cmax: x").value().find("someone else"), std::string::npos);
  auto resumed = slurm.Resume("gpu4");
  ASSERT_FALSE(resumed);
  EXPECT_EQ(resumed.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(Count(runner.calls, "scontrol update"), 0);
}

TEST(SlurmAdapter, VanishedNodeIsNotFound) {
  ScriptedRunner runner;
  runner.On("sinfo", Out(""));
  SlurmScheduler slurm(runner, Quick());
  auto drained = slurm.Drain("gpu9", "cmax: x");
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error().code, ErrorCode::kNotFound);
}

TEST(SlurmAdapter, RetriesWithBackoffWhileTheControllerIsAway) {
  ScriptedRunner runner;
  runner.On("sinfo", Err("slurm_load_node: Unable to contact slurm controller (connect failure)"));
  runner.On("sinfo", Err("slurm_load_node: Unable to contact slurm controller (connect failure)"));
  runner.On("sinfo", Out("gpu2|idle|gpu*|none\n"));
  std::vector<Duration> slept;
  SlurmScheduler slurm(runner, Quick(&slept));
  EXPECT_EQ(slurm.Drain("gpu2", "cmax: x").value(), "drained");
  EXPECT_EQ(slept, (std::vector<Duration>{250ms, 500ms}));
}

TEST(SlurmAdapter, GivesUpAsUnavailable) {
  ScriptedRunner runner;
  for (int i = 0; i < 4; ++i) runner.On("sinfo", Err("Unable to contact slurm controller"));
  SlurmScheduler slurm(runner, Quick());
  auto nodes = slurm.Nodes();
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(Count(runner.calls, "sinfo"), 4);
}

TEST(SlurmAdapter, RefusalIsNotRetried) {
  ScriptedRunner runner;
  runner.On("sinfo", Out("gpu2|idle|gpu*|none\n"));
  runner.On("scontrol update", Err("slurm_update error: Invalid node name specified"));
  SlurmScheduler slurm(runner, Quick());
  auto drained = slurm.Drain("gpu2", "cmax: x");
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error().code, ErrorCode::kIo);
  EXPECT_NE(drained.error().message.find("Invalid node name"), std::string::npos);
  EXPECT_EQ(Count(runner.calls, "scontrol update"), 1);
}

TEST(SlurmAdapter, ValidationReservesBeforeItResumes) {
  ScriptedRunner runner;
  runner.On("squeue", Out(""));
  runner.On("sinfo", Out("gpu2|drained|gpu*|cmax: Xid 79\n"));
  runner.On("scontrol show reservation", Err("Reservation cmax-validate-gpu2 not found"));
  runner.On("sbatch", Out("42\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_EQ(slurm.StartValidation("gpu2", {"true", 90s}).value(), "42");
  const auto& c = runner.calls;
  const auto create = std::ranges::find_if(
      c, [](const std::string& s) { return s.starts_with("scontrol create reservation"); });
  const auto resume = std::ranges::find(c, "scontrol update nodename=gpu2 state=resume");
  ASSERT_NE(create, c.end());
  ASSERT_NE(resume, c.end());
  EXPECT_LT(create, resume);
  EXPECT_EQ(c.back(),
            "sbatch --parsable -J cmax-validate-gpu2 --reservation=cmax-validate-gpu2 -w gpu2 -N1 "
            "-o /dev/null --time=2 --partition=gpu --wrap=true");
}

TEST(SlurmAdapter, ValidationStartedTwiceReturnsTheRunningJob) {
  ScriptedRunner runner;
  runner.On("squeue", Out("42\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_EQ(slurm.StartValidation("gpu2", {"true", 90s}).value(), "42");
  EXPECT_EQ(Count(runner.calls, "sbatch"), 0);
}

TEST(SlurmAdapter, FailedValidationDrainsBeforeTheReservationGoes) {
  ScriptedRunner runner;
  runner.On("sinfo", Out("gpu2|maint|gpu*|none\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_EQ(slurm.EndValidation("gpu2", false, "cmax: validation failed").value(),
            "drained; reservation cmax-validate-gpu2 deleted");
  const auto& c = runner.calls;
  const auto drain = std::ranges::find_if(
      c, [](const std::string& s) { return s.find("state=drain") != std::string::npos; });
  const auto del = std::ranges::find(c, "scontrol delete reservationname=cmax-validate-gpu2");
  ASSERT_NE(drain, c.end());
  ASSERT_NE(del, c.end());
  EXPECT_LT(drain, del);
}

TEST(SlurmAdapter, SpareIsPickedIdleAndMovedWithTheWholeList) {
  ScriptedRunner runner;
  runner.On("scontrol show partition -o gpu", Out("PartitionName=gpu Nodes=gpu[1-4] State=UP"));
  runner.On("scontrol show partition -o spare", Out("PartitionName=spare Nodes=gpu[5-6]"));
  runner.On("scontrol show hostnames gpu[1-4]", Out("gpu1\ngpu2\ngpu3\ngpu4\n"));
  runner.On("scontrol show hostnames gpu[5-6]", Out("gpu5\ngpu6\n"));
  runner.On("sinfo", Out("gpu5|allocated|spare|none\ngpu6|idle|spare|none\n"));
  SlurmScheduler slurm(runner, Quick());
  EXPECT_EQ(slurm.PickSpare().value(), "gpu6");
  EXPECT_EQ(slurm.SwapInSpare("gpu6").value(), "gpu6 moved into partition gpu");
  EXPECT_EQ(runner.calls.back(),
            "scontrol update partitionname=gpu nodes=gpu1,gpu2,gpu3,gpu4,gpu6");
}

}  // namespace
}  // namespace cmax::remediate
