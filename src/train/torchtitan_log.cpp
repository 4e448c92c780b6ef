#include "train/torchtitan_log.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax::train {
namespace {

constexpr size_t kMaxMessageBytes = 500;
constexpr size_t kMaxNotes = 20;

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view TrimLeft(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

// TorchTitan colours its metric line (ESC '[' ... 'm'); any CSI sequence is taken out.
std::string WithoutAnsi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      size_t j = i + 2;
      while (j < line.size() && (IsDigit(line[j]) || line[j] == ';' || line[j] == '?')) ++j;
      if (j < line.size()) {
        i = j;  // the final byte ('m') goes too
        continue;
      }
    }
    out.push_back(line[i]);
  }
  return out;
}

// Python's "{:,}": groups of three digits after each comma ("4,2" is a line cut short).
bool ThousandsOk(std::string_view text) {
  size_t comma = text.find(',');
  if (comma == std::string_view::npos) return true;
  const size_t point = std::min(text.find('.'), text.size());
  while (comma != std::string_view::npos && comma < point) {
    const size_t next = std::min(text.find(',', comma + 1), point);
    if (next - comma != 4) return false;
    comma = next == point ? std::string_view::npos : next;
  }
  return true;
}

std::optional<int64_t> Whole(std::string_view text) {
  if (!ThousandsOk(text)) return std::nullopt;
  std::string digits;
  for (char c : text) {
    if (c != ',') digits.push_back(c);
  }
  return ParseWhole<int64_t>(digits);
}

// "5,856", "6.1384", "34.29%", "nan", "9.890e+14": a number, thousands separators and a
// trailing '%' allowed.
std::optional<double> Number(std::string_view text) {
  if (!ThousandsOk(text)) return std::nullopt;
  std::string plain;
  for (char c : text) {
    if (c != ',') plain.push_back(c);
  }
  if (!plain.empty() && plain.back() == '%') plain.pop_back();
  if (plain.empty()) return std::nullopt;
  return ParseWhole<double>(plain);
}

// A leading "[rank3]:" (torchrun --role rank), "[default3]:" (its default role) and the like.
std::optional<int> TorchrunPrefix(std::string_view& text) {
  if (text.empty() || text.front() != '[') return std::nullopt;
  size_t i = 1;
  while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])) != 0) ++i;
  const size_t digits = i;
  while (i < text.size() && IsDigit(text[i])) ++i;
  if (i == digits || i - digits > 7 || i + 1 >= text.size() || text[i] != ']' ||
      text[i + 1] != ':') {
    return std::nullopt;
  }
  const auto rank = Whole(text.substr(digits, i - digits));
  text.remove_prefix(i + 2);
  return static_cast<int>(*rank);
}

// srun -l's "3: " (digits, a colon, a space, after optional blanks).
std::optional<int> SrunPrefix(std::string_view& text) {
  const std::string_view trimmed = TrimLeft(text);
  size_t digits = 0;
  while (digits < trimmed.size() && IsDigit(trimmed[digits])) ++digits;
  if (digits == 0 || digits > 7 || digits + 1 >= trimmed.size() || trimmed[digits] != ':' ||
      trimmed[digits + 1] != ' ') {
    return std::nullopt;
  }
  const auto task = Whole(trimmed.substr(0, digits));
  text = trimmed.substr(digits + 2);
  return static_cast<int>(*task);
}

// "2025-06-16 22:30:50,322" (Python logging's asctime): milliseconds since the epoch, in the
// log's own time zone (only differences are used), whole so that differences are exact.
bool HasAscTimeShape(std::string_view text) {
  static constexpr std::string_view kShape = "dddd-dd-dd dd:dd:dd,ddd";
  if (text.size() < kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] == 'd' ? !IsDigit(text[i]) : text[i] != kShape[i]) return false;
  }
  return true;
}

// The time of a text of HasAscTimeShape, or nothing when it names a day or a time of day that
// does not exist (a 30 February, a minute 61).
std::optional<int64_t> AscTime(std::string_view text) {
  const auto n = [&](size_t at, size_t len) { return *Whole(text.substr(at, len)); };
  using namespace std::chrono;
  const year_month_day date{year(static_cast<int>(n(0, 4))), month(static_cast<unsigned>(n(5, 2))),
                            day(static_cast<unsigned>(n(8, 2)))};
  if (!date.ok() || n(11, 2) > 23 || n(14, 2) > 59 || n(17, 2) > 60) return std::nullopt;
  const int64_t days = sys_days(date).time_since_epoch().count();
  return ((days * 86400 + n(11, 2) * 3600 + n(14, 2) * 60 + n(17, 2)) * 1000) + n(20, 3);
}

// Python logging's "[titan] DATE - NAME - LEVEL - message" (TorchTitan's format; without
// "[titan] " in its 2024 releases): the message, and the date where it is one.
std::string_view LoggerMessage(std::string_view text, std::optional<int64_t>& time) {
  std::string_view rest = text;
  if (rest.starts_with("[titan] ")) rest.remove_prefix(8);
  // A line in the logger's shape is its message whatever its date says: a step logged under an
  // impossible date is still a step, only without a time.
  time = std::nullopt;
  if (!HasAscTimeShape(rest)) return text;
  time = AscTime(rest);
  for (std::string_view level :
       {" - INFO - ", " - WARNING - ", " - ERROR - ", " - DEBUG - ", " - CRITICAL - "}) {
    const size_t at = rest.find(level);
    if (at != std::string_view::npos) return rest.substr(at + level.size());
  }
  return rest.substr(23);
}

std::string Cut(std::string_view text) {
  std::string out = SanitizeUtf8(text.substr(0, kMaxMessageBytes));
  return out;
}

// A Python exception's last line: "torch.OutOfMemoryError: CUDA out of memory ...",
// "RuntimeError: ...", "KeyboardInterrupt": a dotted name whose last part ends in Error,
// Exception, Exit or Interrupt, then ':' or the end.
bool IsExceptionLine(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) != 0 ||
                             text[i] == '_' || text[i] == '.')) {
    ++i;
  }
  if (i == 0 || (i < text.size() && text[i] != ':')) return false;
  const std::string_view name = text.substr(0, i);
  return name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exit") ||
         name.ends_with("Interrupt");
}

FailureKind KindOf(std::string_view message) {
  const std::string lower = ToLower(message);
  if (lower.find("out of memory") != std::string::npos) return FailureKind::kOutOfMemory;
  if (lower.find("nccl") != std::string::npos) return FailureKind::kNccl;
  if (lower.find("cuda error") != std::string::npos ||
      lower.find("acceleratorerror") != std::string::npos) {
    return FailureKind::kCuda;
  }
  return FailureKind::kException;
}

// The first integer after `key` in `text`: "Training starts at step 1, ..." -> 1.
std::optional<int64_t> After(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = TrimLeft(text.substr(at + key.size()));
  size_t end = 0;
  while (end < rest.size() && (IsDigit(rest[end]) || rest[end] == ',')) ++end;
  while (end > 0 && rest[end - 1] == ',') --end;  // "step 1, with ...": the sentence's comma
  return Whole(rest.substr(0, end));
}

// Bounds no real run is near, so that the figures the rating scores come from a log that can
// be true: tokens a second per GPU (a 1B model reaches tens of thousands), TFLOPS per GPU (a
// B200's dense FP4 is about 10,000), GiB per GPU, MFU (past 100 % is real: TorchTitan divides by
// an A100's peak for a GPU it does not know, which the figures call out; past 100 times that is
// no GPU).
constexpr double kMaxTokensPerS = 1e8;
constexpr double kMaxMfuPct = 1e4;
constexpr double kMaxTflops = 1e5;
constexpr double kMaxGib = 1e5;

std::optional<double> Plausible(std::optional<double> v, double low, double high) {
  if (!v || !std::isfinite(*v) || *v < low || *v > high) return std::nullopt;
  return v;
}

// What a metric line held that was not read: its first few words, each cut short, and how many
// more (a line of ten million words kept them all, 800 MB, and printed 60 MB of note).
struct Unread {
  static constexpr size_t kShown = 8;
  static constexpr size_t kWordBytes = 80;
  std::vector<std::string> shown;
  size_t more = 0;
  void Add(std::string text) {
    if (shown.size() == kShown) {
      ++more;
      return;
    }
    if (text.size() > kWordBytes) text = text.substr(0, kWordBytes) + "...";
    shown.push_back(std::move(text));
  }
  bool Empty() const { return shown.empty(); }
  std::string Text() const {
    std::string out = Join(shown, ", ");
    if (more > 0) out += fmt::format(" and {} more", more);
    return out;
  }
};

// The next whitespace-separated word of `text` from `at` ("" at the end), `at` moved past it.
std::string_view NextWord(std::string_view text, size_t& at) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (at < text.size() && space(text[at])) ++at;
  const size_t begin = at;
  while (at < text.size() && !space(text[at])) ++at;
  return text.substr(begin, at - begin);
}

// The fields of a metric line after "step: N": "loss:  6.1384  memory: 49.66GiB(52.28%) ...".
void ReadFields(std::string_view fields, TrainStep& step, Unread& unread) {
  size_t at = 0;
  for (std::string_view word = NextWord(fields, at); !word.empty(); word = NextWord(fields, at)) {
    std::string_view key = word;
    std::string_view value;
    const size_t colon = key.find(':');
    if (colon == std::string_view::npos) {
      unread.Add(std::string(key));
      continue;
    }
    if (colon + 1 < key.size()) {  // "key:value" in one word
      value = key.substr(colon + 1);
    } else {
      value = NextWord(fields, at);
    }
    key = key.substr(0, colon);
    if (key == "memory") {
      // "49.66GiB(52.28%)"
      const size_t gib = value.find("GiB");
      if (gib != std::string_view::npos) {
        step.memory_gib = Plausible(Number(value.substr(0, gib)), 0, kMaxGib);
        std::string_view pct = value.substr(gib + 3);
        if (pct.starts_with('(') && pct.ends_with(')')) {
          step.memory_pct = Plausible(Number(pct.substr(1, pct.size() - 2)), 0, 100);
        }
      }
      if (!step.memory_gib) unread.Add("memory: " + std::string(value));
      continue;
    }
    if (key == "mfu" && value == "N/A") {
      step.mfu_not_available = true;
      continue;
    }
    const std::optional<double> number = Number(value);
    if (!number) {
      unread.Add(std::string(key) + ": " + std::string(value));
      continue;
    }
    if (key == "loss") {
      step.loss = number;
    } else if (key == "grad_norm") {
      step.grad_norm = number;
    } else if (key == "tps" || key == "wps" || key == "tflops" || key == "mfu") {
      // What the rating scores: a figure no GPU reaches (1e300 tokens/s, a negative TFLOPS or
      // MFU) is a log that is wrong, not a result, and is said among the unread.
      const bool tokens = key == "tps" || key == "wps";
      const std::optional<double> figure = tokens            ? Plausible(number, 0, kMaxTokensPerS)
                                           : key == "tflops" ? Plausible(number, 0, kMaxTflops)
                                                             : Plausible(number, 0, kMaxMfuPct);
      if (!figure) {
        unread.Add(std::string(key) + ": " + std::string(value) + " (no GPU measures that)");
      } else if (tokens) {
        step.tps = figure;
      } else if (key == "tflops") {
        step.tflops = figure;
      } else {
        step.mfu_pct = figure;
      }
    } else {
      step.other[SanitizeUtf8(key)] = *number;
    }
  }
}

}  // namespace

std::string_view FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kOutOfMemory: return "oom";
    case FailureKind::kNccl: return "nccl";
    case FailureKind::kNcclTimeout: return "nccl-timeout";
    case FailureKind::kCuda: return "cuda";
    case FailureKind::kException: return "exception";
    case FailureKind::kProcessExit: return "process-exit";
  }
  return "?";
}

void TorchTitanLogReader::Feed(std::string_view raw) {
  ++log_.lines;
  if (raw.ends_with('\r')) raw.remove_suffix(1);
  const std::string plain = WithoutAnsi(raw);
  std::string_view text = plain;
  std::optional<int> rank = SrunPrefix(text);
  // torchrun's tee prefix, and again PyTorch's own "[rank0]: " before each line of an uncaught
  // exception: "[rank0]:[rank0]: Traceback ...".
  bool prefixed = false;
  while (const auto torchrun = TorchrunPrefix(text)) {
    rank = torchrun;
    prefixed = true;
  }
  if (prefixed && text.starts_with(' ')) text.remove_prefix(1);
  if (in_root_cause_ || text.find("Root Cause (first observed failure)") != std::string::npos) {
    LauncherReport(text);
    return;
  }
  std::optional<int64_t> time;
  const std::string_view message = LoggerMessage(text, time);
  if (time && !first_time_) first_time_ = time;
  Message(message, rank, time);
}

void TorchTitanLogReader::Message(std::string_view message, std::optional<int> rank,
                                  std::optional<int64_t> time) {
  const size_t line = log_.lines;
  Source& source = sources_[rank.value_or(-1)];
  // Python's traceback: its frames are indented; its last unindented line is the exception.
  if (message.starts_with("Traceback (most recent call last):")) {
    source.in_traceback = true;
    return;
  }
  if (source.in_traceback && !message.empty() && message.front() != ' ' &&
      message.front() != '\t') {
    if (IsExceptionLine(message)) {
      source.in_traceback = false;
      // torchrun's own wrapper of a child's failure: its report follows and says more.
      if (!message.starts_with("torch.distributed.elastic.multiprocessing.errors.ChildFailed")) {
        log_.failures.push_back(
            {.kind = KindOf(message), .message = Cut(message), .rank = rank, .line = line});
      }
      return;
    }
    // A frame's source line can start unindented only in odd wrappers; anything else ends it.
    if (!message.starts_with("File ")) source.in_traceback = false;
  }
  if (const size_t at = message.find("Watchdog caught collective operation timeout");
      at != std::string_view::npos) {
    std::optional<int> who = rank;
    if (const auto r = After(message, "[Rank ")) who = static_cast<int>(*r);
    log_.failures.push_back({.kind = FailureKind::kNcclTimeout,
                             .message = Cut(message.substr(at)),
                             .rank = who,
                             .line = line});
    return;
  }
  if (message.find("NCCL WARN") != std::string_view::npos) {
    ++log_.nccl_warnings;
    return;
  }
  const bool validation = message.starts_with("validate step:");
  if (validation || message.starts_with("step:")) {
    std::string_view rest = TrimLeft(message.substr(validation ? 14 : 5));
    size_t digits = 0;
    while (digits < rest.size() && IsDigit(rest[digits])) ++digits;
    const auto number = Whole(rest.substr(0, digits));
    if (!number) {
      if (log_.notes.size() < kMaxNotes) {
        log_.notes.push_back(fmt::format("line {}: a step line without a step number", line));
      }
      return;
    }
    TrainStep step{.step = *number, .rank = rank, .line = line};
    if (time && first_time_) step.time_s = static_cast<double>(*time - *first_time_) / 1000;
    Unread unread;
    ReadFields(rest.substr(digits), step, unread);
    if (!unread.Empty() && log_.notes.size() < kMaxNotes) {
      log_.notes.push_back(fmt::format("line {}: not read: {}", line, SanitizeUtf8(unread.Text())));
    }
    (validation ? log_.validation : log_.steps).push_back(std::move(step));
    return;
  }
  TrainRunInfo& info = log_.info;
  if (message.starts_with("Training starts at step")) {
    info.start_step = After(message, "at step");
    if (const auto v = After(message, "total steps")) info.total_steps = v;
    if (const auto v = After(message, "(warmup")) info.warmup_steps = v;
    if (const auto v = After(message, "global batch size")) info.global_batch = v;
    if (const auto v = After(message, "sequence length")) info.seq_len = v;
  } else if (message.starts_with("Training completed")) {
    info.completed = true;
  } else if (message.starts_with("Peak FLOPS used for computing MFU:")) {
    const std::vector<std::string_view> words = SplitFields(message.substr(34));
    if (!words.empty()) info.peak_flops = Number(words.front());
  } else if (message.starts_with("GPU capacity: ")) {
    std::string_view gpu = message.substr(14);
    gpu = gpu.substr(0, gpu.find(" ("));
    info.gpu = Cut(gpu);
  } else if (message.starts_with("Model ") &&
             message.find(" total parameters") != std::string_view::npos) {
    const size_t size = message.find(" size: ");
    if (size != std::string_view::npos) {
      info.model = Cut(message.substr(6, size - 6));
      info.parameters = After(message, " size: ");
    }
  } else if (message.starts_with("Building ") &&
             message.find("device mesh with") != std::string_view::npos) {
    // "Building 2-D device mesh with ['dp_shard', 'tp'], [4, 2]": the sizes' product.
    const size_t open = message.rfind('[');
    const size_t close = message.rfind(']');
    if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
      int64_t product = 1;
      bool any = false;
      for (std::string_view part : Split(message.substr(open + 1, close - open - 1), ',')) {
        const auto n = Whole(Trim(part));
        // A mesh past a million GPUs is no mesh (and the product would overflow).
        if (!n || *n <= 0 || *n > 1'000'000 || product > 1'000'000 / *n) {
          any = false;
          break;
        }
        product *= *n;
        any = true;
      }
      if (any) info.world_size = product;
    }
  }
}

// torchrun's report, from "Root Cause (first observed failure):" to its closing "====" line:
//   rank      : 3 (local_rank: 3)
//   host      : node-1
//   exitcode  : -6 (pid: 4567)
//   traceback : Signal 6 (SIGABRT) received by PID 4567
void TorchTitanLogReader::LauncherReport(std::string_view text) {
  if (!in_root_cause_ && !root_cause_) {
    in_root_cause_ = true;
    root_cause_ = TrainFailure{.kind = FailureKind::kProcessExit, .line = log_.lines};
    return;
  }
  const std::string_view line = Trim(text);
  if (line.starts_with("====")) {
    in_root_cause_ = false;
    TrainFailure failure = std::move(*root_cause_);
    root_cause_.reset();
    std::string words = "torchrun: ";
    words += failure.rank ? fmt::format("rank {}", *failure.rank) : std::string("a rank");
    if (!failure.host.empty()) words += " on " + failure.host;
    if (!failure.signal.empty()) {
      words += " was killed by " + failure.signal;
    } else if (failure.exit_code) {
      words += fmt::format(" exited with code {}", *failure.exit_code);
    } else {
      words += " failed";
    }
    failure.message = std::move(words);
    log_.failures.push_back(std::move(failure));
    return;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  const std::string_view key = Trim(line.substr(0, colon));
  const std::string_view value = Trim(line.substr(colon + 1));
  const auto first_number = [](std::string_view v) -> std::optional<int64_t> {
    size_t end = v.starts_with('-') ? 1 : 0;
    while (end < v.size() && IsDigit(v[end])) ++end;
    return Whole(v.substr(0, end));
  };
  if (key == "rank") {
    if (const auto r = first_number(value)) root_cause_->rank = static_cast<int>(*r);
  } else if (key == "host") {
    root_cause_->host = Cut(value);
  } else if (key == "exitcode") {
    if (const auto c = first_number(value)) root_cause_->exit_code = static_cast<int>(*c);
  } else if (key == "traceback") {
    const size_t open = value.find("(SIG");
    const size_t close = value.find(')', open == std::string_view::npos ? 0 : open);
    if (open != std::string_view::npos && close != std::string_view::npos) {
      root_cause_->signal = Cut(value.substr(open + 1, close - open - 1));
    }
  }
}

void TorchTitanLogReader::Finish() {
  if (!root_cause_) return;  // a report cut short: what it said so far
  in_root_cause_ = false;
  LauncherReport("====");
}

TrainLog ParseTorchTitanLog(std::string_view text) {
  TorchTitanLogReader reader;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    reader.Feed(text.substr(at, end - at));
    at = end + 1;
  }
  reader.Finish();
  return reader.Take();
}

}  // namespace cmax::train
