// The published figures as data: the built-in file parses and every figure is where it says it
// came from (an address with a commit); a bad file is refused in words; a run's share of one
// is judged in cmax's bands.
#include "train/train_references.hpp"

#include <gtest/gtest.h>
#include <set>
#include <string>

namespace cmax::train {
namespace {

TEST(TrainReferences, TheBuiltInFiguresParseAndNameTheirSources) {
  const TrainReferences& all = TrainReferences::Builtin();
  ASSERT_GE(all.All().size(), 40U);
  std::set<std::string> ids;
  for (const TrainReference& r : all.All()) {
    EXPECT_TRUE(ids.insert(r.id).second) << r.id;
    EXPECT_TRUE(r.source.starts_with("https://github.com/pytorch/torchtitan/blob/")) << r.source;
    EXPECT_GT(r.tokens_per_s_per_gpu, 0) << r.id;
  }
  // One figure checked against its table: TorchTitan's 2024-12 H100 benchmark, Table 1.
  const TrainReference* fsdp = all.Find("llama3_8b-h100-8gpu-fsdp-ac-selective");
  ASSERT_NE(fsdp, nullptr);
  EXPECT_EQ(fsdp->tokens_per_s_per_gpu, 5762);
  EXPECT_EQ(fsdp->gpus, 8);
  EXPECT_TRUE(fsdp->source.ends_with("benchmarks/llama3_h100_202412_torchtitan.md"));
  EXPECT_EQ(fsdp->Words(),
            "5,762 tokens/s/GPU: llama3_8b on 8 H100 (96GB HBM2e, 500W), FSDP, activation "
            "checkpointing selective, bf16, 2024-12");
  EXPECT_EQ(all.Find("nope"), nullptr);
  const std::string listed = all.Text("llama3_8b h200");
  EXPECT_NE(listed.find("llama3_8b-h200-32gpu"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("h100"), std::string::npos) << listed;
}

// `cmax train references [WORD ...] [--json]`: the same choice, every field in the JSON.
TEST(TrainReferences, TheListIsFilteredByEveryWordInTextAndJson) {
  const TrainReferences& all = TrainReferences::Builtin();
  EXPECT_EQ(all.Matching("").size(), all.All().size());
  EXPECT_EQ(all.Matching("  ").size(), all.All().size());
  const auto h100 = all.Matching("llama3_8b  h100");
  ASSERT_FALSE(h100.empty());
  for (const TrainReference* r : h100) {
    EXPECT_NE(r->id.find("llama3_8b"), std::string::npos) << r->id;
    EXPECT_NE(r->id.find("h100"), std::string::npos) << r->id;
  }
  EXPECT_TRUE(all.Matching("llama3_8b nothing-like-this").empty());
  EXPECT_EQ(all.Text("nothing-like-this"), "");
  const nlohmann::json listed = all.Json("llama3_8b-h100-8gpu-fsdp-ac-selective");
  ASSERT_EQ(listed.size(), 1U) << listed.dump();
  EXPECT_EQ(listed[0]["tokens_per_s_per_gpu"], 5762);
  EXPECT_EQ(listed[0]["gpus"], 8);
  EXPECT_EQ(listed[0]["platform"], all.Find(listed[0]["id"].get<std::string>())->platform);
  for (const char* key : {"id", "model", "platform", "gpus", "parallelism", "dtype",
                          "tokens_per_s_per_gpu", "date", "source"}) {
    EXPECT_TRUE(listed[0].contains(key)) << key;
  }
  EXPECT_EQ(all.Json("nothing-like-this"), nlohmann::json::array());
}

TEST(TrainReferences, ABadFileIsRefusedInWords) {
  const std::string head = R"({"schema": "cmax.train-references/v1", "references": [)";
  const std::string good =
      R"({"id": "a", "model": "m", "platform": "p", "gpus": 8, "parallelism": "FSDP", )"
      R"("tokens_per_s_per_gpu": 100, "source": "https://x/y"})";
  ASSERT_TRUE(TrainReferences::Parse(head + good + "]}"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nope", "not JSON"},
      {R"({"schema": "other"})", "not a cmax.train-references/v1"},
      {"[1]", "not a JSON object"},
      {head + R"({"id": "a", "id": "b", "model": "m"}]})", "line 1: the key \"id\" appears twice"},
      {head + good + "," + good + "]}", "\"a\" appears twice"},
      {head +
           R"({"id": "a", "model": "m", "platform": "p", "gpus": 8, "parallelism": "x", "tps": 1})" +
           "]}",
       "unknown key"},
      {head +
           R"({"id": "a", "model": "m", "platform": "p", "gpus": 0, "parallelism": "x", )"
           R"("tokens_per_s_per_gpu": 1, "source": "https://x"})" +
           "]}",
       "must be positive numbers"},
      {head +
           R"({"id": "a", "model": "m", "platform": "p", "gpus": 8, "parallelism": "x", )"
           R"("tokens_per_s_per_gpu": 1, "source": "ftp://x"})" +
           "]}",
       "https address"},
  };
  for (const auto& [text, words] : cases) {
    auto parsed = TrainReferences::Parse(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().message.find(words), std::string::npos) << parsed.error().message;
  }
}

TEST(TrainReferences, AShareIsJudgedInBands) {
  const TrainReference* r =
      TrainReferences::Builtin().Find("llama3_8b-h100-8gpu-fsdp-ac-selective");
  ASSERT_NE(r, nullptr);
  const auto status = [&](double measured) {
    return ReferenceFinding("a.log", {r, measured, measured / r->tokens_per_s_per_gpu}).status;
  };
  EXPECT_EQ(status(5846), CheckStatus::kPass);
  EXPECT_EQ(status(5186), CheckStatus::kPass);  // 90.0%
  EXPECT_EQ(status(5000), CheckStatus::kWarn);
  EXPECT_EQ(status(4034), CheckStatus::kWarn);  // 70.0%
  EXPECT_EQ(status(1455), CheckStatus::kFail);
  const Finding f = ReferenceFinding("a.log", {r, 1455, 1455 / r->tokens_per_s_per_gpu});
  EXPECT_EQ(f.observed, "1,455 tokens/s/GPU, 25% of llama3_8b-h100-8gpu-fsdp-ac-selective");
  EXPECT_EQ(f.links, std::vector<std::string>{r->source});
}

}  // namespace
}  // namespace cmax::train
