// The decisions of `cmax endpoint` around the load, on values: the URL a --url means, the key and
// headers, SLOs, sweep levels, warm-up and replay markers.
#include "endpoint/plan.hpp"

#include <gtest/gtest.h>

#include "sys/file_system.hpp"

namespace cmax::endpoint {
namespace {

TEST(EndpointUrl, FollowsTheBaseUrlConvention) {
  struct Case {
    const char* url;
    Api api;
    const char* expected;
  };
  const Case cases[] = {
      // Origin alone, or "/": the API's usual path.
      {"http://h:8000", Api::kChat, "http://h:8000/v1/chat/completions"},
      {"http://h:8000/", Api::kCompletions, "http://h:8000/v1/completions"},
      {"https://h", Api::kAnthropic, "https://h/v1/messages"},
      // A base ending in /v1 (the OpenAI SDK's and vLLM's --base-url): the path below it.
      {"http://h:8000/v1", Api::kChat, "http://h:8000/v1/chat/completions"},
      {"http://h:8000/v1/", Api::kChat, "http://h:8000/v1/chat/completions"},
      {"http://h/openai/v1", Api::kCompletions, "http://h/openai/v1/completions"},
      {"http://h:8000/v1", Api::kAnthropic, "http://h:8000/v1/messages"},
      // Another base (a proxy's prefix): the whole usual path below it.
      {"http://h/proxy", Api::kChat, "http://h/proxy/v1/chat/completions"},
      // An endpoint already: as it is.
      {"http://h:8000/v1/chat/completions", Api::kChat, "http://h:8000/v1/chat/completions"},
      {"http://h/v1/completions", Api::kChat, "http://h/v1/completions"},
      {"http://h/custom/messages", Api::kAnthropic, "http://h/custom/messages"},
      // A query stays at the end; a key in it is not lost.
      {"http://h:8000/v1?api-version=2", Api::kChat,
       "http://h:8000/v1/chat/completions?api-version=2"},
      {"http://h:8000?k=1", Api::kChat, "http://h:8000/v1/chat/completions?k=1"},
      {"http://h/v1/chat/completions?x=1", Api::kChat, "http://h/v1/chat/completions?x=1"},
      // A trailing slash on an endpoint is not a base.
      {"http://h/v1/chat/completions/", Api::kChat, "http://h/v1/chat/completions"},
  };
  for (const Case& c : cases) {
    auto url = EndpointUrl(c.url, c.api);
    ASSERT_TRUE(url) << c.url;
    EXPECT_EQ(*url, c.expected) << c.url;
  }
  for (const char* bad : {"h:8000/v1", "ftp://h/", ""}) {
    auto url = EndpointUrl(bad, Api::kChat);
    ASSERT_FALSE(url) << bad;
    EXPECT_EQ(url.error().code, ErrorCode::kInvalidArgument);
  }
}

// vLLM's --endpoint: a server whose API lives at another path.
TEST(EndpointUrl, AnEndpointPathGoesBelowTheBase) {
  EXPECT_EQ(EndpointUrl("http://h:8000", Api::kChat, "/generate").value(),
            "http://h:8000/generate");
  EXPECT_EQ(EndpointUrl("http://h:8000/api/", Api::kChat, "/chat").value(),
            "http://h:8000/api/chat");
  EXPECT_EQ(EndpointUrl("http://h:8000?k=1", Api::kChat, "/generate").value(),
            "http://h:8000/generate?k=1");
  EXPECT_FALSE(EndpointUrl("http://h:8000", Api::kChat, "generate"));
  EXPECT_FALSE(EndpointUrl("http://h:8000", Api::kChat, "/a?b"));
}

TEST(HeaderFile, OneHeaderALineCommentsBlanksAndCarriageReturnsLeftOut) {
  EXPECT_EQ(HeaderFileLines("# mine\r\nX-A: 1\r\n\n   \nX-B: two words\n  # indented\nX-C:3"),
            (std::vector<std::string>{"X-A: 1", "X-B: two words", "X-C:3"}));
  EXPECT_TRUE(HeaderFileLines("").empty());
}

class ApiKeyTest : public ::testing::Test {
 protected:
  EnvLookup Env() {
    return [this](const std::string& name) {
      auto it = env_.find(name);
      return it == env_.end() ? std::string() : it->second;
    };
  }
  sys::MemoryFileSystem fs_;
  std::map<std::string, std::string> env_;
};

TEST_F(ApiKeyTest, FileThenNamedVariableThenTheApisOwn) {
  ASSERT_TRUE(fs_.WriteFileAtomic("/k", "  sk-file \n", 0600));
  env_ = {{"MINE", " sk-env "}, {"OPENAI_API_KEY", "sk-openai"}, {"ANTHROPIC_API_KEY", "sk-ant"}};
  EXPECT_EQ(ApiKey({.file = "/k", .env = "MINE"}, Api::kChat, fs_, Env()).value(), "sk-file");
  EXPECT_EQ(ApiKey({.env = "MINE"}, Api::kChat, fs_, Env()).value(), "sk-env");
  EXPECT_EQ(ApiKey({}, Api::kChat, fs_, Env()).value(), "sk-openai");
  EXPECT_EQ(ApiKey({}, Api::kAnthropic, fs_, Env()).value(), "sk-ant");
  env_.clear();
  EXPECT_EQ(ApiKey({}, Api::kChat, fs_, Env()).value(), "");  // none named, none set: no key
}

TEST_F(ApiKeyTest, ANamedKeyThatIsEmptyOrMissingIsAnError) {
  ASSERT_TRUE(fs_.WriteFileAtomic("/empty", " \n", 0600));
  auto empty_file = ApiKey({.file = "/empty"}, Api::kChat, fs_, Env());
  ASSERT_FALSE(empty_file);
  EXPECT_NE(empty_file.error().message.find("is empty"), std::string::npos);
  auto missing_file = ApiKey({.file = "/none"}, Api::kChat, fs_, Env());
  ASSERT_FALSE(missing_file);
  EXPECT_NE(missing_file.error().message.find("--api-key-file"), std::string::npos);
  auto unset = ApiKey({.env = "NOT_SET"}, Api::kChat, fs_, Env());
  ASSERT_FALSE(unset);
  EXPECT_EQ(unset.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unset.error().message.find("not set or empty"), std::string::npos);
  // The key itself given where its variable's name goes: refused, and never repeated.
  auto key_as_name = ApiKey({.env = "sk-proj-secret"}, Api::kChat, fs_, Env());
  ASSERT_FALSE(key_as_name);
  EXPECT_EQ(key_as_name.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(key_as_name.error().message.find("names an environment variable"), std::string::npos);
  EXPECT_EQ(key_as_name.error().message.find("secret"), std::string::npos)
      << key_as_name.error().message;
}

TEST(RequestSecrets, TheKeyAndEveryCredentialHeader) {
  EXPECT_EQ(RequestSecrets("sk-1", {"X-Trace: 7", "Authorization: Bearer tok-9", "X-Api-Key:  k-2 ",
                                    "Cookie: s=3", "X-Auth-Token: t-4"}),
            (std::vector<std::string>{"sk-1", "Bearer tok-9", "tok-9", "k-2", "s=3", "t-4"}));
  EXPECT_EQ(RequestSecrets("", {"Accept: text/plain", "Authorization:", "nocolon",
                                "X-Max-Tokens: 2048", "X-Api-Key: 12345"}),
            std::vector<std::string>{});
  // Gateways' own names for the same thing.
  EXPECT_EQ(RequestSecrets("", {"cf-aig-authorization: Bearer cf-1", "Helicone-Auth: h-2",
                                "X-Token: t-3", "X-Password: p-4"}),
            (std::vector<std::string>{"Bearer cf-1", "cf-1", "h-2", "t-3", "p-4"}));
}

TEST(RequestHeaders, KeyAsEachApiWantsItThenTheUsersOwn) {
  EXPECT_EQ(RequestHeaders(Api::kChat, "sk", {"X-A: 1"}).value(),
            (std::vector<std::string>{"Authorization: Bearer sk", "X-A: 1"}));
  EXPECT_EQ(RequestHeaders(Api::kAnthropic, "sk", {}).value(),
            (std::vector<std::string>{"x-api-key: sk", "anthropic-version: 2023-06-01"}));
  EXPECT_EQ(RequestHeaders(Api::kCompletions, "", {}).value(), std::vector<std::string>{});
  EXPECT_FALSE(RequestHeaders(Api::kChat, "sk\r\nX-Evil: 1", {}));
  // Refused without repeating what was given: a header is often a credential.
  for (const char* bad : {"Bearer sk-secret", ": sk-secret", "X-Key : sk-secret",
                          " X-Key: sk-secret", "X Key: sk-secret"}) {
    auto h = RequestHeaders(Api::kChat, "", {bad});
    ASSERT_FALSE(h) << bad;
    EXPECT_NE(h.error().message.find("is not 'Name: value'"), std::string::npos);
    EXPECT_EQ(h.error().message.find("secret"), std::string::npos) << h.error().message;
  }
  // A line break could add a header of its own: refused, saying so, by its name alone.
  for (const char* bad : {"Authorization: Bearer sk-secret\r\nC: d", "X-A\nX-B: sk-secret"}) {
    auto h = RequestHeaders(Api::kChat, "", {bad});
    ASSERT_FALSE(h) << bad;
    EXPECT_NE(h.error().message.find("holds a line break"), std::string::npos) << h.error().message;
    EXPECT_EQ(h.error().message.find("secret"), std::string::npos) << h.error().message;
  }
  EXPECT_NE(RequestHeaders(Api::kChat, "", {"Authorization: Bearer sk-secret\nX: 1"})
                .error()
                .message.find("header Authorization holds"),
            std::string::npos);
}

TEST(Goodput, ParsesEachSloAndRefusesTheRest) {
  const Slo slo = ParseGoodput({"ttft:200,tpot:50", "e2el:3000"}).value();
  EXPECT_EQ(slo.ttft_ms, 200);
  EXPECT_EQ(slo.tpot_ms, 50);
  EXPECT_EQ(slo.e2e_ms, 3000);
  EXPECT_FALSE(ParseGoodput({"ttft"}));
  EXPECT_FALSE(ParseGoodput({"ttft:-1"}));
  EXPECT_FALSE(ParseGoodput({"latency:5"}));
  // One bound per metric: a second was silently the one kept.
  for (const std::vector<std::string>& twice :
       {std::vector<std::string>{"ttft:5", "ttft:6"}, std::vector<std::string>{"e2el:5,e2e:6"}}) {
    const auto refused = ParseGoodput(twice);
    ASSERT_FALSE(refused) << twice[0];
    EXPECT_NE(refused.error().message.find("is given twice"), std::string::npos)
        << refused.error().message;
  }
}

TEST(Sweep, LevelsAndRequestsPerLevel) {
  EXPECT_EQ(SweepLevels({}, 16).value(), (std::vector<size_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(SweepLevels({}, 20).value(), (std::vector<size_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(SweepLevels({}, 1).value(), (std::vector<size_t>{1}));
  EXPECT_EQ(SweepLevels({}, SIZE_MAX).value().size(), 64U);  // no overflow past the top
  EXPECT_EQ(SweepLevels({3, 7}, 16).value(), (std::vector<size_t>{3, 7}));
  EXPECT_FALSE(SweepLevels({4, 0}, 16));
  EXPECT_FALSE(SweepLevels({}, 0));
  EXPECT_EQ(SweepRequests(0, 0, 1), 64U);    // at least 64
  EXPECT_EQ(SweepRequests(0, 0, 32), 128U);  // at least 4 per slot
  EXPECT_EQ(SweepRequests(500, 0, 32), 500U);
  EXPECT_EQ(SweepRequests(0, 10, 32), 0U);  // --duration bounds the level
}

TEST(Warmup, SameConcurrencyAsFastAsAllowedOffTheTraceClock) {
  const LoadShape measured{.concurrency = 8,
                           .rate = 5,
                           .trace_times = true,
                           .requests = 100,
                           .duration_s = 30,
                           .seed = 7};
  const LoadShape warm = WarmupShape(measured, 10);
  EXPECT_EQ(warm.concurrency, 8U);
  EXPECT_EQ(warm.requests, 10U);
  EXPECT_EQ(warm.rate, 0);
  EXPECT_EQ(warm.duration_s, 0);
  EXPECT_FALSE(warm.trace_times);
  EXPECT_EQ(warm.seed, 7U);
}

TEST(Replay, OneMarkerPerCopyUnlessTurnedOff) {
  const auto markers = ReplayMarkers(3, 1, false);
  ASSERT_EQ(markers.size(), 3U);
  EXPECT_NE(markers[0], markers[1]);
  EXPECT_NE(markers[1], markers[2]);
  EXPECT_FALSE(markers[0].empty());
  EXPECT_EQ(ReplayMarkers(3, 1, false), markers);  // the same seed gives the same markers
  EXPECT_NE(ReplayMarkers(1, 2, false)[0], markers[0]);
  EXPECT_EQ(ReplayMarkers(2, 1, true), (std::vector<std::string>{"", ""}));
}

}  // namespace
}  // namespace cmax::endpoint
