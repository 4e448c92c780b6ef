#include "endpoint/curl_transport.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <netinet/in.h>
#include <sys/epoll.h>

#include "core/strings.hpp"
#include "endpoint/http_head.hpp"
#include "endpoint/http_response.hpp"
#include "sys/curl_library.hpp"

namespace cmax::endpoint {

using sys::Curl;

long CurlMillis(double seconds, bool connect) {
  if (seconds <= 0) return connect ? std::numeric_limits<long>::max() : 0L;
  return std::max(1L, static_cast<long>(std::ceil(std::min(seconds, 1e9) * 1000)));
}

ErrorClass CurlErrorClass(int curl_code, bool answered) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return ErrorClass::kDns;
    case CURLE_COULDNT_CONNECT: return ErrorClass::kConnect;
    case CURLE_OPERATION_TIMEDOUT: return ErrorClass::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED: return ErrorClass::kTls;
    case CURLE_WRITE_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_UNSUPPORTED_PROTOCOL: return ErrorClass::kMalformed;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return answered ? ErrorClass::kTruncated : ErrorClass::kConnect;
    default: return ErrorClass::kOther;
  }
}

std::string HttpVersionName(long curl_version) {
  switch (curl_version) {
    case CURL_HTTP_VERSION_1_0: return "1.0";
    case CURL_HTTP_VERSION_1_1: return "1.1";
    case CURL_HTTP_VERSION_2_0: return "2";
    case CURL_HTTP_VERSION_3: return "3";
    default: return {};
  }
}

CurlTransport::~CurlTransport() {
  for (auto& t : transfers_) {
    if (t->added) Curl().multi_remove_handle(shards_[t->route]->multi, t->easy);
    Curl().easy_cleanup(t->easy);
    Curl().slist_free_all(t->headers);
  }
  for (CURL* easy : idle_handles_) Curl().easy_cleanup(easy);
  for (auto& shard : shards_) Curl().multi_cleanup(shard->multi);
  Curl().slist_free_all(resolve_);
}

// The address looked up now goes to libcurl as a CURLOPT_RESOLVE entry.
bool CurlTransport::PinAddress(const std::string& url) {
  const auto parts = PartsOf(url);
  if (!parts) return false;
  const Address a = Resolve(parts->host, parts->port);
  if (!a.error.empty()) return false;
  const bool v6 = a.address.ss_family == AF_INET6;
  char text[INET6_ADDRSTRLEN] = {};
  const void* address =
      v6 ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&a.address)->sin6_addr)
         : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&a.address)->sin_addr);
  ::inet_ntop(a.address.ss_family, address, text, sizeof(text));
  const std::string entry = v6 ? fmt::format("{}:{}:[{}]", parts->host, parts->port, text)
                               : fmt::format("{}:{}:{}", parts->host, parts->port, text);
  resolve_ = Curl().slist_append(resolve_, entry.c_str());
  return true;
}

int CurlTransport::OnSocket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp) {
  auto* shard = static_cast<Shard*>(userp);
  EventHub& hub = shard->transport->hub_;
  if (what == CURL_POLL_REMOVE) {
    ::epoll_ctl(hub.EpollFd(), EPOLL_CTL_DEL, s, nullptr);
    Curl().multi_assign(shard->multi, s, nullptr);
    return 0;
  }
  Transfer* t = nullptr;
  if ((what & CURL_POLL_IN) != 0 && easy != nullptr &&
      Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &t) == CURLE_OK && t != nullptr &&
      t->call.stream) {
    hub.AwaitFirstChunk(*t, s);  // the request is out: its answer is awaited
  }
  epoll_event ev{};
  ev.events =
      ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0U) | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0U);
  ev.data.u64 = EventKey(shard->index, s);  // the event goes to the multi handle that owns it
  if (socketp == nullptr) {
    ::epoll_ctl(hub.EpollFd(), EPOLL_CTL_ADD, s, &ev);
    Curl().multi_assign(shard->multi, s, shard);  // any non-null mark: "in the epoll set"
  } else {
    ::epoll_ctl(hub.EpollFd(), EPOLL_CTL_MOD, s, &ev);
  }
  return 0;
}

int CurlTransport::OnTimer(CURLM* /*multi*/, long timeout_ms, void* userp) {
  auto* shard = static_cast<Shard*>(userp);
  if (timeout_ms < 0) {
    shard->deadline.reset();
  } else {
    shard->deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  }
  return 0;
}

// The shard with the fewest transfers, a new one when all are full: a finished transfer's
// connection is then the first to be reused. Null when libcurl gives no multi handle at all.
CurlTransport::Shard* CurlTransport::PickShard() {
  Shard* best = nullptr;
  for (auto& shard : shards_) {
    if (!best || shard->in_flight < best->in_flight) best = shard.get();
  }
  if (best && best->in_flight < kShardTransfers) return best;
  auto shard = std::make_unique<Shard>();
  shard->transport = this;
  shard->index = static_cast<uint32_t>(shards_.size());
  shard->multi = Curl().multi_init();
  if (!shard->multi) return best;  // over the shard size rather than not at all
  Curl().multi_setopt(shard->multi, CURLMOPT_SOCKETFUNCTION, &CurlTransport::OnSocket);
  Curl().multi_setopt(shard->multi, CURLMOPT_SOCKETDATA, shard.get());
  Curl().multi_setopt(shard->multi, CURLMOPT_TIMERFUNCTION, &CurlTransport::OnTimer);
  Curl().multi_setopt(shard->multi, CURLMOPT_TIMERDATA, shard.get());
  if (hub_.Options().http2) {
    Curl().multi_setopt(shard->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  }
  shards_.push_back(std::move(shard));
  return shards_.back().get();
}

size_t CurlTransport::OnHeader(char* data, size_t size, size_t count, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  const size_t n = size * count;
  if (!t->result.timing.first_byte_s) {
    t->result.timing.first_byte_s = t->hub->Now();
    curl_socket_t socket = CURL_SOCKET_BAD;
    if (t->call.stream &&
        Curl().easy_getinfo(t->easy, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK) {
      t->hub->AwaitFirstChunk(*t, socket);
    }
  }
  t->answered = true;
  // Each head (an interim 1xx, the final one) has the limit to itself, as in Http1Pool.
  if (n >= 5 && std::string_view(data, 5) == "HTTP/") t->head_bytes = 0;
  t->head_bytes += n;
  if (t->head_bytes > kMaxResponseHeadBytes) {
    t->bad_head = "the response head exceeds the size limit";
    return 0;  // ends the transfer (CURLE_WRITE_ERROR); the outcome gives bad_head
  }
  const std::string_view line(data, n);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    const std::string name = ToLower(Trim(line.substr(0, colon)));
    const std::string_view value = Trim(line.substr(colon + 1));
    // Held to HttpResponseReader's reading: libcurl reads past a length it cannot parse.
    if (name == "content-length") {
      for (const std::string_view item : Split(value, ',')) {
        if (!ContentLengthItem(item)) {
          t->bad_head = "a malformed Content-Length";
          return 0;
        }
      }
    }
    t->HeaderField(name, value);
  }
  return n;
}

size_t CurlTransport::OnBody(char* data, size_t size, size_t count, void* userp) {
  auto* t = static_cast<Transfer*>(userp);
  // The status is known once the body begins; asked once, not for every chunk.
  if (t->status == 0) Curl().easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
  t->Stamp();
  return t->ReadBody(data, size * count) ? size * count : 0;  // 0 aborts: CURLE_WRITE_ERROR
}

CURL* CurlTransport::Handle() {
  if (!idle_handles_.empty()) {
    CURL* easy = idle_handles_.back();
    idle_handles_.pop_back();
    Curl().easy_reset(easy);
    return easy;
  }
  return Curl().easy_init();
}

void CurlTransport::Configure(Transfer& t) const {
  const EngineOptions& o = hub_.Options();
  CURL* e = t.easy;
  Curl().easy_setopt(e, CURLOPT_URL, t.call.url.c_str());
  Curl().easy_setopt(e, CURLOPT_POST, 1L);
  Curl().easy_setopt(e, CURLOPT_POSTFIELDS, t.call.body.data());
  Curl().easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.call.body.size()));
  Curl().easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
  Curl().easy_setopt(e, CURLOPT_WRITEFUNCTION, &CurlTransport::OnBody);
  Curl().easy_setopt(e, CURLOPT_WRITEDATA, &t);
  Curl().easy_setopt(e, CURLOPT_HEADERFUNCTION, &CurlTransport::OnHeader);
  Curl().easy_setopt(e, CURLOPT_HEADERDATA, &t);
  Curl().easy_setopt(e, CURLOPT_PRIVATE, &t);
  Curl().easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  Curl().easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CurlMillis(o.connect_timeout_s, true));
  Curl().easy_setopt(e, CURLOPT_TIMEOUT_MS, CurlMillis(o.timeout_s, false));
  if (o.idle_timeout_s > 0) {
    Curl().easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    Curl().easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                       static_cast<long>(std::ceil(std::min(o.idle_timeout_s, 1e9))));
  }
  Curl().easy_setopt(e, CURLOPT_HTTP_VERSION,
                     o.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
  if (o.http2 && t.call.url.rfind("https://", 0) == 0) {
    // Wait for a connection being set up to learn whether it speaks h2 and can carry this
    // request too; on plain http (HTTP/1.1) waiting would only serialise the first requests.
    Curl().easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  }
  if (o.insecure) {
    Curl().easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    Curl().easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!o.ca_file.empty()) Curl().easy_setopt(e, CURLOPT_CAINFO, o.ca_file.c_str());
  if (resolve_) Curl().easy_setopt(e, CURLOPT_RESOLVE, resolve_);
}

void CurlTransport::Start(uint64_t tag, Call call) {
  auto owned = std::make_unique<Transfer>(hub_, tag, std::move(call), 0);
  Transfer* t = owned.get();
  t->easy = Handle();
  t->headers = Curl().slist_append(nullptr, "Content-Type: application/json");
  t->headers = Curl().slist_append(t->headers, "Expect:");  // no 100-continue round trip
  if (t->call.stream) t->headers = Curl().slist_append(t->headers, "Accept: text/event-stream");
  for (const std::string& h : t->call.headers) {
    t->headers = Curl().slist_append(t->headers, h.c_str());
  }
  Configure(*t);
  t->result.timing.sent_s = hub_.Now();
  transfers_.push_back(std::move(owned));
  t->self = std::prev(transfers_.end());
  Shard* shard = PickShard();
  if (shard != nullptr) t->route = shard->index;  // before libcurl can ask for its sockets
  if (shard == nullptr || Curl().multi_add_handle(shard->multi, t->easy) != CURLM_OK) {
    End(*t, {ErrorClass::kOther, "libcurl refused the request"});  // never lost
    return;
  }
  t->added = true;
  ++shard->in_flight;
}

void CurlTransport::OnEvent(uint32_t route, int fd, uint32_t events) {
  if (route >= shards_.size()) return;
  int flags = 0;
  if ((events & EPOLLIN) != 0U) flags |= CURL_CSELECT_IN;
  if ((events & EPOLLOUT) != 0U) flags |= CURL_CSELECT_OUT;
  if ((events & (EPOLLERR | EPOLLHUP)) != 0U) flags |= CURL_CSELECT_ERR;
  int running = 0;
  Curl().multi_socket_action(shards_[route]->multi, fd, flags, &running);
}

double CurlTransport::NextWakeS() const {
  double wake = std::numeric_limits<double>::infinity();
  for (const auto& shard : shards_) {
    if (shard->deadline) {
      wake = std::min(wake, std::chrono::duration<double>(*shard->deadline - hub_.Epoch()).count());
    }
  }
  return wake;
}

// libcurl's timers that are due, then the transfers it finished.
void CurlTransport::AfterEvents() {
  int running = 0;
  const SteadyClock::time_point now = SteadyClock::now();
  for (auto& shard : shards_) {
    if (shard->deadline && now >= *shard->deadline) {
      shard->deadline.reset();
      Curl().multi_socket_action(shard->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }
  for (auto& shard : shards_) {
    int left = 0;
    while (CURLMsg* m = Curl().multi_info_read(shard->multi, &left)) {
      if (m->msg == CURLMSG_DONE) Done(m->easy_handle, m->data.result);
    }
  }
}

void CurlTransport::Done(CURL* easy, int code) {
  Transfer* t = nullptr;
  Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &t);
  Curl().easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &t->result.http_status);
  long version = 0;
  Curl().easy_getinfo(easy, CURLINFO_HTTP_VERSION, &version);
  t->result.http_version = HttpVersionName(version);
  if (code == CURLE_OUT_OF_MEMORY) {
    // libcurl's answer to a status or header line over its own limit (100 KB), which it
    // reports before any header reached us; a real lack of memory would fail far more.
    End(*t, {ErrorClass::kMalformed, "a response header line exceeds libcurl's size limit"});
  } else if (code != CURLE_OK) {
    End(*t, {CurlErrorClass(code, t->answered), Curl().easy_strerror(static_cast<CURLcode>(code))});
  } else {
    End(*t, {});
  }
}

void CurlTransport::End(Transfer& t, const Failure& failure) {
  hub_.FirstChunkCame(t);
  if (t.added) {
    Curl().multi_remove_handle(shards_[t.route]->multi, t.easy);
    --shards_[t.route]->in_flight;
  }
  hub_.Complete(t, failure);
  Curl().slist_free_all(t.headers);
  idle_handles_.push_back(t.easy);
  transfers_.erase(t.self);
}

void CurlTransport::CancelAll() {
  for (auto& t : transfers_) {
    hub_.FirstChunkCame(*t);
    if (t->added) Curl().multi_remove_handle(shards_[t->route]->multi, t->easy);
    Curl().slist_free_all(t->headers);
    idle_handles_.push_back(t->easy);
  }
  transfers_.clear();
  for (auto& shard : shards_) shard->in_flight = 0;
}

}  // namespace cmax::endpoint
