// Request bodies and stream reading for the three APIs, on the exact shapes servers send:
// OpenAI chat (role chunk, content, finish, usage chunk, [DONE]), completions, Anthropic's typed
// events, vLLM's error-after-200, reasoning content, malformed chunks; and whole responses.
#include "endpoint/api.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "endpoint/sse.hpp"

namespace cmax::endpoint {
namespace {

using nlohmann::json;

Prompt TwoMessages() {
  Prompt p;
  p.messages = {{"system", "be brief"}, {"user", "say \"hi\"\n\tnow \xC3\xA9"}};
  p.max_tokens = 7;
  return p;
}

TEST(RequestBody, ChatAsksForUsageAndEscapesText) {
  const json body = json::parse(RequestBody(Api::kChat, TwoMessages(), {.model = "m"}));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["max_completion_tokens"], 7);
  ASSERT_EQ(body["messages"].size(), 2U);
  EXPECT_EQ(body["messages"][1]["content"], "say \"hi\"\n\tnow \xC3\xA9");
  EXPECT_FALSE(body.contains("ignore_eos"));
}

TEST(RequestBody, CompletionsJoinAndAnthropicTakesTheSystemApart) {
  const json completions = json::parse(
      RequestBody(Api::kCompletions, TwoMessages(), {.model = "m", .ignore_eos = true}));
  EXPECT_EQ(completions["prompt"], "be brief\nsay \"hi\"\n\tnow \xC3\xA9");
  EXPECT_EQ(completions["max_tokens"], 7);
  EXPECT_EQ(completions["ignore_eos"], true);
  const json anthropic = json::parse(RequestBody(Api::kAnthropic, TwoMessages(), {.model = "c"}));
  EXPECT_EQ(anthropic["system"], "be brief");
  EXPECT_EQ(anthropic["messages"].size(), 1U);
  EXPECT_EQ(anthropic["max_tokens"], 7);
  EXPECT_FALSE(anthropic.contains("stream_options"));  // not an Anthropic field
}

TEST(RequestBody, ExtraBodyIsMergedLastAndNoStreamDropsStreamOptions) {
  const json body = json::parse(RequestBody(
      Api::kChat, TwoMessages(),
      {.model = "m", .stream = false, .extra = json{{"temperature", 0}, {"model", "x"}}}));
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["model"], "x");
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(body.contains("stream_options"));
  // Invalid UTF-8 in a prompt is replaced, never sent as a broken body.
  Prompt bad;
  bad.messages = {{"user",
                   "a\xFF"
                   "b"}};
  EXPECT_FALSE(
      json::parse(RequestBody(Api::kChat, bad, {.model = "m"}), nullptr, false).is_discarded());
}

struct Read {
  std::vector<StreamEffect> effects;
  StreamReader reader;
  Read(Api api, std::string_view stream) : reader(api, true) {
    SseParser parser;
    parser.Feed(stream, [this](const SseEvent& e) { effects.push_back(reader.Read(e)); });
  }
};

TEST(StreamReader, OpenAiChatStream) {
  Read r(
      Api::kChat,
      "data: "
      "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
      "\"finish_reason\":null}],\"usage\":null}\n\n"
      ": ping\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo \\\"x\\\"\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,"
      "\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n"
      "data: [DONE]\n\n");
  ASSERT_EQ(r.effects.size(), 6U);
  EXPECT_TRUE(r.effects[0].choice);
  EXPECT_FALSE(r.effects[0].content);  // the role chunk: vLLM's TTFT, not a token
  EXPECT_TRUE(r.effects[1].content);
  EXPECT_TRUE(r.effects[3].finish);
  EXPECT_FALSE(r.effects[4].choice);  // the usage chunk has no choices
  EXPECT_TRUE(r.effects[5].done);
  EXPECT_EQ(r.reader.Text(), "Hello \"x\"");
  ASSERT_TRUE(r.reader.Usage());
  EXPECT_EQ(r.reader.Usage()->input, 9U);
  EXPECT_EQ(r.reader.Usage()->cache_read, 4U);
  EXPECT_EQ(r.reader.ContentChunks(), 2U);
}

TEST(StreamReader, ReasoningContentIsOutputAndCompletionsUseText) {
  Read chat(Api::kChat, "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n");
  EXPECT_TRUE(chat.effects.at(0).content);
  EXPECT_EQ(chat.reader.Text(), "");  // thinking is not the answer sent back in a next turn
  Read completions(
      Api::kCompletions,
      "data: {\"choices\":[{\"text\":\" a\",\"finish_reason\":null}],\"sim_sent_ns\":42}\n\n"
      "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n");
  EXPECT_TRUE(completions.effects.at(0).content);
  EXPECT_TRUE(completions.effects.at(1).finish);
  EXPECT_EQ(completions.reader.Text(), " a");
  EXPECT_EQ(completions.reader.ServerSentNs(), 42);
}

TEST(StreamReader, AnthropicEvents) {
  Read r(
      Api::kAnthropic,
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":"
      "{\"input_tokens\":3,\"cache_read_input_tokens\":100,\"cache_creation_input_tokens\":5,"
      "\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: ping\ndata: {\"type\": \"ping\"}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  ASSERT_EQ(r.effects.size(), 6U);
  EXPECT_FALSE(r.effects[1].choice);
  EXPECT_FALSE(r.effects[2].choice);
  EXPECT_TRUE(r.effects[3].choice && r.effects[3].content);
  EXPECT_TRUE(r.effects[4].finish);
  EXPECT_TRUE(r.effects[5].done);
  ASSERT_TRUE(r.reader.Usage());
  EXPECT_EQ(r.reader.Usage()->input, 108U);
  EXPECT_EQ(r.reader.Usage()->cache_read, 100U);
  EXPECT_EQ(r.reader.Usage()->cache_write, 5U);
  EXPECT_EQ(r.reader.Usage()->output, 12U);
  EXPECT_EQ(r.reader.Text(), "Hi");
}

TEST(StreamReader, ErrorsAfterTheStreamBegan) {
  Read vllm(Api::kChat,
            "data: {\"error\":{\"object\":\"error\",\"message\":\"engine died\",\"code\":500}}\n\n"
            "data: [DONE]\n\n");
  EXPECT_EQ(vllm.effects.at(0).error, "engine died");
  Read named(Api::kAnthropic,
             "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
             "\"message\":\"Overloaded\"}}\n\n");
  EXPECT_EQ(named.effects.at(0).error, "Overloaded");
  Read text_error(Api::kChat, "event: error\ndata: not json at all\n\n");
  EXPECT_EQ(text_error.effects.at(0).error, "not json at all");
  Read null_error(Api::kChat,
                  "data: {\"error\":null,\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n");
  EXPECT_FALSE(null_error.effects.at(0).error);
  EXPECT_TRUE(null_error.effects.at(0).content);
}

TEST(StreamReader, UsageChunkReadsAsAWholeResponse) {
  // The stream's usage chunk is read where it lies; a whole response's usage with the JSON
  // library: both must say the same for every shape.
  for (const char* usage :
       {R"({"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}})",
        R"({"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":null})",
        R"({"prompt_tokens":9,"completion_tokens":2,"prompt_cache_hit_tokens":7,)"
        R"("prompt_cache_miss_tokens":2})",
        R"({"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}})",
        R"({"input_tokens":3,"cache_read_input_tokens":5,"output_tokens":2})",
        R"({"prompt_tokens":-1,"completion_tokens":2})", R"({"prompt_tokens":2.5})",
        R"({"prompt_tokens":18446744073709551615})", R"({"completion_tokens":2})"}) {
    const std::string chunk = std::string("data: {\"choices\":[],\"usage\":") + usage + "}\n\n";
    Read r(Api::kChat, chunk);
    const auto want = ParseUsage(json::parse(usage));
    ASSERT_EQ(r.reader.Usage().has_value(), want.has_value()) << usage;
    if (want) {
      EXPECT_EQ(r.reader.Usage()->input, want->input) << usage;
      EXPECT_EQ(r.reader.Usage()->cache_read, want->cache_read) << usage;
      EXPECT_EQ(r.reader.Usage()->cache_write, want->cache_write) << usage;
      EXPECT_EQ(r.reader.Usage()->output, want->output) << usage;
    }
  }
}

TEST(StreamReader, MalformedChunksAreMarked) {
  for (const char* bad : {"data: {\"choices\": [{\"delta\n\n", "data: [1,2]\n\n", "data: nope\n\n",
                          "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}\n\n"}) {
    Read r(Api::kChat, bad);
    ASSERT_EQ(r.effects.size(), 1U) << bad;
    EXPECT_TRUE(r.effects[0].malformed) << bad;
    EXPECT_FALSE(r.effects[0].content) << bad;
  }
}

TEST(FullResponse, EachShapeAndErrors) {
  auto chat = ReadFullResponse(Api::kChat,
                               R"({"choices":[{"message":{"role":"assistant","content":"ok"}}],
                                   "usage":{"prompt_tokens":3,"completion_tokens":1}})");
  EXPECT_EQ(chat.text, "ok");
  EXPECT_EQ(chat.usage->output, 1U);
  EXPECT_EQ(ReadFullResponse(Api::kCompletions, R"({"choices":[{"text":"t"}]})").text, "t");
  EXPECT_EQ(
      ReadFullResponse(Api::kAnthropic,
                       R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})")
          .text,
      "ab");
  EXPECT_TRUE(ReadFullResponse(Api::kChat, "{").malformed);
  EXPECT_TRUE(ReadFullResponse(Api::kChat, R"({"id":1})").malformed);
  EXPECT_EQ(ReadFullResponse(Api::kChat, R"({"error":{"message":"no"}})").error, "no");
  EXPECT_EQ(ErrorMessage(R"({"error":{"message":"quota"}})"), "quota");
  EXPECT_EQ(ErrorMessage("plain text"), "plain text");
}

}  // namespace
}  // namespace cmax::endpoint
