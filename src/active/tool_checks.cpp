#include "active/tool_checks.hpp"

#include <fmt/format.h>

#include "active/dcgm_diag.hpp"
#include "active/nvbandwidth.hpp"
#include "core/strings.hpp"
#include "net/nccl_tests_output.hpp"

namespace cmax::active {
namespace {

constexpr int kDcgmIsolateExit = 205;

double Seconds(Duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

std::string FirstWords(const sys::ProcessResult& r) {
  const std::string& said = Trim(r.stderr_text).empty() ? r.stdout_text : r.stderr_text;
  std::string_view first = Trim(std::string_view(said).substr(0, said.find('\n')));
  constexpr size_t kMost = 200;
  if (first.size() > kMost) first = first.substr(0, kMost);
  return SanitizeUtf8(first);
}

Finding Unknown(const std::string& check_id, std::string message) {
  return {.check_id = check_id,
          .status = CheckStatus::kUnknown,
          .severity = Severity::kMedium,
          .observed = "no result",
          .message = std::move(message)};
}

ToolOutcome RunTool(const ToolRun& run, const ToolIo& io) {
  ToolOutcome out;
  const std::string path = io.find_program ? io.find_program(run.tool) : sys::FindProgram(run.tool);
  if (path.empty()) {
    out.instead = Finding{.check_id = run.check_id,
                          .status = CheckStatus::kSkip,
                          .observed = "not installed",
                          .expected = run.tool + " " + run.where,
                          .message = fmt::format("{} is not {}: not run", run.tool, run.where)};
    return out;
  }
  sys::ProcessSpec spec{.argv = {path}};
  spec.argv.insert(spec.argv.end(), run.args.begin(), run.args.end());
  spec.timeout = run.deadline;
  spec.kill_grace = std::chrono::seconds(2);
  spec.output_cap = size_t{8} << 20;
  spec.env_add = {"LC_ALL=C"};
  spec.env_add.insert(spec.env_add.end(), run.env.begin(), run.env.end());
  spec.on_output = run.on_output;
  spec.keep_running = run.keep_running;
  const std::string command = Join(spec.argv, " ");
  auto ran = io.runner->Run(spec);
  if (!ran) {
    out.instead = Unknown(run.check_id,
                          fmt::format("{} could not be started: {}", command, ran.error().message));
    return out;
  }
  if (ran->timed_out) {
    out.second_look = true;
    if (io.hung) io.hung(run.tool);
    out.instead = Unknown(
        run.check_id,
        fmt::format("{} gave no result within {:g} s and was killed{}; not a failure on its "
                    "own: look at this node again before acting on it",
                    command, Seconds(run.deadline),
                    ran->abandoned ? " (it would not die: stuck in the kernel)" : ""));
    return out;
  }
  if (ran->interrupted) {
    out.instead =
        Unknown(run.check_id, fmt::format("{} was stopped (cmax was interrupted)", command));
    return out;
  }
  if (ran->signal != 0) {
    out.instead = Unknown(run.check_id, fmt::format("{} died of signal {}: {}", command,
                                                    ran->signal, FirstWords(*ran)));
    return out;
  }
  out.result = std::move(*ran);
  return out;
}

Duration DefaultDiagDeadline(int level) {
  switch (level) {
    case 1: return std::chrono::minutes(2);
    case 2: return std::chrono::minutes(10);
    case 3: return std::chrono::minutes(30);
    default: return std::chrono::minutes(60);
  }
}

std::vector<Finding> RunDcgmDiag(int level, Duration deadline, const ToolIo& io) {
  const std::string check_id = "active.dcgm-diag";
  const ToolOutcome ran = RunTool({.check_id = check_id,
                                   .tool = "dcgmi",
                                   .args = {"diag", "-r", std::to_string(level), "-j"},
                                   .deadline = deadline},
                                  io);
  if (ran.instead) return {*ran.instead};
  // dcgmi exits non-zero when a test fails: the document says which. Its table is read too,
  // for a dcgmi whose -j prints one.
  const auto report = ParseDcgmDiag(ran.result->stdout_text);
  if (!report) {
    return {Unknown(check_id, fmt::format("dcgmi diag -r {} (exit {}): {}; it said: {}", level,
                                          ran.result->exit_code, report.error().message,
                                          FirstWords(*ran.result)))};
  }
  std::vector<Finding> out;
  size_t passed = 0;
  size_t skipped = 0;
  for (const DiagTest& t : report->tests) {
    if (t.status == DiagStatus::kPass) ++passed;
    if (t.status == DiagStatus::kSkip || t.status == DiagStatus::kNotRun) ++skipped;
  }
  for (const DiagTest& t : report->tests) {
    if (t.status != DiagStatus::kFail && t.status != DiagStatus::kWarn) continue;
    const bool failed = t.status == DiagStatus::kFail;
    const std::string said = DiagProblem(t);
    // dcgmi's exit 205 (DCGM_ST_NVVS_ISOLATE_ERROR, -51): a failure DCGM ranks as needing the
    // GPU taken out of service, where 226 (-30) is any failed test.
    const bool isolate = failed && ran.result->exit_code == kDcgmIsolateExit;
    out.push_back(
        {.check_id = check_id,
         .status = failed ? CheckStatus::kFail : CheckStatus::kWarn,
         .severity = isolate ? Severity::kCritical : (failed ? Severity::kHigh : Severity::kMedium),
         .observed = said,
         .expected = fmt::format("every test of dcgmi diag -r {} passes", level),
         .message = fmt::format("DCGM {} diagnostic level {}: {}{}", report->version, level, said,
                                isolate ? " (DCGM asks for the GPU to be isolated: exit 205)" : ""),
         .remediation = "Read the test's message in DCGM's diagnostic guide; a failed "
                        "memory, PCIe or NVLink test is the GPU's or its board's: "
                        "drain the node and open a hardware case",
         .links = {"https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/"
                   "dcgm-diagnostics.html"}});
  }
  if (out.empty()) {
    for (const DiagTest& t : report->tests) {
      if (t.status == DiagStatus::kOther) {
        return {Unknown(check_id, fmt::format("dcgmi diag -r {}: test {} ended in a word this "
                                              "reader does not know",
                                              level, t.name))};
      }
    }
    if (passed == 0) {
      return {Unknown(check_id, fmt::format("dcgmi diag -r {}: no test passed ({} skipped or "
                                            "not run)",
                                            level, skipped))};
    }
    out.push_back({.check_id = check_id,
                   .status = CheckStatus::kPass,
                   .observed = fmt::format("{} of {} tests passed, {} skipped", passed,
                                           report->tests.size(), skipped),
                   .expected = fmt::format("every test of dcgmi diag -r {} passes", level),
                   .message = fmt::format("DCGM {} diagnostic level {}: {} passed, {} skipped",
                                          report->version, level, passed, skipped)});
  }
  return out;
}

std::vector<Finding> RunNvbandwidth(const GpuClass* gpu_class, const ActiveThresholds& thresholds,
                                    Duration deadline, const ToolIo& io) {
  const std::string check_id = "active.nvbandwidth";
  // Its JSON (v0.5 on) states each test's status; the text reader takes v0.4's output too.
  ToolRun run{
      .check_id = check_id, .tool = "nvbandwidth", .args = {"-j", "-t"}, .deadline = deadline};
  for (const BandwidthTestUse& use : HealthBandwidthTests()) run.args.emplace_back(use.test);
  const ToolOutcome ran = RunTool(run, io);
  if (ran.instead) return {*ran.instead};
  const auto report = ParseNvbandwidth(ran.result->stdout_text);
  if (!report) {
    return {Unknown(check_id,
                    fmt::format("nvbandwidth (exit {}): {}; it said: {}", ran.result->exit_code,
                                report.error().message, FirstWords(*ran.result)))};
  }
  return JudgeBandwidth(*report, gpu_class, thresholds);
}

std::vector<Finding> RunLocalAllReduce(unsigned gpus, bool ib_only, const GpuClass* gpu_class,
                                       const ActiveThresholds& thresholds, Duration deadline,
                                       const ToolIo& io) {
  const std::string check_id =
      ib_only ? "active.nccl.ib-loopback-all-reduce" : "active.nccl.local-all-reduce";
  const std::string metric =
      ib_only ? "nccl.ib_loopback_all_reduce_busbw_gbs" : "nccl.local_all_reduce_busbw_gbs";
  ToolRun run{.check_id = check_id,
              .tool = "all_reduce_perf",
              .args = {"-b", "16G", "-e", "16G", "-f", "2", "-g", std::to_string(gpus), "-c", "1"},
              .deadline = deadline};
  // Without shared memory too: with P2P alone disabled, NCCL would carry the data through host
  // memory instead of the network adapters.
  if (ib_only) run.env = {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"};
  const ToolOutcome ran = RunTool(run, io);
  if (ran.instead) return {*ran.instead};
  const net::NcclTestsOutput output = net::ParseNcclTestsOutput(ran.result->stdout_text);
  const net::NcclTable* table = output.tables.empty() ? nullptr : &output.tables.front();
  if (table == nullptr || table->rows.empty() || !table->largest_size_busbw_gbs) {
    return {Unknown(check_id, fmt::format("all_reduce_perf (exit {}): no result table; it "
                                          "said: {}",
                                          ran.result->exit_code, FirstWords(*ran.result)))};
  }
  bool wrong = table->out_of_bounds_ok == false;
  for (const net::NcclRow& r : table->rows) {
    for (const auto& placement : {std::optional(r.out_of_place), r.in_place}) {
      if (placement && placement->wrong && *placement->wrong > 0 && table->wrong_is_count) {
        wrong = true;
      }
    }
  }
  const std::string words =
      ib_only ? "all-reduce through the network adapters (NCCL_P2P_DISABLE)" : "local all-reduce";
  if (wrong) {
    return {{.check_id = check_id,
             .status = CheckStatus::kFail,
             .severity = Severity::kCritical,
             .observed = "wrong values",
             .expected = "every value right",
             .message = fmt::format("{} of {} GPUs: NCCL's results were wrong (nccl-tests' "
                                    "out-of-bounds check): a GPU, NVLink or memory corrupts data",
                                    words, gpus),
             .remediation = "Drain the node; run dcgmi diag -r 3 and nvbandwidth to find the GPU "
                            "or link"}};
  }
  Finding f = JudgeFigure({.check_id = check_id,
                           .label = fmt::format("{} of {} GPUs at 16 GiB", words, gpus),
                           .observed = *table->largest_size_busbw_gbs,
                           .unit = "GB/s"},
                          gpu_class,
                          gpu_class != nullptr ? thresholds.For(*gpu_class, metric) : std::nullopt);
  if (!table->concluded && f.status != CheckStatus::kFail) {
    f.status = CheckStatus::kUnknown;
    f.message += "; the output stops before nccl-tests concluded";
  }
  return {std::move(f)};
}

}  // namespace cmax::active
