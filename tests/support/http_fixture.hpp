// A stand-in HTTP server for tests: HTTP/1.1 on 127.0.0.1 (a free port), one connection at a
// time, Connection: close. Every request is recorded (method, target, headers, body) and
// answered by the handler the test gives. The Kubernetes adapter's tests use it in place of an
// API server, which cannot be installed here.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

namespace cmax::testing {

struct FixtureRequest {
  std::string method;
  std::string target;                          // path and query, as sent
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::string Path() const { return target.substr(0, target.find('?')); }
  std::string Query() const {
    const size_t q = target.find('?');
    return q == std::string::npos ? "" : target.substr(q + 1);
  }
};

struct FixtureResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class HttpFixture {
 public:
  using Handler = std::function<FixtureResponse(const FixtureRequest&)>;

  explicit HttpFixture(Handler handler) : handler_(std::move(handler)) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener_, 16) != 0) {
      throw std::runtime_error("http fixture: cannot listen");
    }
    socklen_t len = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  HttpFixture(const HttpFixture&) = delete;
  HttpFixture& operator=(const HttpFixture&) = delete;
  ~HttpFixture() {
    stop_ = true;
    thread_.join();
    close(listener_);
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int Port() const { return port_; }

  std::vector<FixtureRequest> Requests() const {
    const std::lock_guard lock(mutex_);
    return requests_;
  }
  void ClearRequests() {
    const std::lock_guard lock(mutex_);
    requests_.clear();
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Answer(fd);
      close(fd);
    }
  }

  // Reads until `want` bytes or the header end are in `buffer`; false on EOF or a stall.
  static bool ReadMore(int fd, std::string& buffer) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return false;
    char chunk[8192];
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  }

  static void WriteAll(int fd, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  void Answer(int fd) {
    std::string buffer;
    size_t end = std::string::npos;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadMore(fd, buffer)) return;
    }
    FixtureRequest request;
    const std::string head = buffer.substr(0, end);
    buffer.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    const std::string first = head.substr(0, line_end);
    const size_t s1 = first.find(' ');
    const size_t s2 = first.find(' ', s1 + 1);
    request.method = first.substr(0, s1);
    request.target = first.substr(s1 + 1, s2 - s1 - 1);
    while (line_end != std::string::npos) {
      const size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      request.headers[name] = line.substr(v);
    }
    size_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end())
      length = std::stoul(it->second);
    if (auto it = request.headers.find("expect"); it != request.headers.end())
      WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    while (buffer.size() < length) {
      if (!ReadMore(fd, buffer)) return;
    }
    request.body = buffer.substr(0, length);
    FixtureResponse response = handler_(request);
    {
      const std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    WriteAll(fd, "HTTP/1.1 " + std::to_string(response.status) +
                     " Fixture\r\nContent-Type: " + response.content_type +
                     "\r\nContent-Length: " + std::to_string(response.body.size()) +
                     "\r\nConnection: close\r\n\r\n" + response.body);
  }

  Handler handler_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<FixtureRequest> requests_;
  std::thread thread_;
};

}  // namespace cmax::testing
