#include "train/kineto_trace.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/strings.hpp"

namespace cmax::train {
namespace {

using namespace std::string_view_literals;  // NOLINT(google-build-using-namespace): "x"sv

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}
bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The first '"' or '\\' in [p, stop), or stop. Kernel names run to hundreds of bytes in real
// traces (templates): eight bytes are tested at a time (a zero byte of word ^ pattern is a
// match; the classic has-a-zero-byte test, nonzero exactly when some byte matches).
const char* QuoteOrBackslash(const char* p, const char* stop) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  while (stop - p >= 8) {
    uint64_t word = 0;
    std::memcpy(&word, p, sizeof word);
    const uint64_t quote = word ^ (kOnes * '"');
    const uint64_t backslash = word ^ (kOnes * '\\');
    const uint64_t found =
        ((quote - kOnes) & ~quote & kHighs) | ((backslash - kOnes) & ~backslash & kHighs);
    if (found != 0) break;  // the exact byte is found by the loop below
    p += 8;
  }
  while (p < stop && *p != '"' && *p != '\\') ++p;
  return p;
}

// What a number or a literal is made of, and what may follow one.
bool ScalarByte(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '-' || c == '+' ||
         c == 'E';
}
bool EndsScalar(char c) {
  return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Why a parse stopped before its end.
enum class Stop { kNone, kEnd, kSyntax, kLimit };

// A pull reader over a ByteSource holding one buffer of it: every value the reader keeps is
// copied out as it goes, so no token has to stay in the buffer across a refill.
class Scanner {
 public:
  Scanner(ByteSource& input, const KinetoReadLimits& limits)
      : input_(input), limits_(limits), buffer_(std::max<size_t>(limits.buffer_bytes, 1), '\0') {}

  int Peek() {
    if (pos_ == end_ && !Fill()) return -1;
    return static_cast<unsigned char>(buffer_[pos_]);
  }
  void Advance() { ++pos_; }
  uint64_t Offset() const { return base_ + pos_; }
  Stop StopReason() const { return stop_; }
  const std::string& ReadError() const { return read_error_; }

  bool Fail(Stop why) {
    // Whatever was expected, input that has run out is a cut, not bad JSON.
    if (why == Stop::kSyntax && pos_ == end_ && at_end_) why = Stop::kEnd;
    if (stop_ == Stop::kNone) stop_ = why;
    return false;
  }

  void SkipSpace() {
    for (;;) {
      while (pos_ < end_) {
        const char c = buffer_[pos_];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
        ++pos_;
      }
      if (!Fill()) return;
    }
  }

  // At a quote: the string, decoded, into *out (nullptr: skipped).
  bool String(std::string* out) {
    if (Peek() != '"') return Fail(Stop::kSyntax);
    Advance();
    return StringBody(out);
  }

  // After the opening quote: the rest of the string, its closing quote included.
  bool StringBody(std::string* out) {
    if (out != nullptr) out->clear();
    for (;;) {
      const char* start = buffer_.data() + pos_;
      const char* p = start;
      const char* stop = buffer_.data() + end_;
      p = QuoteOrBackslash(p, stop);
      if (out != nullptr) {
        out->append(start, p);
        if (out->size() > limits_.max_token_bytes) return Fail(Stop::kLimit);
      }
      pos_ = static_cast<size_t>(p - buffer_.data());
      if (p == stop) {
        if (!Fill()) return Fail(Stop::kEnd);
        continue;
      }
      Advance();
      if (*p == '"') return true;
      if (!Escape(out)) return false;
    }
  }

  // A number's text (or true/false/null's) into `text`.
  bool Scalar(std::string& text) {
    text.clear();
    // Most scalars lie whole in the buffer: taken in one piece.
    const char* start = buffer_.data() + pos_;
    const char* stop = buffer_.data() + end_;
    const char* p = start;
    while (p < stop && p - start <= 64 && ScalarByte(*p)) ++p;
    if (p < stop && p > start && p - start <= 64 && EndsScalar(*p)) {
      text.assign(start, p);
      pos_ = static_cast<size_t>(p - buffer_.data());
      return true;
    }
    for (;;) {
      const int c = Peek();
      if (c < 0) return text.empty() ? Fail(Stop::kEnd) : true;
      if (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        return !text.empty() || Fail(Stop::kSyntax);
      }
      if (c == '"' || c == '{' || c == '[' || c == ':') return Fail(Stop::kSyntax);
      text.push_back(static_cast<char>(c));
      if (text.size() > 64) return Fail(Stop::kLimit);
      Advance();
    }
  }

  // Any value, skipped: strings by their quotes, objects and arrays by their brackets.
  bool Skip() {
    const int c = Peek();
    if (c == '"') return String(nullptr);
    if (c != '{' && c != '[') return SkipScalar(c);
    Advance();
    return SkipOpen(1);
  }

  // Past the bracket that closes `depth` open objects or arrays (their opening brackets read):
  // strings by their quotes, the rest byte by byte in one tight loop over the buffer (most of a
  // trace's bytes are skipped here: the host-side events' arguments).
  bool SkipOpen(int64_t depth) {
    for (;;) {
      const char* data = buffer_.data();
      const char* p = data + pos_;
      const char* stop = data + end_;
      while (p < stop) {
        const char c = *p++;
        if (c == '"') {
          pos_ = static_cast<size_t>(p - data);
          if (!StringBody(nullptr)) return false;
          data = buffer_.data();
          p = data + pos_;
          stop = data + end_;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
          pos_ = static_cast<size_t>(p - data);
          return true;
        }
      }
      pos_ = end_;
      if (!Fill()) return Fail(Stop::kEnd);
    }
  }

  // A number scanned in place (most of a trace's skipped values), or a literal read whole; a
  // bare word is not JSON (a log line starting with '[').
  bool SkipScalar(int first) {
    if (first < 0) return Fail(Stop::kEnd);
    if (first == 't' || first == 'f' || first == 'n') {
      std::string& text = scratch_;
      if (!Scalar(text)) return false;
      return text == "true" || text == "false" || text == "null" || Fail(Stop::kSyntax);
    }
    if (first != '-' && (first < '0' || first > '9')) return Fail(Stop::kSyntax);
    for (;;) {
      while (pos_ < end_) {
        const char ch = buffer_[pos_];
        if ((ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+' || ch == 'e' ||
            ch == 'E') {
          ++pos_;
          continue;
        }
        if (ch == ',' || ch == '}' || ch == ']' || ch == ' ' || ch == '\n' || ch == '\r' ||
            ch == '\t') {
          return true;
        }
        return Fail(Stop::kSyntax);
      }
      if (!Fill()) return true;  // the input ends after a number: the caller meets the end
    }
  }

  bool Expect(char c) {
    SkipSpace();
    const int got = Peek();
    if (got != c) return Fail(got < 0 ? Stop::kEnd : Stop::kSyntax);
    Advance();
    return true;
  }

 private:
  bool Fill() {
    if (at_end_) return false;
    base_ += end_;
    pos_ = 0;
    end_ = 0;
    auto n = input_.Read(buffer_.data(), buffer_.size());
    if (!n) {
      read_error_ = n.error().message;
      at_end_ = true;
      return false;
    }
    if (*n == 0) {
      at_end_ = true;
      return false;
    }
    end_ = *n;
    return true;
  }

  bool Escape(std::string* out) {
    const int c = Peek();
    if (c < 0) return Fail(Stop::kEnd);
    Advance();
    char plain = 0;
    switch (c) {
      case 'n': plain = '\n'; break;
      case 't': plain = '\t'; break;
      case 'r': plain = '\r'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'u': return Unicode(out);
      default: plain = static_cast<char>(c); break;  // \" \\ \/ and anything else as itself
    }
    if (out != nullptr) out->push_back(plain);
    return true;
  }

  bool Unicode(std::string* out) {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const int c = Peek();
      if (c < 0) return Fail(Stop::kEnd);
      Advance();
      const int digit = (c >= '0' && c <= '9')   ? c - '0'
                        : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                 : -1;
      if (digit < 0) return Fail(Stop::kSyntax);
      code = code * 16 + static_cast<unsigned>(digit);
    }
    if (out == nullptr) return true;
    // Names are matched by their ASCII prefixes; a surrogate half stands as U+FFFD.
    if (code >= 0xD800 && code <= 0xDFFF) code = 0xFFFD;
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
    return true;
  }

  ByteSource& input_;
  KinetoReadLimits limits_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t base_ = 0;
  bool at_end_ = false;
  Stop stop_ = Stop::kNone;
  std::string read_error_;
  std::string scratch_;
};

// Kineto's times are microseconds with the nanoseconds as decimals (4458677009853.422): read as
// integer nanoseconds digit by digit, since a double holds 16 digits and these have 16.
std::optional<int64_t> MicrosToNanos(std::string_view text) {
  bool negative = false;
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  int64_t whole = 0;
  size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (++digits > 15) break;
    whole = whole * 10 + (text[i++] - '0');
  }
  int64_t fraction = 0;
  int fraction_digits = 0;
  bool plain = digits > 0 && digits <= 15;
  if (plain && i < text.size() && text[i] == '.') {
    ++i;
    bool round_up = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (fraction_digits < 3) {
        fraction = fraction * 10 + (text[i] - '0');
        ++fraction_digits;
      } else if (fraction_digits == 3) {
        round_up = text[i] >= '5';
        ++fraction_digits;
      }
      ++i;
    }
    while (fraction_digits < 3) {
      fraction *= 10;
      ++fraction_digits;
    }
    fraction += round_up ? 1 : 0;
  } else if (plain) {
    fraction = 0;
  }
  if (plain && i == text.size()) {
    const int64_t ns = whole * 1000 + fraction;
    return negative ? -ns : ns;
  }
  // An exponent, or more digits than an int64 of nanoseconds takes: through a double.
  const std::optional<double> value = ParseWhole<double>(text);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  const double ns = *value * 1000.0;
  if (std::fabs(ns) > 9.0e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(ns));
}

std::optional<double> Number(std::string_view text) {
  const std::optional<double> value = ParseWhole<double>(text);
  return value && std::isfinite(*value) ? value : std::nullopt;
}

std::optional<int64_t> Integer(std::string_view text) {
  const std::optional<double> v = Number(text);
  if (!v || std::fabs(*v) > 9.0e18 || std::floor(*v) != *v) return std::nullopt;
  return static_cast<int64_t>(*v);
}

// What one event object says that the analysis uses; the rest is skipped unread.
struct EventFields {
  std::string ph, cat, name;
  std::optional<int64_t> ts_ns, dur_ns, stream, correlation, group_size;
  std::optional<double> in_nelems, out_nelems;
  std::string collective, dtype, group;

  void Clear() {
    ph.clear();
    cat.clear();
    name.clear();
    ts_ns.reset();
    dur_ns.reset();
    stream.reset();
    correlation.reset();
    group_size.reset();
    in_nelems.reset();
    out_nelems.reset();
    collective.clear();
    dtype.clear();
    group.clear();
  }
};

class TraceParser {
 public:
  TraceParser(ByteSource& input, const KinetoReadLimits& limits) : scan_(input, limits) {}

  Result<KinetoTrace> Parse() {
    scan_.SkipSpace();
    const int first = scan_.Peek();
    if (first == '[') {
      // The Chrome trace format's other shape: the events alone.
      in_events_ = true;
      Events();
    } else if (first == '{') {
      TopLevel();
      scan_.SkipSpace();
    } else {
      return Fail(ErrorCode::kCorrupt, "not a trace: {}",
                  first < 0 ? (scan_.ReadError().empty() ? std::string("empty") : scan_.ReadError())
                            : "does not start with { or [");
    }
    return Finish();
  }

 private:
  Result<KinetoTrace> Finish() {
    trace_.bytes = scan_.Offset();
    const Stop stop = scan_.StopReason();
    if (stop == Stop::kNone && seen_events_) return std::move(trace_);
    if (!seen_events_ && stop == Stop::kNone) {
      return Fail(ErrorCode::kCorrupt, "no traceEvents: not a PyTorch profiler trace");
    }
    const std::string where = fmt::format("at byte {}", scan_.Offset());
    std::string why;
    if (!scan_.ReadError().empty()) {
      why = scan_.ReadError() + " " + where;
    } else if (stop == Stop::kEnd) {
      why = "cut off " + where;
    } else if (stop == Stop::kLimit) {
      why = "a value longer than the reader takes " + where;
    } else {
      why = "not JSON " + where;
    }
    // Stopped before a single event: nothing says this was a trace (a log starting with '[').
    if (!seen_events_ || trace_.events == 0) {
      return Fail(ErrorCode::kCorrupt, "not a trace: {}", why);
    }
    if (in_events_) why += " inside traceEvents";
    trace_.ended_early = true;
    trace_.end_reason = std::move(why);
    return std::move(trace_);
  }

  // An object's members, each handed to `member` with its key in key_ and the scanner at its
  // value, which `member` consumes; false stops the read. Once `done` says the rest cannot
  // matter, the rest of the object is passed over unread.
  template <class Member, class Done>
  bool Object(Member member, Done done) {
    scan_.Advance();
    for (;;) {
      scan_.SkipSpace();
      if (scan_.Peek() == '}') {
        scan_.Advance();
        return true;
      }
      if (!scan_.String(&key_) || !scan_.Expect(':')) return false;
      scan_.SkipSpace();
      if (!member() || !Next('}')) return false;
      if (done()) return scan_.SkipOpen(1);
    }
  }
  template <class Member>
  bool Object(Member member) {
    return Object(member, [] { return false; });
  }

  void TopLevel() {
    Object([&] {
      if (Key() == "traceEvents"sv) {
        if (scan_.Peek() != '[') return scan_.Fail(Stop::kSyntax);
        in_events_ = true;
        if (!Events()) return false;
        in_events_ = false;
        return true;
      }
      if (Key() == "distributedInfo"sv && scan_.Peek() == '{') return DistributedInfo();
      return scan_.Skip();
    });
  }

  // After a member: a comma (consumed) or the closing bracket (left for the caller).
  bool Next(char close) {
    scan_.SkipSpace();
    const int c = scan_.Peek();
    if (c == ',') {
      scan_.Advance();
      return true;
    }
    if (c == close) return true;
    return scan_.Fail(c < 0 ? Stop::kEnd : Stop::kSyntax);
  }

  bool DistributedInfo() {
    return Object([&] {
      const int c = scan_.Peek();
      if ((Key() != "rank"sv && Key() != "world_size"sv) || c == '"' || c == '{' || c == '[') {
        return scan_.Skip();
      }
      if (!scan_.Scalar(text_)) return false;
      const std::optional<int64_t> v = Integer(text_);
      if (v && *v >= 0 && *v < (int64_t{1} << 30)) {
        (Key() == "rank"sv ? trace_.rank : trace_.world_size) = static_cast<int>(*v);
      }
      return true;
    });
  }

  bool Events() {
    seen_events_ = true;
    scan_.Advance();
    for (;;) {
      scan_.SkipSpace();
      const int c = scan_.Peek();
      if (c == ']') {
        scan_.Advance();
        return true;
      }
      if (c == '{') {
        if (!Event()) return false;
      } else if (!scan_.Skip()) {  // not an object: not an event
        return false;
      }
      if (!Next(']')) return false;
    }
  }

  bool Event() {
    e_.Clear();
    bool ph = false;
    bool cat = false;
    bool name = false;
    const bool read = Object(
        [&] {
          if (Key() == "ph"sv) {
            ph = true;
            return StringField(e_.ph);
          }
          if (Key() == "cat"sv) {
            cat = true;
            return StringField(e_.cat);
          }
          if (Key() == "name"sv) {
            name = true;
            return StringField(e_.name);
          }
          if (Key() == "ts"sv) return TimeField(e_.ts_ns);
          if (Key() == "dur"sv) return TimeField(e_.dur_ns);
          if (Key() == "args"sv && scan_.Peek() == '{') return Args();
          return scan_.Skip();
        },
        // Most events are the host's (operators, Python functions) or flows and count only as
        // events: once that is certain (a ph other than "X"; or ph, cat and name read), the
        // rest of the object is skipped without reading its keys.
        [&] { return ph && (std::string_view(e_.ph) != "X"sv || (cat && name && !Wanted())); });
    if (read) Keep();
    return read;
  }

  // Whether the event read so far (its ph, cat and name known) may be one Keep() keeps.
  bool Wanted() const {
    if (std::string_view(e_.ph) != "X"sv) return false;
    const std::string_view cat = e_.cat;
    return cat.empty() || StartsWith(cat, "kernel") || StartsWith(cat, "gpu_mem") ||
           cat == "cuda_runtime"sv || cat == "cuda_driver"sv ||
           StartsWith(e_.name, "ProfilerStep#");
  }

  bool Args() {
    return Object([&] {
      if (Key() == "stream"sv) return IntegerField(e_.stream);
      if (Key() == "correlation"sv) return IntegerField(e_.correlation);
      if (Key() == "Group size"sv) return IntegerField(e_.group_size);
      if (Key() == "In msg nelems"sv) return NumberField(e_.in_nelems);
      if (Key() == "Out msg nelems"sv) return NumberField(e_.out_nelems);
      if (Key() == "Collective name"sv) return StringField(e_.collective);
      if (Key() == "dtype"sv) return StringField(e_.dtype);
      if (Key() == "Process Group Name"sv) return StringField(e_.group);
      return scan_.Skip();
    });
  }

  // A field of the wrong type is skipped, not taken: a number where a name belongs is no name.
  bool StringField(std::string& out) {
    if (scan_.Peek() != '"') return scan_.Skip();
    return scan_.String(&out);
  }

  // Numbers, also written as strings ("Group size": "8") by some writers.
  bool NumberText() {
    if (scan_.Peek() == '"') return scan_.String(&text_);
    if (scan_.Peek() == '{' || scan_.Peek() == '[') {
      text_.clear();
      return scan_.Skip();
    }
    return scan_.Scalar(text_);
  }
  bool TimeField(std::optional<int64_t>& out) {
    if (!NumberText()) return false;
    out = MicrosToNanos(text_);
    return true;
  }
  bool IntegerField(std::optional<int64_t>& out) {
    if (!NumberText()) return false;
    out = Integer(text_);
    return true;
  }
  bool NumberField(std::optional<double>& out) {
    if (!NumberText()) return false;
    out = Number(text_);
    return true;
  }

  void Keep() {
    ++trace_.events;
    if (std::string_view(e_.ph) != "X"sv) return;
    // HTA's GPU kernels: categories kernel, gpu_memcpy, gpu_memset (not cuda_sync's waits).
    const bool gpu_category = e_.cat.empty() || StartsWith(e_.cat, "kernel") ||
                              (StartsWith(e_.cat, "gpu_mem") && e_.cat.size() > 7);
    const bool gpu = e_.stream && *e_.stream != -1 && gpu_category;
    if (!e_.ts_ns) {  // no start, or one no int64 of nanoseconds holds: counted, left out
      if (gpu) ++trace_.skipped;
      if (!gpu && StartsWith(e_.name, "ProfilerStep#")) ++trace_.skipped_steps;
      return;
    }
    if (gpu) {
      if (!e_.dur_ns || *e_.dur_ns < 0 || *e_.ts_ns > INT64_MAX - *e_.dur_ns) {
        ++trace_.skipped;
        return;
      }
      GpuInterval g{.start_ns = *e_.ts_ns,
                    .end_ns = *e_.ts_ns + *e_.dur_ns,
                    .correlation = e_.correlation.value_or(-1),
                    .kind = ClassifyKernel(e_.name)};
      if (g.kind == KernelKind::kCommunication) {
        g.collective = CollectiveFromName(e_.collective, e_.name);
        if (!e_.collective.empty() || Contains(e_.name, "nccl")) KeepCollective(g);
      }
      trace_.gpu.push_back(g);
      return;
    }
    if (StartsWith(e_.name, "ProfilerStep#")) {
      const std::optional<int64_t> step = Integer(std::string_view(e_.name).substr(13));
      if (step && e_.dur_ns && *e_.dur_ns >= 0 && *e_.ts_ns <= INT64_MAX - *e_.dur_ns) {
        trace_.steps.push_back({*step, *e_.ts_ns, *e_.ts_ns + *e_.dur_ns});
      } else if (step) {
        ++trace_.skipped_steps;
      }
      return;
    }
    const std::string_view cat = e_.cat;
    if (e_.correlation && (cat == "cuda_runtime"sv || cat == "cuda_driver"sv)) {
      trace_.launches.push_back({*e_.correlation, *e_.ts_ns});
    }
  }

  void KeepCollective(const GpuInterval& g) {
    CollectiveCall call{.start_ns = g.start_ns, .end_ns = g.end_ns, .kind = g.collective};
    if (e_.group_size && *e_.group_size > 0 && *e_.group_size < (int64_t{1} << 30)) {
      call.group_size = static_cast<int>(*e_.group_size);
    }
    const std::optional<int> size = DtypeBytes(e_.dtype);
    const double elements = std::max(e_.in_nelems.value_or(0), e_.out_nelems.value_or(0));
    if (size && elements > 0 && (e_.in_nelems || e_.out_nelems)) call.bytes = elements * *size;
    call.group = e_.group;
    trace_.collectives.push_back(std::move(call));
  }

  std::string_view Key() const { return key_; }

  Scanner scan_;
  KinetoTrace trace_;
  EventFields e_;
  std::string key_;
  std::string text_;
  bool seen_events_ = false;
  bool in_events_ = false;
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::optional<CollectiveKind> KindFromLowerName(std::string_view n) {
  if (Contains(n, "allreduce") || Contains(n, "all_reduce")) return CollectiveKind::kAllReduce;
  if (Contains(n, "allgather") || Contains(n, "all_gather")) return CollectiveKind::kAllGather;
  if (Contains(n, "reducescatter") || Contains(n, "reduce_scatter")) {
    return CollectiveKind::kReduceScatter;
  }
  if (Contains(n, "alltoall") || Contains(n, "all_to_all")) return CollectiveKind::kAllToAll;
  if (Contains(n, "broadcast")) return CollectiveKind::kBroadcast;
  if (Contains(n, "barrier")) return CollectiveKind::kBarrier;
  if (Contains(n, "sendrecv") || Contains(n, "send") || Contains(n, "recv")) {
    return CollectiveKind::kSendRecv;
  }
  if (Contains(n, "reduce")) return CollectiveKind::kReduce;
  return std::nullopt;
}

}  // namespace

Result<KinetoTrace> ReadKinetoTrace(ByteSource& input, const KinetoReadLimits& limits) {
  TraceParser parser(input, limits);
  return parser.Parse();
}

KernelKind ClassifyKernel(std::string_view name) {
  if (StartsWith(name, "nccl") || StartsWith(name, "hip") || StartsWith(name, "hccl") ||
      Contains(name, "ncclKernel")) {
    return KernelKind::kCommunication;
  }
  if (StartsWith(name, "Memcpy") || StartsWith(name, "Memset") || StartsWith(name, "dma")) {
    return KernelKind::kMemory;  // hipMemcpy is communication by the rule above: HTA's order
  }
  static constexpr std::array<std::string_view, 4> kAnywhere = {"Memcpy", "Memset", "dma", "Sync"};
  static constexpr std::array<std::string_view, 9> kPrefix = {"Stream Wait Event",
                                                              "runFunction",
                                                              "job_exe",
                                                              "packet",
                                                              "pe_exe",
                                                              "cpum_exe_subgraph",
                                                              "hccl",
                                                              "collective_subgraph_execution",
                                                              "hip"};
  for (std::string_view part : kAnywhere) {
    if (Contains(name, part)) return KernelKind::kOther;
  }
  for (std::string_view prefix : kPrefix) {
    if (StartsWith(name, prefix)) return KernelKind::kOther;
  }
  if (StartsWith(name, "cuda") && name.find("LaunchKernel", 4) != std::string_view::npos) {
    return KernelKind::kOther;
  }
  return KernelKind::kCompute;
}

CollectiveKind CollectiveFromName(std::string_view c10d_name, std::string_view kernel_name) {
  if (!c10d_name.empty()) {
    if (auto kind = KindFromLowerName(Lower(c10d_name))) return *kind;
  }
  if (auto kind = KindFromLowerName(Lower(kernel_name))) return *kind;
  return CollectiveKind::kOther;
}

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kReduce: return "reduce";
    case CollectiveKind::kSendRecv: return "send_recv";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kOther: return "other";
  }
  return "other";
}

std::optional<int> DtypeBytes(std::string_view dtype) {
  static constexpr std::array<std::pair<std::string_view, int>, 22> kSizes = {{
      {"float", 4},       {"float32", 4}, {"double", 8},       {"float64", 8},
      {"half", 2},        {"float16", 2}, {"bfloat16", 2},     {"long", 8},
      {"int64", 8},       {"int", 4},     {"int32", 4},        {"short", 2},
      {"int16", 2},       {"char", 1},    {"byte", 1},         {"int8", 1},
      {"uint8", 1},       {"bool", 1},    {"complexfloat", 8}, {"complexdouble", 16},
      {"complexhalf", 4}, {"uint16", 2},
  }};
  const std::string lower = Lower(dtype);
  for (const auto& [name, size] : kSizes) {
    if (lower == name) return size;
  }
  if (StartsWith(lower, "float8")) return 1;  // Float8_e4m3fn, Float8_e5m2 and their fnuz
  if (lower == "uint32") return 4;
  if (lower == "uint64") return 8;
  return std::nullopt;
}

}  // namespace cmax::train
