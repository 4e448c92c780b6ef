// Golden streams as servers send them (vLLM chat with its role chunk and usage chunk, CRLF with
// pings and a two-line data field and DeepSeek usage, Anthropic's typed events, an error after
// HTTP 200, a completions stream cut inside an event), read by the SSE parser and the stream
// reader: the transcript is compared with tests/data/endpoint/sse/*.golden, and must be the same
// whether the bytes come whole or split at every size from 1 to 7.
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "endpoint/api.hpp"
#include "endpoint/sse.hpp"
#include "support/golden.hpp"

namespace cmax::endpoint {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Transcript(std::string_view stream, Api api, size_t split) {
  SseParser parser;
  StreamReader reader(api, true);
  std::string out;
  const auto sink = [&](const SseEvent& e) {
    const StreamEffect x = reader.Read(e);
    out += fmt::format("event={} id={} retry={} data={}\n", e.event.empty() ? "message" : e.event,
                       e.id.empty() ? "-" : e.id, e.retry ? std::to_string(*e.retry) : "-", e.data);
    out += fmt::format("  choice={} content={} finish={} done={} malformed={} error={}\n", x.choice,
                       x.content, x.finish, x.done, x.malformed, x.error.value_or("-"));
  };
  if (split == 0) {
    parser.Feed(stream, sink);
  } else {
    for (size_t at = 0; at < stream.size(); at += split)
      parser.Feed(stream.substr(at, split), sink);
  }
  const bool cut = parser.Finish();
  const auto& u = reader.Usage();
  out += fmt::format("end: cut_inside_event={} comments={} text=\"{}\" usage={}\n", cut,
                     parser.Comments(), reader.Text(),
                     u ? fmt::format("input {} cache_read {} cache_write {} output {}", u->input,
                                     u->cache_read, u->cache_write, u->output)
                       : std::string("none"));
  return out;
}

// The API a recorded stream speaks, from its file name: anthropic_* and completions_* are
// theirs, every other stream is a chat completion.
Api ApiOfStream(const std::string& name) {
  if (name.starts_with("anthropic")) return Api::kAnthropic;
  if (name.starts_with("completions")) return Api::kCompletions;
  return Api::kChat;
}

TEST(SseGolden, ServerStreamsReadTheSameWholeOrSplit) {
  testing::ExpectNoOrphanGoldens("endpoint/sse", ".sse", ".golden");
  const auto names = testing::GoldenStems("endpoint/sse", ".sse");
  EXPECT_GE(names.size(), 5U);
  for (const std::string& name : names) {
    const Api api = ApiOfStream(name);
    SCOPED_TRACE(name);
    const std::string base = std::string("endpoint/sse/") + name;
    const std::string stream = Slurp(std::string(CMAX_TEST_DATA) + "/" + base + ".sse");
    ASSERT_FALSE(stream.empty());
    const std::string whole = Transcript(stream, api, 0);
    testing::ExpectGolden(base + ".golden", whole);
    for (size_t split = 1; split <= 7; ++split)
      EXPECT_EQ(Transcript(stream, api, split), whole) << split;
  }
}

}  // namespace
}  // namespace cmax::endpoint
