// What a load run sends: conversations of one or more user turns (each turn resends the whole
// history, as chat clients and coding agents do), from
//   random prompts: lengths uniform in [L(1-r), L(1+r)], words from a fixed list, an optional
//     prefix shared by every prompt (vLLM's "random" dataset, counted in words not tokens);
//   a JSONL file of prompts: {"prompt": "..."} | {"messages": [...]} | {"turns": ["...", ...]},
//     each with an optional "max_tokens"; taken in order, again from the top when used up;
//   a Mooncake-style trace: {"timestamp": ms, "input_length": N, "output_length": M,
//     "hash_ids": [...]}: each id becomes the same block of `block_tokens` words wherever it
//     appears, so prefixes the trace shares are byte-identical; a per-replay marker (the first
//     word of every prompt) keeps parallel copies of the trace from sharing one another's cache.
// Pure: generators are seeded and deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "endpoint/api.hpp"

namespace cmax::endpoint {

struct Conversation {
  std::vector<Message> preamble;     // system messages, sent before every turn
  std::vector<std::string> turns;    // user messages
  std::vector<uint64_t> max_tokens;  // per turn
  std::optional<double> at_s;        // when its first turn is due (trace replay)
  double think_s = 0;                // from an answer to the next turn
};

// The messages of turn `turn`, with the answers given so far.
std::vector<Message> TurnMessages(const Conversation& c, size_t turn,
                                  const std::vector<std::string>& answers);

class Workload {
 public:
  virtual ~Workload() = default;
  // The next conversation; nullopt when a finite workload is used up.
  virtual std::optional<Conversation> Next() = 0;
};

struct RandomSpec {
  uint64_t input_len = 1024;  // words per user turn
  uint64_t output_len = 128;  // max tokens per answer
  double range_ratio = 0;     // lengths uniform in [L(1-r), L(1+r)]
  uint64_t prefix_len = 0;    // words shared by every conversation's first turn
  size_t turns = 1;
  uint64_t seed = 0;
};
Result<std::unique_ptr<Workload>> MakeRandomWorkload(const RandomSpec& spec);

// The longest prompt or answer a workload asks for, in tokens (≈ words): past every model's
// context window. The command's length options and trace lines are held to it.
inline constexpr uint64_t kMaxPromptTokens = 1'000'000;

// Where a JSONL reader gets its lines: the next one (nullopt at the end; valid until the next
// call), or why it could not be read. Files come through sys::LineReader (bounded memory).
using NextLine = std::function<Result<std::optional<std::string_view>>()>;
// The lines of a text already in memory.
NextLine LinesOf(std::string_view text);

// A prompts file (JSONL), cycled.
Result<std::unique_ptr<Workload>> MakePromptFileWorkload(const NextLine& next,
                                                         uint64_t default_max_tokens);
Result<std::unique_ptr<Workload>> MakePromptFileWorkload(std::string_view jsonl,
                                                         uint64_t default_max_tokens);

struct TraceSpec {
  size_t block_tokens = 512;  // Mooncake's block size
  double speedup = 1;         // timestamps divided by this
  std::string marker;         // replaces each prompt's first word; empty: none
};
// A Mooncake-style trace; lines are validated up front so a bad one is reported with its number.
Result<std::unique_ptr<Workload>> MakeTraceWorkload(const NextLine& next, const TraceSpec& spec);
Result<std::unique_ptr<Workload>> MakeTraceWorkload(std::string_view jsonl, const TraceSpec& spec);
// The trace read once and replayed as one workload per marker (parallel copies, each keeping to
// its own cache; an empty marker: none); spec.marker is not used.
Result<std::vector<std::unique_ptr<Workload>>> MakeTraceWorkloads(
    const NextLine& next, const TraceSpec& spec, const std::vector<std::string>& markers);

// Files of the user's, read a line at a time (a line over 16 MiB is an error, never buffered;
// `interrupted` stops the reading), with the error naming the file.
Result<std::unique_ptr<Workload>> ReadPromptFile(const std::string& path,
                                                 uint64_t default_max_tokens,
                                                 const std::function<bool()>& interrupted);
Result<std::vector<std::unique_ptr<Workload>>> ReadTraceFile(
    const std::string& path, const TraceSpec& spec, const std::vector<std::string>& markers,
    const std::function<bool()>& interrupted);

// Several timed workloads as one, in time order (parallel copies of one trace).
std::unique_ptr<Workload> MergeByTime(std::vector<std::unique_ptr<Workload>> parts);

// A marker for one replay: "[rid:<12 hex>]" from the seed.
std::string ReplayMarker(uint64_t seed);

// The words of block `id` (deterministic, shared by every use of the id).
std::string BlockText(uint64_t id, size_t words);

}  // namespace cmax::endpoint
