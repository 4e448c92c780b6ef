// serve-sim's request parser: whole requests from bytes split anywhere, keep-alive rules,
// pipelining, and the bounded errors a server answers bad requests with.
#include "endpoint/http_request.hpp"

#include <gtest/gtest.h>

namespace cmax::endpoint {
namespace {

const std::string kPost =
    "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
    "Content-Length: 11\r\nX-Thing:  spaced  \r\n\r\n{\"a\": true}";

TEST(HttpRequestParser, ReadsARequestSplitAtEveryByte) {
  HttpRequestParser whole;
  EXPECT_EQ(whole.Feed(kPost), kPost.size());
  ASSERT_EQ(whole.GetState(), HttpRequestParser::State::kDone);
  HttpRequestParser split;
  for (size_t i = 0; i < kPost.size(); ++i) {
    ASSERT_EQ(split.GetState(), HttpRequestParser::State::kNeedMore) << i;
    EXPECT_EQ(split.Feed(kPost.substr(i, 1)), 1U);
  }
  ASSERT_EQ(split.GetState(), HttpRequestParser::State::kDone);
  for (HttpRequest* r : {&whole.Request(), &split.Request()}) {
    EXPECT_EQ(r->method, "POST");
    EXPECT_EQ(r->Path(), "/v1/chat/completions");
    EXPECT_EQ(r->body, "{\"a\": true}");
    EXPECT_EQ(r->Header("x-thing"), "spaced");
    EXPECT_TRUE(r->keep_alive);
  }
}

TEST(HttpRequestParser, StopsAtTheEndOfOneRequest) {
  const std::string two = kPost + "GET /health HTTP/1.1\r\n\r\n";
  HttpRequestParser p;
  const size_t used = p.Feed(two);
  EXPECT_EQ(used, kPost.size());
  p.Reset();
  EXPECT_EQ(p.Feed(std::string_view(two).substr(used)), two.size() - used);
  EXPECT_EQ(p.GetState(), HttpRequestParser::State::kDone);
  EXPECT_EQ(p.Request().target, "/health");
}

TEST(HttpRequestParser, KeepAliveFollowsTheVersionAndConnectionHeader) {
  const auto keep = [](const std::string& head) {
    HttpRequestParser p;
    p.Feed(head + "\r\n");
    EXPECT_EQ(p.GetState(), HttpRequestParser::State::kDone) << head;
    return p.Request().keep_alive;
  };
  EXPECT_TRUE(keep("GET / HTTP/1.1\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.1\r\nConnection: close\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.0\r\n"));
  EXPECT_TRUE(keep("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n"));
  EXPECT_TRUE(keep("GET / HTTP/1.1\n"));  // bare LF line ends are accepted
}

TEST(HttpRequestParser, ContentLengthGivenAgainWithTheSameValueIsOneLength) {
  for (const std::string head : {"Content-Length: 2\r\nContent-Length: 2\r\n",
                                 "Content-Length: 2, 2\r\n", "content-length:2 \r\n"}) {
    HttpRequestParser p(1024);
    p.Feed("POST / HTTP/1.1\r\n" + head + "\r\n{}GET");
    ASSERT_EQ(p.GetState(), HttpRequestParser::State::kDone) << head;
    EXPECT_EQ(p.Request().body, "{}");
    EXPECT_EQ(p.Request().Header("content-length"), "2");
  }
}

TEST(HttpRequestParser, BadRequestsGetTheirStatus) {
  const auto status = [](const std::string& bytes, size_t max_body = 1024) {
    HttpRequestParser p(max_body);
    p.Feed(bytes);
    EXPECT_EQ(p.GetState(), HttpRequestParser::State::kError) << bytes.substr(0, 40);
    return p.ErrorStatus();
  };
  EXPECT_EQ(status("NONSENSE\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: x1\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: \r\n\r\n"), 400);
  // Lengths that disagree: two readers of these bytes could see two different requests.
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 2, 40\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 2,\r\n\r\n"), 400);
  // A name is a token up to its colon; a folded line continues none.
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\n Content-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nX-A: 1\r\n\tfolded: x\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nX\x01A: 1\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"), 413);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 501);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nX: " + std::string(70 << 10, 'a')), 431);
}

}  // namespace
}  // namespace cmax::endpoint
