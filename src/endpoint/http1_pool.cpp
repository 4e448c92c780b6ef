#include "endpoint/http1_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "core/strings.hpp"

namespace cmax::endpoint {

namespace {

// Whether a header name is `lower_name`, whatever its case (without a lower-cased copy: this
// runs for every header of every request).
bool SameName(std::string_view name, std::string_view lower_name) {
  return name.size() == lower_name.size() &&
         std::equal(name.begin(), name.end(), lower_name.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

}  // namespace

Http1Pool::~Http1Pool() {
  for (auto& c : conns_) {
    if (c) ::close(c->fd);
  }
}

// The URL's origin and target when it is plain http and ours to carry; nullopt for libcurl.
const std::optional<Http1Pool::Target>& Http1Pool::UrlOf(const std::string& url) {
  const auto found = targets_.find(url);
  if (found != targets_.end()) return found->second;
  std::optional<Target> target;
  if (const auto parts = PartsOf(url);
      hub_.Options().http1_pool && parts && parts->scheme == "http") {
    target = Target{OriginOf(parts->host, parts->port), parts->target};
  }
  return targets_.emplace(url, std::move(target)).first->second;
}

size_t Http1Pool::OriginOf(const std::string& host, const std::string& port) {
  const std::string key = host + ":" + port;
  if (const auto found = origin_index_.find(key); found != origin_index_.end()) {
    return found->second;
  }
  origins_.push_back(Origin{port == "80" ? host : key, Resolve(host, port), {}});
  origin_index_.emplace(key, origins_.size() - 1);
  return origins_.size() - 1;
}

bool Http1Pool::PinAddress(const std::string& url) {
  const auto& target = UrlOf(url);
  return target && origins_[target->origin].address.error.empty();
}

// The request as it goes on the wire. Header rules as libcurl's: a header the caller gives
// replaces the default of that name, one given as "Name:" with no value removes it; a header
// with a line break in it is not sent (it would end the head early).
std::string Http1Pool::Wire(const Target& target, const Call& call) const {
  const auto name_of = [](std::string_view header) {
    const size_t colon = header.find(':');
    return colon == std::string_view::npos ? std::string_view() : Trim(header.substr(0, colon));
  };
  const auto given = [&](std::string_view lower_name) {
    return std::any_of(call.headers.begin(), call.headers.end(),
                       [&](const std::string& h) { return SameName(name_of(h), lower_name); });
  };
  std::string w;
  w.reserve(256 + call.body.size());
  w += "POST ";
  w += target.path;
  w += " HTTP/1.1\r\n";
  if (!given("host")) w += "Host: " + origins_[target.origin].host + "\r\n";
  if (!given("content-type")) w += "Content-Type: application/json\r\n";
  if (call.stream && !given("accept")) w += "Accept: text/event-stream\r\n";
  for (const std::string& h : call.headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || h.find_first_of("\r\n") != std::string::npos ||
        Trim(std::string_view(h).substr(colon + 1)).empty() ||
        SameName(Trim(std::string_view(h).substr(0, colon)), "content-length")) {
      continue;
    }
    w += h;
    w += "\r\n";
  }
  w += "Content-Length: ";
  w += std::to_string(call.body.size());
  w += "\r\n\r\n";
  w += call.body;
  return w;
}

void Http1Pool::Start(uint64_t tag, Call call) {
  if (!StartIfCarried(tag, call)) {
    auto t = std::make_unique<Transfer>(hub_, tag, std::move(call), kHttp1Route);
    hub_.Complete(*t, {ErrorClass::kOther, "not a plain http URL"});  // never lost
  }
}

bool Http1Pool::StartIfCarried(uint64_t tag, Call& call) {
  const std::optional<Target>& found = UrlOf(call.url);
  if (!found) return false;
  const Target& target = *found;
  auto owned = std::make_unique<Transfer>(hub_, tag, std::move(call), kHttp1Route);
  Transfer* t = owned.get();
  t->origin = target.origin;
  t->wire = Wire(target, t->call);
  t->call.body = std::string();  // on the wire now
  const double now = hub_.Now();
  t->result.timing.sent_s = now;
  const double timeout_s = hub_.Options().timeout_s;
  // 0 or less: no limit, as libcurl reads it.
  t->deadline_s = timeout_s > 0 ? now + timeout_s : std::numeric_limits<double>::infinity();
  t->activity_s = now;
  transfers_.push_back(std::move(owned));
  t->self = std::prev(transfers_.end());
  if (const Origin& o = origins_[t->origin]; !o.address.error.empty()) {
    End(*t, {ErrorClass::kDns, o.address.error});
    return true;
  }
  Attach(*t, /*fresh=*/false);
  return true;
}

// Puts the transfer on an idle connection to its origin (unless `fresh`) or a new one, and
// sends what it can.
void Http1Pool::Attach(Transfer& t, bool fresh) {
  Origin& o = origins_[t.origin];
  Conn* c = nullptr;
  while (!fresh && c == nullptr && !o.idle.empty()) {
    c = o.idle.back();
    o.idle.pop_back();
    c->reused = true;
    // A pooled connection the server has closed, or that holds bytes nobody asked for, is
    // not used (libcurl checks the same before reuse).
    char byte = 0;
    const ssize_t n = ::recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      Close(*c);
      c = nullptr;
    }
  }
  if (c == nullptr) {
    std::string why;
    c = Connect(t.origin, why);
    if (c == nullptr) {
      End(t, {ErrorClass::kConnect, why});
      return;
    }
  }
  c->transfer = &t;
  c->reader.Reset();
  t.conn = c;
  t.wire_at = 0;
  next_deadline_s_ = std::min(next_deadline_s_, Due(t));
  if (!c->connecting) Send(*c);
}

Http1Pool::Conn* Http1Pool::Connect(size_t origin, std::string& why) {
  const Origin& o = origins_[origin];
  const int fd = ::socket(o.address.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          IPPROTO_TCP);
  if (fd < 0) {
    why = fmt::format("socket: {}", std::strerror(errno));
    return nullptr;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const int rc =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&o.address.address), o.address.length);
  if (rc < 0 && errno != EINPROGRESS) {
    why = fmt::format("connect to {}: {}", o.host, std::strerror(errno));
    ::close(fd);
    return nullptr;
  }
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->origin = origin;
  c->connecting = true;  // even when done at once: the first EPOLLOUT says so
  c->writing = true;
  const double connect_timeout_s = hub_.Options().connect_timeout_s;
  c->connect_deadline_s =
      hub_.Now() + (connect_timeout_s > 0 ? connect_timeout_s : 300);  // libcurl's default
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = EventKey(kHttp1Route, fd);
  ::epoll_ctl(hub_.EpollFd(), EPOLL_CTL_ADD, fd, &ev);
  const auto at = static_cast<size_t>(fd);
  if (at >= conns_.size()) conns_.resize(at + 1024);
  conns_[at] = std::move(c);
  return conns_[at].get();
}

void Http1Pool::Writing(Conn& c, bool on) {
  if (c.writing == on) return;
  c.writing = on;
  epoll_event ev{};
  ev.events = EPOLLIN | (on ? EPOLLOUT : 0U);
  ev.data.u64 = EventKey(kHttp1Route, c.fd);
  ::epoll_ctl(hub_.EpollFd(), EPOLL_CTL_MOD, c.fd, &ev);
}

// Sends what is left of the request; a broken connection resends or ends the transfer.
void Http1Pool::Send(Conn& c) {
  Transfer& t = *c.transfer;
  while (t.wire_at < t.wire.size()) {
    const ssize_t n =
        ::send(c.fd, t.wire.data() + t.wire_at, t.wire.size() - t.wire_at, MSG_NOSIGNAL);
    if (n > 0) {
      t.wire_at += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Writing(c, true);
      return;
    } else {
      ConnectionEnded(c, n < 0 ? errno : EPIPE);
      return;
    }
  }
  Writing(c, false);
  if (t.call.stream) hub_.AwaitFirstChunk(t, c.fd);  // the request is out: the answer is awaited
}

void Http1Pool::OnEvent(uint32_t /*route*/, int fd, uint32_t events) {
  const auto at = static_cast<size_t>(fd);
  if (at >= conns_.size() || !conns_[at]) return;
  Conn& c = *conns_[at];
  if (c.transfer == nullptr) {
    // An idle connection speaks only to say that the server closed it.
    const ssize_t n = ::recv(c.fd, inbox_.data(), inbox_.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    Close(c);
    return;
  }
  if (c.connecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    // No error and no EPOLLOUT: an event left from an earlier socket of the same number in
    // this round; the connection is still being made.
    if (error == 0 && (events & EPOLLOUT) == 0) return;
    if (error != 0) {
      End(*c.transfer,
          {ErrorClass::kConnect,
           fmt::format("connect to {}: {}", origins_[c.origin].host, std::strerror(error))});
      return;
    }
    c.connecting = false;
  }
  // What came is read before the rest of the request is sent: an early answer (a 413, a 400)
  // is then read before a send into the closed connection would hide it.
  const bool readable = (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0;
  if (readable && !Receive(c)) return;
  if (c.transfer->wire_at < c.transfer->wire.size()) Send(c);
}

// One read; false when the transfer left the connection (ended, or sent again elsewhere).
bool Http1Pool::Receive(Conn& c) {
  const ssize_t n = ::recv(c.fd, inbox_.data(), inbox_.size(), 0);
  if (n > 0) return Arrived(c, static_cast<size_t>(n));
  if (n == 0) {
    ConnectionEnded(c, 0);
    return false;
  }
  if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    ConnectionEnded(c, errno);
    return false;
  }
  return true;
}

bool Http1Pool::Arrived(Conn& c, size_t n) {
  Transfer& t = *c.transfer;
  t.Stamp();
  t.activity_s = t.arrived_s;
  if (!t.result.timing.first_byte_s) t.result.timing.first_byte_s = t.arrived_s;
  const bool had_head = c.reader.HeadRead();
  const size_t used = c.reader.Feed(std::string_view(inbox_.data(), n));
  if (!had_head && c.reader.HeadRead()) {
    t.status = c.reader.Status();
    t.result.http_status = t.status;
    t.result.http_version = c.reader.MinorVersion() == 0 ? "1.0" : "1.1";
    for (const auto& [name, value] : c.reader.Headers()) t.HeaderField(name, value);
  }
  for (const std::string_view piece : c.reader.Body()) {
    if (!t.ReadBody(piece.data(), piece.size())) {
      End(t, {});  // too big: the outcome says so
      return false;
    }
  }
  if (c.reader.GetState() == HttpResponseReader::State::kDone) {
    // The connection goes back to the pool when the server keeps it, sent nothing more, and
    // had the whole request (an answer before the end of the request, like an early 413,
    // leaves the connection in no known state).
    End(t, {}, used == n && c.reader.KeepAlive() && t.wire_at == t.wire.size());
    return false;
  }
  if (c.reader.GetState() == HttpResponseReader::State::kError) {
    End(t, {ErrorClass::kMalformed, c.reader.Error()});
    return false;
  }
  return true;
}

// The connection closed (error 0) or broke.
void Http1Pool::ConnectionEnded(Conn& c, int error) {
  Transfer& t = *c.transfer;
  if (error == 0) {
    c.reader.Close();
    if (c.reader.GetState() == HttpResponseReader::State::kDone) {
      End(t, {});
      return;
    }
  }
  if (!c.reader.Began()) {
    if (c.reused && !t.resent) {
      // The server closed a kept-alive connection as the request went out: sent again once
      // over a fresh one, as libcurl does.
      t.resent = true;
      Detach(c);
      Close(c);
      Attach(t, /*fresh=*/true);
      return;
    }
    End(t, {ErrorClass::kConnect, error == 0
                                      ? "the server closed the connection without answering"
                                      : fmt::format("connection to {}: {}", origins_[c.origin].host,
                                                    std::strerror(error))});
    return;
  }
  End(t, {ErrorClass::kTruncated,
          error == 0 ? "the connection closed before the answer was whole"
                     : fmt::format("the connection broke: {}", std::strerror(error))});
}

void Http1Pool::Detach(Conn& c) {
  Transfer& t = *c.transfer;
  hub_.FirstChunkCame(t);  // before the socket is closed and its number reused
  c.transfer = nullptr;
  t.conn = nullptr;
}

void Http1Pool::Close(Conn& c) {
  auto& idle = origins_[c.origin].idle;
  idle.erase(std::remove(idle.begin(), idle.end(), &c), idle.end());
  ::close(c.fd);  // leaves both epoll sets with it
  conns_[static_cast<size_t>(c.fd)].reset();
}

// `failure` is taken by value: its message is often the connection's own reader's
// (c.reader.Error()), and the connection is freed before the outcome is decided.
void Http1Pool::End(Transfer& t, Failure failure, bool keep_connection) {
  if (Conn* c = t.conn; c != nullptr) {
    Detach(*c);
    if (keep_connection) {
      c->reader.Reset();
      origins_[c->origin].idle.push_back(c);
    } else {
      Close(*c);
    }
  }
  hub_.Complete(t, failure);
  transfers_.erase(t.self);
}

// The first deadline of a transfer on its connection.
double Http1Pool::Due(const Transfer& t) const {
  double due = t.deadline_s;
  if (t.conn != nullptr && t.conn->connecting) due = std::min(due, t.conn->connect_deadline_s);
  const double idle_s = hub_.Options().idle_timeout_s;
  if (idle_s > 0) due = std::min(due, t.activity_s + idle_s);
  return due;
}

double Http1Pool::NextWakeS() const {
  return transfers_.empty() ? std::numeric_limits<double>::infinity() : next_deadline_s_;
}

// Ends the transfers past a deadline. Deadlines only move later (bytes came), so the earliest
// found here is never later than the true next one.
void Http1Pool::CheckDeadlines() {
  const double now = hub_.Now();
  if (transfers_.empty() || now < next_deadline_s_) return;
  next_deadline_s_ = std::numeric_limits<double>::infinity();
  std::vector<Transfer*> late;
  for (const auto& t : transfers_) {
    if (t->conn == nullptr) continue;
    const double due = Due(*t);
    if (now >= due) {
      late.push_back(t.get());
    } else {
      next_deadline_s_ = std::min(next_deadline_s_, due);
    }
  }
  const EngineOptions& o = hub_.Options();
  for (Transfer* t : late) {
    std::string why;
    if (now >= t->deadline_s) {
      why = fmt::format("the request took over {} s", o.timeout_s);
    } else if (t->conn->connecting) {
      why = fmt::format("connect timed out after {} s", o.connect_timeout_s);
    } else {
      why = fmt::format("no byte for {} s", o.idle_timeout_s);
    }
    End(*t, {ErrorClass::kTimeout, why});
  }
}

void Http1Pool::CancelAll() {
  for (auto& t : transfers_) {
    if (Conn* c = t->conn; c != nullptr) {
      Detach(*c);
      Close(*c);
    }
  }
  transfers_.clear();
  next_deadline_s_ = std::numeric_limits<double>::infinity();
}

void Http1Pool::ShiftEpoch(double shift) {
  for (auto& t : transfers_) {
    t->deadline_s -= shift;
    t->activity_s -= shift;
    if (t->conn != nullptr) t->conn->connect_deadline_s -= shift;
  }
  next_deadline_s_ -= shift;
}

}  // namespace cmax::endpoint
