#include "endpoint/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <curl/curl.h>
#include <limits>
#include <sys/epoll.h>

#include "endpoint/curl_transport.hpp"
#include "endpoint/http1_pool.hpp"
#include "endpoint/transport.hpp"
#include "sys/curl_library.hpp"

namespace cmax::endpoint {

using sys::Curl;

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

// The hub first: the transports close their sockets and hand back their exchanges before it
// goes.
struct Engine::Impl {
  explicit Impl(const EngineOptions& options) : hub(options), curl(hub), http1(hub) {}
  EventHub hub;
  CurlTransport curl;
  Http1Pool http1;

  // Hands a round of epoll events to the transports whose sockets they are.
  void Dispatch(const epoll_event* events, int n) {
    for (int i = 0; i < n; ++i) {
      const auto route = static_cast<uint32_t>(events[i].data.u64 >> 32);
      const auto fd = static_cast<int>(events[i].data.u64 & 0xffffffffU);
      if (route == kHttp1Route) {
        http1.OnEvent(route, fd, events[i].events);
      } else {
        curl.OnEvent(route, fd, events[i].events);
      }
    }
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

size_t Engine::InFlight() const {
  // Calls that ended at once count until Poll hands them out.
  return impl_->curl.InFlight() + impl_->http1.InFlight() + impl_->hub.Pending();
}

double Engine::SecondsSinceEpoch() const {
  return impl_->hub.Now();
}

void Engine::CancelAll() {
  impl_->http1.CancelAll();
  impl_->curl.CancelAll();
  impl_->hub.Forget();
}

void Engine::ResetEpoch() {
  // Deadlines count from the epoch: moved with it (between phases nothing is in flight).
  const double shift = impl_->hub.Now();
  impl_->hub.ResetEpoch();
  impl_->http1.ShiftEpoch(shift);
  impl_->curl.ShiftEpoch(shift);
}

Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
  // libcurl is loaded now, by the commands that send requests, not at every start.
  if (auto loaded = sys::LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  auto impl = std::make_unique<Impl>(options);
  if (auto opened = impl->hub.Open(); !opened) return tl::unexpected(opened.error());
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

bool Engine::PinAddress(const std::string& url) {
  Transport& transport =
      impl_->http1.Carries(url) ? static_cast<Transport&>(impl_->http1) : impl_->curl;
  return transport.PinAddress(url);
}

void Engine::Start(uint64_t tag, Call call) {
  if (!impl_->http1.StartIfCarried(tag, call)) impl_->curl.Start(tag, std::move(call));
}

void Engine::Poll(SteadyClock::time_point until, std::vector<Completion>& done) {
  Impl& s = *impl_;
  s.hub.BeginRound(done);
  // Few events per round: each is timed when its turn comes, so a long batch would make the
  // last ones look later than they arrived.
  epoll_event events[64];
  // First the sockets awaiting a first chunk, ready or not in the main set's order.
  if (s.hub.Awaiting()) s.Dispatch(events, ::epoll_wait(s.hub.FirstEpollFd(), events, 64, 0));
  SteadyClock::time_point wake = until;
  const double wake_s = std::min(s.curl.NextWakeS(), s.http1.NextWakeS());
  if (wake_s < s.hub.Now() + 3600) {  // never far off: the sum below stays in range
    wake = std::min(wake, s.hub.Epoch() + std::chrono::duration_cast<SteadyClock::duration>(
                                              std::chrono::duration<double>(wake_s)));
  }
  const auto wait = std::max(SteadyClock::duration::zero(), wake - SteadyClock::now());
  const int64_t wait_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
  timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
              static_cast<long>(wait_ns % 1'000'000'000)};
  int n = ::epoll_pwait2(s.hub.EpollFd(), events, 64, &ts, nullptr);
  if (n < 0 && errno == ENOSYS) {  // kernels before 5.11: millisecond waits
    n = ::epoll_wait(s.hub.EpollFd(), events, 64,
                     static_cast<int>((wait_ns + 999'999) / 1'000'000));
  }
  s.Dispatch(events, n);
  s.curl.AfterEvents();
  s.http1.AfterEvents();
  s.hub.EndRound();
}

}  // namespace cmax::endpoint
