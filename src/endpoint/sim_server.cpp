#include "endpoint/sim_server.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <queue>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <vector>

#include "core/clock.hpp"
#include "core/log.hpp"
#include "endpoint/prefix_cache.hpp"
#include "sys/metrics_server.hpp"

namespace cmax::endpoint {
namespace {

constexpr size_t kMaxOutput = size_t{32} << 20;  // a client that stops reading is dropped
constexpr int64_t kSweepNs = 100'000'000;        // how often the timeouts are looked at
constexpr size_t kMaxPipelined = size_t{1} << 20;
constexpr size_t kHugeLineBytes = size_t{10} << 20;
// A stream is made a slice at a time, so that one answer of a million tokens (decode 0, or far
// behind its schedule) neither holds the loop while every other client waits nor piles up
// faster than its client reads: the next slice is made once this one is in the socket.
constexpr size_t kSliceBytes = size_t{256} << 10;
// A byte-split or trickled answer is made whole before it is sent a byte at a time: it is cut to
// this many tokens (the usage it reports says so), and byte-split sends this many bytes a turn.
constexpr uint64_t kMaxDribbleTokens = 1024;
constexpr size_t kDribbleBytesPerTurn = 4096;

enum class Phase { kIdle, kStream, kWhole, kDribble };

struct Conn {
  int fd = -1;
  HttpRequestParser parser;
  std::string in;  // bytes received while an answer is under way (pipelining)
  std::string out;
  size_t out_off = 0;
  bool writing = false;            // EPOLLOUT registered
  bool make_when_written = false;  // the next slice of a stream waits for the socket to drain
  bool close_after_flush = false;
  Phase phase = Phase::kIdle;
  uint64_t serial = 0;  // of the answer under way; a timer for another one is stale
  SimRequest request;
  SimFault fault = SimFault::kNone;
  SimUsage usage;
  std::string id;
  uint64_t next_token = 0;
  int64_t due_ns = 0;    // when the stream's next token is due
  int64_t timer_ns = 0;  // when its timer fires: a timer for another moment is stale
  bool chunked = true;
  bool keep_alive = true;
  int64_t active_ns = 0;         // the last byte that came or went
  int64_t request_began_ns = 0;  // the first byte of the request being read
};

struct Timer {
  int64_t due_ns;
  int fd;
  uint64_t serial;
  bool operator>(const Timer& other) const { return due_ns > other.due_ns; }
};

}  // namespace

struct SimServer::Impl {
  SimConfig config;
  int listen_fd = -1;
  int port = 0;
  int epoll_fd = -1;
  int timer_fd = -1;
  std::vector<std::unique_ptr<Conn>> conns;  // by fd
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  int64_t armed_ns = 0;
  PrefixCache cache;
  std::mt19937_64 rng;
  uint64_t serials = 0;
  SimStats stats;
  bool accept_paused = false;
  int64_t accept_resume_ns = 0;
  size_t open_conns = 0;
  int64_t next_sweep_ns = 0;

  explicit Impl(const SimConfig& c)
      : config(c), cache(c.block_tokens, c.cache_blocks), rng(c.seed) {}

  ~Impl() {
    for (auto& c : conns) {
      if (c) ::close(c->fd);
    }
    for (const int fd : {listen_fd, epoll_fd, timer_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void Watch(Conn& c) const {
    epoll_event ev{};
    ev.events = EPOLLIN | (c.writing ? EPOLLOUT : 0U);
    ev.data.fd = c.fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void Close(int fd) {
    if (fd < 0 || static_cast<size_t>(fd) >= conns.size() || !conns[fd]) return;
    if (conns[fd]->phase != Phase::kIdle) --stats.open_streams;
    ::close(fd);
    conns[fd].reset();
    --open_conns;
  }

  // Sends what is queued; false when the connection was closed.
  bool Flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_off += static_cast<size_t>(n);
        c.active_ns = MonotonicNanos();
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (c.out.size() - c.out_off > kMaxOutput) break;
        if (!c.writing) {
          c.writing = true;
          Watch(c);
        }
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      Close(c.fd);
      return false;
    }
    if (c.out_off < c.out.size()) {  // over the output bound: the client is not reading
      Close(c.fd);
      return false;
    }
    c.out.clear();
    c.out_off = 0;
    if (c.writing) {
      c.writing = false;
      Watch(c);
    }
    if (c.close_after_flush) {
      Close(c.fd);
      return false;
    }
    return true;
  }

  void Queue(Conn& c, std::string_view piece) const {
    if (piece.empty()) return;
    if (c.chunked) {
      c.out += fmt::format("{:x}\r\n", piece.size());
      c.out += piece;
      c.out += "\r\n";
    } else {
      c.out += piece;
    }
  }

  void Schedule(Conn& c, int64_t due_ns) {
    c.timer_ns = due_ns;
    timers.push(Timer{due_ns, c.fd, c.serial});
  }

  static std::string Head(int status, std::string_view content_type, bool chunked, bool keep_alive,
                          size_t length, std::string_view extra = {}, bool http10 = false) {
    std::string head = fmt::format("HTTP/1.{} {} {}\r\nContent-Type: {}\r\n", http10 ? 0 : 1,
                                   status, StatusText(status), content_type);
    if (chunked) {
      head += "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n";
    } else if (length != std::string::npos) {
      head += fmt::format("Content-Length: {}\r\n", length);
    }
    if (!keep_alive) head += "Connection: close\r\n";
    head += extra;
    head += "\r\n";
    return head;
  }

  void AnswerWhole(Conn& c, int status, std::string_view content_type, const std::string& body,
                   std::string_view extra = {}) {
    const bool keep_alive = c.parser.Request().keep_alive && status < 500;
    c.out += Head(status, content_type, false, keep_alive, body.size(), extra);
    c.out += body;
    c.close_after_flush = !keep_alive;
    ++stats.completed;
    if (Flush(c)) NextRequest(c);
  }

  void Begin(Conn& c) {
    c.serial = ++serials;
    c.phase = c.phase == Phase::kIdle ? Phase::kStream : c.phase;
    ++stats.open_streams;
    stats.max_open_streams = std::max(stats.max_open_streams, stats.open_streams);
  }

  void Finish(Conn& c) {
    c.phase = Phase::kIdle;
    --stats.open_streams;
    ++stats.completed;
    if (!c.keep_alive) c.close_after_flush = true;
    if (Flush(c)) NextRequest(c);
  }

  void Handle(Conn& c) {
    HttpRequest& r = c.parser.Request();
    ++stats.requests;
    const std::string path = r.Path();
    if (r.method == "GET" && (path == "/health" || path == "/healthz")) {
      AnswerWhole(c, 200, "text/plain", "ok\n");
      return;
    }
    if (r.method == "GET" && path == "/v1/models") {
      AnswerWhole(c, 200, "application/json",
                  fmt::format(R"({{"object":"list","data":[{{"id":"{}","object":"model"}}]}})",
                              config.model));
      return;
    }
    auto parsed = ParseSimRequest(r, config);
    if (!parsed) {
      AnswerWhole(c, parsed.error().status, "application/json",
                  ErrorBody(parsed.error().status, parsed.error().message));
      return;
    }
    c.request = std::move(*parsed);
    c.fault = c.request.fault.value_or(DrawFault(config, rng));
    if (c.fault != SimFault::kNone) ++stats.faults[std::string(SimFaultName(c.fault))];
    switch (c.fault) {
      case SimFault::kCloseEarly: Close(c.fd); return;
      case SimFault::kTooMany:
        AnswerWhole(c, 429, "application/json", ErrorBody(429, "simulated rate limit"),
                    fmt::format("Retry-After: {}\r\n", config.retry_after_s));
        return;
      case SimFault::kServerError:
        AnswerWhole(c, 500, "application/json", ErrorBody(500, "simulated server error"));
        return;
      default: break;
    }
    size_t tokens = 0;
    const auto keys = BlockKeys(c.request.prompt, config.block_tokens, &tokens);
    const size_t hit_blocks = cache.Lookup(keys);
    cache.Insert(keys);
    c.usage.input = tokens;
    c.usage.cached = hit_blocks * config.block_tokens;
    c.usage.output = c.request.max_tokens;
    if (c.fault == SimFault::kByteSplit || c.fault == SimFault::kTrickle) {
      c.usage.output = std::min(c.usage.output, kMaxDribbleTokens);
    }
    stats.input_tokens += c.usage.input;
    stats.cached_tokens += c.usage.cached;
    stats.cache_evictions = cache.Evictions();
    c.id = fmt::format("cmpl-sim-{}", serials + 1);
    c.next_token = 0;
    c.chunked = r.minor_version == 1 && c.fault != SimFault::kHttp10;
    // A stream's end is marked by its last chunk, or else by closing the connection.
    c.keep_alive = r.keep_alive && (c.chunked || !c.request.stream);
    const int64_t first =
        MonotonicNanos() + FirstTokenDelayNs(config, c.usage.input - c.usage.cached, c.fault);
    if (c.fault == SimFault::kByteSplit || c.fault == SimFault::kTrickle) {
      c.phase = Phase::kDribble;
      Begin(c);
      // The whole answer is made now and dribbled out; its timing is not the point.
      const bool chunked = c.chunked;
      c.out += Head(200, "text/event-stream", chunked, c.keep_alive, std::string::npos);
      const int64_t made = MonotonicNanos();
      Queue(c, StreamStart(c.request.api, c.id, config.model, c.usage, made));
      for (uint64_t n = 0; n < c.usage.output; ++n) {
        Queue(c, StreamToken(c.request.api, c.id, config.model, n, n == 0, made));
      }
      Queue(c,
            StreamEnd(c.request.api, c.id, config.model, c.usage, c.request.include_usage, true));
      if (chunked) c.out += "0\r\n\r\n";
      stats.tokens += c.usage.output;
      Schedule(c, MonotonicNanos());
      return;
    }
    if (!c.request.stream) {
      c.phase = Phase::kWhole;
      Begin(c);
      Schedule(c, first + DecodeNs(config) * static_cast<int64_t>(c.usage.output - 1));
      return;
    }
    Begin(c);
    c.out += Head(200, "text/event-stream", c.chunked, c.keep_alive, std::string::npos, {},
                  c.fault == SimFault::kHttp10);
    if (!Flush(c)) return;
    c.due_ns = first;
    Schedule(c, first);
  }

  // Sends the tokens that are due; the next timer for the rest.
  void Step(Conn& c, int64_t now) {
    if (c.phase == Phase::kDribble) {
      const size_t rest = c.out.size() - c.out_off;
      const size_t take =
          std::min(rest, c.fault == SimFault::kByteSplit ? kDribbleBytesPerTurn : 1);
      // Every byte its own send(): a client must reassemble frames split at any byte.
      for (size_t i = 0; i < take; ++i) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == 1) {
          ++c.out_off;
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        Close(c.fd);
        return;
      }
      if (c.out_off < c.out.size()) {
        Schedule(
            c, now + (c.fault == SimFault::kTrickle ? static_cast<int64_t>(config.trickle_ms * 1e6)
                                                    : 100'000));
        return;
      }
      Finish(c);
      return;
    }
    if (c.phase == Phase::kWhole) {
      const bool keep_alive = c.keep_alive;
      const std::string body = FullResponseBody(c.request.api, c.id, config.model, c.usage);
      c.out += Head(200, "application/json", false, keep_alive, body.size());
      c.out += body;
      stats.tokens += c.usage.output;
      Finish(c);
      return;
    }
    if (c.writing) {  // the last slice is still on its way: the next when the socket drains
      c.make_when_written = true;
      return;
    }
    const Api api = c.request.api;
    const uint64_t middle = c.usage.output / 2;
    const size_t slice_end = c.out.size() + kSliceBytes;
    while (c.next_token < c.usage.output && c.due_ns <= now) {
      if (c.out.size() >= slice_end) {
        // Others' turn: the rest of what is due at the next one (due_ns kept: a stream behind
        // its schedule catches up), or once this slice is sent.
        if (!Flush(c)) return;  // closed: `c` is gone
        if (c.writing) {
          c.make_when_written = true;
        } else {
          Schedule(c, MonotonicNanos() + 1);
        }
        return;
      }
      // Only the first chunk carries the send time.
      const int64_t sent = c.next_token == 0 ? MonotonicNanos() : 0;
      if (c.next_token == middle) {
        if (c.fault == SimFault::kCut) {
          const int fd = c.fd;
          if (Flush(c)) Close(fd);
          return;
        }
        if (c.fault == SimFault::kErrorEvent) {
          Queue(c, StreamErrorEvent(api, "simulated failure after the stream began"));
          if (c.chunked) c.out += "0\r\n\r\n";
          Finish(c);
          return;
        }
        if (c.fault == SimFault::kMalformedJson) Queue(c, "data: {\"choices\": [{\"delta\n\n");
        if (c.fault == SimFault::kHugeLine) {
          Queue(c, "data: {\"filler\": \"" + std::string(kHugeLineBytes, 'x') + "\"}\n\n");
        }
      }
      if (c.next_token == 0) Queue(c, StreamStart(api, c.id, config.model, c.usage, sent));
      Queue(c, StreamToken(api, c.id, config.model, c.next_token, c.next_token == 0, sent));
      ++c.next_token;
      ++stats.tokens;
      c.due_ns += DecodeNs(config);
      if (config.token_writes && c.next_token < c.usage.output) {
        if (Flush(c)) Schedule(c, std::max(c.due_ns, MonotonicNanos()));
        return;
      }
    }
    if (c.next_token < c.usage.output) {
      if (Flush(c)) Schedule(c, c.due_ns);
      return;
    }
    Queue(c, StreamEnd(api, c.id, config.model, c.usage, c.request.include_usage,
                       c.fault != SimFault::kNoDone));
    if (c.chunked) c.out += "0\r\n\r\n";
    Finish(c);
  }

  // Reads the next request on a kept-alive connection, from bytes already received.
  void NextRequest(Conn& c) {
    if (c.phase != Phase::kIdle) return;
    c.parser.Reset();
    if (c.in.empty()) return;
    std::string pending;
    pending.swap(c.in);
    Parse(c, pending);
  }

  void Parse(Conn& c, std::string_view bytes) {
    while (!bytes.empty()) {
      if (c.phase != Phase::kIdle) {
        if (c.in.size() + bytes.size() > kMaxPipelined) {
          Close(c.fd);
          return;
        }
        c.in.append(bytes);
        return;
      }
      if (!c.parser.Began()) c.request_began_ns = MonotonicNanos();
      const size_t used = c.parser.Feed(bytes);
      bytes.remove_prefix(used);
      switch (c.parser.GetState()) {
        case HttpRequestParser::State::kNeedMore: return;
        case HttpRequestParser::State::kError: {
          const int status = c.parser.ErrorStatus();
          const std::string body = ErrorBody(status, c.parser.ErrorReason());
          c.out += Head(status, "application/json", false, false, body.size());
          c.out += body;
          c.close_after_flush = true;
          Flush(c);
          return;
        }
        case HttpRequestParser::State::kDone: {
          if (!bytes.empty()) c.in.assign(bytes);
          Handle(c);  // it may close the connection, or answer at once and read on
          return;
        }
      }
    }
  }

  void Readable(int fd) {
    Conn& c = *conns[fd];
    char buffer[65536];
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      Close(fd);  // the client left; whatever it was being sent is dropped
      return;
    }
    if (n < 0) return;
    c.active_ns = MonotonicNanos();
    Parse(c, std::string_view(buffer, static_cast<size_t>(n)));
  }

  void Accept() {
    for (int i = 0; i < 256; ++i) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          log::Warn("serve-sim: out of file descriptors; not accepting for 100 ms");
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          accept_paused = true;
          accept_resume_ns = MonotonicNanos() + 100'000'000;
        }
        return;
      }
      if (open_conns >= config.max_connections) {
        // Said, not just dropped, so a client counts an overloaded server (5xx), not a network
        // fault. One non-blocking send: a client that does not read it loses it.
        static const std::string kBusy = [] {
          const std::string body = ErrorBody(503, "too many connections");
          return Head(503, "application/json", false, false, body.size(), "Retry-After: 1\r\n") +
                 body;
        }();
        (void)!::send(fd, kBusy.data(), kBusy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
        ++stats.refused_over_limit;
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (static_cast<size_t>(fd) >= conns.size()) conns.resize(static_cast<size_t>(fd) * 2 + 1);
      conns[fd] = std::make_unique<Conn>();
      conns[fd]->fd = fd;
      conns[fd]->active_ns = MonotonicNanos();
      ++open_conns;
      ++stats.connections;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  // Closes what a client holds without using it: a request not whole within the header timeout
  // (slowloris) gets a 408; a connection idle past the idle timeout, or whose answer the client
  // has not read for that long, is closed.
  void Sweep(int64_t now) {
    const auto header_ns = static_cast<int64_t>(config.header_timeout_s * 1e9);
    const auto idle_ns = static_cast<int64_t>(config.idle_timeout_s * 1e9);
    for (auto& slot : conns) {
      if (!slot) continue;
      Conn& c = *slot;
      if (c.writing) {
        if (now - c.active_ns > idle_ns) {
          ++stats.closed_not_reading;
          Close(c.fd);
        }
        continue;
      }
      if (c.phase != Phase::kIdle || c.close_after_flush) continue;
      if (c.parser.Began()) {
        if (now - c.request_began_ns > header_ns) {
          ++stats.closed_slow_request;
          const std::string body = ErrorBody(408, "the request did not arrive in time");
          c.out += Head(408, "application/json", false, false, body.size());
          c.out += body;
          c.close_after_flush = true;
          Flush(c);
        }
      } else if (now - c.active_ns > idle_ns) {
        ++stats.closed_idle;
        Close(c.fd);
      }
    }
  }

  void Arm() {
    const int64_t due = timers.empty() ? 0 : timers.top().due_ns;
    if (due == armed_ns) return;
    itimerspec spec{};
    if (due != 0) {
      spec.it_value.tv_sec = due / 1'000'000'000;
      spec.it_value.tv_nsec = std::max<int64_t>(due % 1'000'000'000, 1);
    }
    ::timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
    armed_ns = due;
  }

  void RunTimers() {
    uint64_t expirations = 0;
    (void)!::read(timer_fd, &expirations, sizeof(expirations));
    armed_ns = -1;  // the timer fired: arm again whatever comes next
    const int64_t now = MonotonicNanos();
    while (!timers.empty() && timers.top().due_ns <= now) {
      const Timer t = timers.top();
      timers.pop();
      if (static_cast<size_t>(t.fd) >= conns.size() || !conns[t.fd]) continue;
      Conn& c = *conns[t.fd];
      if (c.serial != t.serial || c.phase == Phase::kIdle || c.timer_ns != t.due_ns) continue;
      Step(c, now);
    }
  }
};

SimServer::SimServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimServer::~SimServer() = default;
int SimServer::Port() const {
  return impl_->port;
}
SimStats SimServer::Stats() const {
  return impl_->stats;
}

Result<std::unique_ptr<SimServer>> SimServer::Listen(const std::string& address,
                                                     const SimConfig& config) {
  if (auto ok = CheckSimConfig(config); !ok) return tl::unexpected(ok.error());
  auto impl = std::make_unique<Impl>(config);
  auto socket = sys::ListenTcp(address, 4096);
  if (!socket) return tl::unexpected(socket.error());
  impl->listen_fd = socket->fd;
  impl->port = socket->port;
  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->timer_fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->timer_fd < 0) {
    return Fail(ErrorCode::kIo, "epoll/timerfd: {}", std::strerror(errno));
  }
  for (const int fd : {impl->listen_fd, impl->timer_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  return std::unique_ptr<SimServer>(new SimServer(std::move(impl)));
}

Result<void> SimServer::Run(const std::function<bool()>& stop) {
  Impl& s = *impl_;
  std::vector<epoll_event> events(1024);
  while (!stop()) {
    s.Arm();
    const int n = ::epoll_wait(s.epoll_fd, events.data(), static_cast<int>(events.size()), 100);
    if (n < 0 && errno != EINTR)
      return Fail(ErrorCode::kIo, "epoll_wait: {}", std::strerror(errno));
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == s.listen_fd) {
        s.Accept();
      } else if (fd == s.timer_fd) {
        s.RunTimers();
      } else if (static_cast<size_t>(fd) < s.conns.size() && s.conns[fd]) {
        if ((events[i].events & EPOLLOUT) != 0U) {
          Conn& c = *s.conns[fd];
          if (!s.Flush(c)) continue;
          if (c.make_when_written && !c.writing) {
            c.make_when_written = false;
            if (c.phase == Phase::kStream) s.Step(c, MonotonicNanos());
          }
        }
        if (s.conns[fd] && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0U) {
          s.Readable(fd);
        }
      }
    }
    if (const int64_t now = MonotonicNanos(); now >= s.next_sweep_ns) {
      s.Sweep(now);
      s.next_sweep_ns = now + kSweepNs;
    }
    if (s.accept_paused && MonotonicNanos() >= s.accept_resume_ns) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = s.listen_fd;
      ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.listen_fd, &ev);
      s.accept_paused = false;
    }
  }
  return {};
}

Result<void> CheckSimModel(std::string_view model) {
  for (const char c : model) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 &&
        std::string_view("._-/:").find(c) == std::string_view::npos) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--model may hold letters, digits and . _ - / : only");
    }
  }
  return {};
}

std::string SimStatsText(const SimStats& s) {
  return fmt::format(
      "serve-sim: {} connections, {} requests, {} answered, {} tokens, {} of {} input tokens "
      "cached, most streams at once {}; closed {} idle, {} slow requests (408), {} not reading, "
      "{} refused past the connection limit\n",
      s.connections, s.requests, s.completed, s.tokens, s.cached_tokens, s.input_tokens,
      s.max_open_streams, s.closed_idle, s.closed_slow_request, s.closed_not_reading,
      s.refused_over_limit);
}

Result<std::string> ServeSim(const std::string& listen, int port, const SimConfig& config,
                             double duration_s, const std::function<bool()>& stop,
                             const std::function<void(std::string_view)>& listening) {
  if (auto ok = CheckSimModel(config.model); !ok) return tl::unexpected(ok.error());
  auto server = SimServer::Listen(fmt::format("{}:{}", listen, port), config);
  if (!server) return tl::unexpected(server.error());
  if (listening) {
    listening(fmt::format("serve-sim listening on http://{}:{} (model {}; a simulated server)",
                          listen, (*server)->Port(), config.model));
  }
  const auto stop_at = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(duration_s));
  auto ran = (*server)->Run([&] {
    return (stop && stop()) || (duration_s > 0 && std::chrono::steady_clock::now() >= stop_at);
  });
  if (!ran) return tl::unexpected(ran.error());
  return SimStatsText((*server)->Stats());
}

}  // namespace cmax::endpoint
