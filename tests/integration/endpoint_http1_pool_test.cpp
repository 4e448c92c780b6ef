// Http1Pool, cmax's own plain-HTTP/1.1 connections, against a raw TCP server written here, for
// what serve-sim does not do: a server that closes a kept-alive connection just as the next request
// goes out (the request is sent again once, over a fresh connection), and the request head on the
// wire (header rules as libcurl's, nothing injected through a header value).
#include <unistd.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

#include "endpoint/engine.hpp"
#include "support/free_port.hpp"
#include "support/wait.hpp"

namespace cmax::endpoint {
namespace {

// Answers every request with a whole chat completion; closes each connection after
// `answers_per_connection` answers without saying so (no "Connection: close"). Keeps the
// request heads it read.
class RawServer {
 public:
  explicit RawServer(int answers_per_connection) : per_connection_(answers_per_connection) {
    listener_ = testing::ListenOnLoopback(&port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/chat/completions?x=1";
  }
  int Connections() const { return connections_; }
  int Closed() const { return closed_; }  // connections the server has closed
  std::vector<std::string> Heads() {
    std::lock_guard<std::mutex> lock(mutex_);
    return heads_;
  }

 private:
  void Serve() {
    while (true) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      std::string in;
      for (int answered = 0; answered < per_connection_;) {
        char buffer[4096];
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0) break;
        in.append(buffer, static_cast<size_t>(n));
        const size_t end = in.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        const size_t length_at = in.find("Content-Length: ");
        const size_t length = std::stoul(in.substr(length_at + 16));
        if (in.size() < end + 4 + length) continue;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          heads_.push_back(in.substr(0, end));
        }
        in.erase(0, end + 4 + length);
        const std::string body = R"({"choices":[{"message":{"role":"assistant","content":"ok"}}],)"
                                 R"("usage":{"prompt_tokens":3,"completion_tokens":1}})";
        const std::string answer =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Content-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body;
        ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
        ++answered;
      }
      ::close(fd);
      ++closed_;
    }
  }

  int per_connection_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  std::mutex mutex_;
  std::vector<std::string> heads_;
  std::thread thread_;
};

// One call, waited for.
CallResult CallOnce(Engine& engine, const std::string& url, std::vector<std::string> headers = {}) {
  Call call;
  call.url = url;
  call.stream = false;
  call.body = R"({"model":"m","messages":[]})";
  call.headers = std::move(headers);
  engine.Start(1, std::move(call));
  std::vector<Completion> done;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (done.empty() && std::chrono::steady_clock::now() < until) {
    engine.Poll(std::chrono::steady_clock::now() + std::chrono::milliseconds(50), done);
  }
  EXPECT_EQ(done.size(), 1U);
  return done.empty() ? CallResult{} : std::move(done[0].result);
}

TEST(Http1Pool, AConnectionTheServerClosedIsReplacedOnce) {
  RawServer server(1);  // one answer per connection, then a silent close
  auto engine = Engine::Create({.timeout_s = 5});
  ASSERT_TRUE(engine);
  ASSERT_TRUE((*engine)->PinAddress(server.Url()));
  const CallResult first = CallOnce(**engine, server.Url());
  EXPECT_TRUE(first.timing.ok) << first.error_message;
  EXPECT_EQ(first.http_version, "1.1");
  // The server has closed the connection and the engine has not read since: the next request
  // finds it closed when taking it from the pool (or, in a race with the close, meets the close
  // on the send and is sent again once over a new connection), and is answered.
  ASSERT_TRUE(testing::WaitUntil([&] { return server.Closed() == 1; }));
  const CallResult second = CallOnce(**engine, server.Url());
  EXPECT_TRUE(second.timing.ok) << second.error_message;
  EXPECT_EQ(second.timing.output_tokens, 1U);
  EXPECT_EQ(server.Connections(), 2);
  EXPECT_EQ(server.Heads().size(), 2U);
}

TEST(Http1Pool, NoTimeoutMeansNoLimitAsWithLibcurl) {
  RawServer server(100);
  auto engine = Engine::Create({.connect_timeout_s = 0, .timeout_s = 0});
  ASSERT_TRUE(engine);
  const CallResult r = CallOnce(**engine, server.Url());
  EXPECT_TRUE(r.timing.ok) << r.error_message;
}

TEST(Http1Pool, AKeptAliveConnectionCarriesTheNextRequest) {
  RawServer server(100);
  auto engine = Engine::Create({.timeout_s = 5});
  ASSERT_TRUE(engine);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(CallOnce(**engine, server.Url()).timing.ok);
  EXPECT_EQ(server.Connections(), 1);
}

TEST(Http1Pool, TheRequestHeadFollowsLibcurlsHeaderRules) {
  RawServer server(100);
  auto engine = Engine::Create({.timeout_s = 5});
  ASSERT_TRUE(engine);
  const CallResult r =
      CallOnce(**engine, server.Url(),
               {"Content-Type: application/x-test", "Accept:", "Authorization: Bearer k",
                "X-Bad: a\r\nInjected: 1", "Content-Length: 1"});
  EXPECT_TRUE(r.timing.ok) << r.error_message;
  const auto heads = server.Heads();
  ASSERT_EQ(heads.size(), 1U);
  const std::string& head = heads[0];
  EXPECT_EQ(head.rfind("POST /v1/chat/completions?x=1 HTTP/1.1\r\n", 0), 0U) << head;
  EXPECT_NE(head.find("\r\nHost: 127.0.0.1:"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nContent-Type: application/x-test"), std::string::npos) << head;
  EXPECT_EQ(head.find("application/json"), std::string::npos) << head;
  EXPECT_EQ(head.find("Accept"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nAuthorization: Bearer k"), std::string::npos) << head;
  EXPECT_EQ(head.find("Injected"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nContent-Length: 27"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length: 1\r"), std::string::npos) << head;
}

}  // namespace
}  // namespace cmax::endpoint
