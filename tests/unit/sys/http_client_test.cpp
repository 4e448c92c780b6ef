// The libcurl client against real servers on loopback: the HTTP fixture for requests and
// bodies, and `openssl s_server` with a certificate made for the test for TLS: trusted by a CA
// file, by PEM in memory, refused without either, accepted when told to skip verification.
#include "sys/http_client.hpp"

#include <unistd.h>

#include <arpa/inet.h>
#include <fstream>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <thread>

#include "support/free_port.hpp"
#include "support/http_fixture.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/process_runner.hpp"

namespace cmax::sys {
namespace {

using namespace std::chrono_literals;

TEST(HttpClient, SendsMethodHeadersAndBodyAndReadsAnyStatus) {
  testing::HttpFixture server([](const testing::FixtureRequest& r) {
    return testing::FixtureResponse{r.method == "PATCH" ? 409 : 200, "echo:" + r.body};
  });
  CurlHttpClient client;
  auto r = client.Send({.method = "PATCH",
                        .url = server.Url() + "/a/b?x=1",
                        .headers = {"Content-Type: application/merge-patch+json", "X-Y: z"},
                        .body = R"({"a":1})"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(r->body, R"(echo:{"a":1})");
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].target, "/a/b?x=1");
  EXPECT_EQ(requests[0].headers.at("content-type"), "application/merge-patch+json");
  EXPECT_EQ(requests[0].headers.at("x-y"), "z");
  // A body larger than curl's Expect: 100-continue threshold arrives whole.
  const std::string big(200'000, 'x');
  r = client.Send({.method = "POST", .url = server.Url() + "/big", .body = big});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body.size(), big.size() + 5);
  r = client.Send({.method = "DELETE", .url = server.Url() + "/gone"});
  ASSERT_TRUE(r);
  EXPECT_EQ(server.Requests().back().body, "");
}

TEST(HttpClient, NoAnswerIsUnavailableAndNoSecretIsInTheMessage) {
  CurlHttpClient client;
  auto r = client.Send({.url = "http://admin:pa55word@127.0.0.1:1/x?token=t0ken",
                        .headers = {"Authorization: Bearer s3cret"},
                        .timeout = 2s});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("http://127.0.0.1:1/x"), std::string::npos) << r.error().message;
  for (const char* secret : {"s3cret", "pa55word", "admin", "t0ken"}) {
    EXPECT_EQ(r.error().message.find(secret), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(client.Send({.url = "ftp://127.0.0.1/x"}));  // only http and https
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HttpClient, TlsTrustsOnlyWhatItIsGiven) {
  testing::TempDir dir;
  PosixProcessRunner runner;
  auto made =
      runner.Run({.argv = {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                           dir.File("key.pem"), "-out", dir.File("cert.pem"), "-days", "1", "-subj",
                           "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"}});
  ASSERT_TRUE(made && made->Succeeded()) << (made ? made->stderr_text : made.error().message);
  const int port = testing::FreePort();
  auto server = SpawnDaemon(
      {.argv = {FindProgram("openssl"), "s_server", "-quiet", "-www", "-accept",
                std::to_string(port), "-cert", dir.File("cert.pem"), "-key", dir.File("key.pem")},
       .log_path = dir.File("s_server.log")});
  ASSERT_TRUE(server) << server.error().message;
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/";
  // Wait until it listens.
  CurlHttpClient insecure({.insecure = true});
  ASSERT_TRUE(testing::WaitForPort(port)) << "openssl s_server did not listen";
  EXPECT_TRUE(insecure.Send({.url = url, .timeout = 2s}).has_value());

  CurlHttpClient by_file({.ca_file = dir.File("cert.pem")});
  auto r = by_file.Send({.url = url, .timeout = 5s});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  CurlHttpClient by_pem({.ca_pem = Slurp(dir.File("cert.pem"))});
  r = by_pem.Send({.url = url, .timeout = 5s});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  CurlHttpClient untrusted({.ca_file = "/dev/null"});
  r = untrusted.Send({.url = url, .timeout = 5s});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  kill(*server, SIGTERM);
}

}  // namespace
}  // namespace cmax::sys
