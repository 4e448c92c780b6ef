// The client's own work per streamed token, without the network: a 200-token chat stream as
// serve-sim sends it, fed in 16 KB reads (libcurl's buffer) through the SSE parser and the chunk
// reader, each chunk's arrival time kept the way the engine keeps it. items/s = tokens/s; the
// inverse is the parse share of the client's CPU per token. Run: build/release/bin/stream_bench.
#include <algorithm>
#include <benchmark/benchmark.h>
#include <string>
#include <vector>

#include "endpoint/api.hpp"
#include "endpoint/sim.hpp"
#include "endpoint/sse.hpp"

namespace {

using cmax::endpoint::Api;
using cmax::endpoint::SimUsage;
using cmax::endpoint::SseEvent;
using cmax::endpoint::SseParser;
using cmax::endpoint::StreamEffect;
using cmax::endpoint::StreamReader;

constexpr uint64_t kTokens = 200;

// `escapes`: every fourth token starts a new line ("\n" in its JSON), as in code or lists.
std::string Stream(Api api, bool escapes = false) {
  const SimUsage usage{.input = 200, .cached = 0, .output = kTokens};
  std::string s = StreamStart(api, "cmpl-sim-1", "sim", usage, 123456789);
  for (uint64_t n = 0; n < kTokens; ++n) {
    std::string token = StreamToken(api, "cmpl-sim-1", "sim", n, n == 0, n == 0 ? 123456789 : 0);
    const std::string text_key = R"("content":")";
    if (const size_t at = token.find(text_key); escapes && n % 4 == 3 && at != std::string::npos) {
      token.insert(at + text_key.size(), R"(\n)");
    }
    s += token;
  }
  s += StreamEnd(api, "cmpl-sim-1", "sim", usage, true, true);
  return s;
}

void ReadStream(benchmark::State& state, Api api, bool escapes = false) {
  const std::string stream = Stream(api, escapes);
  const size_t read_bytes = static_cast<size_t>(state.range(0));
  std::vector<double> chunk_s;
  for (auto _ : state) {
    SseParser sse;
    StreamReader reader(api, false);
    chunk_s.clear();
    bool done = false;
    for (size_t off = 0; off < stream.size(); off += read_bytes) {
      const std::string_view piece =
          std::string_view(stream).substr(off, std::min(read_bytes, stream.size() - off));
      sse.Feed(piece, [&](const SseEvent& event) {
        const StreamEffect effect = reader.Read(event);
        if (effect.choice) chunk_s.push_back(1.0);
        done = done || effect.done;
      });
    }
    benchmark::DoNotOptimize(done);
    benchmark::DoNotOptimize(chunk_s.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kTokens));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(stream.size()));
}

void BM_ChatStream(benchmark::State& state) {
  ReadStream(state, Api::kChat);
}
void BM_ChatStreamWithNewlines(benchmark::State& state) {
  ReadStream(state, Api::kChat, true);
}
void BM_AnthropicStream(benchmark::State& state) {
  ReadStream(state, Api::kAnthropic);
}
// 16 KB: a read that finds many tokens waiting; 256 B: about one token per read (paced tokens).
BENCHMARK(BM_ChatStream)->Arg(16384)->Arg(256);
BENCHMARK(BM_ChatStreamWithNewlines)->Arg(16384);
BENCHMARK(BM_AnthropicStream)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
