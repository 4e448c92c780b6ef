#include "endpoint/requests_stream.hpp"

#include <exception>
#include <utility>

namespace cmax::endpoint {

RequestsStream::RequestsStream(sys::GrowingOutput sink, const std::vector<std::string>& secrets,
                               std::chrono::milliseconds every)
    : sink_(std::move(sink)), redactor_(secrets), every_(every), thread_([this] { Write(); }) {}

RequestsStream::~RequestsStream() {
  (void)Finish();
}

void RequestsStream::Add(const RequestRecord& record) {
  if (Failed()) return;
  // No wake-up: the thread comes on its own beat, and the run's thread makes no system call
  // for it.
  RequestRecord copy = record;  // made before the lock: the stream's thread is not held by it
  const std::lock_guard lock(mutex_);
  pending_.push_back(std::move(copy));
}

void RequestsStream::Write() {
  std::vector<RequestRecord> batch;
  std::string text;
  while (true) {
    bool last = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, every_, [this] { return stopping_; });
      batch.swap(pending_);  // the emptied batch goes back, with its room, for the next ones
      last = stopping_;
    }
    if (!batch.empty() && !Failed()) {
      // Nothing may escape this thread (it would end the process): memory that runs out while
      // the lines are made is a write that failed.
      Result<void> ok;
      try {
        text.clear();
        for (RequestRecord& r : batch) {
          redactor_.Redact(r);
          text += RequestJsonl(r);
          text += '\n';
        }
        ok = sink_.append(text);
      } catch (const std::exception& e) {
        ok = Fail(ErrorCode::kIo, "cannot make the lines: {}", e.what());
      }
      Keep(ok);
    }
    batch.clear();
    if (last) {
      if (!Failed() && sink_.finish) Keep(sink_.finish());
      return;
    }
  }
}

void RequestsStream::Keep(const Result<void>& written) {
  if (written) return;
  error_ = written.error();
  failed_.store(true, std::memory_order_relaxed);
}

Result<void> RequestsStream::Finish() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (error_) return tl::unexpected(*error_);
  return {};
}

}  // namespace cmax::endpoint
