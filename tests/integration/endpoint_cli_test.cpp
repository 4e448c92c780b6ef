// `cmax endpoint` as a user runs it: serve-sim as its own process (a stand-in inference server),
// `run`, `sweep` and `replay` against it; the result file in vLLM's keys, one JSON line per
// request, the run in the store; the API key in no output, file or store; bad input refused
// with a reason and exit code 2.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <thread>

#include "store/run_writer.hpp"
#include "store/store.hpp"
#include "support/free_port.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

using testing::FileText;

class EndpointCli : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = testing::FreePort();
    auto pid = sys::SpawnDaemon(
        {.argv = {CMAX_BINARY, "endpoint", "serve-sim", "--port", std::to_string(port_),
                  "--decode-ms", "1", "--block-size", "8", "--duration", "60"},
         .log_path = dir_.File("sim.log")});
    ASSERT_TRUE(pid);
    sim_pid_ = *pid;
    ASSERT_TRUE(testing::WaitForText(dir_.File("sim.log"), "listening"))
        << testing::FileText(dir_.File("sim.log"));
  }
  void TearDown() override {
    if (sim_pid_ > 0) ::kill(sim_pid_, SIGTERM);
  }
  sys::ProcessResult Cmax(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), {CMAX_BINARY, "--db", dir_.File("cmax.db")});
    sys::PosixProcessRunner runner;
    auto r = runner.Run({.argv = args, .env_add = std::move(env), .timeout = 60s});
    EXPECT_TRUE(r);
    return r ? *r : sys::ProcessResult{};
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  testing::TempDir dir_;
  int port_ = 0;
  int sim_pid_ = 0;
};

TEST_F(EndpointCli, RunWritesVllmKeysRequestLinesAndTheStoreButNeverTheKey) {
  const std::string key = "sk-cmax-secret-7f3a";
  const auto r = Cmax({"endpoint",        "run",
                       "--url",           Url(),
                       "--model",         "m",
                       "--concurrency",   "4",
                       "--requests",      "20",
                       "--input-len",     "30",
                       "--output-len",    "5",
                       "--warmup",        "4",
                       "--output-file",   dir_.File("result.json"),
                       "--requests-file", dir_.File("requests.jsonl"),
                       "--goodput",       "ttft:1000",
                       "tpot:100"},
                      {"OPENAI_API_KEY=" + key});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("20 completed, 0 failed"), std::string::npos) << r.stdout_text;
  const json result = json::parse(FileText(dir_.File("result.json")));
  for (const char* k : {"duration",
                        "completed",
                        "failed",
                        "total_input_tokens",
                        "total_output_tokens",
                        "request_throughput",
                        "request_goodput",
                        "output_throughput",
                        "total_token_throughput",
                        "input_lens",
                        "output_lens",
                        "ttfts",
                        "itls",
                        "errors",
                        "mean_ttft_ms",
                        "median_ttft_ms",
                        "std_ttft_ms",
                        "p99_ttft_ms",
                        "mean_tpot_ms",
                        "p99_itl_ms",
                        "p99.9_e2el_ms",
                        "max_concurrency"}) {
    EXPECT_TRUE(result.contains(k)) << k;
  }
  EXPECT_EQ(result["completed"], 20);
  EXPECT_EQ(result["total_output_tokens"], 100);
  EXPECT_EQ(result["ttfts"].size(), 20U);
  // Seven choice-bearing chunks (role, five tokens, finish), as vLLM counts them: six gaps.
  EXPECT_EQ(result["itls"][0].size(), 6U);
  EXPECT_DOUBLE_EQ(result["request_goodput"].get<double>(),
                   result["request_throughput"].get<double>());
  EXPECT_EQ(result["cmax"]["schema"], "cmax.endpoint.result/v1");
  std::istringstream lines(FileText(dir_.File("requests.jsonl")));
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    EXPECT_TRUE(json::parse(line)["ok"].get<bool>());
  }
  EXPECT_EQ(n, 20);
  auto store = store::Store::Open({.path = dir_.File("cmax.db"), .create = false});
  ASSERT_TRUE(store);
  auto run = store->LoadRun(*store->LatestRunId("endpoint"));
  ASSERT_TRUE(run);
  bool throughput = false;
  for (const Metric& m : run->metrics)
    throughput |= m.name == "endpoint.output_throughput" && m.value > 0;
  EXPECT_TRUE(throughput);
  for (const std::string& text :
       {r.stdout_text, r.stderr_text, FileText(dir_.File("result.json")),
        FileText(dir_.File("requests.jsonl")), FileText(dir_.File("cmax.db"))}) {
    EXPECT_EQ(text.find(key), std::string::npos);
  }
}

// The OpenAI SDK's base-URL convention: http://HOST:PORT/v1 is a base, not the endpoint.
TEST_F(EndpointCli, ABaseUrlGetsTheApisPath) {
  const auto r = Cmax({"endpoint", "run", "--url", Url() + "/v1", "--model", "m", "--requests", "4",
                       "--input-len", "10", "--output-len", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stdout_text.find(Url() + "/v1/chat/completions"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("4 completed, 0 failed"), std::string::npos) << r.stdout_text;
}

// Nothing measured: exit 1 (not 0 with 4,096 404s), and the first answer is shown.
TEST_F(EndpointCli, ARunWhoseEveryRequestFailedFailsAndShowsTheFirst) {
  const auto wrong = Cmax({"endpoint", "run", "--url", Url() + "/nope/chat/completions", "--model",
                           "m", "--requests", "4", "--input-len", "10"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.stdout_text << wrong.stderr_text;
  EXPECT_NE(wrong.stdout_text.find("first failure   HTTP/1.1 404"), std::string::npos)
      << wrong.stdout_text;
  // A refused port: the client's CPU share over a millisecond is not reported.
  const auto refused = Cmax({"endpoint", "run", "--url",
                             "http://127.0.0.1:" + std::to_string(testing::FreePort()) + "/v1",
                             "--model", "m", "--requests", "4", "--input-len", "10"});
  EXPECT_EQ(refused.exit_code, 1) << refused.stdout_text << refused.stderr_text;
  EXPECT_NE(refused.stdout_text.find("first failure   connect: "), std::string::npos)
      << refused.stdout_text;
  EXPECT_NE(refused.stdout_text.find("share not measured"), std::string::npos)
      << refused.stdout_text;
  EXPECT_EQ(refused.stdout_text.find("% of a core"), std::string::npos) << refused.stdout_text;
}

// --header-file: its headers reach the server (serve-sim answers 429 to every request that asks
// for it with x-cmax-sim-fault), a credential among them is never shown, and a line that is not
// a header is refused without being repeated.
TEST_F(EndpointCli, HeadersFromAFileAreSentAndTheirCredentialsNeverShown) {
  const std::string secret = "tok-cmax-header-5e1d";
  {
    std::ofstream file(dir_.File("headers"));
    file << "# the gateway's\r\nX-Gateway-Token: " << secret << "\r\n\nx-cmax-sim-fault: 429\n";
  }
  const auto sent = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--requests", "4",
                          "--input-len", "10", "--header-file", dir_.File("headers"),
                          "--requests-file", dir_.File("requests.jsonl")});
  EXPECT_EQ(sent.exit_code, 1) << sent.stdout_text << sent.stderr_text;
  EXPECT_NE(sent.stdout_text.find("first failure   HTTP/1.1 429"), std::string::npos)
      << sent.stdout_text;
  for (const std::string& text :
       {sent.stdout_text, sent.stderr_text, FileText(dir_.File("requests.jsonl")),
        FileText(dir_.File("cmax.db"))}) {
    EXPECT_EQ(text.find(secret), std::string::npos);
  }
  {
    std::ofstream file(dir_.File("bad-headers"));
    file << "Bearer " << secret << "\n";
  }
  const auto bad = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--header-file",
                         dir_.File("bad-headers")});
  EXPECT_EQ(bad.exit_code, 2) << bad.stderr_text;
  EXPECT_NE(bad.stderr_text.find("a line of --header-file"), std::string::npos) << bad.stderr_text;
  EXPECT_EQ(bad.stderr_text.find(secret), std::string::npos) << bad.stderr_text;
  const auto missing = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--header-file",
                             dir_.File("no-such-file")});
  EXPECT_EQ(missing.exit_code, 2) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("--header-file"), std::string::npos) << missing.stderr_text;
}

// libcurl and its dependency tail are loaded by the commands that send HTTP, not at every start
// (the dynamic loader's own account of what it loaded, LD_DEBUG=libs).
TEST_F(EndpointCli, OnlyTheHttpCommandsLoadLibcurl) {
  const std::vector<std::string> trace = {"LD_DEBUG=libs"};
  const auto version = Cmax({"--version"}, trace);
  ASSERT_EQ(version.exit_code, 0) << version.stderr_text;
  EXPECT_NE(version.stderr_text.find("libc.so.6"), std::string::npos) << "LD_DEBUG said nothing";
  EXPECT_EQ(version.stderr_text.find("libcurl"), std::string::npos);
#if !defined(__SANITIZE_ADDRESS__)  // sanitizer builds load the shared C++ runtime theirs expect
  // Start-up: a one-shot command maps glibc and nothing else (the C++ runtime and fmt are in).
  for (const char* shared : {"libstdc++", "libgcc_s", "libfmt"}) {
    EXPECT_EQ(version.stderr_text.find(shared), std::string::npos) << shared;
  }
#endif
  const auto health = Cmax({"health", "--passive", "--from-file",
                            std::string(CMAX_TEST_DATA) + "/health/kmsg/xid_shapes.log"},
                           trace);
  EXPECT_EQ(health.exit_code, 1) << health.stderr_text.substr(0, 2000);
  EXPECT_EQ(health.stderr_text.find("libcurl"), std::string::npos);
  const auto run = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--requests", "2",
                         "--input-len", "5", "--output-len", "2"},
                        trace);
  EXPECT_EQ(run.exit_code, 0) << run.stdout_text;
  EXPECT_NE(run.stderr_text.find("libcurl.so.4"), std::string::npos);
}

TEST_F(EndpointCli, SweepAndReplay) {
  auto r = Cmax({"endpoint", "sweep", "--url", Url(), "--model", "m", "--levels", "1,2,4",
                 "--requests", "8", "--input-len", "10", "--output-len", "3", "--output-file",
                 dir_.File("sweep.json")});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const json sweep = json::parse(FileText(dir_.File("sweep.json")));
  ASSERT_EQ(sweep.size(), 3U);
  EXPECT_EQ(sweep[2]["max_concurrency"], 4);
  std::ofstream(dir_.File("trace.jsonl"))
      << "{\"timestamp\": 0, \"input_length\": 24, \"output_length\": 2, \"hash_ids\": [1, 2, 3]}\n"
      << "{\"timestamp\": 30, \"input_length\": 24, \"output_length\": 2, \"hash_ids\": [1, 2, "
         "3]}\n";
  r = Cmax({"endpoint", "replay", dir_.File("trace.jsonl"), "--url", Url(), "--model", "m",
            "--trace-block", "8", "--copies", "2", "--output-file", dir_.File("replay.json")});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  const json replay = json::parse(FileText(dir_.File("replay.json")));
  EXPECT_EQ(replay["completed"], 4);
  // Each copy's second request hits its first's two leading blocks: 32 of 96 tokens.
  EXPECT_DOUBLE_EQ(replay["cmax"]["ideal_cache_hit_rate"].get<double>(), 32.0 / 96.0);
  EXPECT_DOUBLE_EQ(replay["cmax"]["cache_hit_rate"].get<double>(), 32.0 / 96.0);
}

// The share of the ideal cache hit rate reached, which the rubric scores, is stored when the
// workload repeats a prefix, and only then.
TEST_F(EndpointCli, TheCacheHitAgainstTheIdealIsStoredWhenThereIsAPrefixToReuse) {
  for (const char* prefix : {"64", "0"}) {
    const auto r = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--requests", "16",
                         "--concurrency", "2", "--input-len", "32", "--output-len", "4",
                         "--prefix-len", prefix});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    const auto report = Cmax({"report", "--format", "json"});  // the newest run
    ASSERT_EQ(report.exit_code, 0) << report.stderr_text;
    const json doc = json::parse(report.stdout_text);
    std::vector<double> shares;
    for (const json& m : doc["metrics"]) {
      if (m["name"] == "endpoint.cache_hit_of_ideal") shares.push_back(m["value"].get<double>());
    }
    if (std::string(prefix) == "0") {
      EXPECT_TRUE(shares.empty()) << prefix;
    } else {
      ASSERT_EQ(shares.size(), 1U) << doc["metrics"];
      EXPECT_GT(shares[0], 0.9);  // serve-sim's cache keeps every block
      EXPECT_LE(shares[0], 1.0);
    }
  }
}

TEST_F(EndpointCli, BadInputIsRefusedWithAReason) {
  const auto refused = [&](std::vector<std::string> args, const std::string& why) {
    const auto r = Cmax(std::move(args));
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(why), std::string::npos) << r.stderr_text;
  };
  refused({"endpoint", "run", "--url", "ftp://x", "--model", "m"}, "http:// or https://");
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--goodput", "ttft"}, "--goodput");
  // strtod took "nan" (a bar nothing meets) and "0x10"; a bar is a plain number of ms.
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--goodput", "ttft:nan"},
          "--goodput");
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--goodput", "tpot:0x10"},
          "--goodput");
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--api", "grpc"}, "unknown API");
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--header", "nocolon"}, "--header");
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--extra-body", "[1]"},
          "--extra-body");
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--prompts", dir_.File("none.jsonl")},
          "--prompts");
  std::ofstream(dir_.File("prices.json"))
      << R"({"schema": "cmax.prices/v1", "models": {"a": {"input": 1, "output": 2}}})";
  refused({"endpoint", "run", "--url", Url(), "--model", "m", "--prices", dir_.File("prices.json")},
          "no prices for model 'm'");
  // With a price for the model, the run's cost: 4 requests x (30 input x $1 + 5 output x $2) / 1e6.
  const auto priced =
      Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--requests", "4", "--input-len",
            "30", "--output-len", "5", "--prices", dir_.File("prices.json"), "--price-model", "a",
            "--output-file", dir_.File("priced.json")});
  ASSERT_EQ(priced.exit_code, 0) << priced.stderr_text;
  EXPECT_NEAR(json::parse(FileText(dir_.File("priced.json")))["cmax"]["cost_usd"].get<double>(),
              4 * (30 * 1.0 + 5 * 2.0) / 1e6, 1e-12);
  refused({"endpoint", "replay", dir_.File("missing.jsonl"), "--url", Url(), "--model", "m"},
          "missing.jsonl");
  refused({"endpoint", "serve-sim", "--model", "bad\"name"}, "--model");
}

// Issue 13: each of these ran (an unbounded load, a 24 GB prompt, every request a "dns"
// error, a key silently not sent) or was accepted; each is now exit 2 with its reason, before a
// run is stored or a request is sent.
TEST_F(EndpointCli, HostileValuesAreRefusedBeforeAnythingIsSent) {
  const auto refused = [&](std::vector<std::string> args, const std::string& why,
                           std::vector<std::string> env = {}) {
    const auto r = Cmax(std::move(args), std::move(env));
    EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(why), std::string::npos) << r.stderr_text;
  };
  const std::vector<std::string> run = {"endpoint", "run", "--url", Url(), "--model", "m"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  refused(with({"--requests", "-1"}), "--requests: must be a whole number in [1, ");
  refused(with({"--warmup", "-1"}), "--warmup");
  refused(with({"--turns", "-1"}), "--turns");
  refused(with({"--prefix-len", "-1"}), "--prefix-len");
  refused(with({"--timeout", "-1"}), "--timeout");
  refused(with({"--timeout", "nan"}), "--timeout");
  refused(with({"--input-len", "100000", "--turns", "1000"}), "at most 10000000");
  refused({"endpoint", "sweep", "--url", Url(), "--model", "m", "--levels", "-1,2"}, "--levels");
  refused({"endpoint", "sweep", "--url", Url(), "--model", "m", "--max-concurrency", "0"},
          "--max-concurrency");
  std::ofstream(dir_.File("trace.jsonl")) << R"({"timestamp": 0, "input_length": 8, )"
                                          << R"("output_length": 2})"
                                          << "\n";
  refused({"endpoint", "replay", dir_.File("trace.jsonl"), "--url", Url(), "--model", "m",
           "--copies", "0"},
          "--copies");
  std::ofstream(dir_.File("huge-trace.jsonl"))
      << R"({"timestamp": 0, "input_length": 1000000000000, "output_length": 2})"
      << "\n";
  refused({"endpoint", "replay", dir_.File("huge-trace.jsonl"), "--url", Url(), "--model", "m"},
          "lengths above");
  // Read a line at a time: an endless line is refused at 16 MiB, not read into memory.
  refused({"endpoint", "replay", "/dev/zero", "--url", Url(), "--model", "m"}, "longer than");
  refused(with({"--prompts", dir_.Path()}), "is a directory");
  for (const std::string url : {"http://[::1", "http://127.0.0.1:99999/", "http://a b/",
                                "http://127.0.0.1:1/\r\nX: y", "http://127.0.0.1:0/"}) {
    refused({"endpoint", "run", "--url", url, "--model", "m"}, "--url");
  }
  refused(with({"--api-key-env", "CMAX_TEST_NO_SUCH_KEY"}), "not set or empty");
  refused(with({"--api-key-env", "CMAX_TEST_EMPTY_KEY"}), "not set or empty",
          {"CMAX_TEST_EMPTY_KEY="});
  std::ofstream(dir_.File("empty.key")) << "  \n";
  refused(with({"--api-key-file", dir_.File("empty.key")}), "is empty");
  std::ofstream(dir_.File("prices.json"))
      << R"({"schema": "cmax.prices/v1", "models": {"m": {"input": 1, "outptu": 2}}})";
  refused(with({"--prices", dir_.File("prices.json")}),
          "unknown key 'outptu' (did you mean 'output'?)");
  refused(with({"--output-file", dir_.Path()}), "is a directory");
  refused(with({"--output-file", dir_.File("no/such/folder/r.json")}), "folder");
  refused({"endpoint", "serve-sim", "--decode-ms", "-5"}, "--decode-ms");
  refused({"endpoint", "serve-sim", "--fault-429", "2"}, "--fault-429");
  refused({"endpoint", "serve-sim", "--fault-429", "0.6", "--fault-500", "0.6"}, "more than 1");
  // None of them began a run: no store was even made.
  struct stat st {};
  EXPECT_NE(::stat(dir_.File("cmax.db").c_str(), &st), 0);
}

// `-o /dev/stdout` with stdout appended to a file: written through the stream, so the file is
// not opened again at offset 0 and truncated.
TEST_F(EndpointCli, AnOutputThatIsOurOwnStdoutIsNotTruncated) {
  ASSERT_EQ(Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--requests", "2"}).exit_code,
            0);
  const std::string out = dir_.File("out.txt");
  std::ofstream(out) << "kept\n";
  sys::PosixProcessRunner runner;
  auto r = runner.Run({.argv = {"/bin/sh", "-c",
                                std::string(CMAX_BINARY) + " --db " + dir_.File("cmax.db") +
                                    " report --format json -o /dev/stdout >> " + out},
                       .timeout = 60s});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->exit_code, 0) << r->stderr_text;
  const std::string text = FileText(out);
  EXPECT_EQ(text.rfind("kept\n{", 0), 0U) << text.substr(0, 200);
  EXPECT_NE(text.find("\"cmax.report/v1\""), std::string::npos);
}

// Outputs named by the user: a link is written through and stays a link, a FIFO is written
// into (never replaced by a file), a directory is refused.
TEST_F(EndpointCli, OutputFilesAreWrittenThroughLinksAndFifos) {
  const std::string target = dir_.File("real.json");
  ASSERT_EQ(::symlink(target.c_str(), dir_.File("link.json").c_str()), 0);
  const std::string fifo = dir_.File("requests.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string lines;
  std::thread reader([&] { lines = FileText(fifo); });
  const auto r = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--requests", "3",
                       "--output-file", dir_.File("link.json"), "--requests-file", fifo});
  reader.join();
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  struct stat st {};
  ASSERT_EQ(::lstat(dir_.File("link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(json::parse(FileText(target))["completed"], 3);
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3);
}

// A run killed with SIGKILL (the OOM killer, a lost session) keeps the requests that had ended:
// the requests file grows as they end, in whole lines; the stored run shows as abandoned.
TEST_F(EndpointCli, AKilledRunKeepsTheRequestsThatEnded) {
  const std::string requests = dir_.File("requests.jsonl");
  const auto count_lines = [&] {
    const std::string text = FileText(requests);
    return std::count(text.begin(), text.end(), '\n');
  };
  auto pid =
      sys::SpawnDaemon({.argv = {CMAX_BINARY, "--db", dir_.File("cmax.db"), "endpoint", "run",
                                 "--url", Url(), "--model", "m", "--concurrency", "2", "--duration",
                                 "60", "--output-len", "4", "--requests-file", requests},
                        .log_path = dir_.File("run.log")});
  ASSERT_TRUE(pid);
  const bool grew = testing::WaitUntil([&] { return count_lines() >= 5; });
  ::kill(*pid, SIGKILL);
  ASSERT_TRUE(grew) << FileText(dir_.File("run.log"));
  ASSERT_TRUE(testing::WaitUntil([&] { return !sys::ProcessAlive(*pid); }));
  std::istringstream lines(FileText(requests));
  size_t whole = 0;
  for (std::string line; std::getline(lines, line); ++whole) {
    const json request = json::parse(line, nullptr, false);
    ASSERT_TRUE(request.is_object()) << line;
    EXPECT_TRUE(request["ok"].get<bool>()) << line;
  }
  EXPECT_GE(whole, 5U);
  auto store = store::Store::Open({.path = dir_.File("cmax.db"), .create = false});
  ASSERT_TRUE(store);
  const auto runs = store->ListRuns(10);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1U);
  EXPECT_EQ(store::DisplayState((*runs)[0].run), "abandoned");
}

// A requests file that takes no more (/dev/full: every write is ENOSPC) stops the run at once:
// what it measures could not be kept. The run would otherwise go on for its 60 s.
TEST_F(EndpointCli, ARequestsFileThatCannotBeWrittenStopsTheRun) {
  const auto started = std::chrono::steady_clock::now();
  const auto r = Cmax({"endpoint", "run", "--url", Url(), "--model", "m", "--duration", "60",
                       "--output-len", "4", "--requests-file", "/dev/full"});
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.exit_code, 3) << r.stdout_text << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("--requests-file /dev/full: cannot write: No space left on device"),
            std::string::npos)
      << r.stderr_text;
  EXPECT_LT(took, 30s);
}

}  // namespace
}  // namespace cmax
