// The reliability command's work before anything is injected: the scenario read, every step's
// safety checked first, and a dry run that shows each step's record and the bars and records
// nothing. (Runs that inject are tested on the lab: reliability_lab_test.)
#include "reliability/scenario_run.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/fake_process_runner.hpp"
#include "sys/file_system.hpp"
#include "sys/host.hpp"

namespace cmax::reliability {
namespace {

// Steps on this host: one on another would be refused for that alone.
std::string TwoSteps() {
  const std::string node = sys::Hostname();
  return "name: two faults\nbars: {detect_s: 30, out_of_service_s: 60}\nsteps:\n"
         "  - {name: fallen-off, inject: xid, code: 79, node: " +
         node +
         ", gpu: \"0000:17:00.0\"}\n"
         "  - {name: reset, inject: pcie-sbr, node: " +
         node + ", gpu: \"0000:17:00.0\"}\n";
}

struct Shell {
  sys::MemoryFileSystem fs;
  testing::FakeProcessRunner runner;  // no scheduler answers: the node is not known to one
  SystemClock clock;
  std::vector<std::string> out;
  std::vector<std::string> refused;
  ReliabilityIo Io() {
    ReliabilityIo io;
    io.db_path = "/nonexistent/cmax.db";  // nothing here may open the store
    io.fs = &fs;
    io.runner = &runner;
    io.clock = &clock;
    io.stop = [] { return false; };
    io.out = [this](std::string_view line) { out.emplace_back(line); };
    io.refused = [this](std::string_view line) { refused.emplace_back(line); };
    return io;
  }
};

TEST(ScenarioRun, AScenarioThatCannotBeReadIsTheUsersToFix) {
  Shell shell;
  const auto missing = RunScenarioFile({.scenario_path = "/s.yaml"}, shell.Io());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  shell.fs.AddFile("/s.yaml", "steps: [{inject: xid}]");
  const auto bad = RunScenarioFile({.scenario_path = "/s.yaml"}, shell.Io());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message.rfind("/s.yaml: ", 0), 0U) << bad.error().message;
  EXPECT_TRUE(shell.out.empty());
}

TEST(ScenarioRun, EveryStepIsCheckedBeforeAnyIsInjected) {
  Shell shell;
  shell.fs.AddFile("/s.yaml", TwoSteps());
  const auto run = RunScenarioFile({.scenario_path = "/s.yaml", .yes = true}, shell.Io());
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(run.error().message.find("nothing injected"), std::string::npos);
  // The bus reset is refused (destructive without the flag), the Xid step is not.
  ASSERT_FALSE(shell.refused.empty());
  bool destructive = false;
  for (const std::string& line : shell.refused) {
    EXPECT_EQ(line.rfind("reset: refused: ", 0), 0U) << line;
    destructive |= line.find("--allow-destructive") != std::string::npos;
  }
  EXPECT_TRUE(destructive);
  // Both steps and the bars were shown; the store was never opened.
  ASSERT_EQ(shell.out.size(), 3U);
  EXPECT_EQ(
      shell.out[0].rfind(
          "fallen-off: xid 79 on " + sys::Hostname() + ": <3>NVRM: Xid (PCI:0000:17:00): 79", 0),
      0U)
      << shell.out[0];
  EXPECT_EQ(shell.out[2].rfind("pass bars: detected within 30", 0), 0U) << shell.out[2];
}

TEST(ScenarioRun, ADryRunShowsTheStepsAndRecordsNothing) {
  Shell shell;
  const std::string two = TwoSteps();
  shell.fs.AddFile("/s.yaml", two.substr(0, two.find("  - {name: reset")));
  const auto run =
      RunScenarioFile({.scenario_path = "/s.yaml", .dry_run = true, .yes = true}, shell.Io());
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->run_id, 0);
  EXPECT_EQ(run->exit_code, 0);
  for (const std::string& line : shell.refused) ADD_FAILURE() << line;
  EXPECT_EQ(shell.out.size(), 2U);
}

// --prometheus, --alert-query and --alert-webhook are held to the scenario's rules, each
// combined with what the scenario says, before anything is shown or injected.
TEST(ScenarioRun, AlertSignalsGivenAsFlagsAreCheckedFirst) {
  const std::string two = TwoSteps();
  const std::string one = two.substr(0, two.find("  - {name: reset"));
  struct Case {
    std::string scenario;
    ScenarioRunOptions flags;
    const char* error;
  };
  const std::string with_query = "signals: {prometheus: \"http://p:9090\", query: up}\n" + one;
  for (const Case& c : std::vector<Case>{
           {one, {.prometheus = "file:///etc/shadow", .alert_query = "up"}, "prometheus must be"},
           {one, {.prometheus = "http://p:9090"}, "query is needed with prometheus"},
           {with_query, {.prometheus = "ftp://p"}, "prometheus must be"},
           {one, {.alert_webhook = "9099"}, "webhook must be HOST:PORT"},
       }) {
    Shell shell;
    shell.fs.AddFile("/s.yaml", c.scenario);
    ScenarioRunOptions o = c.flags;
    o.scenario_path = "/s.yaml";
    o.dry_run = true;
    const auto run = RunScenarioFile(o, shell.Io());
    ASSERT_FALSE(run) << c.error;
    EXPECT_EQ(run.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(run.error().message.find(c.error), std::string::npos) << run.error().message;
    EXPECT_TRUE(shell.out.empty()) << shell.out.front();
  }
  // A flag that completes the scenario's pair is taken.
  Shell shell;
  shell.fs.AddFile("/s.yaml", with_query);
  ScenarioRunOptions o{.scenario_path = "/s.yaml", .dry_run = true, .yes = true};
  o.alert_query = "max(ALERTS)";
  const auto run = RunScenarioFile(o, shell.Io());
  EXPECT_TRUE(run) << run.error().message;
}

TEST(ScenarioRun, ARebootNeedsItsFlagAndSaysWhy) {
  Shell shell;
  const auto run = RebootAndTime({.node = "gpu1", .yes = true}, shell.Io());
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kInvalidArgument);
  bool destructive = false;
  for (const std::string& line : shell.refused) {
    destructive |= line.find("destructive") != std::string::npos;
  }
  EXPECT_TRUE(destructive);
  const auto bad = RebootAndTime({.node = "gpu1", .poll_s = 0}, shell.Io());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--poll"), std::string::npos);
}

}  // namespace
}  // namespace cmax::reliability
