// The HTML report in a real browser, Debian's headless Chromium: the page of a rated run with
// a reliability timeline and an endpoint sweep, and the page `cmax run` writes, load with no
// console message at all (the page runs no script, so any message is an error: a policy
// violation, a blocked fetch), every chart is in the DOM the browser built, and a screenshot
// and a PDF are written to the test output (build/<preset>/test-output/report/). The checks
// are shown to catch what they look for on pages broken on purpose.
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "rate/rating.hpp"
#include "report/render.hpp"
#include "support/fake_kube_api.hpp"
#include "support/golden.hpp"
#include "support/rated_run.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

const std::string kOutput = std::string(CMAX_TEST_OUTPUT) + "/report";

// A rated run with every chart the page draws, and strings that would break a careless page.
RunRecord RichRun() {
  RunRecord r;
  r.run.id = 12;
  r.run.command = "run";
  r.run.host = "gpu-01 <script>alert('host')</script>";
  r.run.target = "bare-metal/slurm-client";
  r.run.cmax_version = "0.1.0-browser";
  r.run.started_at = WallTime{std::chrono::milliseconds(1795944148911)};
  r.run.ended_at = WallTime{std::chrono::milliseconds(1795944208911)};
  r.run.state = RunState::kChecksFailed;
  Finding pass;
  pass.check_id = "versions.nvidia-driver";
  pass.status = CheckStatus::kPass;
  pass.message = "580.95.05";
  Finding fail;
  fail.check_id = "versions.cuda-toolkit";
  fail.status = CheckStatus::kFail;
  fail.severity = Severity::kHigh;
  fail.message = "12.2 <img src=x onerror=alert(1)>";
  fail.remediation = "upgrade";
  fail.links = {"https://nvidia.custhelp.com/app/answers/detail/a_id/5614", "javascript:alert(1)"};
  r.findings = {pass, fail};
  const auto step = [](const char* name, double v) {
    return Metric{name, {{"step", "xid79"}, {"node", "gpu-02"}}, v, "s"};
  };
  r.metrics = {step("reliability.detect", 4.2), step("reliability.out_of_service", 6.0),
               step("reliability.back_in_service", 48.0), step("reliability.watched", 60.0)};
  for (const auto& [c, tput, ttft, tpot] :
       {std::tuple{"1", 95.0, 21.0, 10.5}, std::tuple{"8", 690.0, 35.0, 11.6},
        std::tuple{"32", 2100.0, 180.0, 15.2}}) {
    const std::map<std::string, std::string> labels = {{"concurrency", c}};
    r.metrics.push_back({"endpoint.output_throughput", labels, tput, "tok/s"});
    r.metrics.push_back({"endpoint.ttft_p50", labels, ttft, "ms"});
    r.metrics.push_back({"endpoint.tpot_p50", labels, tpot, "ms"});
  }
  testing::AddRating(r);
  return r;
}

struct Loaded {
  std::string dom;                   // the DOM Chromium built, serialised
  std::vector<std::string> console;  // every console message
  std::string failure;               // why the browser could not be run
};

class ReportBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = sys::FindProgram("chromium");
    if (chromium_.empty())
      GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
    std::filesystem::create_directories(kOutput);
  }

  std::vector<std::string> Browser(std::vector<std::string> args) {
    // Root has no sandbox; a profile of its own so nothing is read from or left in $HOME.
    std::vector<std::string> argv = {chromium_,
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--no-first-run",
                                     "--user-data-dir=" + dir_.File("profile"),
                                     "--enable-logging=stderr",
                                     "--v=0"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  Loaded Load(const std::string& page) {
    Loaded out;
    auto r = runner_.Run({.argv = Browser({"--dump-dom", "file://" + page}), .timeout = 120s});
    if (!r || r->exit_code != 0) {
      out.failure = r ? r->Describe() + "\n" + r->stderr_text : r.error().message;
      return out;
    }
    out.dom = r->stdout_text;
    std::istringstream lines(r->stderr_text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(":CONSOLE") != std::string::npos) out.console.push_back(line);
    }
    return out;
  }

  // The charts the page should have and the browser did not build.
  static std::vector<std::string> MissingCharts(const std::string& dom,
                                                const std::vector<std::string>& ids) {
    std::vector<std::string> missing;
    for (const std::string& id : ids) {
      if (dom.find("<svg id=\"" + id + "\"") == std::string::npos) missing.push_back(id);
    }
    return missing;
  }

  std::string Write(const std::string& name, const std::string& html) {
    const std::string path = kOutput + "/" + name;
    EXPECT_TRUE(fs_.WriteFileAtomic(path, html, 0644));
    return path;
  }

  // A screenshot and a PDF of the page beside it, for a person to look at.
  void Capture(const std::string& page) {
    const std::string stem = page.substr(0, page.rfind('.'));
    auto shot = runner_.Run({.argv = Browser({"--screenshot=" + stem + ".png",
                                              "--window-size=1280,2400", "file://" + page}),
                             .timeout = 120s});
    ASSERT_TRUE(shot && shot->exit_code == 0) << (shot ? shot->stderr_text : shot.error().message);
    auto pdf = runner_.Run({.argv = Browser({"--no-pdf-header-footer",
                                             "--print-to-pdf=" + stem + ".pdf", "file://" + page}),
                            .timeout = 120s});
    ASSERT_TRUE(pdf && pdf->exit_code == 0) << (pdf ? pdf->stderr_text : pdf.error().message);
    const auto head = [](const std::string& path, size_t n) {
      std::ifstream in(path, std::ios::binary);
      std::string bytes(n, '\0');
      in.read(bytes.data(), static_cast<std::streamsize>(n));
      return bytes.substr(0, static_cast<size_t>(in.gcount()));
    };
    EXPECT_EQ(head(stem + ".png", 8), "\x89PNG\r\n\x1a\n");
    EXPECT_EQ(head(stem + ".pdf", 5), "%PDF-");
    EXPECT_GT(std::filesystem::file_size(stem + ".png"), 20000U) << "a blank screenshot";
    std::cout << "report: " << page << "\n        " << stem << ".png\n        " << stem << ".pdf\n";
  }

  std::string chromium_;
  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::PosixProcessRunner runner_;
};

const std::vector<std::string> kRichCharts = {"chart-categories", "chart-timeline",
                                              "chart-sweep-ttft_p50", "chart-sweep-tpot_p50"};

TEST_F(ReportBrowserTest, RatedRunLoadsCleanlyWithEveryChartAndPrints) {
  const std::string page = Write("rated-run.html", report::RenderHtml(RichRun()));
  const Loaded loaded = Load(page);
  ASSERT_TRUE(loaded.failure.empty()) << loaded.failure;
  EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();
  EXPECT_EQ(MissingCharts(loaded.dom, kRichCharts), std::vector<std::string>{});
  // The outside's markup stayed text in the browser's DOM too.
  EXPECT_EQ(loaded.dom.find("<img"), std::string::npos);
  EXPECT_EQ(loaded.dom.find("<script"), std::string::npos);
  EXPECT_NE(loaded.dom.find("<a href=\"#f-versions.cuda-toolkit\">"), std::string::npos);
  Capture(page);
}

// The checks above catch what they look for: a page without its category chart, and one with
// a script that the page's own policy blocks (the console says so).
TEST_F(ReportBrowserTest, ChecksCatchAMissingChartAndAConsoleError) {
  std::string html = report::RenderHtml(RichRun());
  const size_t chart = html.find("<svg id=\"chart-categories\"");
  ASSERT_NE(chart, std::string::npos);
  const size_t end = html.find("</svg>", chart) + 6;
  std::string no_chart = html;
  no_chart.erase(chart, end - chart);
  const Loaded without = Load(Write("broken-no-chart.html", no_chart));
  ASSERT_TRUE(without.failure.empty()) << without.failure;
  EXPECT_EQ(MissingCharts(without.dom, kRichCharts), std::vector<std::string>{"chart-categories"});

  html.insert(html.find("</body>"), "<script>document.title='x'</script>");
  const Loaded scripted = Load(Write("broken-script.html", html));
  ASSERT_TRUE(scripted.failure.empty()) << scripted.failure;
  ASSERT_FALSE(scripted.console.empty()) << "the blocked script left no console message";
  EXPECT_NE(scripted.console.front().find("Content Security Policy"), std::string::npos);
}

// The page the product writes: `cmax run` on this host, rated, its card and chart drawn.
TEST_F(ReportBrowserTest, CmaxRunReportLoadsCleanly) {
  const std::string page = kOutput + "/cmax-run.html";
  const sys::ProcessResult run = testing::RunCmaxWithoutMachineKubeconfig(
      runner_, dir_.Path(), {"run", "--html", page, "--probe-timeout", "5"});
  ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1 || run.exit_code == 3)
      << run.Describe() << run.stderr_text;
  const Loaded loaded = Load(page);
  ASSERT_TRUE(loaded.failure.empty()) << loaded.failure;
  EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();
  EXPECT_EQ(MissingCharts(loaded.dom, {"chart-categories"}), std::vector<std::string>{});
  EXPECT_NE(loaded.dom.find("<section id=\"rating\" class=\"card\">"), std::string::npos);
  Capture(page);
}

// `cmax nccl analyze`'s page: every nccl-tests variant of the golden folder, a chart per
// collective drawn, the kink's circle on it.
TEST_F(ReportBrowserTest, NcclAnalysisPageDrawsItsCurves) {
  std::vector<std::string> args = {"nccl", "analyze", "--exit-zero"};
  for (const std::string& stem : testing::GoldenStems("nccl", ".txt")) {
    args.push_back(std::string(CMAX_TEST_DATA) + "/nccl/" + stem + ".txt");
  }
  const sys::ProcessResult analysed =
      testing::RunCmaxWithoutMachineKubeconfig(runner_, dir_.Path(), args);
  ASSERT_EQ(analysed.exit_code, 0) << analysed.stderr_text;
  const std::string page = kOutput + "/nccl-analysis.html";
  const sys::ProcessResult rendered = testing::RunCmaxWithoutMachineKubeconfig(
      runner_, dir_.Path(), {"report", "latest", "--format", "html", "-o", page});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.stderr_text;
  const Loaded loaded = Load(page);
  ASSERT_TRUE(loaded.failure.empty()) << loaded.failure;
  EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();
  EXPECT_EQ(MissingCharts(loaded.dom, {"chart-nccl-all_reduce", "chart-nccl-all_gather",
                                       "chart-nccl-alltoall"}),
            std::vector<std::string>{});
  EXPECT_NE(loaded.dom.find("<circle class=\"kink\""), std::string::npos);
  Capture(page);
}

// A training run's page: the throughput of a TorchTitan log and the breakdown of every golden
// profiler trace, drawn.
TEST_F(ReportBrowserTest, TrainingPagesDrawThroughputAndBreakdown) {
  const std::string data = std::string(CMAX_TEST_DATA) + "/train/";
  const sys::ProcessResult logged = testing::RunCmaxWithoutMachineKubeconfig(
      runner_, dir_.Path(), {"train", "log", data + "run_train_rank0_coloured.log"});
  ASSERT_EQ(logged.exit_code, 0) << logged.stderr_text;
  std::vector<std::string> args = {"train", "trace", "--exit-zero"};
  for (const std::string& stem : testing::GoldenStems("train/trace", ".trace.json")) {
    args.push_back(data + "trace/" + stem + ".trace.json");
  }
  const sys::ProcessResult traced =
      testing::RunCmaxWithoutMachineKubeconfig(runner_, dir_.Path(), args);
  ASSERT_EQ(traced.exit_code, 0) << traced.stderr_text;
  for (const auto& [run, chart] :
       {std::pair{"1", "chart-train-throughput-1"}, {"2", "chart-train-breakdown-1"}}) {
    const std::string page = kOutput + "/train-" + run + ".html";
    const sys::ProcessResult rendered = testing::RunCmaxWithoutMachineKubeconfig(
        runner_, dir_.Path(), {"report", run, "--format", "html", "-o", page});
    ASSERT_EQ(rendered.exit_code, 0) << rendered.stderr_text;
    const Loaded loaded = Load(page);
    ASSERT_TRUE(loaded.failure.empty()) << loaded.failure;
    EXPECT_TRUE(loaded.console.empty()) << loaded.console.front();
    EXPECT_EQ(MissingCharts(loaded.dom, {chart}), std::vector<std::string>{});
    Capture(page);
  }
}

}  // namespace
}  // namespace cmax
