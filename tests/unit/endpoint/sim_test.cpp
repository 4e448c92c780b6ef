// serve-sim's model: what it reads from a request, its timings and fault draws, and that every
// response shape it writes is read back by cmax's own stream reader with the right usage.
#include "endpoint/sim.hpp"

#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>

#include "endpoint/sse.hpp"

namespace cmax::endpoint {
namespace {

using nlohmann::json;

HttpRequest Post(const std::string& path, const std::string& body,
                 std::map<std::string, std::string> headers = {}) {
  HttpRequest r;
  r.method = "POST";
  r.target = path;
  r.body = body;
  r.headers = std::move(headers);
  return r;
}

TEST(SimRequest, FieldsOfAnotherTypeReadAsMissingAndNeverThrow) {
  // serve-sim died on {"stream": "yes"}: nlohmann's value() throws on a type it did not expect.
  const SimConfig config;
  auto odd = ParseSimRequest(Post("/v1/chat/completions",
                                  R"({"stream":"yes","stream_options":{"include_usage":1},
               "messages":[{"role":7,"content":"a b"}]})"),
                             config);
  ASSERT_TRUE(odd) << odd.error().message;
  EXPECT_FALSE(odd->stream);
  EXPECT_FALSE(odd->include_usage);
  EXPECT_EQ(odd->prompt, "a b");
  auto options = ParseSimRequest(
      Post("/v1/completions", R"({"stream":true,"stream_options":"x","prompt":"p"})"), config);
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_TRUE(options->stream);
  EXPECT_FALSE(options->include_usage);
}

TEST(SimRequest, ReadsEachApi) {
  const SimConfig config;
  auto chat = ParseSimRequest(
      Post(
          "/v1/chat/completions",
          R"({"messages":[{"role":"system","content":"a b"},{"role":"user","content":[{"type":"text","text":"c"}]}],
               "stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":5})"),
      config);
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->prompt, "a b\nc");
  EXPECT_TRUE(chat->stream);
  EXPECT_TRUE(chat->include_usage);
  EXPECT_EQ(chat->max_tokens, 5U);
  auto completions = ParseSimRequest(Post("/v1/completions", R"({"prompt":"x y"})"), config);
  ASSERT_TRUE(completions);
  EXPECT_EQ(completions->max_tokens, config.default_max_tokens);
  EXPECT_FALSE(completions->stream);
  auto anthropic = ParseSimRequest(
      Post("/v1/messages",
           R"({"system":"s","messages":[{"role":"user","content":"u"}],"max_tokens":2})",
           {{"x-cmax-sim-fault", "cut"}}),
      config);
  ASSERT_TRUE(anthropic);
  EXPECT_EQ(anthropic->prompt, "s\nu");
  EXPECT_EQ(anthropic->fault, SimFault::kCut);
}

TEST(SimRequest, BadRequestsSayWhy) {
  const SimConfig config;
  const auto status = [&](const HttpRequest& r) {
    auto parsed = ParseSimRequest(r, config);
    EXPECT_FALSE(parsed);
    return parsed ? 0 : parsed.error().status;
  };
  EXPECT_EQ(status(Post("/v2/nothing", "{}")), 404);
  HttpRequest get = Post("/v1/completions", "");
  get.method = "GET";
  EXPECT_EQ(status(get), 405);
  EXPECT_EQ(status(Post("/v1/completions", "{")), 400);
  EXPECT_EQ(status(Post("/v1/chat/completions", R"({"messages":[]})")), 400);
  EXPECT_EQ(status(Post("/v1/completions", R"({"prompt":"x","max_tokens":0})")), 400);
  EXPECT_EQ(status(Post("/v1/completions", R"({"prompt":"x"})", {{"x-cmax-sim-fault", "boom"}})),
            400);
}

TEST(SimModel, TimingsAndFaultDraws) {
  SimConfig config;
  config.base_ms = 1;
  config.prefill_us_per_token = 10;
  config.slow_start_ms = 100;
  config.decode_ms = 2.5;
  EXPECT_EQ(FirstTokenDelayNs(config, 100, SimFault::kNone), 2'000'000);
  EXPECT_EQ(FirstTokenDelayNs(config, 100, SimFault::kSlowStart), 102'000'000);
  EXPECT_EQ(DecodeNs(config), 2'500'000);
  config.rate_429 = 0.25;
  config.rate_cut = 0.25;
  std::mt19937_64 rng(7);
  std::map<SimFault, int> seen;
  for (int i = 0; i < 20000; ++i) ++seen[DrawFault(config, rng)];
  EXPECT_NEAR(seen[SimFault::kTooMany] / 20000.0, 0.25, 0.02);
  EXPECT_NEAR(seen[SimFault::kCut] / 20000.0, 0.25, 0.02);
  EXPECT_NEAR(seen[SimFault::kNone] / 20000.0, 0.5, 0.02);
  for (const char* name :
       {"429", "500", "cut", "error-event", "slow-start", "malformed-json", "huge-line", "no-done",
        "http10", "byte-split", "trickle", "close-early"}) {
    ASSERT_TRUE(ParseSimFault(name)) << name;
    EXPECT_EQ(SimFaultName(*ParseSimFault(name)), name);
  }
}

// The stream serve-sim writes for `api`, read by cmax's reader.
struct RoundTrip {
  StreamReader reader;
  int choices = 0;
  int content = 0;
  bool done = false;
  bool finish = false;
  RoundTrip(Api api, const SimUsage& usage) : reader(api, true) {
    std::string stream = StreamStart(api, "id1", "m", usage, 99);
    for (uint64_t n = 0; n < usage.output; ++n)
      stream += StreamToken(api, "id1", "m", n, n == 0, 99);
    stream += StreamEnd(api, "id1", "m", usage, true, true);
    SseParser parser;
    parser.Feed(stream, [this](const SseEvent& e) {
      const StreamEffect x = reader.Read(e);
      EXPECT_FALSE(x.malformed) << e.data;
      choices += x.choice ? 1 : 0;
      content += x.content ? 1 : 0;
      done = done || x.done;
      finish = finish || x.finish;
    });
  }
};

TEST(SimModel, EveryShapeReadsBackWithItsUsage) {
  const SimUsage usage{.input = 40, .cached = 32, .output = 5};
  for (const Api api : {Api::kChat, Api::kCompletions, Api::kAnthropic}) {
    RoundTrip r(api, usage);
    SCOPED_TRACE(std::string(ApiName(api)));
    EXPECT_EQ(r.content, 5);
    EXPECT_TRUE(r.done);
    EXPECT_TRUE(r.finish);
    ASSERT_TRUE(r.reader.Usage());
    EXPECT_EQ(r.reader.Usage()->input, 40U);
    EXPECT_EQ(r.reader.Usage()->cache_read, 32U);
    EXPECT_EQ(r.reader.Usage()->output, 5U);
    EXPECT_EQ(r.reader.ServerSentNs(), 99);
    EXPECT_EQ(r.reader.Text(), " the cluster answers every request");
  }
  // Chat has a role chunk and a finish chunk around the tokens, as vLLM sends.
  EXPECT_EQ(RoundTrip(Api::kChat, usage).choices, 7);
}

TEST(SimModel, WholeResponsesAndErrorsAreValidJson) {
  const SimUsage usage{.input = 4, .cached = 0, .output = 3};
  for (const Api api : {Api::kChat, Api::kCompletions, Api::kAnthropic}) {
    const FullResponse r = ReadFullResponse(api, FullResponseBody(api, "i", "m", usage));
    EXPECT_FALSE(r.malformed);
    EXPECT_EQ(r.text, " the cluster answers");
    EXPECT_EQ(r.usage->output, 3U);
  }
  EXPECT_EQ(json::parse(ErrorBody(429, "slow \"down\""))["error"]["message"], "slow \"down\"");
  StreamReader reader(Api::kChat, false);
  SseParser parser;
  std::optional<std::string> error;
  parser.Feed(StreamErrorEvent(Api::kChat, "gone"), [&](const SseEvent& e) {
    if (auto x = reader.Read(e); x.error) error = x.error;
  });
  EXPECT_EQ(error, "gone");
}

}  // namespace
}  // namespace cmax::endpoint
