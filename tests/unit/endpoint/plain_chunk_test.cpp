// The quick chunk reader: what it reads from the chunk shapes servers send, what it leaves to the
// full parse, and that a reader using it says exactly what the full parse says, chunk by chunk
// (the chunk fuzz target checks the same on any bytes).
#include "endpoint/plain_chunk.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "endpoint/api.hpp"
#include "endpoint/sse.hpp"

namespace cmax::endpoint {
namespace {

struct Case {
  Api api;
  std::string chunk;
  ChunkFields want;
};

TEST(ReadPlainChunk, ReadsTheCommonChunks) {
  const std::vector<Case> cases = {
      {Api::kChat,
       R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m",)"
       R"("choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]})",
       {.choice = true, .content = " word", .content_event = true}},
      {Api::kChat,  // vLLM's and OpenAI's first chunk: the role, an empty content, usage null
       R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],)"
       R"("usage":null})",
       {.choice = true}},
      {Api::kChat,
       R"({"choices":[{"delta":{"content":null,"reasoning_content":"hmm"}}]})",
       {.choice = true, .content_event = true}},
      {Api::kChat,
       R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})",
       {.choice = true, .finish = true}},
      {Api::kChat, R"({"choices":[]})", {}},
      {Api::kChat, R"({"choices":null,"error":null})", {}},
      {Api::kChat, R"({"choices":[7,{"delta":{"content":"x"}}]})", {.choice = true}},
      {Api::kChat, R"({"choices":[{"delta":"flat","finish_reason":5}]})", {.choice = true}},
      {Api::kChat, R"({"choices":[{"text":"not chat"}]})", {.choice = true}},
      {Api::kChat,
       " {\"choices\" : [ { \"delta\" : { \"content\" : \"\xC3\xA9t\xC3\xA9\" } } ] }\r\n",
       {.choice = true, .content = "\xC3\xA9t\xC3\xA9", .content_event = true}},
      {Api::kChat,  // escapes in the text: read as they lie, decoded when the text is kept
       R"({"choices":[{"delta":{"content":"a\n\"b\" \u00e9\u20ac"},"finish_reason":"st\"op"}]})",
       {.choice = true,
        .content = R"(a\n\"b\" \u00e9\u20ac)",
        .content_escaped = true,
        .content_event = true,
        .finish = true}},
      {Api::kChat,  // the usage chunk
       R"({"id":"c","choices":[],"usage":{"prompt_tokens":90,"total_tokens":100,)"
       R"("completion_tokens":10,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0}}})",
       {.usage = UsageCounts{.prompt_tokens = 90, .completion_tokens = 10, .cached_tokens = 64}}},
      {Api::kChat,  // counters that are not non-negative integers are not counters
       R"({"usage":{"prompt_tokens":-1,"completion_tokens":1.5,"output_tokens":"2",)"
       R"("input_tokens":null,"prompt_tokens_details":null,"cached_tokens":3}})",
       {.usage = UsageCounts{}}},
      {Api::kChat, R"({"usage":[1,2]})", {}},
      {Api::kChat,
       R"({"n":[-0.5,1.25,0,true,false,null,{},[],"\"\\\/\b\f\n\r\t"],"x":{"y":[{}]}})",
       {}},
      {Api::kCompletions,
       R"({"choices":[{"index":0,"text":" a","finish_reason":null}]})",
       {.choice = true, .content = " a", .content_event = true}},
      {Api::kCompletions,
       R"({"choices":[{"delta":{"content":"chat"},"finish_reason":"length"}]})",
       {.choice = true, .finish = true}},
      {Api::kAnthropic,
       R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})",
       {.choice = true, .content = "Hi", .content_event = true}},
      {Api::kAnthropic,
       R"({"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"so"}})",
       {.choice = true, .content = "so", .content_event = true}},
      {Api::kAnthropic, R"({"type":"content_block_delta","delta":{"text":""}})", {.choice = true}},
      {Api::kAnthropic, R"({"type": "ping"})", {}},
      {Api::kAnthropic, R"({"type":"message_stop"})", {.done = true}},
      {Api::kAnthropic,
       R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})",
       {}},
      {Api::kAnthropic,
       R"({"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":3,)"
       R"("cache_read_input_tokens":20,"output_tokens":1}}})",
       {.usage =
            UsageCounts{.input_tokens = 3, .cache_read_input_tokens = 20, .output_tokens = 1}}},
      {Api::kAnthropic,
       R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},)"
       R"("usage":{"output_tokens":12}})",
       {.finish = true, .usage = UsageCounts{.output_tokens = 12}}},
      {Api::kAnthropic,  // usage where its event type does not carry it: not read
       R"({"type":"content_block_delta","delta":{"text":"a\tb"},"usage":{"output_tokens":1}})",
       {.choice = true, .content = R"(a\tb)", .content_escaped = true, .content_event = true}},
  };
  for (const Case& c : cases) {
    const auto got = ReadPlainChunk(c.api, c.chunk);
    ASSERT_TRUE(got) << c.chunk;
    EXPECT_EQ(got->choice, c.want.choice) << c.chunk;
    EXPECT_EQ(got->content, c.want.content) << c.chunk;
    EXPECT_EQ(got->content_event, c.want.content_event) << c.chunk;
    EXPECT_EQ(got->finish, c.want.finish) << c.chunk;
    EXPECT_EQ(got->done, c.want.done) << c.chunk;
    EXPECT_EQ(got->content_escaped, c.want.content_escaped) << c.chunk;
    ASSERT_EQ(got->usage.has_value(), c.want.usage.has_value()) << c.chunk;
    if (got->usage) {
      const UsageCounts& u = *got->usage;
      const UsageCounts& w = *c.want.usage;
      EXPECT_TRUE(u.input_tokens == w.input_tokens && u.output_tokens == w.output_tokens &&
                  u.cache_read_input_tokens == w.cache_read_input_tokens &&
                  u.cache_creation_input_tokens == w.cache_creation_input_tokens &&
                  u.prompt_tokens == w.prompt_tokens &&
                  u.completion_tokens == w.completion_tokens &&
                  u.cached_tokens == w.cached_tokens &&
                  u.prompt_cache_hit_tokens == w.prompt_cache_hit_tokens)
          << c.chunk;
    }
  }
}

TEST(AppendJsonText, DecodesWhatTheJsonLibraryDecodes) {
  for (const std::string raw :
       {R"(plain)", R"(a\nb)", R"(\"\\\/\b\f\n\r\t)",
        R"(\u0000\u0041\u00e9\u07FF\u0800\uFFFD\uffff)", "\xC3\xA9 \\u20AC", R"(\\u0041)"}) {
    std::string decoded = "[";
    AppendJsonText(decoded, raw);
    EXPECT_EQ(decoded, "[" + nlohmann::json::parse("\"" + raw + "\"").get<std::string>()) << raw;
  }
  // Not from ReadPlainChunk: never read past the end.
  for (const std::string& raw :
       {std::string("a\\"), std::string("\\u12"), std::string("\\uZZZZ")}) {
    std::string out;
    AppendJsonText(out, raw);
    EXPECT_LE(out.size(), raw.size()) << raw;
  }
}

TEST(ReadPlainChunk, ReadsServeSimsStampAsAnIntegerOnly) {
  const auto stamp = [](std::string_view value) {
    return ReadPlainChunk(Api::kCompletions,
                          R"({"choices":[{"text":"a"}],"sim_sent_ns":)" + std::string(value) + "}");
  };
  EXPECT_EQ(stamp("42")->sent_ns, 42);
  EXPECT_EQ(stamp("-7")->sent_ns, -7);
  EXPECT_EQ(stamp("123456789012345678")->sent_ns, 123456789012345678);
  EXPECT_FALSE(stamp("1.5")->sent_ns);
  EXPECT_FALSE(stamp("\"42\"")->sent_ns);
  EXPECT_FALSE(stamp("1234567890123456789"));  // long: the full parse reads it
  EXPECT_FALSE(
      ReadPlainChunk(Api::kAnthropic, R"({"type":"ping","sim_sent_ns":9,"sim_sent_ns":8})"));
}

TEST(ReadPlainChunk, LeavesTheRestToTheFullParse) {
  const std::vector<std::pair<Api, std::string>> declined = {
      // what only the full parse reads
      {Api::kChat, R"({"error":{"message":"engine died"}})"},
      {Api::kChat, R"({"choices":[{"delta":{"con\u0074ent":"x"}}]})"},        // escapes in a name
      {Api::kChat, R"({"choices":[{"delta":{"content":"\ud83d\ude00"}}]})"},  // surrogates
      {Api::kChat, R"({"choices":[{"delta":{"content":"\udc00"}}]})"},
      {Api::kChat, R"({"k":"\ud800"})"},
      {Api::kChat, R"({"k":"\u12"})"},
      {Api::kChat, R"({"k":"\u12g4"})"},
      {Api::kAnthropic, R"({"type":"message\u005fstop"})"},  // escapes in the event type
      // a name we read, given twice: JSON leaves the meaning to the reader
      {Api::kChat, R"({"choices":[{"delta":{"content":"a","content":"b"}}]})"},
      {Api::kChat, R"({"choices":[],"choices":[]})"},
      {Api::kChat, R"({"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}})"},
      {Api::kChat, R"({"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}})"},
      {Api::kChat, R"({"usage":null,"usage":null})"},
      {Api::kAnthropic, R"({"type":"message_start","message":{"usage":{},"usage":{}}})"},
      {Api::kAnthropic,
       R"({"type":"message_delta","delta":{"stop_reason":"a","stop_reason":"b"}})"},
      {Api::kAnthropic, R"({"type":"ping","type":"ping"})"},
      {Api::kChat, R"({"n":1e5})"},
      {Api::kChat, R"({"usage":{"prompt_tokens":12345678901234567890}})"},
      {Api::kChat, R"({"n":12345678901234567890})"},
      {Api::kChat, std::string(40, '[') + std::string(40, ']')},
      {Api::kChat, "{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}"},
      // not JSON, or not an object: the full parse says which
      {Api::kChat, "[1,2]"},
      {Api::kChat, "nope"},
      {Api::kChat, ""},
      {Api::kChat, R"({"choices":[{"delta":{"content":"x"}}]} trailing)"},
      {Api::kChat, R"({"choices":[{"delta":{"content":"x"}}])"},
      {Api::kChat, R"({"a":1,})"},
      {Api::kChat, R"({"a":01})"},
      {Api::kChat, R"({"a":-})"},
      {Api::kChat, R"({"a":1.})"},
      {Api::kChat, R"({"a":.5})"},
      {Api::kChat, R"({"a":tru})"},
      {Api::kChat, R"({"a":nul})"},
      {Api::kChat, R"({"a" 1})"},
      {Api::kChat, R"({'a':1})"},
      {Api::kChat, R"({"a":"\x"})"},
      {Api::kChat, "{\"a\":\"tab\there\"}"},
      {Api::kChat, std::string("{\"a\":\"nul\0\"}", 12)},
      {Api::kChat, "{\"a\":\"\xC0\x80\"}"},          // overlong
      {Api::kChat, "{\"a\":\"\xED\xA0\x80\"}"},      // a surrogate
      {Api::kChat, "{\"a\":\"\xF4\x90\x80\x80\"}"},  // above U+10FFFF
      {Api::kChat, "{\"a\":\"\xF5\x80\x80\x80\"}"},
      {Api::kChat, "{\"a\":\"\xE2\x82\"}"},  // cut short
      {Api::kChat, "{\"a\":\"\x80\"}"},
      {Api::kChat, "{\"a\":\"unterminated"},
  };
  for (const auto& [api, chunk] : declined) {
    EXPECT_FALSE(ReadPlainChunk(api, chunk)) << chunk;
  }
}

// Strings of every length up to a few eight-byte steps, with a special byte at every place: the
// eight-byte scan must stop on it wherever it lies.
TEST(ReadPlainChunk, FindsEverySpecialByteWhereverItLies) {
  for (size_t length = 1; length <= 40; ++length) {
    for (size_t at = 0; at < length; ++at) {
      const auto chunk = [&](std::string_view special) {
        std::string text(length, 'a');
        text.replace(at, 1, special);
        return R"({"choices":[{"delta":{"content":")" + text + R"("}}]})";
      };
      const std::string with_newline = chunk("\\n");  // the fields point into it
      const auto escaped = ReadPlainChunk(Api::kChat, with_newline);
      ASSERT_TRUE(escaped && escaped->content_escaped) << length << " " << at;
      std::string text;
      AppendJsonText(text, escaped->content);
      EXPECT_EQ(text, std::string(at, 'a') + "\n" + std::string(length - at - 1, 'a'));
      EXPECT_FALSE(ReadPlainChunk(Api::kChat, chunk("\x01"))) << length << " " << at;
      EXPECT_FALSE(ReadPlainChunk(Api::kChat, chunk("\x80"))) << length << " " << at;
      EXPECT_FALSE(ReadPlainChunk(Api::kChat, chunk("\"\""))) << length << " " << at;
      for (const char* ok : {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"}) {
        const std::string c = chunk(ok);
        const auto got = ReadPlainChunk(Api::kChat, c);
        ASSERT_TRUE(got) << length << " " << at;
        std::string want(length, 'a');
        want.replace(at, 1, ok);
        EXPECT_EQ(got->content, want);
      }
    }
  }
}

TEST(FramedTextReader, ReadsLaterTokensOfTheSameFrame) {
  const std::string head = R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",)"
                           R"("choices":[{"index":0,"delta":{"content":")";
  const std::string tail = R"("},"logprobs":null,"finish_reason":null}]})";
  const std::string first = head + "Hello" + tail;
  const auto fields = ReadPlainChunk(Api::kChat, first);
  ASSERT_TRUE(fields);
  FramedTextReader frame;
  EXPECT_FALSE(frame.Read(first));  // nothing learned yet
  frame.Learn(first, *fields);
  const std::string later = head + " w\xC3\xB6rld" + tail;
  const auto got = frame.Read(later);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->content, " w\xC3\xB6rld");
  EXPECT_TRUE(got->choice && got->content_event && !got->finish);
  // Not plain text, or not the same frame: read again.
  for (const std::string& text :
       {std::string(), std::string("a\"b"), std::string("a\\nb"), std::string("a\x01"),
        std::string("\xC3"), std::string("x\",\"finish_reason\":\"stop")}) {
    EXPECT_FALSE(frame.Read(head + text + tail)) << text;
  }
  EXPECT_FALSE(frame.Read(head + "x" + R"("},"logprobs":null,"finish_reason":"stop"}]})"));
  EXPECT_FALSE(frame.Read(R"({"id":"c2)" + head.substr(9) + "x" + tail));
  // A chunk without text teaches nothing.
  FramedTextReader empty;
  const std::string role = head + tail;
  empty.Learn(role, *ReadPlainChunk(Api::kChat, role));
  EXPECT_FALSE(empty.Read(head + "x" + tail));
}

// A reader with the quick path and one with the full parse only, event by event, on streams with
// every kind of chunk: the same effects, text, usage and counts.
TEST(ReadPlainChunk, AReaderSaysWhatTheFullParseSays) {
  const std::vector<std::pair<Api, std::string>> streams = {
      {Api::kChat,
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
       "\"finish_reason\":null}],\"usage\":null}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"\xC3\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"x\",\"y\":\"z\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"lo \\\"x\\\"\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"r\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"\xE2\x82\xAC\"}}],\"sim_sent_ns\":5}\n\n"
       "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
       "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"bad\"}}]\n\n"
       "data: {\"error\":{\"message\":\"late\"}}\n\n"
       "data: [DONE]\n\n"},
      {Api::kCompletions,
       "data: {\"choices\":[{\"text\":\" a\",\"finish_reason\":null}],\"sim_sent_ns\":42}\n\n"
       "data: {\"choices\":[{\"text\":\" b\",\"finish_reason\":null}]}\n\n"
       "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n"
       "data: [DONE]\n\n"},
      {Api::kAnthropic,
       "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
       "{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
       "event: ping\ndata: {\"type\": \"ping\"}\n\n"
       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
       "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":"
       "{\"thinking\":\"t\"}}\n\n"
       "event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"Overloaded\"}}\n\n"
       "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
       "\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n"
       "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
      {Api::kChat,  // escapes, a frame learned from an escaped text, usage with details
       "data: {\"choices\":[{\"delta\":{\"content\":\"line\\none\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"two\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"\\u00e9\\\"\\t\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"\\ud83d\\ude00\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"x\",\"content\":\"y\"}}]}\n\n"
       "data: {\"choices\":[{\"delta\":{\"content\":\"z\"}}],\"usage\":{\"prompt_tokens\":5,"
       "\"completion_tokens\":1}}\n\n"
       "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,"
       "\"prompt_tokens_details\":{\"cached_tokens\":6}}}\n\n"
       "data: [DONE]\n\n"},
      {Api::kAnthropic,  // usage in two parts, merged; escapes in the text and thinking
       "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,"
       "\"cache_creation_input_tokens\":7,\"output_tokens\":1}}}\n\n"
       "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"a\\/b\"}}\n\n"
       "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\",\"thinking\":\"\\n\"}}\n\n"
       "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},"
       "\"usage\":{\"output_tokens\":30,\"input_tokens\":null}}\n\n"
       "data: {\"type\":\"message_stop\"}\n\n"},
  };
  for (const auto& [api, stream] : streams) {
    StreamReader quick(api, true, true);
    StreamReader full(api, true, false);
    SseParser parser;
    size_t events = 0;
    parser.Feed(stream, [&](const SseEvent& e) {
      const StreamEffect a = quick.Read(e);
      const StreamEffect b = full.Read(e);
      EXPECT_EQ(a.choice, b.choice) << e.data;
      EXPECT_EQ(a.content, b.content) << e.data;
      EXPECT_EQ(a.done, b.done) << e.data;
      EXPECT_EQ(a.finish, b.finish) << e.data;
      EXPECT_EQ(a.malformed, b.malformed) << e.data;
      EXPECT_EQ(a.error, b.error) << e.data;
      ++events;
    });
    EXPECT_GT(events, 3U);
    EXPECT_EQ(quick.Text(), full.Text());
    EXPECT_EQ(quick.ContentChunks(), full.ContentChunks());
    EXPECT_EQ(quick.ServerSentNs(), full.ServerSentNs());
    ASSERT_EQ(quick.Usage().has_value(), full.Usage().has_value());
    if (quick.Usage()) {
      EXPECT_EQ(quick.Usage()->input, full.Usage()->input);
      EXPECT_EQ(quick.Usage()->cache_read, full.Usage()->cache_read);
      EXPECT_EQ(quick.Usage()->cache_write, full.Usage()->cache_write);
      EXPECT_EQ(quick.Usage()->output, full.Usage()->output);
    }
  }
}

}  // namespace
}  // namespace cmax::endpoint
