// The SSE parser: the event stream formats inference servers send (OpenAI's "data: {...}" lines
// and [DONE], Anthropic's named events), every line ending, comments, multi-line data, bytes
// split anywhere, oversized events dropped with memory bounded, a stream cut inside an event.
#include "endpoint/sse.hpp"

#include <gtest/gtest.h>
#include <vector>

namespace cmax::endpoint {
namespace {

std::vector<SseEvent> ParseAll(std::string_view text, size_t chunk = 0, SseParser* out = nullptr) {
  SseParser local;
  SseParser& p = out != nullptr ? *out : local;
  std::vector<SseEvent> events;
  const auto sink = [&](const SseEvent& e) { events.push_back(e); };
  if (chunk == 0) {
    p.Feed(text, sink);
  } else {
    for (size_t at = 0; at < text.size(); at += chunk) p.Feed(text.substr(at, chunk), sink);
  }
  return events;
}

std::vector<std::string> Data(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& e : events) out.push_back(e.data);
  return out;
}

TEST(Sse, OpenAiStreamWithDone) {
  const std::string stream =
      ": ping\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
      "data: [DONE]\n\n";
  SseParser p;
  const auto events = ParseAll(stream, 0, &p);
  EXPECT_EQ(Data(events),
            (std::vector<std::string>{R"({"choices":[{"delta":{"content":"Hel"}}]})",
                                      R"({"choices":[{"delta":{"content":"lo"}}]})", "[DONE]"}));
  EXPECT_EQ(p.Comments(), 1U);
  EXPECT_FALSE(p.Finish());
}

TEST(Sse, AnthropicNamedEventsAndEveryLineEnding) {
  for (const std::string eol : {"\n", "\r", "\r\n"}) {
    const std::string stream = "event: message_start" + eol + "data: {\"type\":\"message_start\"}" +
                               eol + eol + "event: content_block_delta" + eol + "data: {\"x\":1}" +
                               eol + eol;
    const auto events = ParseAll(stream);
    ASSERT_EQ(events.size(), 2U) << "line end " << eol.size();
    EXPECT_EQ(events[0].event, "message_start");
    EXPECT_EQ(events[1].event, "content_block_delta");
    EXPECT_EQ(events[1].data, "{\"x\":1}");
  }
}

TEST(Sse, SplitAtEveryByteGivesTheSameEvents) {
  const std::string stream =
      "\xEF\xBB\xBF"  // a byte order mark, itself split
      "id: 7\r\nretry: 1500\r\nevent: e\r\ndata: one\r\ndata:two\r\ndata\r\n\r\n"
      ": comment\r\rdata: x\r\n\r\n";
  const auto whole = ParseAll(stream);
  for (size_t chunk = 1; chunk <= 5; ++chunk) {
    const auto split = ParseAll(stream, chunk);
    ASSERT_EQ(split.size(), whole.size()) << chunk;
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(split[i].data, whole[i].data) << chunk;
  }
  ASSERT_EQ(whole.size(), 2U);
  EXPECT_EQ(whole[0].data, "one\ntwo\n");  // a "data" line with no colon adds an empty line
  EXPECT_EQ(whole[0].id, "7");
  EXPECT_EQ(whole[0].retry, 1500);
  EXPECT_EQ(whole[0].event, "e");
  EXPECT_EQ(whole[1].data, "x");
}

TEST(Sse, FieldsWithoutDataAndUnknownFieldsDispatchNothing) {
  EXPECT_TRUE(ParseAll("event: ping\n\n").empty());
  EXPECT_TRUE(ParseAll("foo: bar\n\n").empty());
  EXPECT_EQ(ParseAll("data:  two spaces\n\n")[0].data, " two spaces");  // one space is removed
  EXPECT_EQ(ParseAll("data:\n\n")[0].data, "");
  EXPECT_FALSE(ParseAll("retry: soon\ndata: x\n\n")[0].retry.has_value());
}

TEST(Sse, AnOversizedEventIsDroppedWholeAndTheNextOneCounts) {
  SseParser p(64);
  std::vector<SseEvent> events;
  const auto sink = [&](const SseEvent& e) { events.push_back(e); };
  p.Feed("data: " + std::string(10'000, 'x') + "\ndata: more\n\ndata: ok\n\n", sink);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].data, "ok");
  EXPECT_EQ(p.Oversized(), 1U);
  // A 10 MB line in 4 KiB chunks: memory stays at the limit.
  SseParser big(1 << 16);
  const std::string chunk(4096, 'y');
  big.Feed("data: ", sink);
  for (int i = 0; i < 2560; ++i) big.Feed(chunk, sink);
  big.Feed("\n\ndata: after\n\n", sink);
  EXPECT_EQ(events.back().data, "after");
  EXPECT_EQ(big.Oversized(), 1U);
}

TEST(Sse, AStreamCutInsideAnEventIsReported) {
  SseParser p;
  const auto events = ParseAll("data: complete\n\ndata: half", 0, &p);
  EXPECT_EQ(events.size(), 1U);
  EXPECT_TRUE(p.Finish());
  SseParser q;
  (void)ParseAll("data: whole\n\n", 0, &q);
  EXPECT_FALSE(q.Finish());
  SseParser r;
  (void)ParseAll("data: no blank line\n", 0, &r);
  EXPECT_TRUE(r.Finish());
}

}  // namespace
}  // namespace cmax::endpoint
