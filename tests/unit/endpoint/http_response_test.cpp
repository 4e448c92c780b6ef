// The client's HTTP/1.x response reader: every framing, keep-alive rules, interim answers, bad
// heads and chunk framing, each fed whole and split at every byte.
#include "endpoint/http_response.hpp"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace cmax::endpoint {
namespace {

struct Outcome {
  HttpResponseReader::State state;
  std::string body;
  size_t used = 0;
  int status = 0;
  bool keep_alive = false;
};

// Feeds `wire` in pieces of `step` bytes (0: whole), then closes the connection when asked.
Outcome Feed(const std::string& wire, size_t step, bool close = false) {
  HttpResponseReader r;
  Outcome out;
  const size_t piece = step == 0 ? wire.size() : step;
  for (size_t at = 0; at < wire.size(); at += piece) {
    const std::string_view bytes = std::string_view(wire).substr(at, piece);
    const size_t used = r.Feed(bytes);
    for (std::string_view b : r.Body()) out.body += b;
    out.used += used;
    if (used < bytes.size() || r.GetState() == HttpResponseReader::State::kDone ||
        r.GetState() == HttpResponseReader::State::kError) {
      break;
    }
  }
  if (close) r.Close();
  out.state = r.GetState();
  out.status = r.Status();
  out.keep_alive = r.KeepAlive();
  return out;
}

using State = HttpResponseReader::State;

TEST(HttpResponseReader, EveryFramingSplitAnywhere) {
  struct Case {
    std::string wire;
    bool close;
    State state;
    std::string body;
    int status;
    bool keep_alive;
  };
  const std::vector<Case> cases = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, State::kDone, "hello", 200,
       true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n!\r\n"
       "0\r\nx-trailer: t\r\n\r\n",
       false, State::kDone, "hello!", 200, true},
      {"HTTP/1.1 200 OK\nTransfer-Encoding: gzip, chunked\n\nA\n0123456789\n0\n\n", false,
       State::kDone, "0123456789", 200, true},
      {"HTTP/1.0 200 OK\r\n\r\nto the close", true, State::kDone, "to the close", 200, false},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false,
       State::kDone, "ok", 200, true},
      {"HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\nok", false, State::kDone,
       "ok", 200, false},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw", true, State::kDone, "raw", 200,
       false},
      {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nRetry-After: 2\r\n"
       "Content-Length: 0\r\n\r\n",
       false, State::kDone, "", 429, true},
      {"HTTP/1.1 204 No Content\r\n\r\n", false, State::kDone, "", 204, true},
      // repeated list headers are one list
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
       "2\r\nok\r\n0\r\n\r\n",
       false, State::kDone, "ok", 200, true},
      {"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 2"
       "\r\n\r\nok",
       false, State::kDone, "ok", 200, false},
      // suspect framing: read by the coding, the connection not used again
      {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n"
       "2\r\nok\r\n0\r\n\r\n",
       false, State::kDone, "ok", 200, false},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
       "2\r\nok\r\n0\r\n\r\n",
       false, State::kDone, "ok", 200, false},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc", false, State::kDone, "abc", 200, true},
      // cut short: the state says so
      {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", true, State::kBody, "abc", 200, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true, State::kBody, "hel",
       200, true},
      {"HTTP/1.1 200", true, State::kHead, "", 0, false},
      // bad
      {"SSH-2.0-OpenSSH\r\n\r\n", false, State::kError, "", 0, false},
      {"HTTP/2 200\r\n\r\n", false, State::kError, "", 0, false},
      {"HTTP/1.1 20x OK\r\n\r\n", false, State::kError, "", 0, false},
      {"HTTP/1.1 200 OK\r\nbad header\r\n\r\n", false, State::kError, "", 200, false},
      {"HTTP/1.1 200 OK\r\nA: 1\r\n folded\r\n\r\n", false, State::kError, "", 200, false},
      {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", false,
       State::kError, "", 200, false},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, State::kError, "", 200, false},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, State::kError, "", 200,
       false},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", false, State::kError,
       "ab", 200, false},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", false,
       State::kError, "", 200, false},
      {"HTTP/1.1 101 Switching\r\n\r\n", false, State::kError, "", 101, false},
  };
  for (const Case& c : cases) {
    for (size_t step : {size_t{0}, size_t{1}, size_t{2}, size_t{7}}) {
      const Outcome got = Feed(c.wire, step, c.close);
      EXPECT_EQ(got.state, c.state) << c.wire << " step " << step;
      EXPECT_EQ(got.body, c.body) << c.wire << " step " << step;
      EXPECT_EQ(got.status, c.status) << c.wire << " step " << step;
      EXPECT_EQ(got.keep_alive, c.keep_alive) << c.wire << " step " << step;
    }
  }
}

TEST(HttpResponseReader, HeadersAndWhatFollowsTheResponse) {
  HttpResponseReader r;
  const std::string wire =
      "HTTP/1.1 429 Slow Down\r\nRetry-After: 3\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 1\r\n\r\n"
      "!HTTP/1.1 200 OK";
  EXPECT_FALSE(r.Began());
  const size_t used = r.Feed(wire);
  EXPECT_TRUE(r.Began());
  EXPECT_EQ(used, wire.find("HTTP/1.1 200"));  // the rest is not this response's
  EXPECT_EQ(r.GetState(), State::kDone);
  EXPECT_EQ(r.Header("retry-after"), "3");
  EXPECT_EQ(r.Header("x-a"), "1");
  EXPECT_FALSE(r.Header("content-type"));
  EXPECT_EQ(r.Headers().size(), 4U);
  r.Reset();
  EXPECT_EQ(r.GetState(), State::kHead);
  EXPECT_EQ(r.Feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), 38U);
  EXPECT_EQ(r.Status(), 200);
}

TEST(HttpResponseReader, TheHeadIsKnownWhenTheBodyAfterItIsBad) {
  HttpResponseReader r;
  r.Feed("HTTP/1.1 503 Busy\r\nRetry-After: 4\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
  EXPECT_EQ(r.GetState(), State::kError);
  EXPECT_TRUE(r.HeadRead());
  EXPECT_EQ(r.Status(), 503);
  EXPECT_EQ(r.Header("retry-after"), "4");
  HttpResponseReader interim;
  interim.Feed("HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_FALSE(interim.HeadRead());  // not the answer yet
}

TEST(HttpResponseReader, AHeadOverTheLimitIsAnError) {
  HttpResponseReader r(1024);
  const std::string head = "HTTP/1.1 200 OK\r\nX: " + std::string(4000, 'a');
  for (size_t at = 0; at < head.size() && r.GetState() == State::kHead; at += 100) {
    r.Feed(std::string_view(head).substr(at, 100));
  }
  EXPECT_EQ(r.GetState(), State::kError);
  EXPECT_NE(r.Error().find("size limit"), std::string::npos);
}

}  // namespace
}  // namespace cmax::endpoint
