// Workloads: random prompts within their length range and with a shared prefix, prompt files
// in their three shapes (bad lines named by number), multi-turn history, and Mooncake-style
// traces whose equal block ids become identical text, cut to the input length, with a marker.
#include "endpoint/workload.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "endpoint/prefix_cache.hpp"

namespace cmax::endpoint {
namespace {

TEST(RandomWorkload, LengthsStayInRangeAndThePrefixIsShared) {
  auto w = MakeRandomWorkload({.input_len = 100,
                               .output_len = 20,
                               .range_ratio = 0.5,
                               .prefix_len = 30,
                               .turns = 2,
                               .seed = 3});
  ASSERT_TRUE(w);
  std::string prefix;
  for (int i = 0; i < 50; ++i) {
    const auto c = (*w)->Next();
    ASSERT_TRUE(c);
    ASSERT_EQ(c->turns.size(), 2U);
    const size_t first = CountTokens(c->turns[0]);
    EXPECT_GE(first, 30U + 50U);
    EXPECT_LE(first, 30U + 150U);
    EXPECT_GE(c->max_tokens[0], 10U);
    EXPECT_LE(c->max_tokens[0], 30U);
    const std::string p = c->turns[0].substr(0, c->turns[0].find(' ', 100));
    if (i == 0) prefix = c->turns[0].substr(0, 60);
    EXPECT_EQ(c->turns[0].substr(0, 60), prefix);
  }
  EXPECT_FALSE(MakeRandomWorkload({.input_len = 0}));
  EXPECT_FALSE(MakeRandomWorkload({.range_ratio = 1}));
  // Seeded: the same seed gives the same prompts.
  auto a = MakeRandomWorkload({.seed = 9});
  auto b = MakeRandomWorkload({.seed = 9});
  EXPECT_EQ((*a)->Next()->turns, (*b)->Next()->turns);
}

TEST(RandomWorkload, EachTurnResendsTheHistory) {
  Conversation c;
  c.preamble = {{"system", "s"}};
  c.turns = {"one", "two", "three"};
  const auto m = TurnMessages(c, 2, {"a1", "a2"});
  ASSERT_EQ(m.size(), 6U);
  EXPECT_EQ(m[0].content, "s");
  EXPECT_EQ(m[2].role, "assistant");
  EXPECT_EQ(m[2].content, "a1");
  EXPECT_EQ(m[5].content, "three");
}

TEST(PromptFile, ThreeShapesCycledAndBadLinesNamed) {
  auto w = MakePromptFileWorkload(
      "{\"prompt\": \"p\", \"max_tokens\": 9}\n\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", "
      "\"content\": \"u\"}]}\n"
      "{\"turns\": [\"t1\", \"t2\"]}\n",
      50);
  ASSERT_TRUE(w);
  auto first = (*w)->Next();
  EXPECT_EQ(first->turns[0], "p");
  EXPECT_EQ(first->max_tokens[0], 9U);
  auto second = (*w)->Next();
  EXPECT_EQ(second->preamble.size(), 1U);
  EXPECT_EQ(second->turns[0], "u");
  EXPECT_EQ(second->max_tokens[0], 50U);
  EXPECT_EQ((*w)->Next()->turns.size(), 2U);
  EXPECT_EQ((*w)->Next()->turns[0], "p");  // from the top again
  auto bad = MakePromptFileWorkload("{\"prompt\": \"p\"}\n{\"nothing\": 1}\n", 5);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos);
  EXPECT_FALSE(MakePromptFileWorkload("", 5));
  EXPECT_FALSE(MakePromptFileWorkload("not json\n", 5));
}

// A dataset's other keys are passed over and a null max_tokens is none; a key that names a
// length other than max_tokens is refused (each answer would have run to the default).
TEST(PromptFile, OtherKeysArePassedOverButNotAnotherLength) {
  auto w = MakePromptFileWorkload(
      R"({"id": 7, "category": "chat", "challenge": "x", "prompt": "p", "max_tokens": null})", 50);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ((*w)->Next()->max_tokens[0], 50U);
  for (const char* key :
       {"max_token", "maxTokens", "max_new_tokens", "output_len", "OutputLength"}) {
    auto refused = MakePromptFileWorkload(fmt::format(R"({{"prompt": "p", "{}": 500}})", key), 50);
    ASSERT_FALSE(refused) << key;
    EXPECT_EQ(refused.error().message,
              fmt::format("prompts line 1: \"{}\" is not read: an answer's length is "
                          "\"max_tokens\"",
                          key));
  }
}

TEST(Trace, EqualIdsAreIdenticalBlocksCutToTheInputLength) {
  const std::string trace =
      "{\"timestamp\": 1000, \"input_length\": 20, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n"
      "{\"timestamp\": 1500, \"input_length\": 16, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
      "{\"timestamp\": 3000, \"input_length\": 12, \"output_length\": 1, \"hash_ids\": [1]}\n";
  auto w = MakeTraceWorkload(trace, {.block_tokens = 8, .speedup = 2});
  ASSERT_TRUE(w);
  const auto a = (*w)->Next();
  const auto b = (*w)->Next();
  const auto c = (*w)->Next();
  EXPECT_FALSE((*w)->Next());
  EXPECT_EQ(CountTokens(a->turns[0]), 20U);
  EXPECT_EQ(CountTokens(b->turns[0]), 16U);
  EXPECT_EQ(CountTokens(c->turns[0]), 12U);  // 8 from block 1, then 4 unique words
  EXPECT_EQ(a->turns[0].substr(0, b->turns[0].size()), b->turns[0]);
  EXPECT_EQ(a->turns[0].substr(0, BlockText(1, 8).size()), BlockText(1, 8));
  EXPECT_DOUBLE_EQ(*a->at_s, 0);
  EXPECT_DOUBLE_EQ(*b->at_s, 0.25);  // 500 ms at speedup 2
  EXPECT_DOUBLE_EQ(*c->at_s, 1.0);
  EXPECT_EQ(b->max_tokens[0], 4U);
}

TEST(Trace, AMarkerSeparatesCopiesButKeepsTheirOwnSharing) {
  const std::string trace =
      "{\"timestamp\": 0, \"input_length\": 16, \"output_length\": 1, \"hash_ids\": [5, 6]}\n"
      "{\"timestamp\": 10, \"input_length\": 16, \"output_length\": 1, \"hash_ids\": [5, 6]}\n";
  const std::string m1 = ReplayMarker(1);
  const std::string m2 = ReplayMarker(2);
  EXPECT_NE(m1, m2);
  EXPECT_EQ(m1.size(), std::string("[rid:000000000000]").size());
  std::vector<std::unique_ptr<Workload>> copies;
  copies.push_back(std::move(*MakeTraceWorkload(trace, {.block_tokens = 8, .marker = m1})));
  copies.push_back(std::move(*MakeTraceWorkload(trace, {.block_tokens = 8, .marker = m2})));
  auto merged = MergeByTime(std::move(copies));
  IdealCache ideal(8);
  std::vector<std::string> prompts;
  while (auto c = merged->Next()) prompts.push_back(c->turns[0]);
  ASSERT_EQ(prompts.size(), 4U);
  for (const auto& p : prompts) {
    EXPECT_EQ(CountTokens(p), 16U);  // the marker replaces a word: lengths are kept
    ideal.Add(p);
  }
  EXPECT_EQ(prompts[0].rfind(m1, 0), 0U);
  // Each copy hits its own first block the second time, never the other copy's.
  EXPECT_EQ(ideal.Hits().cached_tokens, 16U);
}

TEST(Trace, BadLinesAreNamed) {
  const auto error = [](const std::string& text) {
    auto w = MakeTraceWorkload(text, {});
    return w ? std::string() : w.error().message;
  };
  EXPECT_NE(error("{\"input_length\": 1, \"output_length\": 1}").find("line 1"), std::string::npos);
  EXPECT_NE(error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n"
                  "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1}")
                .find("line 2"),
            std::string::npos);
  EXPECT_NE(
      error("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": \"x\"}"),
      "");
  EXPECT_NE(error("{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n"
                  "{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}"),
            "");
  EXPECT_NE(error(""), "");
  EXPECT_FALSE(MakeTraceWorkload("{}", {.speedup = 0}));
}

}  // namespace
}  // namespace cmax::endpoint
