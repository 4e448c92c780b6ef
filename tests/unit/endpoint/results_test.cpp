// What a load run's summary and findings say: a run whose every request failed fails and shows
// the first failure; the client's CPU share only over a run long enough to measure it.
#include "endpoint/results.hpp"

#include <gtest/gtest.h>

namespace cmax::endpoint {
namespace {

RequestRecord Failed(uint64_t index, long status, ErrorClass error_class,
                     const std::string& message) {
  RequestRecord r;
  r.index = index;
  r.http_status = status;
  r.http_version = status != 0 ? "1.1" : "";
  r.timing.ok = false;
  r.timing.error = error_class;
  r.error_message = message;
  return r;
}

RequestRecord Completed(uint64_t index) {
  RequestRecord r;
  r.index = index;
  r.http_status = 200;
  r.timing = {.sent_s = 0,
              .first_byte_s = 0.01,
              .first_chunk_s = 0.01,
              .first_token_s = 0.01,
              .chunk_s = {0.01, 0.02},
              .output_tokens = 2,
              .ok = true};
  return r;
}

// The endpoint.errors finding, by value: the findings are a temporary.
Finding Errors(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.check_id == "endpoint.errors") return f;
  }
  ADD_FAILURE() << "no endpoint.errors finding";
  return {};
}

TEST(LoadSummary, EveryRequestFailedIsAFailureThatShowsTheFirst) {
  LoadResult run;
  run.duration_s = 1;
  // Completion order is not sending order: the first failure is the one sent first.
  run.records = {Failed(3, 404, ErrorClass::kHttp4xx, "HTTP 404: later"),
                 Failed(0, 404, ErrorClass::kHttp4xx, "HTTP 404: {\"detail\":\"Not Found\"}"),
                 Failed(1, 0, ErrorClass::kConnect, "Connection refused")};
  const LoadSummary s = Summarize(run, {}, std::nullopt);
  EXPECT_EQ(s.failed, 3U);
  EXPECT_EQ(s.first_failure, "HTTP/1.1 404: {\"detail\":\"Not Found\"}");
  const Finding errors = Errors(LoadFindings(s));
  EXPECT_EQ(errors.status, CheckStatus::kFail);
  EXPECT_EQ(errors.severity, Severity::kHigh);
  EXPECT_NE(errors.message.find("every request failed; the first: HTTP/1.1 404"), std::string::npos)
      << errors.message;
  EXPECT_NE(SummaryText({}, s).find("first failure   HTTP/1.1 404: {\"detail\""),
            std::string::npos);
}

TEST(LoadSummary, SomeFailedIsAWarningAndNoneIsAPass) {
  LoadResult run;
  run.duration_s = 1;
  run.records = {Completed(0), Failed(1, 0, ErrorClass::kConnect, "Connection refused")};
  const LoadSummary some = Summarize(run, {}, std::nullopt);
  EXPECT_EQ(some.first_failure, "connect: Connection refused");
  EXPECT_EQ(Errors(LoadFindings(some)).status, CheckStatus::kWarn);
  run.records = {Completed(0), Completed(1)};
  const LoadSummary none = Summarize(run, {}, std::nullopt);
  EXPECT_TRUE(none.first_failure.empty());
  EXPECT_EQ(Errors(LoadFindings(none)).status, CheckStatus::kPass);
  EXPECT_EQ(SummaryText({}, none).find("first failure"), std::string::npos);
}

TEST(LoadSummary, AFailureIsShownOnOneShortLine) {
  const std::string body = "line one\nline two\x1b[31m" + std::string(1000, 'x');
  const std::string shown = FailureText(Failed(0, 500, ErrorClass::kHttp5xx, "HTTP 500: " + body));
  EXPECT_EQ(shown.find('\n'), std::string::npos);
  EXPECT_EQ(shown.find('\x1b'), std::string::npos);
  EXPECT_LE(shown.size(), 310U);
  EXPECT_TRUE(shown.starts_with("HTTP/1.1 500: line one line two")) << shown;
  EXPECT_TRUE(shown.ends_with("...")) << shown;
}

// A 200 without a single choice chunk failed (as the metrics count it): it is the first failure.
TEST(LoadSummary, AnEmptyStreamIsAFailureToo) {
  LoadResult run;
  run.duration_s = 1;
  RequestRecord empty;
  empty.http_status = 200;
  empty.timing.ok = true;  // answered, but nothing in it
  run.records = {empty};
  const LoadSummary s = Summarize(run, {}, std::nullopt);
  EXPECT_EQ(s.failed, 1U);
  EXPECT_EQ(s.first_failure, "empty-stream: the answer carried no completion");
  EXPECT_EQ(Errors(LoadFindings(s)).status, CheckStatus::kFail);
}

TEST(LoadSummary, AKeyEchoedByTheServerIsRedactedWhereverItIsShownOrWritten) {
  LoadResult run;
  run.duration_s = 1;
  run.records = {
      Failed(0, 401, ErrorClass::kHttp4xx, "HTTP 401: invalid key sk-secret-123 (sk-secret-123)"),
      Failed(1, 401, ErrorClass::kHttp4xx, "HTTP 401: auth=Bearer sk-secret-123 tok=abcd-77")};
  RedactSecrets(run, {"sk-secret-123", "Bearer abcd-77", "abcd-77"});
  // Each request's error: what the output and requests files hold; the summary is made from them.
  EXPECT_EQ(run.records[0].error_message, "HTTP 401: invalid key [redacted] ([redacted])");
  EXPECT_EQ(run.records[1].error_message, "HTTP 401: auth=Bearer [redacted] tok=[redacted]");
  const LoadSummary s = Summarize(run, {}, std::nullopt);
  EXPECT_EQ(s.first_failure, "HTTP/1.1 401: invalid key [redacted] ([redacted])");
  EXPECT_EQ(ResultJson({}, run, s).dump().find("sk-secret"), std::string::npos);
  RedactSecrets(run, {"", "abc"});  // no key, or one too short to tell from words
  EXPECT_EQ(run.records[0].error_message, "HTTP 401: invalid key [redacted] ([redacted])");
}

// Echoed inside the server's JSON (escaped: '"', '\\', or '/' as some encoders write it) or
// as it sat in a query string (percent-encoded), the key is still the key.
TEST(LoadSummary, AKeyEchoedEscapedOrPercentEncodedIsRedactedToo) {
  const std::string key = R"(sk/a"b\c+d=)";
  LoadResult run;
  run.duration_s = 1;
  run.records = {
      Failed(0, 401, ErrorClass::kHttp4xx, R"(HTTP 401: {"key": "sk/a\"b\\c+d="})"),
      Failed(1, 401, ErrorClass::kHttp4xx, R"(HTTP 401: {"key": "sk\/a\"b\\c+d="})"),
      Failed(2, 401, ErrorClass::kHttp4xx, "HTTP 401: ?key=sk%2Fa%22b%5Cc%2Bd%3D rejected"),
      Failed(3, 401, ErrorClass::kHttp4xx, "HTTP 401: ?key=sk%2fa%22b%5cc%2bd%3d rejected")};
  RedactSecrets(run, {key});
  EXPECT_EQ(run.records[0].error_message, R"(HTTP 401: {"key": "[redacted]"})");
  EXPECT_EQ(run.records[1].error_message, R"(HTTP 401: {"key": "[redacted]"})");
  EXPECT_EQ(run.records[2].error_message, "HTTP 401: ?key=[redacted] rejected");
  EXPECT_EQ(run.records[3].error_message, "HTTP 401: ?key=[redacted] rejected");
}

// Go's encoder writes '&', '<' and '>' as \u0026, \u003c, \u003e; Python's writes non-ASCII as
// \uXXXX (a surrogate pair beyond the first plane): the key is still the key.
TEST(LoadSummary, AKeyEchoedByGoOrPythonEncodersIsRedactedToo) {
  const std::string key = "sk&a<b>c\u00e9\U0001F511";
  LoadResult run;
  run.duration_s = 1;
  run.records = {
      Failed(0, 401, ErrorClass::kHttp4xx,
             R"(HTTP 401: {"key":"sk\u0026a\u003cb\u003ec)"
             "\u00e9\U0001F511"
             R"("})"),
      Failed(1, 401, ErrorClass::kHttp4xx, R"(HTTP 401: {"key": "sk&a<b>c\u00e9\ud83d\udd11"})"),
      Failed(2, 401, ErrorClass::kHttp4xx,
             R"(HTTP 401: {"key":"sk\u0026a\u003cb\u003ec\u00e9\ud83d\udd11"})")};
  RedactSecrets(run, {key});
  EXPECT_EQ(run.records[0].error_message, R"(HTTP 401: {"key":"[redacted]"})");
  EXPECT_EQ(run.records[1].error_message, R"(HTTP 401: {"key": "[redacted]"})");
  EXPECT_EQ(run.records[2].error_message, R"(HTTP 401: {"key":"[redacted]"})");
}

TEST(LoadSummary, AKeyCutShortWithTheServersBodyIsRedactedToo) {
  // The engine keeps the start of an error body (200 bytes): a long key may end it, cut.
  const std::string key = "sk-" + std::string(160, 'k');
  std::string body = std::string(150, '.') + " key " + key;
  body.resize(200);
  LoadResult run;
  run.duration_s = 1;
  run.records = {Failed(0, 401, ErrorClass::kHttp4xx, body)};
  RedactSecrets(run, {key});
  EXPECT_EQ(run.records[0].error_message.find("sk-kkk"), std::string::npos)
      << run.records[0].error_message;
  EXPECT_TRUE(run.records[0].error_message.ends_with(" key [redacted]"));
  // A key that is itself within "[redacted]" ends: it is not found again in what replaced it.
  run.records = {Failed(0, 401, ErrorClass::kHttp4xx, "bad key: redacted")};
  RedactSecrets(run, {"redacted"});
  EXPECT_EQ(run.records[0].error_message, "bad key: [redacted]");
}

TEST(LoadSummary, ClientCpuShareOnlyOverAMeasurableRun) {
  LoadResult run;
  run.records = {Failed(0, 0, ErrorClass::kConnect, "Connection refused")};
  run.client_cpu_s = 0.0031;  // start-up over a refused port: "154% of a core" before
  run.duration_s = 0.002;
  const LoadSummary brief = Summarize(run, {}, std::nullopt);
  EXPECT_FALSE(brief.client_cpu_share.has_value());
  for (const std::string& w : brief.warnings) EXPECT_EQ(w.find("of a core"), std::string::npos);
  EXPECT_NE(SummaryText({}, brief).find("share not measured"), std::string::npos);
  EXPECT_TRUE(ResultJson({}, run, brief)["cmax"]["client"]["cpu_share_of_core"].is_null());
  run.duration_s = 2;
  run.client_cpu_s = 1;
  const LoadSummary measured = Summarize(run, {}, std::nullopt);
  ASSERT_TRUE(measured.client_cpu_share.has_value());
  EXPECT_DOUBLE_EQ(*measured.client_cpu_share, 0.5);
  EXPECT_NE(SummaryText({}, measured).find("(50% of a core)"), std::string::npos);
}

}  // namespace
}  // namespace cmax::endpoint
