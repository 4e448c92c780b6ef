#include "endpoint/engine.hpp"

#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <curl/curl.h>
#include <fmt/format.h>
#include <limits>
#include <list>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/strings.hpp"
#include "endpoint/http_head.hpp"
#include "endpoint/http_response.hpp"
#include "endpoint/sse.hpp"
#include "sys/curl_library.hpp"
#include "sys/http_client.hpp"

namespace cmax::endpoint {

using sys::Curl;
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kErrorBodyBytes = 64 << 10;

struct UrlParts {
  std::string scheme;
  std::string host;    // an IPv6 address in brackets
  std::string port;    // the scheme's default when the URL has none
  std::string target;  // path and query
};

// Whether a header name is `lower_name`, whatever its case (without a lower-cased copy: this
// runs for every header of every request).
bool SameName(std::string_view name, std::string_view lower_name) {
  return name.size() == lower_name.size() &&
         std::equal(name.begin(), name.end(), lower_name.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

// A URL's parts, by libcurl's parser (as libcurl reads the URLs it is given).
std::optional<UrlParts> PartsOf(const std::string& url) {
  CURLU* u = Curl().url();
  char* scheme = nullptr;
  char* host = nullptr;
  char* port = nullptr;
  char* path = nullptr;
  char* query = nullptr;
  std::optional<UrlParts> parts;
  if (Curl().url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      Curl().url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      Curl().url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      Curl().url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
      Curl().url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
    parts = UrlParts{scheme, host, port, path};
    if (Curl().url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK && query != nullptr) {
      parts->target += '?';
      parts->target += query;
    }
  }
  for (char* part : {scheme, host, port, path, query}) Curl().free(part);
  Curl().url_cleanup(u);
  return parts;
}

}  // namespace

Result<void> CheckUrl(const std::string& url) {
  if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  for (const char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Fail(ErrorCode::kInvalidArgument,
                  "a URL holds no spaces or control characters (encode them: %20)");
    }
  }
  CURLU* u = Curl().url();
  const CURLUcode code = Curl().url_set(u, CURLUPART_URL, url.c_str(), 0);
  Curl().url_cleanup(u);
  if (code != CURLUE_OK) {
    return Fail(ErrorCode::kInvalidArgument, "not a URL libcurl can read: {}",
                Curl().url_strerror(code));
  }
  const auto parts = PartsOf(url);
  if (!parts) return Fail(ErrorCode::kInvalidArgument, "not a URL with a host");
  if (parts->scheme != "http" && parts->scheme != "https") {
    return Fail(ErrorCode::kInvalidArgument, "the scheme must be http or https, not {}",
                parts->scheme);
  }
  if (parts->port == "0") return Fail(ErrorCode::kInvalidArgument, "port 0 cannot be reached");
  return {};
}

// Seconds as libcurl's milliseconds, with libcurl's 0 kept for "no limit" only: a positive value
// is never rounded down to 0 (0.0004 s would have meant no timeout), and a connect timeout of 0
// (libcurl would read its 300 s default) is the longest libcurl takes.
long CurlMillis(double seconds, bool connect) {
  if (seconds <= 0) return connect ? std::numeric_limits<long>::max() : 0L;
  return std::max(1L, static_cast<long>(std::ceil(std::min(seconds, 1e9) * 1000)));
}

std::string CurlErrorClass(int curl_code, bool answered) {
  switch (static_cast<CURLcode>(curl_code)) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return "dns";
    case CURLE_COULDNT_CONNECT: return "connect";
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED: return "tls";
    case CURLE_WRITE_ERROR:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_UNSUPPORTED_PROTOCOL: return "malformed";
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      // A connection that breaks before the answer began is a connection failure.
      return answered ? "truncated" : "connect";
    default: return "other";
  }
}

std::string HttpErrorClass(long status) {
  if (status == 429) return "http-429";
  if (status == 408 || status == 409) return fmt::format("http-{}", status);  // retried apart
  if (status >= 400 && status < 500) return "http-4xx";
  if (status >= 500 && status < 600) return "http-5xx";
  return "http-other";
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

bool Retryable(const std::string& error_class) {
  // The OpenAI SDK retries 408, 409, 429, >= 500 and connection errors and timeouts.
  return error_class == "http-429" || error_class == "http-5xx" || error_class == "connect" ||
         error_class == "timeout" || error_class == "http-408" || error_class == "http-409";
}

struct Engine::Impl {
  struct Conn;
  struct Transfer {
    Impl* engine = nullptr;
    CURL* easy = nullptr;  // null: the transfer goes over one of cmax's own connections
    curl_slist* headers = nullptr;
    uint64_t tag = 0;
    Call call;
    SseParser sse;
    StreamReader reader;
    CallResult result;
    std::string body;  // a whole response, or the start of an error's
    bool saw_done = false;
    bool saw_finish = false;
    bool malformed = false;
    bool answered = false;  // libcurl's transfers: a response began
    bool too_big = false;
    // libcurl's transfers: head bytes so far, and why the head was refused (the same limits
    // as HttpResponseReader's, which libcurl does not apply: it takes 300 KB of headers and
    // reads past a Content-Length it cannot parse).
    size_t head_bytes = 0;
    std::optional<std::string> bad_head;
    long status = 0;         // the response's, once its body began
    double arrived_s = 0;    // the read under way: when it came
    int64_t arrived_ns = 0;  // the same on CLOCK_MONOTONIC, before the first chunk only
    std::optional<std::string> stream_error;
    std::list<std::unique_ptr<Transfer>>::iterator self;  // its place in the engine's list
    uint32_t shard = 0;
    curl_socket_t socket = CURL_SOCKET_BAD;  // its connection while its first chunk is awaited
    // On cmax's own connections: the request as it goes on the wire, how much of it went, the
    // connection carrying it, and its deadlines (seconds from the epoch).
    std::string wire;
    size_t wire_at = 0;
    size_t origin = 0;
    Conn* conn = nullptr;
    double deadline_s = 0;  // the whole request
    double activity_s = 0;  // the last byte that came (idle timeout)
    bool resent = false;    // once sent again over a fresh connection

    Transfer(size_t max_event, Api api, bool keep_text) : sse(max_event), reader(api, keep_text) {}
  };

  // libcurl looks for a reusable connection by walking every connection to the host, so one
  // multi handle with ten thousand connections spends its time in that walk. Transfers are
  // spread over shards of at most kShardTransfers each, every shard a multi handle of its own
  // with its own connections; all their sockets share one epoll set.
  struct Shard {
    Impl* engine = nullptr;
    uint32_t index = 0;
    CURLM* multi = nullptr;
    std::optional<Clock::time_point> deadline;  // libcurl's timer
    size_t in_flight = 0;
  };
  static constexpr size_t kShardTransfers = 256;

  // cmax's own plain-HTTP/1.1 connections (http:// URLs, unless told to use libcurl): one
  // request at a time each, kept alive in a pool per origin. libcurl costs a poll() per read,
  // several epoll changes and its own bookkeeping per request; these cost a send, the reads
  // and nothing else (the measured difference is in docs/PERFORMANCE.md). TLS and HTTP/2 stay
  // with libcurl.
  static constexpr uint32_t kOwnConnections = 0xffffffffU;  // their "shard" in epoll events
  struct Conn {
    int fd = -1;
    size_t origin = 0;
    Transfer* transfer = nullptr;  // null: idle in its origin's pool
    bool connecting = true;
    bool reused = false;   // it carried an earlier request
    bool writing = false;  // EPOLLOUT is asked for
    double connect_deadline_s = 0;
    HttpResponseReader reader;
  };
  struct Origin {
    std::string host;  // as the Host header gives it
    sockaddr_storage address{};
    socklen_t address_length = 0;
    std::string resolve_error;  // empty: resolved
    std::vector<Conn*> idle;
  };
  struct OwnUrl {
    size_t origin = 0;
    std::string target;  // path and query
  };

  EngineOptions options;
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<Completion>* done = nullptr;  // where Poll collects completions
  std::vector<Completion> refused;          // calls libcurl would not take, for the next Poll
  int epoll_fd = -1;
  int first_epoll_fd = -1;  // the sockets in awaiting_first
  std::list<std::unique_ptr<Transfer>> transfers;
  std::vector<CURL*> idle_handles;  // reused, so a new request does not pay curl_easy_init
  // By socket: the transfer whose answer has begun and whose first chunk has not come yet.
  // These sockets are also in an epoll set of their own, which Poll reads before the main one:
  // when every stream's token comes in the same wave (a server's decode steps), the main set
  // holds a thousand ready sockets and one that just became ready waits behind all of them,
  // up to 10 ms at 1,024 streams; its first chunk would be timed that late (TTFT is the measure
  // a late read hurts most). Under HTTP/2 several transfers share a socket and the latest to
  // begin holds the mark.
  std::vector<Transfer*> awaiting_first;
  size_t awaiting = 0;  // marks in awaiting_first
  curl_slist* resolve = nullptr;
  std::vector<std::unique_ptr<Conn>> conns;  // by socket
  std::vector<Origin> origins;
  std::unordered_map<std::string, size_t> origin_index;             // "host:port"
  std::unordered_map<std::string, std::optional<OwnUrl>> own_urls;  // nullopt: libcurl's
  std::vector<char> inbox = std::vector<char>(size_t{64} << 10);    // every read lands here
  size_t own_in_flight = 0;
  double next_deadline_s = std::numeric_limits<double>::infinity();

  ~Impl() {
    for (auto& t : transfers) {
      if (t->easy == nullptr) continue;
      Curl().multi_remove_handle(shards[t->shard]->multi, t->easy);
      Curl().easy_cleanup(t->easy);
      Curl().slist_free_all(t->headers);
    }
    for (auto& c : conns) {
      if (c) ::close(c->fd);
    }
    for (CURL* easy : idle_handles) Curl().easy_cleanup(easy);
    for (auto& shard : shards) Curl().multi_cleanup(shard->multi);
    Curl().slist_free_all(resolve);
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (first_epoll_fd >= 0) ::close(first_epoll_fd);
  }

  double Now() const { return std::chrono::duration<double>(Clock::now() - options.epoch).count(); }

  // Marks `t` as awaiting its first chunk on socket `s`: from the moment libcurl waits to read
  // its answer (the socket callback) or, failing that, when the answer's head comes.
  void AwaitFirstChunk(Transfer& t, curl_socket_t s) {
    if (s < 0 || t.socket == s || t.result.timing.first_chunk_s) return;
    FirstChunkCame(t);  // a mark on another socket (a connection replaced) goes
    t.socket = s;
    const auto at = static_cast<size_t>(s);
    if (at >= awaiting_first.size()) awaiting_first.resize(at + 1024, nullptr);
    if (awaiting_first[at] == nullptr) ++awaiting;
    awaiting_first[at] = &t;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = (uint64_t{t.shard} << 32) | static_cast<uint32_t>(s);
    ::epoll_ctl(first_epoll_fd, EPOLL_CTL_ADD, s, &ev);  // EEXIST under HTTP/2: already there
  }
  void FirstChunkCame(Transfer& t) {
    if (t.socket >= 0 && awaiting_first[static_cast<size_t>(t.socket)] == &t) {
      awaiting_first[static_cast<size_t>(t.socket)] = nullptr;
      --awaiting;
      ::epoll_ctl(first_epoll_fd, EPOLL_CTL_DEL, t.socket, nullptr);  // gone if it was closed
    }
    t.socket = CURL_SOCKET_BAD;
  }
  // Hands a round of epoll events to the multi handles that own their sockets.
  void Dispatch(const epoll_event* events, int n) {
    int running = 0;
    for (int i = 0; i < n; ++i) {
      int flags = 0;
      if ((events[i].events & EPOLLIN) != 0U) flags |= CURL_CSELECT_IN;
      if ((events[i].events & EPOLLOUT) != 0U) flags |= CURL_CSELECT_OUT;
      if ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0U) flags |= CURL_CSELECT_ERR;
      const auto shard = static_cast<uint32_t>(events[i].data.u64 >> 32);
      const auto fd = static_cast<curl_socket_t>(events[i].data.u64 & 0xffffffffU);
      if (shard == kOwnConnections) {
        OnOwnEvent(fd, events[i].events);
      } else if (shard < shards.size())
        Curl().multi_socket_action(shards[shard]->multi, fd, flags, &running);
    }
  }

  static int OnSocket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp) {
    auto* shard = static_cast<Shard*>(userp);
    const int epoll_fd = shard->engine->epoll_fd;
    if (what == CURL_POLL_REMOVE) {
      ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s, nullptr);
      Curl().multi_assign(shard->multi, s, nullptr);
      return 0;
    }
    Transfer* t = nullptr;
    if ((what & CURL_POLL_IN) != 0 && easy != nullptr &&
        Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &t) == CURLE_OK && t != nullptr &&
        t->call.stream) {
      shard->engine->AwaitFirstChunk(*t, s);  // the request is out: its answer is awaited
    }
    epoll_event ev{};
    ev.events =
        ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0U) | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0U);
    // The shard and the socket, so that the event goes to the multi handle that owns it.
    ev.data.u64 = (uint64_t{shard->index} << 32) | static_cast<uint32_t>(s);
    if (socketp == nullptr) {
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, s, &ev);
      Curl().multi_assign(shard->multi, s, shard);  // any non-null mark: "in the epoll set"
    } else {
      ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, s, &ev);
    }
    return 0;
  }

  static int OnTimer(CURLM* /*multi*/, long timeout_ms, void* userp) {
    auto* shard = static_cast<Shard*>(userp);
    if (timeout_ms < 0) {
      shard->deadline.reset();
    } else {
      shard->deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    }
    return 0;
  }

  // The shard with the fewest transfers, a new one when all are full: a finished transfer's
  // connection is then the first to be reused.
  Result<Shard*> PickShard() {
    Shard* best = nullptr;
    for (auto& shard : shards) {
      if (!best || shard->in_flight < best->in_flight) best = shard.get();
    }
    if (best && best->in_flight < kShardTransfers) return best;
    auto shard = std::make_unique<Shard>();
    shard->engine = this;
    shard->index = static_cast<uint32_t>(shards.size());
    shard->multi = Curl().multi_init();
    if (!shard->multi) {
      if (best) return best;  // over the shard size rather than not at all
      return Fail(ErrorCode::kInternal, "curl_multi_init failed");
    }
    Curl().multi_setopt(shard->multi, CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
    Curl().multi_setopt(shard->multi, CURLMOPT_SOCKETDATA, shard.get());
    Curl().multi_setopt(shard->multi, CURLMOPT_TIMERFUNCTION, &Impl::OnTimer);
    Curl().multi_setopt(shard->multi, CURLMOPT_TIMERDATA, shard.get());
    if (options.http2) Curl().multi_setopt(shard->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    shards.push_back(std::move(shard));
    return shards.back().get();
  }

  static size_t OnHeader(char* data, size_t size, size_t count, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    const size_t n = size * count;
    if (!t->result.timing.first_byte_s) {
      t->result.timing.first_byte_s = t->engine->Now();
      curl_socket_t socket = CURL_SOCKET_BAD;
      if (t->call.stream &&
          Curl().easy_getinfo(t->easy, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK) {
        t->engine->AwaitFirstChunk(*t, socket);
      }
    }
    t->answered = true;
    // Each head (an interim 1xx, the final one) has the limit to itself, as in the own client.
    if (n >= 5 && std::string_view(data, 5) == "HTTP/") t->head_bytes = 0;
    t->head_bytes += n;
    if (t->head_bytes > kMaxResponseHeadBytes) {
      t->bad_head = "the response head exceeds the size limit";
      return 0;  // ends the transfer (CURLE_WRITE_ERROR); Finish gives bad_head
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
      HeaderField(*t, name, value);
    }
    return n;
  }

  // A response header (name lower-cased), whichever connection brought it.
  static void HeaderField(Transfer& t, std::string_view name, std::string_view value) {
    if (name == "retry-after-ms") {
      if (auto ms = ParseNonNegative(value); ms) t.result.retry_after_s = *ms / 1000;
    } else if (name == "retry-after" && !t.result.retry_after_s) {
      t.result.retry_after_s = ParseNonNegative(value);  // an HTTP date is not honoured
    }
  }

  static size_t OnBody(char* data, size_t size, size_t count, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    // The status is known once the body begins; asked once, not for every chunk.
    if (t->status == 0) Curl().easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
    Stamp(*t);
    return Body(*t, data, size * count) ? size * count : 0;  // 0 aborts: CURLE_WRITE_ERROR
  }

  // The time of the read under way, which every event it holds arrived at.
  static void Stamp(Transfer& t) {
    t.arrived_s = t.engine->Now();
    t.arrived_ns = t.result.timing.first_chunk_s ? 0 : MonotonicNanos();  // only the first
  }

  // Body bytes of the response whose status is t.status, as they arrive; false when a whole
  // response outgrows the body limit (the transfer is then ended as malformed).
  static bool Body(Transfer& transfer, const char* data, size_t n) {
    Transfer* t = &transfer;
    const long status = t->status;
    if (status != 200 || !t->call.stream) {
      const size_t cap = status == 200 ? t->engine->options.max_body_bytes : kErrorBodyBytes;
      if (t->body.size() + n > cap) {
        if (status == 200) {
          t->too_big = true;
          return false;
        }
        t->body.append(data, std::min(n, cap - std::min(cap, t->body.size())));
        return true;
      }
      t->body.append(data, n);
      return true;
    }
    // Every event of this read arrived at the read's time (Stamp). Kept in the transfer so that
    // the sink captures one pointer and fits std::function's inline buffer: no allocation per
    // chunk.
    t->sse.Feed(std::string_view(data, n), [t](const SseEvent& event) {
      RequestTiming& timing = t->result.timing;
      const double now = t->arrived_s;
      const StreamEffect effect = t->reader.Read(event);
      if (effect.choice) {
        if (!timing.first_chunk_s) {
          timing.first_chunk_s = now;
          t->engine->FirstChunkCame(*t);
          if (const auto& sent = t->reader.ServerSentNs(); sent) {
            t->result.server_lag_ms = static_cast<double>(t->arrived_ns - *sent) / 1e6;
          }
        }
        timing.chunk_s.push_back(now);
      }
      if (effect.content && !timing.first_token_s) timing.first_token_s = now;
      if (effect.done) t->saw_done = true;
      if (effect.finish) t->saw_finish = true;
      if (effect.malformed) t->malformed = true;
      if (effect.error && !t->stream_error) t->stream_error = effect.error;
    });
    return true;
  }

  CURL* Handle() {
    if (!idle_handles.empty()) {
      CURL* easy = idle_handles.back();
      idle_handles.pop_back();
      Curl().easy_reset(easy);
      return easy;
    }
    return Curl().easy_init();
  }

  void Configure(Transfer& t) const {
    CURL* e = t.easy;
    Curl().easy_setopt(e, CURLOPT_URL, t.call.url.c_str());
    Curl().easy_setopt(e, CURLOPT_POST, 1L);
    Curl().easy_setopt(e, CURLOPT_POSTFIELDS, t.call.body.data());
    Curl().easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.call.body.size()));
    Curl().easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    Curl().easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::OnBody);
    Curl().easy_setopt(e, CURLOPT_WRITEDATA, &t);
    Curl().easy_setopt(e, CURLOPT_HEADERFUNCTION, &Impl::OnHeader);
    Curl().easy_setopt(e, CURLOPT_HEADERDATA, &t);
    Curl().easy_setopt(e, CURLOPT_PRIVATE, &t);
    Curl().easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    Curl().easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    Curl().easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CurlMillis(options.connect_timeout_s, true));
    Curl().easy_setopt(e, CURLOPT_TIMEOUT_MS, CurlMillis(options.timeout_s, false));
    if (options.idle_timeout_s > 0) {
      Curl().easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
      Curl().easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                         static_cast<long>(std::ceil(std::min(options.idle_timeout_s, 1e9))));
    }
    Curl().easy_setopt(e, CURLOPT_HTTP_VERSION,
                       options.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    if (options.http2 && t.call.url.rfind("https://", 0) == 0) {
      // Wait for a connection being set up to learn whether it speaks h2 and can carry this
      // request too; on plain http (HTTP/1.1) waiting would only serialise the first requests.
      Curl().easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    }
    if (options.insecure) {
      Curl().easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      Curl().easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!options.ca_file.empty()) Curl().easy_setopt(e, CURLOPT_CAINFO, options.ca_file.c_str());
    if (resolve) Curl().easy_setopt(e, CURLOPT_RESOLVE, resolve);
  }

  void Complete(CURL* easy, CURLcode code) {
    Transfer* t = nullptr;
    Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &t);
    FirstChunkCame(*t);
    Shard& shard = *shards[t->shard];
    Curl().multi_remove_handle(shard.multi, easy);
    --shard.in_flight;
    Curl().easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &t->result.http_status);
    long version = 0;
    Curl().easy_getinfo(easy, CURLINFO_HTTP_VERSION, &version);
    t->result.http_version = HttpVersionName(version);
    if (code == CURLE_OUT_OF_MEMORY) {
      // libcurl's answer to a status or header line over its own limit (100 KB), which it
      // reports before any header reached us; a real lack of memory would fail far more.
      Finish(*t, "malformed", "a response header line exceeds libcurl's size limit");
    } else if (code != CURLE_OK) {
      Finish(*t, CurlErrorClass(code, t->answered), Curl().easy_strerror(code));
    } else {
      Finish(*t, {}, {});
    }
  }

  // Ends a transfer whose status and version are in its result: `failure` is the connection's
  // error class (empty when the exchange went through) and `why` its message; the response
  // decides the rest. The completion goes to the round's list and the transfer is gone.
  // The caller has taken the transfer's awaited-first-chunk mark (FirstChunkCame) before any
  // socket of it was closed, when it had one.
  void Finish(Transfer& transfer, const std::string& failure, const std::string& why) {
    Transfer* t = &transfer;
    CallResult& r = t->result;
    RequestTiming& timing = r.timing;
    const bool cut_in_event = t->call.stream && t->sse.Finish();
    std::string error_class;
    if (t->too_big) {
      error_class = "malformed";
      r.error_message = "response larger than the body limit";
    } else if (t->bad_head) {
      error_class = "malformed";
      r.error_message = *t->bad_head;
    } else if (!failure.empty()) {
      error_class = failure;
      r.error_message = why;
    } else if (r.http_status != 200) {
      error_class = HttpErrorClass(r.http_status);
      r.error_message = fmt::format("HTTP {}: {}", r.http_status, ErrorMessage(t->body));
    } else if (t->call.stream) {
      if (t->stream_error) {
        error_class = "stream-error";
        r.error_message = *t->stream_error;
      } else if (t->malformed || t->sse.Oversized() > 0) {
        error_class = "malformed";
        r.error_message =
            t->malformed ? "a stream event was not JSON" : "a stream event exceeded the size limit";
      } else if (cut_in_event || (!t->saw_done && !t->saw_finish)) {
        error_class = "truncated";
        r.error_message = "the stream ended without its end marker";
      } else if (timing.chunk_s.empty()) {
        error_class = "truncated";
        r.error_message = "the stream carried no answer";
      }
    } else {
      FullResponse full = ReadFullResponse(t->call.api, t->body);
      if (full.error) {
        error_class = "stream-error";
        r.error_message = *full.error;
      } else if (full.malformed) {
        error_class = "malformed";
        r.error_message = "the response was not a completion";
      } else {
        const double end = Now();
        timing.first_chunk_s = end;
        timing.first_token_s = end;
        timing.chunk_s.push_back(end);
        r.usage = full.usage;
        r.text = std::move(full.text);
      }
    }
    if (t->call.stream) {
      r.usage = t->reader.Usage();
      if (t->call.keep_text) r.text = t->reader.Text();
      r.sse_comments = t->sse.Comments();
    }
    timing.ok = error_class.empty();
    timing.error = error_class;
    if (r.usage) {
      timing.input_tokens = r.usage->input;
      timing.output_tokens = r.usage->output;
      timing.cached_tokens = r.usage->cache_read;
    } else if (timing.ok) {
      // No usage from the server: count content chunks, as tools without a tokenizer do.
      timing.output_tokens = t->reader.ContentChunks();
    }
    const uint64_t tag = t->tag;
    CallResult result = std::move(r);
    if (t->easy != nullptr) {
      Curl().slist_free_all(t->headers);
      idle_handles.push_back(t->easy);
    }
    transfers.erase(t->self);
    // Outside Poll (a call that failed as it started) the completion waits for the next one.
    (done != nullptr ? *done : refused).push_back({tag, std::move(result)});
  }

  // --- cmax's own connections -------------------------------------------------------------

  // The URL's origin and target when it is plain http and ours to carry; nullopt for libcurl.
  const std::optional<OwnUrl>& OwnUrlOf(const std::string& url) {
    const auto found = own_urls.find(url);
    if (found != own_urls.end()) return found->second;
    std::optional<OwnUrl> own;
    if (const auto parts = PartsOf(url); options.own_http && parts && parts->scheme == "http") {
      own = OwnUrl{OriginOf(parts->host, parts->port), parts->target};
    }
    return own_urls.emplace(url, std::move(own)).first->second;
  }

  // The origin of host:port, its address looked up once (DNS is not timed in any request).
  size_t OriginOf(const std::string& host, const std::string& port) {
    const std::string key = host + ":" + port;
    if (const auto found = origin_index.find(key); found != origin_index.end()) {
      return found->second;
    }
    Origin o;
    o.host = port == "80" ? host : key;
    std::string name = host;
    if (name.size() > 2 && name.front() == '[') name = name.substr(1, name.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(name.c_str(), port.c_str(), &hints, &found);
    if (rc == 0 && found != nullptr) {
      std::memcpy(&o.address, found->ai_addr, found->ai_addrlen);
      o.address_length = found->ai_addrlen;
    } else {
      o.resolve_error = fmt::format("could not resolve host {}: {}", name, ::gai_strerror(rc));
    }
    if (found != nullptr) ::freeaddrinfo(found);
    origins.push_back(std::move(o));
    origin_index.emplace(key, origins.size() - 1);
    return origins.size() - 1;
  }

  // The request as it goes on the wire. Header rules as libcurl's: a header the caller gives
  // replaces the default of that name, one given as "Name:" with no value removes it; a header
  // with a line break in it is not sent (it would end the head early).
  std::string Wire(const OwnUrl& url, const Call& call) const {
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
    w += url.target;
    w += " HTTP/1.1\r\n";
    if (!given("host")) w += "Host: " + origins[url.origin].host + "\r\n";
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

  void StartOwn(std::unique_ptr<Transfer> owned, const OwnUrl& url) {
    Transfer* t = owned.get();
    t->shard = kOwnConnections;
    t->origin = url.origin;
    t->wire = Wire(url, t->call);
    t->call.body = std::string();  // on the wire now
    const double now = Now();
    t->result.timing.sent_s = now;
    // 0 or less: no limit, as libcurl reads it.
    t->deadline_s =
        options.timeout_s > 0 ? now + options.timeout_s : std::numeric_limits<double>::infinity();
    t->activity_s = now;
    transfers.push_back(std::move(owned));
    t->self = std::prev(transfers.end());
    if (const Origin& o = origins[url.origin]; !o.resolve_error.empty()) {
      Finish(*t, "dns", o.resolve_error);
      return;
    }
    ++own_in_flight;
    Attach(*t);
  }

  // Puts the transfer on an idle connection to its origin (unless `fresh`) or a new one, and
  // sends what it can.
  void Attach(Transfer& t, bool fresh = false) {
    Origin& o = origins[t.origin];
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
        --own_in_flight;
        Finish(t, "connect", why);
        return;
      }
    }
    c->transfer = &t;
    c->reader.Reset();
    t.conn = c;
    t.wire_at = 0;
    next_deadline_s = std::min(next_deadline_s, Due(t));
    if (!c->connecting) Send(*c);
  }

  Conn* Connect(size_t origin, std::string& why) {
    const Origin& o = origins[origin];
    const int fd =
        ::socket(o.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
      why = fmt::format("socket: {}", std::strerror(errno));
      return nullptr;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&o.address), o.address_length);
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
    c->connect_deadline_s = Now() + (options.connect_timeout_s > 0 ? options.connect_timeout_s
                                                                   : 300);  // libcurl's default
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = (uint64_t{kOwnConnections} << 32) | static_cast<uint32_t>(fd);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    const auto at = static_cast<size_t>(fd);
    if (at >= conns.size()) conns.resize(at + 1024);
    conns[at] = std::move(c);
    return conns[at].get();
  }

  void Writing(Conn& c, bool on) {
    if (c.writing == on) return;
    c.writing = on;
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0U);
    ev.data.u64 = (uint64_t{kOwnConnections} << 32) | static_cast<uint32_t>(c.fd);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // Sends what is left of the request; false when the connection broke (the transfer is
  // then resent or ended).
  bool Send(Conn& c) {
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
        return true;
      } else {
        Ended(c, n < 0 ? errno : EPIPE);
        return false;
      }
    }
    Writing(c, false);
    if (t.call.stream) AwaitFirstChunk(t, c.fd);  // the request is out: its answer is awaited
    return true;
  }

  void OnOwnEvent(int fd, uint32_t events) {
    const auto at = static_cast<size_t>(fd);
    if (at >= conns.size() || !conns[at]) return;
    Conn& c = *conns[at];
    if (c.transfer == nullptr) {
      // An idle connection speaks only to say that the server closed it.
      const ssize_t n = ::recv(c.fd, inbox.data(), inbox.size(), MSG_DONTWAIT);
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
        FailOwn(c, "connect",
                fmt::format("connect to {}: {}", origins[c.origin].host, std::strerror(error)));
        return;
      }
      c.connecting = false;
    }
    // What came is read before the rest of the request is sent: an early answer (a 413, a
    // 400) is then read before a send into the closed connection would hide it.
    const bool readable = (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0;
    if (readable && !Receive(c)) return;
    if (c.transfer->wire_at < c.transfer->wire.size()) Send(c);
  }

  // One read; false when the transfer left the connection (ended, or sent again elsewhere).
  bool Receive(Conn& c) {
    const ssize_t n = ::recv(c.fd, inbox.data(), inbox.size(), 0);
    if (n > 0) return Arrived(c, static_cast<size_t>(n));
    if (n == 0) {
      Ended(c, 0);
      return false;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      Ended(c, errno);
      return false;
    }
    return true;
  }

  bool Arrived(Conn& c, size_t n) {
    Transfer& t = *c.transfer;
    Stamp(t);
    t.activity_s = t.arrived_s;
    if (!t.result.timing.first_byte_s) t.result.timing.first_byte_s = t.arrived_s;
    const bool had_head = c.reader.HeadRead();
    const size_t used = c.reader.Feed(std::string_view(inbox.data(), n));
    if (!had_head && c.reader.HeadRead()) {
      t.status = c.reader.Status();
      t.result.http_status = t.status;
      t.result.http_version = c.reader.MinorVersion() == 0 ? "1.0" : "1.1";
      for (const auto& [name, value] : c.reader.Headers()) HeaderField(t, name, value);
    }
    for (const std::string_view piece : c.reader.Body()) {
      if (!Body(t, piece.data(), piece.size())) {
        FailOwn(c, "malformed", {});  // too big: Finish says so
        return false;
      }
    }
    if (c.reader.GetState() == HttpResponseReader::State::kDone) {
      Done(c, used == n);
      return false;
    }
    if (c.reader.GetState() == HttpResponseReader::State::kError) {
      FailOwn(c, "malformed", c.reader.Error());
      return false;
    }
    return true;
  }

  // The connection closed (error 0) or broke.
  void Ended(Conn& c, int error) {
    Transfer& t = *c.transfer;
    if (error == 0) {
      c.reader.Close();
      if (c.reader.GetState() == HttpResponseReader::State::kDone) {
        Done(c, false);
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
      FailOwn(c, "connect",
              error == 0 ? "the server closed the connection without answering"
                         : fmt::format("connection to {}: {}", origins[c.origin].host,
                                       std::strerror(error)));
      return;
    }
    FailOwn(c, "truncated",
            error == 0 ? "the connection closed before the answer was whole"
                       : fmt::format("the connection broke: {}", std::strerror(error)));
  }

  Transfer& Detach(Conn& c) {
    Transfer& t = *c.transfer;
    FirstChunkCame(t);  // before the socket is closed and its number reused
    c.transfer = nullptr;
    t.conn = nullptr;
    return t;
  }

  // The answer is whole. The connection goes back to the pool when the server keeps it, sent
  // nothing more, and had the whole request (an answer before the end of the request, like an
  // early 413, leaves the connection in no known state).
  void Done(Conn& c, bool nothing_after) {
    Transfer& t = Detach(c);
    if (nothing_after && c.reader.KeepAlive() && t.wire_at == t.wire.size()) {
      c.reader.Reset();
      origins[c.origin].idle.push_back(&c);
    } else {
      Close(c);
    }
    --own_in_flight;
    Finish(t, {}, {});
  }

  // `why` is taken by value: it is often the connection's own reader's message
  // (c.reader.Error()), and Close frees the connection before Finish reads it.
  void FailOwn(Conn& c, const std::string& error_class, std::string why) {
    Transfer& t = Detach(c);
    Close(c);
    --own_in_flight;
    Finish(t, error_class, why);
  }

  void Close(Conn& c) {
    auto& idle = origins[c.origin].idle;
    idle.erase(std::remove(idle.begin(), idle.end(), &c), idle.end());
    ::close(c.fd);  // leaves both epoll sets with it
    conns[static_cast<size_t>(c.fd)].reset();
  }

  // The first deadline of a transfer on its connection.
  double Due(const Transfer& t) const {
    double due = t.deadline_s;
    if (t.conn != nullptr && t.conn->connecting) due = std::min(due, t.conn->connect_deadline_s);
    if (options.idle_timeout_s > 0) due = std::min(due, t.activity_s + options.idle_timeout_s);
    return due;
  }

  // Ends the transfers past a deadline. Deadlines only move later (bytes came), so the earliest
  // found here is never later than the true next one.
  void CheckDeadlines() {
    const double now = Now();
    if (own_in_flight == 0 || now < next_deadline_s) return;
    next_deadline_s = std::numeric_limits<double>::infinity();
    std::vector<Transfer*> late;
    for (const auto& t : transfers) {
      if (t->conn == nullptr) continue;
      const double due = Due(*t);
      if (now >= due) {
        late.push_back(t.get());
      } else {
        next_deadline_s = std::min(next_deadline_s, due);
      }
    }
    for (Transfer* t : late) {
      std::string why;
      if (now >= t->deadline_s) {
        why = fmt::format("the request took over {} s", options.timeout_s);
      } else if (t->conn->connecting) {
        why = fmt::format("connect timed out after {} s", options.connect_timeout_s);
      } else {
        why = fmt::format("no byte for {} s", options.idle_timeout_s);
      }
      FailOwn(*t->conn, "timeout", why);
    }
  }

  void Drain(Shard& shard) {
    int left = 0;
    while (CURLMsg* m = Curl().multi_info_read(shard.multi, &left)) {
      if (m->msg == CURLMSG_DONE) Complete(m->easy_handle, m->data.result);
    }
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;
size_t Engine::InFlight() const {
  return impl_->transfers.size() + impl_->refused.size();  // ended at once: not handed out yet
}
double Engine::SecondsSinceEpoch() const {
  return impl_->Now();
}

void Engine::CancelAll() {
  Impl& s = *impl_;
  for (auto& t : s.transfers) {
    if (Impl::Conn* c = t->conn; c != nullptr) {
      s.Detach(*c);
      s.Close(*c);
      continue;
    }
    if (t->easy == nullptr) continue;
    Curl().multi_remove_handle(s.shards[t->shard]->multi, t->easy);
    Curl().slist_free_all(t->headers);
    s.idle_handles.push_back(t->easy);
  }
  s.transfers.clear();
  s.own_in_flight = 0;
  s.next_deadline_s = std::numeric_limits<double>::infinity();
  for (size_t fd = 0; fd < s.awaiting_first.size(); ++fd) {
    if (s.awaiting_first[fd] != nullptr) {
      ::epoll_ctl(s.first_epoll_fd, EPOLL_CTL_DEL, static_cast<int>(fd), nullptr);
      s.awaiting_first[fd] = nullptr;
    }
  }
  s.awaiting = 0;
  s.refused.clear();
  for (auto& shard : s.shards) shard->in_flight = 0;
}

void Engine::ResetEpoch() {
  // Deadlines count from the epoch: moved with it (between phases nothing is in flight).
  const double shift = impl_->Now();
  impl_->options.epoch = Clock::now();
  for (auto& t : impl_->transfers) {
    t->deadline_s -= shift;
    t->activity_s -= shift;
    if (t->conn != nullptr) t->conn->connect_deadline_s -= shift;
  }
  impl_->next_deadline_s -= shift;
}

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  // libcurl is loaded now, by the commands that send requests, not at every start.
  if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->first_epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->first_epoll_fd < 0) {
    return Fail(ErrorCode::kIo, "epoll_create1: {}", std::strerror(errno));
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

bool Engine::PinAddress(const std::string& url) {
  Impl& s = *impl_;
  if (const auto& own = s.OwnUrlOf(url); own) return s.origins[own->origin].resolve_error.empty();
  // libcurl's requests: the address looked up now goes to libcurl as a CURLOPT_RESOLVE entry.
  const auto parts = PartsOf(url);
  if (!parts) return false;
  const Impl::Origin& o = s.origins[s.OriginOf(parts->host, parts->port)];
  if (!o.resolve_error.empty()) return false;
  const bool v6 = o.address.ss_family == AF_INET6;
  char text[INET6_ADDRSTRLEN] = {};
  const void* address =
      v6 ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&o.address)->sin6_addr)
         : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&o.address)->sin_addr);
  ::inet_ntop(o.address.ss_family, address, text, sizeof(text));
  const std::string entry = v6 ? fmt::format("{}:{}:[{}]", parts->host, parts->port, text)
                               : fmt::format("{}:{}:{}", parts->host, parts->port, text);
  s.resolve = Curl().slist_append(s.resolve, entry.c_str());
  return true;
}

void Engine::Start(uint64_t tag, Call call) {
  Impl& s = *impl_;
  auto t = std::make_unique<Impl::Transfer>(s.options.max_event_bytes, call.api, call.keep_text);
  t->engine = &s;
  t->tag = tag;
  t->call = std::move(call);
  if (const auto& own = s.OwnUrlOf(t->call.url); own) {
    s.StartOwn(std::move(t), *own);
    return;
  }
  t->easy = s.Handle();
  t->headers = Curl().slist_append(nullptr, "Content-Type: application/json");
  t->headers = Curl().slist_append(t->headers, "Expect:");  // no 100-continue round trip
  if (t->call.stream) t->headers = Curl().slist_append(t->headers, "Accept: text/event-stream");
  for (const std::string& h : t->call.headers)
    t->headers = Curl().slist_append(t->headers, h.c_str());
  s.Configure(*t);
  t->result.timing.sent_s = s.Now();
  Impl::Transfer* raw = t.get();
  s.transfers.push_back(std::move(t));
  raw->self = std::prev(s.transfers.end());
  auto shard = s.PickShard();
  if (shard) {
    raw->shard = (*shard)->index;
    ++(*shard)->in_flight;
  }
  if (!shard || Curl().multi_add_handle((*shard)->multi, raw->easy) != CURLM_OK) {
    if (shard) --(*shard)->in_flight;
    // Never lost: the call ends at once with the reason.
    raw->result.timing.error = "other";
    raw->result.error_message = "libcurl refused the request";
    CallResult r = std::move(raw->result);
    s.idle_handles.push_back(raw->easy);
    Curl().slist_free_all(raw->headers);
    s.transfers.pop_back();
    s.refused.push_back({tag, std::move(r)});
  }
}

void Engine::Poll(Clock::time_point until, std::vector<Completion>& done) {
  Impl& s = *impl_;
  s.done = &done;
  for (Completion& c : s.refused) done.push_back(std::move(c));
  s.refused.clear();
  // Few events per round: each is timed when its turn comes, so a long batch would make the
  // last ones look later than they arrived.
  epoll_event events[64];
  // First the sockets awaiting a first chunk, ready or not in the main set's order.
  if (s.awaiting > 0) s.Dispatch(events, ::epoll_wait(s.first_epoll_fd, events, 64, 0));
  Clock::time_point wake = until;
  for (const auto& shard : s.shards) {
    if (shard->deadline && *shard->deadline < wake) wake = *shard->deadline;
  }
  if (s.own_in_flight > 0 && s.next_deadline_s < s.Now() + 3600) {
    wake = std::min(wake, s.options.epoch + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(s.next_deadline_s)));
  }
  const auto wait = std::max(Clock::duration::zero(), wake - Clock::now());
  const int64_t wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
              static_cast<long>(wait_ns % 1'000'000'000)};
  int n = ::epoll_pwait2(s.epoll_fd, events, 64, &ts, nullptr);
  if (n < 0 && errno == ENOSYS) {  // kernels before 5.11: millisecond waits
    n = ::epoll_wait(s.epoll_fd, events, 64, static_cast<int>((wait_ns + 999'999) / 1'000'000));
  }
  s.Dispatch(events, n);
  int running = 0;
  const Clock::time_point now = Clock::now();
  for (auto& shard : s.shards) {
    if (shard->deadline && now >= *shard->deadline) {
      shard->deadline.reset();
      Curl().multi_socket_action(shard->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }
  for (auto& shard : s.shards) s.Drain(*shard);
  s.CheckDeadlines();
  s.done = nullptr;
}

}  // namespace cmax::endpoint
