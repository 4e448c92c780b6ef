// What `cmax remediate status` and `history` show, from a real SQLite journal: the table, its
// JSON, a tripped breaker, and text from outside sanitised for a terminal.
#include "remediate/views.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "store/store.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

const WallTime kT0 = WallTime(std::chrono::milliseconds(1'780'000'000'000));

class ViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Store::Open({.path = dir_.File("cmax.db")});
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::make_unique<store::Store>(std::move(*s));
  }
  testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(ViewsTest, AnEmptyJournalSaysSo) {
  Journal journal(store_->Db());
  const auto text = StatusView(journal, "/x/cmax.db", 60, false);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "no node has been remediated (store /x/cmax.db)\n");
  const auto history = HistoryView(journal, "gpu1", 10, false);
  ASSERT_TRUE(history);
  EXPECT_EQ(*history, "no remediation history for gpu1\n");
}

TEST_F(ViewsTest, ANodeItsReasonAndItsNextStep) {
  Journal journal(store_->Db());
  NodeEntry entry = journal.Node("gpu2", kT0).value();
  entry.record.state = NodeState::kRepair;
  entry.record.since = kT0;
  entry.record.reason = "xid 79\x1b[31m on 0000:17:00.0";  // a terminal escape from outside
  ASSERT_TRUE(journal.SaveEntry(entry, kT0));
  ASSERT_TRUE(journal.SetBreaker({.tripped = true, .tripped_at = kT0, .reason = "5 take-outs"}));
  const auto text = StatusView(journal, "/x/cmax.db", 60, false);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->rfind("CIRCUIT BREAKER TRIPPED at ", 0), 0U) << *text;
  EXPECT_NE(text->find("gpu2             REPAIR"), std::string::npos) << *text;
  EXPECT_NE(text->find("repair by hand, then `cmax remediate repaired gpu2`"), std::string::npos);
  EXPECT_EQ(text->find('\x1b'), std::string::npos) << "an escape reached the terminal";
  const auto json = StatusView(journal, "/x/cmax.db", 60, true);
  ASSERT_TRUE(json);
  const auto doc = nlohmann::json::parse(*json);
  EXPECT_EQ(doc["schema"], "cmax.remediation/v1");
  EXPECT_EQ(doc["breaker"]["tripped"], true);
  ASSERT_EQ(doc["nodes"].size(), 1U);
  EXPECT_EQ(doc["nodes"][0]["node"], "gpu2");
  EXPECT_EQ(doc["nodes"][0]["state"], "REPAIR");
}

TEST_F(ViewsTest, TheNextStepOfEveryState) {
  NodeEntry e;
  e.node = "n1";
  e.record.since = kT0;
  e.record.state = NodeState::kHealthy;
  EXPECT_EQ(NextStep(e, 60), "-");
  e.record.state = NodeState::kQuarantined;
  e.record.pending = "reset-gpu";
  EXPECT_EQ(NextStep(e, 60), "waiting for reset-gpu");
  e.record.state = NodeState::kValidating;
  EXPECT_EQ(NextStep(e, 60), "starting validation");
  e.handle = "job:42";
  EXPECT_EQ(NextStep(e, 60), "validation job:42");
  e.record.state = NodeState::kReintroduced;
  EXPECT_EQ(NextStep(e, 60), "probation until " + FormatIso8601(kT0 + std::chrono::hours(1)));
}

TEST(OperatorOutcomeView, WhatTheWordCameToOrWhyNothing) {
  OperatorOutcome done{.from = NodeState::kRepair,
                       .to = NodeState::kReintroduced,
                       .changed = true,
                       .actions_planned = 1,
                       .policy_of_controller = true};
  EXPECT_EQ(OperatorOutcomeView("gpu1", done),
            "gpu1: REPAIR -> REINTRODUCED; 1 action(s) planned for the controller\n");
  done.policy_of_controller = false;
  EXPECT_EQ(OperatorOutcomeView("gpu\x1b[2J1", done),
            "gpu\xEF\xBF\xBD"
            "[2J1: REPAIR -> REINTRODUCED; 1 action(s) planned for the controller (no "
            "controller has run on this store yet: judged by the default policy)\n");
  const OperatorOutcome nothing{.from = NodeState::kHealthy,
                                .to = NodeState::kHealthy,
                                .note = "a healthy node needs no repair"};
  EXPECT_EQ(OperatorOutcomeView("gpu2", nothing),
            "gpu2 is HEALTHY; nothing to do (a healthy node needs no repair)\n");
}

TEST(PassView, CountsAndWhetherItWentWrong) {
  StepSummary pass{.events = 2, .transitions = 1, .actions_done = 1};
  EXPECT_EQ(PassView(pass), "2 events, 1 transitions, 1 actions done, 0 failed, 0 refused\n");
  EXPECT_FALSE(PassWentWrong(pass));
  StepSummary refused{.refused = 1};
  EXPECT_TRUE(PassWentWrong(refused));
  StepSummary failed{.actions_failed = 1};
  EXPECT_TRUE(PassWentWrong(failed));
  StepSummary tripped{.breaker_tripped = true};
  EXPECT_TRUE(PassWentWrong(tripped));
  EXPECT_NE(PassView(tripped).find("circuit breaker tripped"), std::string::npos);
}

}  // namespace
}  // namespace cmax::remediate
