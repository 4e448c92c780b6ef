// serve-sim's event loop: one thread, epoll, non-blocking sockets, a timer heap. It answers the
// OpenAI and Anthropic streaming APIs with timings and faults from the model in sim.hpp, holds
// tens of thousands of streams, and keeps a prefix cache so that cached-token reports are true
// to the prompts it was sent. A stand-in for an inference server (tests, demos, the lab).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "endpoint/sim.hpp"

namespace cmax::endpoint {

struct SimStats {
  uint64_t connections = 0;
  uint64_t requests = 0;
  uint64_t completed = 0;  // answers sent in full
  uint64_t tokens = 0;
  uint64_t input_tokens = 0;
  uint64_t cached_tokens = 0;
  uint64_t cache_evictions = 0;
  size_t open_streams = 0;
  size_t max_open_streams = 0;
  uint64_t closed_idle = 0;                // no request for the idle timeout
  uint64_t closed_slow_request = 0;        // a request not whole within the header timeout (408)
  uint64_t closed_not_reading = 0;         // the client stopped reading its answer
  uint64_t refused_over_limit = 0;         // past the connection limit (503)
  std::map<std::string, uint64_t> faults;  // by name
};

// The model name serve-sim reports: letters, digits and . _ - / : only (it goes into JSON and
// logs unescaped).
Result<void> CheckSimModel(std::string_view model);
// The one line serve-sim prints when it stops.
std::string SimStatsText(const SimStats& s);

// `cmax endpoint serve-sim`: listens at listen:port, says where (`listening`, once), serves until
// `stop` or for `duration_s` (0: until `stop`), and returns its closing line.
Result<std::string> ServeSim(const std::string& listen, int port, const SimConfig& config,
                             double duration_s, const std::function<bool()>& stop,
                             const std::function<void(std::string_view)>& listening);

class SimServer {
 public:
  static Result<std::unique_ptr<SimServer>> Listen(const std::string& address,
                                                   const SimConfig& config);
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;
  ~SimServer();
  int Port() const;
  // Serves until `stop` returns true (asked at least every 100 ms).
  Result<void> Run(const std::function<bool()>& stop);
  SimStats Stats() const;  // from the thread that runs it, or after Run returned

 private:
  struct Impl;
  explicit SimServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmax::endpoint
