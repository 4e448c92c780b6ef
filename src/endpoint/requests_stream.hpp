// The requests file as it grows (`--requests-file`): each request's line is written soon after
// the request ends, not after the run, so that a run killed half-way (SIGKILL, the OOM killer,
// a lost session) keeps every request that had ended a fifth of a second before. The run's
// thread only copies each record in; a thread of the stream's own takes the secrets out, makes
// the JSON lines and writes them, five times a second, so that neither the lines' making nor a
// slow disk holds the event loop whose reads time the tokens.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.hpp"
#include "endpoint/load.hpp"
#include "endpoint/results.hpp"
#include "sys/append_file.hpp"

namespace cmax::endpoint {

class RequestsStream {
 public:
  // Where the lines go (appended in the order given, then finished), used on the stream's
  // thread.
  RequestsStream(sys::GrowingOutput sink, const std::vector<std::string>& secrets,
                 std::chrono::milliseconds every = std::chrono::milliseconds(200));
  ~RequestsStream();  // finishes, as Finish does
  RequestsStream(const RequestsStream&) = delete;
  RequestsStream& operator=(const RequestsStream&) = delete;

  // On the run's thread, as each request ends. Dropped once a write has failed.
  void Add(const RequestRecord& record);
  // A write failed: the run should stop, since what it measures can no longer be kept.
  bool Failed() const { return failed_.load(std::memory_order_relaxed); }
  // Writes what is still to write, finishes the output, stops the thread and says whether
  // every write went through.
  Result<void> Finish();

 private:
  void Write();
  void Keep(const Result<void>& written);  // a write that failed is kept as the stream's error

  sys::GrowingOutput sink_;
  Redactor redactor_;
  std::chrono::milliseconds every_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<RequestRecord> pending_;  // under mutex_
  bool stopping_ = false;               // under mutex_
  std::atomic<bool> failed_{false};
  std::optional<Error> error_;  // the first write's that failed; read once the thread is joined
  std::thread thread_;          // last: it starts once the rest is made
};

}  // namespace cmax::endpoint
