#include "endpoint/load.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <sys/resource.h>
#include <unordered_map>

namespace cmax::endpoint {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr size_t kStartsPerRound = 1;

double CpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// A turn waiting to be sent: a follow-up or a retry, due at `due_s`.
struct Waiting {
  double due_s;
  uint64_t order;  // first come, first sent among equals
  size_t conversation;
  size_t turn;
  int attempt;
  bool operator>(const Waiting& other) const {
    return due_s != other.due_s ? due_s > other.due_s : order > other.order;
  }
};

struct Active {
  Conversation conversation;
  std::vector<std::string> answers;
};

struct InFlight {
  size_t conversation;
  size_t turn;
  int attempt;
  double due_s;
  double lateness_ms;
  uint64_t ideal_cached;
  uint64_t words;
};

double RetryDelay(const CallResult& r, int attempt, double cap, std::mt19937_64& rng) {
  if (r.retry_after_s && *r.retry_after_s <= cap) return *r.retry_after_s;
  const double base = std::min(0.5 * std::pow(2.0, attempt), 8.0);
  return base * (1 - 0.25 * std::uniform_real_distribution<double>(0, 1)(rng));
}

}  // namespace

double NextArrivalGap(double rate, double burstiness, std::mt19937_64& rng) {
  if (rate <= 0) return 0;
  std::gamma_distribution<double> gamma(burstiness, 1.0 / (rate * burstiness));
  return gamma(rng);
}

Result<LoadResult> RunLoad(Engine& e, const Target& target, Workload& workload,
                           const LoadShape& shape, const LoadHooks& hooks) {
  if (shape.requests == 0 && shape.duration_s <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "give a request count or a duration");
  }
  if (shape.rate < 0 || shape.burstiness <= 0) {
    return Fail(ErrorCode::kInvalidArgument, "the rate must be >= 0 and the burstiness > 0");
  }
  if (e.InFlight() != 0) return Fail(ErrorCode::kInternal, "a load run began with calls in flight");
  LoadResult result;
  std::vector<Completion> finished;
  e.ResetEpoch();
  const Clock::time_point epoch = Clock::now();

  std::mt19937_64 rng(shape.seed);
  std::unordered_map<size_t, Active> active;  // conversations with turns still to send
  std::priority_queue<Waiting, std::vector<Waiting>, std::greater<>> waiting;  // next turns
  // Retries belong to requests already counted: they go out even after the count or the
  // duration is reached, so that every request ends with the outcome of its last attempt.
  std::priority_queue<Waiting, std::vector<Waiting>, std::greater<>> retrying;
  std::unordered_map<uint64_t, InFlight> flying;
  IdealCache ideal(shape.cache_block_tokens);
  uint64_t order = 0;
  size_t conversations = 0;
  std::optional<Conversation> fresh = workload.Next();
  double fresh_due = fresh && shape.trace_times && fresh->at_s ? *fresh->at_s : 0;
  size_t sent = 0;
  size_t failed = 0;
  double last_freed_s = 0;
  double next_progress = hooks.progress_every_s;
  // Room for every record up front when the count is known: a vector of thousands of records
  // moved to a bigger one mid-run is a stall in which nothing arriving is read.
  if (shape.requests > 0 && shape.requests < (size_t{1} << 24)) {
    result.records.reserve(shape.requests);
  }
  const double cpu_start = CpuSeconds();

  const auto can_send = [&](double now) {
    return (shape.requests == 0 || sent < shape.requests) &&
           (shape.duration_s <= 0 || now < shape.duration_s);
  };
  const auto slot = [&] { return shape.concurrency == 0 || e.InFlight() < shape.concurrency; };

  const auto send = [&](size_t id, size_t turn, int attempt, double due) {
    const double now = e.SecondsSinceEpoch();
    Active& a = active[id];
    Prompt prompt;
    prompt.messages = TurnMessages(a.conversation, turn, a.answers);
    prompt.max_tokens = a.conversation.max_tokens[turn];
    const std::string joined = JoinedText(prompt.messages);
    InFlight f{id, turn, attempt, due, (now - std::max(due, last_freed_s)) * 1000, 0, 0};
    if (attempt == 0) {
      const IdealCache::Added added = ideal.Add(joined);
      f.ideal_cached = added.cached_tokens;
      f.words = added.tokens;
    } else {
      f.words = CountTokens(joined);
    }
    f.lateness_ms = std::max(0.0, f.lateness_ms);
    Call call;
    call.url = target.url;
    call.api = target.api;
    call.headers = target.headers;
    call.stream = target.body.stream;
    call.keep_text = a.conversation.turns.size() > 1;
    call.body = RequestBody(target.api, prompt, target.body);
    const uint64_t tag = order++;
    flying.emplace(tag, f);
    if (attempt == 0) ++sent;
    e.Start(tag, std::move(call));
    result.max_in_flight = std::max(result.max_in_flight, e.InFlight());
  };

  const auto settle = [&](uint64_t tag, CallResult& r, double now) {
    const auto it = flying.find(tag);
    if (it == flying.end()) return;
    const InFlight f = it->second;
    flying.erase(it);
    last_freed_s = now;
    Active& a = active[f.conversation];
    if (!r.timing.ok && Retryable(r.timing.error) && f.attempt < shape.retries) {
      ++result.retries;
      retrying.push({now + RetryDelay(r, f.attempt, shape.max_retry_wait_s, rng), order++,
                     f.conversation, f.turn, f.attempt + 1});
      return;
    }
    RequestRecord rec;
    rec.index = tag;
    rec.conversation = f.conversation;
    rec.turn = f.turn;
    rec.attempt = f.attempt;
    rec.due_s = f.due_s;
    rec.lateness_ms = f.lateness_ms;
    rec.timing = std::move(r.timing);
    rec.http_status = r.http_status;
    rec.http_version = r.http_version;
    rec.error_message = std::move(r.error_message);
    rec.usage = r.usage;
    rec.server_lag_ms = r.server_lag_ms;
    rec.ideal_cached_tokens = f.ideal_cached;
    rec.prompt_words = f.words;
    const bool ok = rec.timing.ok;
    if (!ok) ++failed;
    result.records.push_back(std::move(rec));
    if (hooks.on_record) hooks.on_record(result.records.back());
    if (ok && f.turn + 1 < a.conversation.turns.size()) {
      a.answers.push_back(std::move(r.text));
      waiting.push({now + a.conversation.think_s, order++, f.conversation, f.turn + 1, 0});
    } else {
      active.erase(f.conversation);  // done, failed or cut: the conversation ends here
    }
  };

  while (true) {
    double now = e.SecondsSinceEpoch();
    if (hooks.interrupted && hooks.interrupted()) {
      result.interrupted = true;
      break;
    }
    // A burst is sent one request at a time with the network read between them, so that what
    // arrives meanwhile is timed when it arrives, not after the burst has gone out (groups of 4
    // put the TTFT error's p99 at 1.4-2.0 ms at 1,024 streams, one at a time 0.3-1.2 ms).
    size_t started = 0;
    while (slot() && started++ < kStartsPerRound) {
      if (!retrying.empty() && retrying.top().due_s <= now) {
        const Waiting w = retrying.top();
        retrying.pop();
        send(w.conversation, w.turn, w.attempt, w.due_s);
        continue;
      }
      if (!can_send(now)) break;
      if (!waiting.empty() && waiting.top().due_s <= now) {
        const Waiting w = waiting.top();
        waiting.pop();
        if (active.count(w.conversation) == 0) continue;
        send(w.conversation, w.turn, w.attempt, w.due_s);
        continue;
      }
      if (fresh && fresh_due <= now) {
        const size_t id = conversations++;
        active[id] = Active{std::move(*fresh), {}};
        send(id, 0, 0, fresh_due);
        fresh = workload.Next();
        if (fresh) {
          if (shape.trace_times && fresh->at_s) {
            fresh_due = *fresh->at_s;
          } else if (shape.rate > 0) {
            fresh_due += NextArrivalGap(shape.rate, shape.burstiness, rng);
          }
        }
        continue;
      }
      break;
    }
    const bool more = can_send(now) && (fresh || !waiting.empty());
    if (!more && retrying.empty() && e.InFlight() == 0) break;
    double wake = now + 0.1;
    if (started > kStartsPerRound) {
      wake = now;  // more to send at once: only look at the network
    } else if (slot() && (more || !retrying.empty())) {
      double due = kNever;
      if (more && !waiting.empty()) due = waiting.top().due_s;
      if (more && fresh) due = std::min(due, fresh_due);
      if (!retrying.empty()) due = std::min(due, retrying.top().due_s);
      wake = std::min(wake, due);
    }
    if (shape.duration_s > 0 && now < shape.duration_s) wake = std::min(wake, shape.duration_s);
    if (hooks.progress && now >= next_progress) {
      hooks.progress({now, sent, result.records.size(), failed, e.InFlight()});
      next_progress = now + hooks.progress_every_s;
    }
    e.Poll(epoch + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(std::max(wake, now))),
           finished);
    if (!finished.empty()) {
      now = e.SecondsSinceEpoch();
      for (Completion& c : finished) settle(c.tag, c.result, now);
      finished.clear();
    }
  }
  // Interrupted: whatever is still in flight or waiting to be retried ends now, with an
  // outcome that says so.
  e.CancelAll();
  const auto cancelled = [&result, &hooks](uint64_t index, size_t conversation, size_t turn,
                                           int attempt, double due) {
    RequestRecord rec;
    rec.index = index;
    rec.conversation = conversation;
    rec.turn = turn;
    rec.attempt = attempt;
    rec.due_s = due;
    rec.timing.error = ErrorClass::kCancelled;
    rec.error_message = "the run was interrupted";
    result.records.push_back(std::move(rec));
    if (hooks.on_record) hooks.on_record(result.records.back());
  };
  for (const auto& [tag, f] : flying) cancelled(tag, f.conversation, f.turn, f.attempt, f.due_s);
  for (; !retrying.empty(); retrying.pop()) {
    const Waiting& w = retrying.top();
    cancelled(w.order, w.conversation, w.turn, w.attempt, w.due_s);
  }
  std::sort(result.records.begin(), result.records.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
  double first = kNever;
  for (const RequestRecord& r : result.records) first = std::min(first, r.timing.sent_s);
  result.duration_s = result.records.empty() ? 0 : e.SecondsSinceEpoch() - first;
  result.ideal = ideal.Hits();
  result.client_cpu_s = CpuSeconds() - cpu_start;
  return result;
}

}  // namespace cmax::endpoint
