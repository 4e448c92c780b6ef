// The outcome of a call, decided from what its transfer saw: one table row per rule, and every
// class the engine gives produced by at least one row.
#include "endpoint/outcome.hpp"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include "endpoint/curl_transport.hpp"

namespace cmax::endpoint {
namespace {

// A streamed 200 that ended well: the base every stream row changes one fact of.
ExchangeFacts GoodStream() {
  ExchangeFacts f;
  f.http_status = 200;
  f.stream = true;
  f.saw_done = true;
  f.saw_finish = true;
  f.any_chunk = true;
  return f;
}

ExchangeFacts GoodWhole() {
  ExchangeFacts f;
  f.http_status = 200;
  return f;
}

struct Row {
  const char* name;
  ExchangeFacts facts;
  ErrorClass expected;
  std::string message;  // a part of the message it must give
};

template <typename Change>
ExchangeFacts With(ExchangeFacts f, Change change) {
  change(f);
  return f;
}

std::vector<Row> Rows() {
  return {
      {"a stream that ended well", GoodStream(), ErrorClass::kNone, ""},
      {"a stream ended by [DONE] alone", With(GoodStream(), [](auto& f) { f.saw_finish = false; }),
       ErrorClass::kNone, ""},
      {"a stream ended by a finish_reason alone",
       With(GoodStream(), [](auto& f) { f.saw_done = false; }), ErrorClass::kNone, ""},
      {"a whole answer that is a completion", GoodWhole(), ErrorClass::kNone, ""},
      {"the host did not resolve",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kDns;
              f.transport_why = "no such host";
            }),
       ErrorClass::kDns, "no such host"},
      {"the connection was refused",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kConnect;
              f.transport_why = "refused";
            }),
       ErrorClass::kConnect, "refused"},
      {"the handshake failed",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kTls;
              f.transport_why = "bad cert";
            }),
       ErrorClass::kTls, "bad cert"},
      {"a deadline passed",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kTimeout;
              f.transport_why = "no byte";
            }),
       ErrorClass::kTimeout, "no byte"},
      {"the connection broke mid-answer",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kTruncated;
              f.transport_why = "reset";
            }),
       ErrorClass::kTruncated, "reset"},
      {"the transport failed otherwise",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kOther;
              f.transport_why = "refused by libcurl";
            }),
       ErrorClass::kOther, "refused by libcurl"},
      {"a whole answer over the body limit, even with a transport failure",
       With(GoodWhole(),
            [](auto& f) {
              f.too_big = true;
              f.transport_failure = ErrorClass::kMalformed;
            }),
       ErrorClass::kMalformed, "body limit"},
      {"a refused head, before the status is read",
       With(GoodStream(),
            [](auto& f) {
              f.bad_head = "a malformed Content-Length";
              f.http_status = 503;
            }),
       ErrorClass::kMalformed, "Content-Length"},
      {"the transport's failure before the status",
       With(GoodStream(),
            [](auto& f) {
              f.transport_failure = ErrorClass::kTimeout;
              f.http_status = 503;
            }),
       ErrorClass::kTimeout, ""},
      {"408", With(GoodStream(), [](auto& f) { f.http_status = 408; }), ErrorClass::kHttp408,
       "HTTP 408"},
      {"409", With(GoodStream(), [](auto& f) { f.http_status = 409; }), ErrorClass::kHttp409,
       "HTTP 409"},
      {"429 with its body's message",
       With(GoodStream(),
            [](auto& f) {
              f.http_status = 429;
              f.body = R"({"error":{"message":"slow down"}})";
            }),
       ErrorClass::kHttp429, "HTTP 429: slow down"},
      {"404", With(GoodWhole(), [](auto& f) { f.http_status = 404; }), ErrorClass::kHttp4xx,
       "HTTP 404"},
      {"400", With(GoodWhole(), [](auto& f) { f.http_status = 400; }), ErrorClass::kHttp4xx,
       "HTTP 400"},
      {"500", With(GoodWhole(), [](auto& f) { f.http_status = 500; }), ErrorClass::kHttp5xx,
       "HTTP 500"},
      {"599", With(GoodWhole(), [](auto& f) { f.http_status = 599; }), ErrorClass::kHttp5xx,
       "HTTP 599"},
      {"a 204", With(GoodWhole(), [](auto& f) { f.http_status = 204; }), ErrorClass::kHttpOther,
       "HTTP 204"},
      {"a 302", With(GoodWhole(), [](auto& f) { f.http_status = 302; }), ErrorClass::kHttpOther,
       "HTTP 302"},
      {"no status at all", With(GoodWhole(), [](auto& f) { f.http_status = 0; }),
       ErrorClass::kHttpOther, "HTTP 0"},
      {"an error event in a 200 stream, before everything else in it",
       With(GoodStream(),
            [](auto& f) {
              f.stream_error = "engine died";
              f.malformed_event = true;
              f.saw_done = false;
              f.saw_finish = false;
            }),
       ErrorClass::kStreamError, "engine died"},
      {"an event that is not JSON", With(GoodStream(), [](auto& f) { f.malformed_event = true; }),
       ErrorClass::kMalformed, "not JSON"},
      {"an event over the size limit",
       With(GoodStream(), [](auto& f) { f.oversized_event = true; }), ErrorClass::kMalformed,
       "size limit"},
      {"no end marker",
       With(GoodStream(),
            [](auto& f) {
              f.saw_done = false;
              f.saw_finish = false;
            }),
       ErrorClass::kTruncated, "end marker"},
      {"the stream ended inside an event",
       With(GoodStream(), [](auto& f) { f.cut_in_event = true; }), ErrorClass::kTruncated,
       "end marker"},
      {"an end marker and no chunk", With(GoodStream(), [](auto& f) { f.any_chunk = false; }),
       ErrorClass::kTruncated, "no answer"},
      {"a whole answer with an error",
       With(GoodWhole(), [](auto& f) { f.whole_error = "bad model"; }), ErrorClass::kStreamError,
       "bad model"},
      {"a whole answer that is not a completion",
       With(GoodWhole(), [](auto& f) { f.whole_malformed = true; }), ErrorClass::kMalformed,
       "not a completion"},
      {"stream facts do not count for a whole answer",
       With(GoodWhole(),
            [](auto& f) {
              f.malformed_event = true;
              f.any_chunk = false;
            }),
       ErrorClass::kNone, ""},
  };
}

TEST(Outcome, EveryRuleOfTheTable) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.name);
    const Outcome o = ClassifyOutcome(row.facts);
    EXPECT_EQ(ErrorClassName(o.error_class), ErrorClassName(row.expected));
    if (row.expected == ErrorClass::kNone) {
      EXPECT_TRUE(o.message.empty()) << o.message;
    } else {
      EXPECT_NE(o.message.find(row.message), std::string::npos) << o.message;
    }
  }
}

TEST(Outcome, EveryClassTheEngineGivesHasARow) {
  std::set<ErrorClass> produced;
  for (const Row& row : Rows()) produced.insert(ClassifyOutcome(row.facts).error_class);
  for (int i = 0; i <= static_cast<int>(kLastErrorClass); ++i) {
    const auto c = static_cast<ErrorClass>(i);
    if (c == ErrorClass::kCancelled) continue;  // the load shape's, for calls it never ended
    EXPECT_TRUE(produced.count(c) > 0) << "no row gives " << ErrorClassName(c);
  }
}

TEST(Outcome, NamesAreDistinctAndOnlyNoneIsEmpty) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(kLastErrorClass); ++i) {
    const std::string name(ErrorClassName(static_cast<ErrorClass>(i)));
    EXPECT_EQ(name.empty(), i == 0) << i;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
}

TEST(Outcome, RetriedAsTheOpenAiSdkRetries) {
  const std::set<ErrorClass> retried = {ErrorClass::kHttp408, ErrorClass::kHttp409,
                                        ErrorClass::kHttp429, ErrorClass::kHttp5xx,
                                        ErrorClass::kConnect, ErrorClass::kTimeout};
  for (int i = 0; i <= static_cast<int>(kLastErrorClass); ++i) {
    const auto c = static_cast<ErrorClass>(i);
    EXPECT_EQ(Retryable(c), retried.count(c) > 0) << ErrorClassName(c);
  }
}

TEST(Outcome, LibcurlErrorsByClass) {
  struct CurlRow {
    CURLcode code;
    bool answered;
    ErrorClass expected;
  };
  const CurlRow rows[] = {
      {CURLE_COULDNT_RESOLVE_HOST, false, ErrorClass::kDns},
      {CURLE_COULDNT_RESOLVE_PROXY, false, ErrorClass::kDns},
      {CURLE_COULDNT_CONNECT, false, ErrorClass::kConnect},
      {CURLE_OPERATION_TIMEDOUT, true, ErrorClass::kTimeout},
      {CURLE_PEER_FAILED_VERIFICATION, false, ErrorClass::kTls},
      {CURLE_SSL_CONNECT_ERROR, false, ErrorClass::kTls},
      {CURLE_WEIRD_SERVER_REPLY, true, ErrorClass::kMalformed},
      {CURLE_WRITE_ERROR, true, ErrorClass::kMalformed},
      {CURLE_RECV_ERROR, true, ErrorClass::kTruncated},
      {CURLE_RECV_ERROR, false, ErrorClass::kConnect},  // broke before any answer
      {CURLE_GOT_NOTHING, false, ErrorClass::kConnect},
      {CURLE_PARTIAL_FILE, true, ErrorClass::kTruncated},
      {CURLE_HTTP2_STREAM, true, ErrorClass::kTruncated},
      {CURLE_ABORTED_BY_CALLBACK, true, ErrorClass::kOther},
  };
  for (const CurlRow& row : rows) {
    EXPECT_EQ(ErrorClassName(CurlErrorClass(row.code, row.answered)), ErrorClassName(row.expected))
        << row.code << (row.answered ? " answered" : "");
  }
}

TEST(Outcome, LibcurlMillisNeverRoundToNoLimit) {
  EXPECT_EQ(CurlMillis(0.0004, false), 1);
  EXPECT_EQ(CurlMillis(0, false), 0);              // libcurl's "no limit"
  EXPECT_GT(CurlMillis(0, true), 1'000'000'000L);  // a connect timeout of 0: the longest
  EXPECT_EQ(CurlMillis(2.5, false), 2500);
  EXPECT_EQ(HttpVersionName(CURL_HTTP_VERSION_2_0), "2");
  EXPECT_EQ(HttpVersionName(0), "");
}

}  // namespace
}  // namespace cmax::endpoint
