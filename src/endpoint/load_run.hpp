// The endpoint commands' whole work, behind the thin `cmax endpoint` file: a load run, a trace
// replay and a concurrency sweep, each checked before anything is sent (URL, API key, output
// paths, prices), measured (after its warm-up), recorded as one run in the store (evidence,
// findings, metrics) and written to the output files. The options are grouped by what they
// describe, so that each subcommand takes the groups it has flags for.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "endpoint/load.hpp"
#include "endpoint/plan.hpp"
#include "endpoint/requests_stream.hpp"

namespace cmax::sys {
class FileSystem;
}

namespace cmax::endpoint {

// What the run sends, how, and where its results go.
struct TargetOptions {
  std::string url;
  std::string endpoint_path;  // --endpoint: the API's path below a base URL
  std::string api = "chat";
  std::string model;
  std::string api_key_env;
  std::string api_key_file;
  std::vector<std::string> headers;
  std::string header_file;  // more headers, one a line (HeaderFileLines)
  std::string extra_body;   // a JSON object merged into every body
  bool no_stream = false;
  bool no_usage = false;
  bool ignore_eos = false;
  bool insecure = false;
  std::string cacert;
  bool http1 = false;                // no HTTP/2
  std::string http_client = "cmax";  // cmax (Http1Pool) | libcurl, for plain http
  double timeout_s = 600;
  double connect_timeout_s = 10;
  double idle_timeout_s = 0;
  int retries = 0;
  std::vector<std::string> goodput;
  std::string prices;
  std::string price_model;
  std::string output_file;
  std::string requests_file;
  std::string label = "cmax";
  uint64_t seed = 0;
  size_t cache_block = 16;
};

// Random prompts, or prompts from a file.
struct WorkloadOptions {
  uint64_t input_len = 1024;
  uint64_t output_len = 128;
  double range_ratio = 0;
  uint64_t prefix_len = 0;
  size_t turns = 1;
  std::string prompts;
};

// How fast and how long.
struct PaceOptions {
  size_t concurrency = 16;
  double rate = 0;
  double burstiness = 1;
  size_t requests = 0;  // 0: 200 with no duration (a run), the whole trace (a replay)
  double duration_s = 0;
  size_t warmup = 0;
};

struct SweepOptions {
  std::vector<size_t> levels;  // empty: powers of 2 up to max_concurrency
  size_t max_concurrency = 1024;
};

struct ReplayOptions {
  std::string trace;
  size_t block_tokens = 512;
  double speedup = 1;
  size_t copies = 1;
  bool no_marker = false;
};

// What a load run takes from the shell around it.
struct LoadRunIo {
  std::string db_path;
  std::string cmax_version;
  std::string provider;  // the provider evaluated; empty: --provider or CMAX_PROVIDER, if any
  sys::FileSystem* fs = nullptr;
  EnvLookup env;
  LoadHooks hooks;                              // interrupted, progress
  std::function<int()> interrupt_signal;        // the signal that stopped the run, or 0
  std::function<void(std::string_view)> note;   // a line for the operator (the warm-up's)
  std::function<void(std::string_view)> table;  // a sweep's header and rows, as they come
  std::function<Result<void>(const std::string& path, std::string_view text)> write_output;
  // Opens an output that is written as it grows (the requests file), emptied first; "-" is
  // stdout. What it returns is called from the requests stream's thread.
  std::function<Result<sys::GrowingOutput>(const std::string& path)> open_growing;
};

struct LoadRunReport {
  int64_t run_id = 0;
  int exit_code = 0;  // the stored run's: 0, 1 (a FAIL finding), 128+signal
  std::string text;   // the summary to print
};

Result<LoadRunReport> RunEndpoint(const TargetOptions& target, const WorkloadOptions& workload,
                                  const PaceOptions& pace, const LoadRunIo& io);
Result<LoadRunReport> ReplayEndpoint(const TargetOptions& target, const ReplayOptions& replay,
                                     const PaceOptions& pace, const LoadRunIo& io);
Result<LoadRunReport> SweepEndpoint(const TargetOptions& target, const WorkloadOptions& workload,
                                    const PaceOptions& pace, const SweepOptions& sweep,
                                    const LoadRunIo& io);

// The load shape the options ask for, at one concurrency and request count.
LoadShape ShapeOf(const TargetOptions& target, const PaceOptions& pace, size_t concurrency,
                  size_t requests);

}  // namespace cmax::endpoint
