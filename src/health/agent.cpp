#include "health/agent.hpp"

#include <poll.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "sys/host.hpp"
#include "sys/interrupt.hpp"
#include "sys/self_usage.hpp"

namespace cmax::health {

bool DeviceIsOurs(std::string_view device, const std::vector<std::string>& devices) {
  if (devices.empty() || device.empty()) return true;
  const auto bus = [](std::string_view pci) {
    std::string text = ToLower(pci);
    if (text.size() > 2 && text[text.size() - 2] == '.') text.resize(text.size() - 2);
    return text;
  };
  const std::string mine = bus(device);
  return std::any_of(devices.begin(), devices.end(),
                     [&](const std::string& d) { return bus(d) == mine; });
}
namespace {

using Steady = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr Duration kMaxBackoff = std::chrono::seconds(60);

double Seconds(Steady::duration d) {
  return std::chrono::duration<double>(d).count();
}

int MillisUntil(Steady::time_point now, Steady::time_point when) {
  if (when <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(when - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

}  // namespace

NodeCondition ToNodeCondition(const Condition& c, const std::string& node, WallTime now) {
  NodeCondition out;
  out.node = node;
  out.key = c.key;
  out.component = std::string(ComponentName(c.component));
  out.device = c.device;
  out.kind = std::string(KernelEventKindName(c.kind));
  out.code = c.code;
  out.severity = c.meaning.severity;
  out.action = std::string(ActionName(c.meaning.action));
  out.action_source = c.meaning.source;
  out.message = c.last_message;
  out.count = c.count;
  out.first_seen = c.first_wall.value_or(now);
  out.last_seen = c.last_wall.value_or(now);
  out.recovered = c.recovered;
  return out;
}

Agent::Agent(AgentOptions options, const XidCatalog& catalog, store::Store& store)
    : options_(std::move(options)),
      catalog_(&catalog),
      store_(&store),
      started_(Steady::now()),
      tracker_(catalog),
      watchdog_(options_.limits) {
  boot_time_ = BootTime(clock_.Now());
  metrics_.node = options_.node;
  kmsg_retry_at_ = started_;
  next_nvml_ = started_;
  next_watchdog_ = started_ + options_.watchdog_interval;
  // Checkpoints (with their fsync) happen on the watchdog tick, off the detection path.
  if (auto ok = store_->SetAutoCheckpoint(0); !ok) log::Warn("agent: {}", ok.error().message);
  // A small page cache: the agent writes a few rows and reads none back.
  (void)store_->SetCacheKib(256);
  if (auto stored = store_->LoadConditions(options_.node); stored) {
    for (NodeCondition& c : *stored) {
      // NVML conditions still active are checked again by the first snapshot.
      if (c.key.rfind("nvml/", 0) == 0 && !c.recovered) nvml_conditions_.emplace(c.key, c);
      stored_.emplace(c.key, std::move(c));
    }
  } else {
    log::Warn("agent: cannot read the stored conditions: {}", stored.error().message);
  }
  // Open the kernel log now, before anyone is told the agent is up: a record written after
  // that must be read, not skipped as "already there".
  OpenKmsg();
}

Agent::~Agent() = default;

std::string ReadyLine(const AgentReadiness& readiness, bool nvml_wanted) {
  std::string line = "agent ready: kernel log ";
  line += readiness.kmsg ? "open" : "not open (retrying)";
  if (!nvml_wanted) return line + ", NVML off";
  if (!readiness.nvml) return line + ", NVML unavailable (retrying)";
  return line + ", NVML " + std::to_string(readiness.gpus) +
         (readiness.gpus == 1 ? " GPU" : " GPUs");
}

void Agent::OpenKmsg() {
  // After a restart the agent reads from now: what it read before is already counted.
  const bool from_start = first_open_ && options_.from_boot;
  auto reader =
      sys::KmsgReader::Open(options_.kmsg_path, from_start ? sys::KmsgReader::Start::kBeginning
                                                           : sys::KmsgReader::Start::kNow);
  if (!reader) {
    log::Warn("agent: cannot read the kernel log: {}; retrying in {}", reader.error().message,
              FormatDuration(kmsg_backoff_));
    kmsg_retry_at_ = Steady::now() + kmsg_backoff_;
    kmsg_backoff_ = std::min(kmsg_backoff_ * 2, kMaxBackoff);
    metrics_.kmsg_up = false;
    return;
  }
  if (!first_open_) ++metrics_.source_restarts;
  first_open_ = false;
  kmsg_.emplace(std::move(*reader));
  kmsg_backoff_ = std::chrono::seconds(1);
  metrics_.kmsg_up = true;
}

void Agent::QueueEvent(const KernelEvent& event, const KernelRecord& record,
                       const Condition& condition) {
  const auto now = Steady::now();
  RateWindow& window = rate_[condition.key];
  if (now - window.start >= std::chrono::minutes(1)) {
    if (window.suppressed > 0) {
      Event summary{clock_.Now(), options_.node, "cmax-agent", "suppressed",
                    Json{{"key", condition.key}, {"suppressed", window.suppressed}}.dump(
                        -1, ' ', false, Json::error_handler_t::replace)};
      pending_events_.push_back(std::move(summary));
      pending_read_times_.push_back(now);
    }
    window = RateWindow{now, 0, 0};
  }
  if (window.rows >= options_.event_rows_per_minute ||
      pending_events_.size() >= kMaxPendingEvents) {
    ++window.suppressed;
    ++metrics_.events_suppressed;
    return;
  }
  ++window.rows;
  Json payload = {{"key", condition.key},
                  {"count", condition.count},
                  {"severity", SeverityName(condition.meaning.severity)},
                  {"action", ActionName(condition.meaning.action)},
                  {"message", record.message.substr(0, 1024)}};
  if (event.kind == KernelEventKind::kXid || event.kind == KernelEventKind::kSxid) {
    payload["code"] = event.code;
    payload["pci"] = event.device;
  }
  if (record.monotonic_us) payload["monotonic_us"] = *record.monotonic_us;
  pending_events_.push_back({record.wall_time.value_or(clock_.Now()), options_.node, "kmsg",
                             std::string(KernelEventKindName(event.kind)),
                             payload.dump(-1, ' ', false, Json::error_handler_t::replace)});
  pending_read_times_.push_back(now);
}

void Agent::ReadKmsg() {
  if (!kmsg_) return;
  size_t read = 0;
  while (read < options_.max_batch) {
    auto raw = kmsg_->Next();
    if (!raw) {
      log::Warn("agent: kernel log read failed: {}; reopening", raw.error().message);
      kmsg_.reset();
      metrics_.kmsg_up = false;
      kmsg_retry_at_ = Steady::now() + kmsg_backoff_;
      break;
    }
    if (!*raw) break;
    ++read;
    auto record = ParseKmsgRecord(**raw);
    if (!record) continue;
    if (record->monotonic_us) {
      record->wall_time = boot_time_ + std::chrono::milliseconds(*record->monotonic_us / 1000);
    }
    for (const KernelEvent& event : parser_.Feed(*record)) {
      if (!DeviceIsOurs(event.device, options_.devices)) continue;
      ++metrics_.events;
      if (event.kind == KernelEventKind::kXid) ++metrics_.xid_total[{event.code, event.device}];
      if (event.kind == KernelEventKind::kSxid) ++metrics_.sxid_total[{event.code, event.device}];
      ++metrics_.kernel_events_total[{std::string(KernelEventKindName(event.kind)), event.device}];
      const Observation seen = tracker_.Observe(event, *record);
      if (seen.condition == nullptr) continue;
      dirty_.insert(seen.condition->key);
      QueueEvent(event, *record, *seen.condition);
    }
  }
  if (kmsg_) {
    metrics_.kmsg_records = kmsg_->Records();
    metrics_.kmsg_lost = kmsg_->Lost();
    metrics_.kmsg_overruns = kmsg_->Overruns();
  }
  Flush();
}

void Agent::Flush() {
  if (dirty_.empty() && nvml_dirty_.empty() && pending_events_.empty()) return;
  const WallTime now = clock_.Now();
  std::vector<NodeCondition> changed;
  for (const std::string& key : dirty_) {
    const Condition* c = tracker_.Find(key);
    if (c == nullptr) continue;
    NodeCondition row = ToNodeCondition(*c, options_.node, now);
    if (auto before = stored_.find(key); before != stored_.end()) {
      row.count += before->second.count;  // seen before this agent started
      row.first_seen = before->second.first_seen;
    }
    changed.push_back(std::move(row));
  }
  for (const std::string& key : nvml_dirty_) changed.push_back(nvml_conditions_.at(key));
  if (auto ok = store_->SaveConditions(changed, pending_events_); !ok) {
    // Kept dirty: the next flush tries again, and nothing the tracker counted is lost.
    ++metrics_.store_errors;
    log::Error("agent: cannot write conditions: {}", ok.error().message);
    return;
  }
  const auto committed = Steady::now();
  for (const auto& read_at : pending_read_times_)
    metrics_.store_latency.Add(Seconds(committed - read_at));
  ++metrics_.store_flushes;
  wal_dirty_ = true;
  flushed_ = flushed_ || !changed.empty();
  dirty_.clear();
  nvml_dirty_.clear();
  pending_events_.clear();
  pending_read_times_.clear();
}

void Agent::PollNvml() {
  if (!options_.nvml) return;
  if (!nvml_) {
    auto nvml = sys::Nvml::Load(options_.nvml_lib);
    if (!nvml) {
      log::Debug("agent: NVML unavailable: {}", nvml.error().message);
      metrics_.nvml_up = false;
      next_nvml_ = Steady::now() + nvml_backoff_;
      nvml_backoff_ = std::min(nvml_backoff_ * 2,
                               std::chrono::duration_cast<Duration>(std::chrono::minutes(5)));
      return;
    }
    nvml_ = std::move(*nvml);
    nvml_backoff_ = std::chrono::seconds(10);
  }
  next_nvml_ = Steady::now() + options_.nvml_interval;
  auto snapshot = nvml_->Snapshot();
  if (!snapshot) {
    log::Warn("agent: NVML snapshot failed: {}; reloading", snapshot.error().message);
    nvml_.reset();
    metrics_.nvml_up = false;
    ++metrics_.source_restarts;
    return;
  }
  metrics_.nvml_up = true;
  nvml_gpus_ = snapshot->gpus.size();
  // A lost GPU may no longer tell its bus id: use the one it had, so its condition is keyed
  // by its address and its other conditions are not taken for recovered.
  std::set<std::string> unreadable;
  for (sys::GpuReading& gpu : snapshot->gpus) {
    if (!gpu.pci_bus_id.empty()) {
      gpu_bus_ids_[gpu.index] = gpu.pci_bus_id;
    } else if (auto known = gpu_bus_ids_.find(gpu.index); known != gpu_bus_ids_.end()) {
      gpu.pci_bus_id = known->second;
    }
    if (gpu.lost)
      unreadable.insert(gpu.pci_bus_id.empty() ? "gpu" + std::to_string(gpu.index)
                                               : gpu.pci_bus_id);
  }
  for (const auto& [known_index, bus] : gpu_bus_ids_) {
    const unsigned index = known_index;  // clang 14 cannot capture a structured binding
    const bool present = std::any_of(snapshot->gpus.begin(), snapshot->gpus.end(),
                                     [&](const sys::GpuReading& g) { return g.index == index; });
    if (!present) unreadable.insert(bus);
  }
  const NvmlFacts facts{std::move(*snapshot), ""};
  metrics_.gpu = NvmlMetrics(facts);
  const WallTime now = clock_.Now();
  std::set<std::string> seen;
  for (NodeCondition& c : NvmlConditions(facts, options_.node, now)) {
    seen.insert(c.key);
    auto it = nvml_conditions_.find(c.key);
    if (it == nvml_conditions_.end()) {
      nvml_dirty_.insert(c.key);
      nvml_conditions_.emplace(c.key, std::move(c));
    } else if (it->second.recovered || it->second.message != c.message) {
      c.first_seen = it->second.first_seen;
      c.count = it->second.count + (it->second.recovered ? 1 : 0);
      it->second = std::move(c);
      nvml_dirty_.insert(it->first);
    }
  }
  for (auto& [key, c] : nvml_conditions_) {
    // A GPU that cannot be read has not recovered from anything.
    if (seen.count(key) == 0 && !c.recovered && unreadable.count(c.device) == 0) {
      c.recovered = true;
      c.last_seen = now;
      nvml_dirty_.insert(key);
    }
  }
  Flush();
}

bool Agent::CheckWatchdog() {
  next_watchdog_ = Steady::now() + options_.watchdog_interval;
  if (wal_dirty_) {
    if (auto ok = store_->Checkpoint(); ok) {
      wal_dirty_ = false;
    } else {
      log::Debug("agent: checkpoint: {}", ok.error().message);
    }
  }
  auto usage = sys::ReadSelfUsage();
  if (!usage) return true;
  metrics_.rss_bytes = usage->rss_bytes;
  metrics_.cpu_seconds = usage->cpu_seconds;
  const UsageSample sample{Seconds(Steady::now() - started_), usage->rss_bytes, usage->cpu_seconds};
  const WatchdogVerdict verdict = watchdog_.Check(sample);
  if (verdict == WatchdogVerdict::kOk) return true;
  log::Error("agent: watchdog: {}; stopping so that the service manager restarts the agent",
             watchdog_.Explain(verdict, sample));
  return false;
}

std::vector<NodeCondition> Agent::Conditions() const {
  std::vector<NodeCondition> out;
  const WallTime now = SystemClock().Now();
  for (const Condition& c : tracker_.Conditions())
    out.push_back(ToNodeCondition(c, options_.node, now));
  for (const auto& [key, c] : nvml_conditions_) out.push_back(c);
  return out;
}

std::string Agent::MetricsText() {
  metrics_.uptime_seconds = Seconds(Steady::now() - started_);
  if (auto usage = sys::ReadSelfUsage()) {
    metrics_.rss_bytes = usage->rss_bytes;
    metrics_.cpu_seconds = usage->cpu_seconds;
  }
  metrics_.conditions = Conditions();
  return RenderPrometheus(metrics_);
}

int Agent::Run(sys::MetricsServer* server) {
  log::Info("agent for node {} started{}", options_.node,
            server != nullptr ? " (metrics on port " + std::to_string(server->Port()) + ")" : "");
  const sys::HttpHandler handler =
      [&](std::string_view path) -> std::optional<sys::ServedResponse> {
    if (path == "/metrics")
      return sys::ServedResponse{200, "text/plain; version=0.0.4; charset=utf-8", MetricsText()};
    if (path == "/healthz") return sys::ServedResponse{200, "text/plain", "ok\n"};
    return std::nullopt;
  };
  while (!sys::Interrupted()) {
    const auto now = Steady::now();
    if (!kmsg_ && now >= kmsg_retry_at_) OpenKmsg();
    if (options_.nvml && now >= next_nvml_) PollNvml();
    if (now >= next_watchdog_ && !CheckWatchdog()) {
      Flush();
      return kExitWatchdog;
    }
    if (options_.after_flush && (flushed_ || now >= next_after_)) {
      flushed_ = false;
      options_.after_flush();
      next_after_ = Steady::now() + options_.after_interval;
    }
    if (!announced_) {
      announced_ = true;
      if (options_.on_ready) options_.on_ready({metrics_.kmsg_up, metrics_.nvml_up, nvml_gpus_});
    }
    auto wake = std::min(next_watchdog_, options_.nvml ? next_nvml_ : next_watchdog_);
    if (options_.after_flush) wake = std::min(wake, next_after_);
    if (!kmsg_) wake = std::min(wake, kmsg_retry_at_);
    if (server != nullptr && server->Resting())
      wake = std::min(wake, now + std::chrono::seconds(1));
    pollfd fds[2];
    nfds_t count = 0;
    int kmsg_index = -1;
    int server_index = -1;
    if (kmsg_) {
      kmsg_index = static_cast<int>(count);
      fds[count++] = pollfd{kmsg_->Fd(), POLLIN, 0};
    }
    if (server != nullptr && !server->Resting()) {
      server_index = static_cast<int>(count);
      fds[count++] = pollfd{server->Fd(), POLLIN, 0};
    }
    const int ready = ::poll(fds, count, MillisUntil(Steady::now(), wake));
    if (ready <= 0) continue;  // timeout, or EINTR: the loop looks at the interrupt flag
    if (kmsg_index >= 0 && fds[kmsg_index].revents != 0) ReadKmsg();
    if (server_index >= 0 && (fds[server_index].revents & POLLIN) != 0) server->Serve(handler);
  }
  Flush();
  log::Info("agent stopped: {} kernel records read, {} events, {} lost", metrics_.kmsg_records,
            metrics_.events, metrics_.kmsg_lost);
  return 0;
}

}  // namespace cmax::health
