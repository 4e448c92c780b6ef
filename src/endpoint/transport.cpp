#include "endpoint/transport.hpp"

#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <curl/curl.h>
#include <fmt/format.h>
#include <sys/epoll.h>

#include "core/strings.hpp"
#include "sys/curl_library.hpp"

namespace cmax::endpoint {

using sys::Curl;

namespace {
constexpr size_t kErrorBodyBytes = 64 << 10;
}  // namespace

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

Address Resolve(const std::string& host, const std::string& port) {
  Address a;
  std::string name = host;
  if (name.size() > 2 && name.front() == '[') name = name.substr(1, name.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(name.c_str(), port.c_str(), &hints, &found);
  if (rc == 0 && found != nullptr) {
    std::memcpy(&a.address, found->ai_addr, found->ai_addrlen);
    a.length = found->ai_addrlen;
  } else {
    a.error = fmt::format("could not resolve host {}: {}", name, ::gai_strerror(rc));
  }
  if (found != nullptr) ::freeaddrinfo(found);
  return a;
}

Exchange::Exchange(EventHub& owner, uint64_t call_tag, Call what, uint32_t transport_route)
    : hub(&owner),
      tag(call_tag),
      call(std::move(what)),
      route(transport_route),
      sse(owner.Options().max_event_bytes),
      reader(call.api, call.keep_text) {}

void Exchange::HeaderField(std::string_view name, std::string_view value) {
  if (name == "retry-after-ms") {
    if (auto ms = ParseNonNegative(value); ms) result.retry_after_s = *ms / 1000;
  } else if (name == "retry-after" && !result.retry_after_s) {
    result.retry_after_s = ParseNonNegative(value);  // an HTTP date is not honoured
  }
}

bool Exchange::ReadBody(const char* data, size_t n) {
  if (status != 200 || !call.stream) {
    const size_t cap = status == 200 ? hub->Options().max_body_bytes : kErrorBodyBytes;
    if (body.size() + n > cap) {
      if (status == 200) {
        too_big = true;
        return false;
      }
      body.append(data, std::min(n, cap - std::min(cap, body.size())));
      return true;
    }
    body.append(data, n);
    return true;
  }
  // Every event of this read arrived at the read's time (Stamp). The sink captures one pointer
  // and fits std::function's inline buffer: no allocation per chunk.
  sse.Feed(std::string_view(data, n), [this](const SseEvent& event) {
    RequestTiming& timing = result.timing;
    const double now = arrived_s;
    const StreamEffect effect = reader.Read(event);
    if (effect.choice) {
      if (!timing.first_chunk_s) {
        timing.first_chunk_s = now;
        hub->FirstChunkCame(*this);
        if (const auto& sent = reader.ServerSentNs(); sent) {
          result.server_lag_ms = static_cast<double>(arrived_ns - *sent) / 1e6;
        }
      }
      timing.chunk_s.push_back(now);
    }
    if (effect.content && !timing.first_token_s) timing.first_token_s = now;
    if (effect.done) saw_done = true;
    if (effect.finish) saw_finish = true;
    if (effect.malformed) malformed = true;
    if (effect.error && !stream_error) stream_error = effect.error;
  });
  return true;
}

EventHub::~EventHub() {
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (first_epoll_fd_ >= 0) ::close(first_epoll_fd_);
}

Result<void> EventHub::Open() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  first_epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0 || first_epoll_fd_ < 0) {
    return Fail(ErrorCode::kIo, "epoll_create1: {}", std::strerror(errno));
  }
  return {};
}

void EventHub::AwaitFirstChunk(Exchange& t, int s) {
  if (s < 0 || t.awaited_socket == s || t.result.timing.first_chunk_s) return;
  FirstChunkCame(t);  // a mark on another socket (a connection replaced) goes
  t.awaited_socket = s;
  const auto at = static_cast<size_t>(s);
  if (at >= awaiting_first_.size()) awaiting_first_.resize(at + 1024, nullptr);
  if (awaiting_first_[at] == nullptr) ++awaiting_;
  awaiting_first_[at] = &t;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = EventKey(t.route, s);
  ::epoll_ctl(first_epoll_fd_, EPOLL_CTL_ADD, s, &ev);  // EEXIST under HTTP/2: already there
}

void EventHub::FirstChunkCame(Exchange& t) {
  if (t.awaited_socket >= 0 && awaiting_first_[static_cast<size_t>(t.awaited_socket)] == &t) {
    awaiting_first_[static_cast<size_t>(t.awaited_socket)] = nullptr;
    --awaiting_;
    ::epoll_ctl(first_epoll_fd_, EPOLL_CTL_DEL, t.awaited_socket, nullptr);  // gone if closed
  }
  t.awaited_socket = -1;
}

void EventHub::Complete(Exchange& t, const Failure& failure) {
  FirstChunkCame(t);
  CallResult& r = t.result;
  RequestTiming& timing = r.timing;
  ExchangeFacts facts;
  facts.transport_failure = failure.error_class;
  facts.transport_why = failure.why;
  facts.too_big = t.too_big;
  if (t.bad_head) facts.bad_head = *t.bad_head;
  facts.http_status = r.http_status;
  facts.body = t.body;
  facts.stream = t.call.stream;
  std::optional<FullResponse> whole;
  if (t.call.stream) {
    facts.cut_in_event = t.sse.Finish();
    if (t.stream_error) facts.stream_error = *t.stream_error;
    facts.malformed_event = t.malformed;
    facts.oversized_event = t.sse.Oversized() > 0;
    facts.saw_done = t.saw_done;
    facts.saw_finish = t.saw_finish;
    facts.any_chunk = !timing.chunk_s.empty();
  } else if (!t.too_big && !t.bad_head && failure.error_class == ErrorClass::kNone &&
             r.http_status == 200) {
    whole = ReadFullResponse(t.call.api, t.body);
    if (whole->error) facts.whole_error = *whole->error;
    facts.whole_malformed = whole->malformed;
  }
  Outcome outcome = ClassifyOutcome(facts);
  if (outcome.error_class != ErrorClass::kNone) r.error_message = std::move(outcome.message);
  if (whole && outcome.error_class == ErrorClass::kNone) {
    const double end = Now();  // a whole answer's one chunk came as it ended
    timing.first_chunk_s = end;
    timing.first_token_s = end;
    timing.chunk_s.push_back(end);
    r.usage = whole->usage;
    r.text = std::move(whole->text);
  }
  if (t.call.stream) {
    r.usage = t.reader.Usage();
    if (t.call.keep_text) r.text = t.reader.Text();
    r.sse_comments = t.sse.Comments();
  }
  timing.ok = outcome.error_class == ErrorClass::kNone;
  timing.error = outcome.error_class;
  if (r.usage) {
    timing.input_tokens = r.usage->input;
    timing.output_tokens = r.usage->output;
    timing.cached_tokens = r.usage->cache_read;
  } else if (timing.ok) {
    // No usage from the server: count content chunks, as tools without a tokenizer do.
    timing.output_tokens = t.reader.ContentChunks();
  }
  (done_ != nullptr ? *done_ : later_).push_back({t.tag, std::move(r)});
}

void EventHub::BeginRound(std::vector<Completion>& done) {
  done_ = &done;
  for (Completion& c : later_) done.push_back(std::move(c));
  later_.clear();
}

void EventHub::Forget() {
  for (size_t fd = 0; fd < awaiting_first_.size(); ++fd) {
    if (awaiting_first_[fd] != nullptr) {
      ::epoll_ctl(first_epoll_fd_, EPOLL_CTL_DEL, static_cast<int>(fd), nullptr);
      awaiting_first_[fd] = nullptr;
    }
  }
  awaiting_ = 0;
  later_.clear();
}

}  // namespace cmax::endpoint
