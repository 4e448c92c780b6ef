#include "endpoint/workload.hpp"

#include <array>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "core/strings.hpp"
#include "sys/line_reader.hpp"

namespace cmax::endpoint {
namespace {

// The latest a replayed request may be due after the first: a year.
constexpr double kMaxTraceSeconds = 366.0 * 24 * 3600;
// The longest conversation a random workload builds (about 60 MB of text per conversation).
constexpr double kMaxConversationWords = 10'000'000;

using nlohmann::json;

// Common English words: most tokenizers take each as one token, so word counts are close to
// token counts on real servers too (serve-sim counts words exactly).
constexpr std::array<std::string_view, 128> kWords = {
    "time",     "year",    "people",   "way",    "day",    "man",     "thing",   "woman",
    "life",     "child",   "world",    "school", "state",  "family",  "student", "group",
    "country",  "problem", "hand",     "part",   "place",  "case",    "week",    "company",
    "system",   "program", "question", "work",   "number", "night",   "point",   "home",
    "water",    "room",    "mother",   "area",   "money",  "story",   "fact",    "month",
    "lot",      "right",   "study",    "book",   "eye",    "job",     "word",    "business",
    "issue",    "side",    "kind",     "head",   "house",  "service", "friend",  "father",
    "power",    "hour",    "game",     "line",   "end",    "member",  "law",     "car",
    "city",     "name",    "team",     "minute", "idea",   "kid",     "body",    "back",
    "parent",   "face",    "others",   "level",  "office", "door",    "health",  "person",
    "art",      "war",     "history",  "party",  "result", "change",  "morning", "reason",
    "research", "girl",    "guy",      "moment", "air",    "teacher", "force",   "order",
    "good",     "new",     "first",    "last",   "long",   "great",   "little",  "own",
    "other",    "old",     "big",      "high",   "small",  "large",   "next",    "early",
    "young",    "few",     "public",   "bad",    "same",   "able",    "green",   "blue",
    "red",      "open",    "clear",    "short",  "simple", "ready",   "true",    "full"};

// 128 words: seven bits pick one, so one draw of the generator picks nine.
static_assert(kWords.size() == 128);

void AppendWords(std::string& to, std::mt19937_64& rng, uint64_t count) {
  to.reserve(to.size() + count * 9);  // the longest word is 8 letters, and a space
  uint64_t bits = 0;
  int picks = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (picks == 0) {
      bits = rng();
      picks = 9;
    }
    if (!to.empty()) to += ' ';
    to += kWords[bits & 127U];
    bits >>= 7;
    --picks;
  }
}

class RandomWorkload : public Workload {
 public:
  explicit RandomWorkload(const RandomSpec& spec) : spec_(spec), rng_(spec.seed) {
    std::mt19937_64 prefix_rng(spec.seed ^ 0x9e3779b97f4a7c15ULL);
    AppendWords(prefix_, prefix_rng, spec.prefix_len);
  }
  std::optional<Conversation> Next() override {
    Conversation c;
    for (size_t t = 0; t < spec_.turns; ++t) {
      std::string text = t == 0 ? prefix_ : std::string();
      AppendWords(text, rng_, Length(spec_.input_len));
      c.turns.push_back(std::move(text));
      c.max_tokens.push_back(std::max<uint64_t>(1, Length(spec_.output_len)));
    }
    return c;
  }

 private:
  uint64_t Length(uint64_t base) {
    if (spec_.range_ratio <= 0) return base;
    const auto low = static_cast<uint64_t>(static_cast<double>(base) * (1 - spec_.range_ratio));
    const auto high = static_cast<uint64_t>(static_cast<double>(base) * (1 + spec_.range_ratio));
    return std::uniform_int_distribution<uint64_t>(low, high)(rng_);
  }
  RandomSpec spec_;
  std::mt19937_64 rng_;
  std::string prefix_;
};

class ListWorkload : public Workload {
 public:
  ListWorkload(std::vector<Conversation> items, bool cycle)
      : items_(std::move(items)), cycle_(cycle) {}
  std::optional<Conversation> Next() override {
    if (next_ >= items_.size()) {
      if (!cycle_ || items_.empty()) return std::nullopt;
      next_ = 0;
    }
    return items_[next_++];
  }

 private:
  std::vector<Conversation> items_;
  bool cycle_;
  size_t next_ = 0;
};

std::optional<uint64_t> PositiveCount(const json& line, const char* key) {
  if (!line.contains(key)) return std::nullopt;
  const json& v = line[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) return std::nullopt;
  return v.get<uint64_t>();
}

// The first `count` words of space-separated text.
std::string_view FirstWords(std::string_view text, uint64_t count) {
  size_t end = 0;
  for (uint64_t w = 0; w < count; ++w) {
    end = text.find(' ', end == 0 && w == 0 ? 0 : end + 1);
    if (end == std::string_view::npos) return text;
  }
  return text.substr(0, end);
}

}  // namespace

std::vector<Message> TurnMessages(const Conversation& c, size_t turn,
                                  const std::vector<std::string>& answers) {
  std::vector<Message> messages = c.preamble;
  for (size_t t = 0; t <= turn && t < c.turns.size(); ++t) {
    messages.push_back({"user", c.turns[t]});
    if (t < turn)
      messages.push_back({"assistant", t < answers.size() ? answers[t] : std::string()});
  }
  return messages;
}

Result<std::unique_ptr<Workload>> MakeRandomWorkload(const RandomSpec& spec) {
  if (spec.input_len == 0)
    return Fail(ErrorCode::kInvalidArgument, "--input-len must be at least 1");
  if (spec.output_len == 0)
    return Fail(ErrorCode::kInvalidArgument, "--output-len must be at least 1");
  if (spec.range_ratio < 0 || spec.range_ratio >= 1) {
    return Fail(ErrorCode::kInvalidArgument, "--range-ratio must be in [0, 1)");
  }
  if (spec.turns == 0) return Fail(ErrorCode::kInvalidArgument, "--turns must be at least 1");
  // Each turn resends the history: the last turn of a conversation carries all of it.
  const double history =
      static_cast<double>(spec.prefix_len) +
      (static_cast<double>(spec.input_len) + static_cast<double>(spec.output_len)) *
          (1 + spec.range_ratio) * static_cast<double>(spec.turns);
  if (history > kMaxConversationWords) {
    return Fail(ErrorCode::kInvalidArgument,
                "--prefix-len, --input-len, --output-len and --turns ask for conversations of up "
                "to {:.0f} words; at most {:.0f} are taken (each turn resends the history)",
                history, kMaxConversationWords);
  }
  return std::unique_ptr<Workload>(new RandomWorkload(spec));
}

NextLine LinesOf(std::string_view text) {
  return [text]() mutable -> Result<std::optional<std::string_view>> {
    if (text.empty()) return std::optional<std::string_view>();
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    return std::optional<std::string_view>(line);
  };
}

Result<std::unique_ptr<Workload>> MakePromptFileWorkload(std::string_view jsonl,
                                                         uint64_t default_max_tokens) {
  return MakePromptFileWorkload(LinesOf(jsonl), default_max_tokens);
}

Result<std::unique_ptr<Workload>> MakeTraceWorkload(std::string_view jsonl, const TraceSpec& spec) {
  return MakeTraceWorkload(LinesOf(jsonl), spec);
}

Result<std::unique_ptr<Workload>> MakePromptFileWorkload(const NextLine& next,
                                                         uint64_t default_max_tokens) {
  std::vector<Conversation> items;
  size_t number = 0;
  while (true) {
    auto got = next();
    if (!got) return tl::unexpected(got.error());
    if (!*got) break;
    std::string_view line = **got;
    ++number;
    line = Trim(line);
    if (line.empty()) continue;
    const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "prompts line {}: not a JSON object", number);
    }
    Conversation c;
    const auto kinds = std::ranges::count_if(std::array{"prompt", "messages", "turns"},
                                             [&doc](const char* k) { return doc.contains(k); });
    if (kinds > 1) {
      return Fail(ErrorCode::kInvalidArgument,
                  "prompts line {}: one of \"prompt\", \"messages\" or \"turns\", not {}", number,
                  kinds);
    }
    // Other keys (a dataset's "id", "category") are passed over, but one that names a length
    // ("max_token", "max_new_tokens", "output_len") would leave every answer at the default.
    for (const auto& [key, value] : doc.items()) {
      const std::string lower = ToLower(key);
      if (key != "max_tokens" && (lower.find("token") != std::string::npos ||
                                  lower.ends_with("len") || lower.ends_with("length"))) {
        return Fail(ErrorCode::kInvalidArgument,
                    "prompts line {}: \"{}\" is not read: an answer's length is \"max_tokens\"",
                    number, AsOneLine(key));
      }
    }
    uint64_t max_tokens = default_max_tokens;
    if (doc.contains("max_tokens") && !doc["max_tokens"].is_null()) {
      const json& v = doc["max_tokens"];
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<uint64_t>() > kMaxPromptTokens) {
        return Fail(ErrorCode::kInvalidArgument,
                    "prompts line {}: \"max_tokens\" must be a whole number from 1 to {}", number,
                    kMaxPromptTokens);
      }
      max_tokens = v.get<uint64_t>();
    }
    if (doc.contains("prompt") && doc["prompt"].is_string()) {
      c.turns.push_back(doc["prompt"].get<std::string>());
    } else if (doc.contains("turns") && doc["turns"].is_array()) {
      for (const json& t : doc["turns"]) {
        if (!t.is_string()) {
          return Fail(ErrorCode::kInvalidArgument, "prompts line {}: turns must be strings",
                      number);
        }
        c.turns.push_back(t.get<std::string>());
      }
    } else if (doc.contains("messages") && doc["messages"].is_array()) {
      // Everything before the last user message is sent as it is, every time.
      std::vector<Message> messages;
      for (const json& m : doc["messages"]) {
        if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) {
          return Fail(ErrorCode::kInvalidArgument,
                      "prompts line {}: each message needs a string \"content\"", number);
        }
        messages.push_back({TextOf(m, "role", "user"), m["content"].get<std::string>()});
      }
      if (messages.empty()) {
        return Fail(ErrorCode::kInvalidArgument, "prompts line {}: no messages", number);
      }
      c.turns.push_back(messages.back().content);
      messages.pop_back();
      c.preamble = std::move(messages);
    } else {
      return Fail(ErrorCode::kInvalidArgument,
                  "prompts line {}: needs \"prompt\", \"messages\" or \"turns\"", number);
    }
    if (c.turns.empty()) {
      return Fail(ErrorCode::kInvalidArgument, "prompts line {}: no turns", number);
    }
    c.max_tokens.assign(c.turns.size(), std::max<uint64_t>(1, max_tokens));
    items.push_back(std::move(c));
  }
  if (items.empty()) return Fail(ErrorCode::kInvalidArgument, "the prompts file has no prompts");
  return std::unique_ptr<Workload>(new ListWorkload(std::move(items), /*cycle=*/true));
}

namespace {

class MergedWorkload : public Workload {
 public:
  explicit MergedWorkload(std::vector<std::unique_ptr<Workload>> parts) : parts_(std::move(parts)) {
    for (auto& p : parts_) heads_.push_back(p->Next());
  }
  std::optional<Conversation> Next() override {
    std::optional<size_t> best;
    for (size_t i = 0; i < heads_.size(); ++i) {
      if (!heads_[i]) continue;
      if (!best || heads_[i]->at_s.value_or(0) < heads_[*best]->at_s.value_or(0)) best = i;
    }
    if (!best) return std::nullopt;
    std::optional<Conversation> out = std::move(heads_[*best]);
    heads_[*best] = parts_[*best]->Next();
    return out;
  }

 private:
  std::vector<std::unique_ptr<Workload>> parts_;
  std::vector<std::optional<Conversation>> heads_;
};

}  // namespace

std::unique_ptr<Workload> MergeByTime(std::vector<std::unique_ptr<Workload>> parts) {
  return std::make_unique<MergedWorkload>(std::move(parts));
}

std::string BlockText(uint64_t id, size_t words) {
  std::mt19937_64 rng(id * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  std::string text;
  AppendWords(text, rng, words);
  return text;
}

std::string ReplayMarker(uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5851f42d4c957f2dULL);
  return fmt::format("[rid:{:012x}]", rng() & 0xffffffffffffULL);
}

namespace {

// One trace line as read: what its prompt is made of, not the prompt (a trace of long prompts
// would otherwise be held whole in memory before the first request).
struct TraceItem {
  size_t line = 0;
  uint64_t input = 0;
  uint64_t output = 0;
  std::vector<uint64_t> ids;  // only the ones the input length reaches
  double at_s = 0;
};

// Builds each prompt when it is sent.
class TraceWorkload : public Workload {
 public:
  TraceWorkload(std::shared_ptr<const std::vector<TraceItem>> items, TraceSpec spec)
      : items_(std::move(items)), spec_(std::move(spec)) {}
  std::optional<Conversation> Next() override {
    if (next_ >= items_->size()) return std::nullopt;
    const TraceItem& item = (*items_)[next_++];
    // Block i holds tokens [i*B, (i+1)*B); the last one is cut to the input length. Tokens
    // past the blocks the trace names are filler unique to this line.
    std::string text;
    uint64_t left = item.input;
    for (size_t i = 0; i < item.ids.size() && left > 0; ++i) {
      const uint64_t words = std::min<uint64_t>(left, spec_.block_tokens);
      const std::string block = BlockText(item.ids[i], spec_.block_tokens);
      if (!text.empty()) text += ' ';
      text += FirstWords(block, words);
      left -= words;
    }
    if (left > 0) {
      std::mt19937_64 rng(item.line * 0xd1342543de82ef95ULL);
      AppendWords(text, rng, left);
    }
    if (!spec_.marker.empty()) {
      const size_t space = text.find(' ');
      text = spec_.marker + (space == std::string::npos ? std::string() : text.substr(space));
    }
    Conversation c;
    c.turns.push_back(std::move(text));
    c.max_tokens.push_back(item.output);
    c.at_s = item.at_s;
    return c;
  }

 private:
  std::shared_ptr<const std::vector<TraceItem>> items_;  // shared by parallel copies
  TraceSpec spec_;
  size_t next_ = 0;
};

}  // namespace

Result<std::unique_ptr<Workload>> MakeTraceWorkload(const NextLine& next, const TraceSpec& spec) {
  auto workloads = MakeTraceWorkloads(next, spec, {spec.marker});
  if (!workloads) return tl::unexpected(workloads.error());
  return std::move(workloads->front());
}

Result<std::vector<std::unique_ptr<Workload>>> MakeTraceWorkloads(
    const NextLine& next, const TraceSpec& spec, const std::vector<std::string>& markers) {
  if (spec.block_tokens == 0)
    return Fail(ErrorCode::kInvalidArgument, "--trace-block must be at least 1");
  if (spec.speedup <= 0) return Fail(ErrorCode::kInvalidArgument, "--speedup must be positive");
  std::vector<TraceItem> items;
  size_t number = 0;
  std::optional<double> first_ms;
  while (true) {
    auto got = next();
    if (!got) return tl::unexpected(got.error());
    if (!*got) break;
    std::string_view line = **got;
    ++number;
    line = Trim(line);
    if (line.empty()) continue;
    const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
    const auto bad = [number](std::string_view what) {
      return Fail(ErrorCode::kInvalidArgument, "trace line {}: {}", number, what);
    };
    if (!doc.is_object()) return bad("not a JSON object");
    if (!doc.contains("timestamp") || !doc["timestamp"].is_number() ||
        !std::isfinite(doc["timestamp"].get<double>()) || doc["timestamp"].get<double>() < 0) {
      return bad("needs a \"timestamp\" (ms, not negative)");
    }
    const auto input = PositiveCount(doc, "input_length");
    const auto output = PositiveCount(doc, "output_length");
    if (!input || *input == 0) return bad("needs a positive \"input_length\"");
    if (!output || *output == 0) return bad("needs a positive \"output_length\"");
    // Every input token becomes a word of the prompt: a hostile length must not become a
    // terabyte of text.
    if (*input > kMaxPromptTokens || *output > kMaxPromptTokens) {
      return bad(fmt::format("lengths above {} tokens are not taken", kMaxPromptTokens));
    }
    TraceItem item;
    item.line = number;
    item.input = *input;
    item.output = *output;
    if (doc.contains("hash_ids")) {
      if (!doc["hash_ids"].is_array()) return bad("\"hash_ids\" must be an array");
      const uint64_t used = (*input + spec.block_tokens - 1) / spec.block_tokens;
      for (const json& id : doc["hash_ids"]) {
        if (!id.is_number_integer()) return bad("\"hash_ids\" must hold integers");
        if (item.ids.size() < used) item.ids.push_back(id.get<uint64_t>());
      }
    }
    const double ms = doc["timestamp"].get<double>();
    if (!first_ms) first_ms = ms;
    item.at_s = (ms - *first_ms) / 1000.0 / spec.speedup;
    if (item.at_s > kMaxTraceSeconds) {
      return bad("a request due more than a year after the first (check the timestamps' unit: ms)");
    }
    if (!items.empty() && item.at_s < items.back().at_s) {
      return Fail(ErrorCode::kInvalidArgument, "trace timestamps must not go back (request {})",
                  items.size() + 1);
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) return Fail(ErrorCode::kInvalidArgument, "the trace has no requests");
  const auto shared = std::make_shared<const std::vector<TraceItem>>(std::move(items));
  std::vector<std::unique_ptr<Workload>> workloads;
  for (const std::string& marker : markers) {
    TraceSpec copy = spec;
    copy.marker = marker;
    workloads.push_back(std::make_unique<TraceWorkload>(shared, std::move(copy)));
  }
  return workloads;
}

namespace {

// A JSONL line longer than this is refused: no prompt or trace line needs more.
constexpr size_t kMaxJsonLineBytes = size_t{16} << 20;

Result<sys::LineReader> OpenJsonLines(const std::string& path,
                                      const std::function<bool()>& interrupted) {
  return sys::LineReader::Open(path, {.max_line_bytes = kMaxJsonLineBytes,
                                      .interrupted = interrupted,
                                      .long_line_is_error = true});
}

// The reader's lines; read_failed set when the reader, not the parser, failed.
NextLine ReadingFrom(sys::LineReader& reader, bool& read_failed) {
  return [&reader, &read_failed] {
    auto line = reader.Next();
    read_failed = !line;
    return line;
  };
}

}  // namespace

Result<std::unique_ptr<Workload>> ReadPromptFile(const std::string& path,
                                                 uint64_t default_max_tokens,
                                                 const std::function<bool()>& interrupted) {
  auto reader = OpenJsonLines(path, interrupted);
  if (!reader) return Wrap(reader.error(), "--prompts");
  bool read_failed = false;  // the reader's errors name the file already; the parser's do not
  auto workload = MakePromptFileWorkload(ReadingFrom(*reader, read_failed), default_max_tokens);
  if (!workload && !read_failed) return Wrap(workload.error(), path);
  return workload;
}

Result<std::vector<std::unique_ptr<Workload>>> ReadTraceFile(
    const std::string& path, const TraceSpec& spec, const std::vector<std::string>& markers,
    const std::function<bool()>& interrupted) {
  auto reader = OpenJsonLines(path, interrupted);
  if (!reader) return tl::unexpected(reader.error());
  bool read_failed = false;
  auto workloads = MakeTraceWorkloads(ReadingFrom(*reader, read_failed), spec, markers);
  if (!workloads && !read_failed) return Wrap(workloads.error(), path);
  return workloads;
}

}  // namespace cmax::endpoint
