#include <cmath>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <tuple>

#include "report/render.hpp"
#include "support/golden.hpp"

namespace cmax::report {
namespace {

// A run whose strings come from a hostile outside: markup, script, quotes, terminal escapes,
// control characters and invalid UTF-8 in every field a renderer prints.
RunRecord HostileRun() {
  RunRecord r;
  r.run.id = 42;
  r.run.command = "run";
  r.run.target = "vm/slurm-client";
  r.run.host = "node<script>alert('host')</script>";
  r.run.started_at = WallTime{std::chrono::milliseconds(1795944148911)};
  r.run.ended_at = WallTime{std::chrono::milliseconds(1795944150161)};
  r.run.state = RunState::kChecksFailed;
  r.run.exit_code = 1;
  r.run.cmax_version = "0.1.0-golden";

  Finding pass;
  pass.check_id = "host.os";
  pass.status = CheckStatus::kPass;
  pass.observed = "Debian GNU/Linux 12 (bookworm)";
  pass.message = "Debian GNU/Linux 12 (bookworm)";
  Finding fail;
  fail.check_id = "gpu.visible";
  fail.status = CheckStatus::kFail;
  fail.severity = Severity::kCritical;
  fail.observed = "7 of 8 \"quoted\" & <b>bold</b>";
  fail.expected = "8 of 8";
  fail.message = "GPU 0000:17:00.0 lost \x1b[31mred\x1b[0m \xff\xfe bytes";
  fail.remediation = "drain & reset; see <a href=\"javascript:alert(1)\">here</a>";
  fail.links = {"https://docs.nvidia.com/deploy/xid-errors/", "javascript:alert('x')"};
  Finding warn;
  warn.check_id = "scheduler.slurm";
  warn.status = CheckStatus::kWarn;
  warn.severity = Severity::kMedium;
  warn.observed = "controller not answering";
  warn.expected = "scontrol ping: UP";
  warn.message = "line one\nline two\ttabbed";
  Finding skip;
  skip.check_id = "gpu.driver";
  skip.status = CheckStatus::kSkip;
  skip.message = "no NVIDIA driver is loaded";
  Finding attest;
  attest.check_id = "ops.sla";
  attest.status = CheckStatus::kAttest;
  attest.message = "provider attests 99.9% uptime";
  Finding unknown;
  unknown.check_id = "health.kernel_log";
  unknown.status = CheckStatus::kUnknown;
  unknown.severity = Severity::kHigh;
  unknown.message = "the kernel log could not be read: <Input/output error>";
  r.findings = {pass, fail, warn, skip, attest, unknown};
  r.evidence = {{"host.hostname", R"("node<script>")"},
                {"host.os", R"({"id":"debian","pretty_name":"Debian </pre><script>x</script>"})"},
                {"broken", "{not json"}};
  r.metrics = {{"busbw", {{"op", "all_reduce"}, {"size", "<1G>"}}, 391.5, "GB/s"}};
  return r;
}

TEST(Report, TextMatchesGolden) {
  testing::ExpectGolden("report/hostile.txt", RenderText(HostileRun(), {}));
  testing::ExpectGolden("report/hostile.color.txt", RenderText(HostileRun(), {.color = true}));
  testing::ExpectGolden("report/hostile.evidence.txt",
                        RenderText(HostileRun(), {.show_evidence = true}));
}

TEST(Report, TextDetailGrowsWithVerbosity) {
  RunRecord record = HostileRun();
  record.findings.clear();
  Finding pass;
  pass.check_id = "versions.runc";
  pass.status = CheckStatus::kPass;
  pass.message = "1.3.6";
  pass.observed = "1.3.6";
  pass.expected = ">= 1.3.6";
  pass.links = {"https://example.com/advisory"};
  record.findings = {pass};
  const auto explain = [](std::string_view id) {
    return std::vector<std::pair<std::string, std::string>>{{"why", std::string(id) + " rule"},
                                                            {"reproduce", "runc --version"}};
  };
  const std::string quiet = RenderText(record, {.explain = explain});
  EXPECT_EQ(quiet.find("observed:"), std::string::npos);  // a PASS says only its headline
  EXPECT_EQ(quiet.find("see:"), std::string::npos);
  const std::string one = RenderText(record, {.detail = 1, .explain = explain});
  EXPECT_NE(one.find("observed: 1.3.6 · expected: >= 1.3.6"), std::string::npos) << one;
  EXPECT_NE(one.find("see: https://example.com/advisory"), std::string::npos) << one;
  EXPECT_EQ(one.find("why:"), std::string::npos);
  const std::string two = RenderText(record, {.detail = 2, .explain = explain});
  EXPECT_NE(two.find("why: versions.runc rule"), std::string::npos) << two;
  EXPECT_NE(two.find("reproduce: runc --version"), std::string::npos) << two;
}

TEST(Report, TextHasNoEscapesOfItsOwnWithoutColorAndNoneFromOutsideWithIt) {
  const std::string plain = RenderText(HostileRun(), {});
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  const std::string color = RenderText(HostileRun(), {.color = true});
  EXPECT_EQ(color.find("\x1b[31mred"), std::string::npos) << "an outside escape got through";
  EXPECT_NE(color.find("\x1b[1;31mFAIL"), std::string::npos);
  EXPECT_NE(color.find("\x1b[32mPASS"), std::string::npos);
  EXPECT_NE(color.find("\x1b[33mWARN"), std::string::npos);
  EXPECT_NE(color.find("\x1b[2mSKIP"), std::string::npos);
}

// A store someone handed over may hold line breaks in what cmax keeps as one line (the host, the
// target, a check id, a metric): each stays on its line, so no line of the report is forged.
TEST(Report, OneLineFieldsStayOnTheirLineInText) {
  RunRecord r = HostileRun();
  r.run.host = "node\nFAIL  gpu.forged  from the host";
  r.run.target = "t\nFAIL  gpu.forged  from the target";
  r.findings[0].check_id = "host.os\nFAIL  gpu.forged  from a check id";
  r.metrics[0].unit = "GB/s\nFAIL  gpu.forged  from a unit";
  r.evidence[0].key = "k\nFAIL  gpu.forged  from evidence";
  const std::string text = RenderText(r, {.show_evidence = true});
  EXPECT_EQ(text.find("\nFAIL  gpu.forged"), std::string::npos) << text;
  EXPECT_NE(text.find("node?FAIL  gpu.forged  from the host"), std::string::npos) << text;
  const std::string runs = RenderRunList({{r.run, {}, "failed"}}, "s.db", false);
  EXPECT_EQ(runs.find("\nFAIL"), std::string::npos) << runs;
}

TEST(Report, JsonMatchesGoldenAndSchema) {
  const std::string json = RenderJson(HostileRun());
  testing::ExpectGolden("report/hostile.json", json);
  auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["schema"], "cmax.report/v1");
  EXPECT_EQ(doc["run"]["id"], 42);
  EXPECT_EQ(doc["run"]["state"], "checks-failed");
  EXPECT_DOUBLE_EQ(doc["run"]["duration_s"].get<double>(), 1.25);
  EXPECT_EQ(doc["summary"]["FAIL"], 1);
  EXPECT_EQ(doc["summary"]["total"], 6);
  EXPECT_EQ(doc["summary"]["UNKNOWN"], 1);
  EXPECT_EQ(doc["findings"][1]["category"], "gpu");
  EXPECT_EQ(doc["evidence"]["host.os"]["id"], "debian") << "evidence is nested JSON";
  EXPECT_EQ(doc["evidence"]["broken"], "{not json") << "bad evidence is kept as a string";
  EXPECT_EQ(doc["metrics"][0]["labels"]["size"], "<1G>");
}

TEST(Report, JunitMatchesGoldenAndCountsFailuresAndSkips) {
  const std::string xml = RenderJunit(HostileRun());
  testing::ExpectGolden("report/hostile.xml", xml);
  EXPECT_NE(xml.find("<testsuites name=\"cmax run #42\" tests=\"6\" failures=\"1\" errors=\"1\" "
                     "skipped=\"1\""),
            std::string::npos);
  // UNKNOWN (a check that could not read what it judges) is a JUnit error, never a pass.
  EXPECT_NE(xml.find("<error type=\"unknown\" message=\"the kernel log could not be read: "
                     "&lt;Input/output error&gt;\""),
            std::string::npos);
  EXPECT_EQ(xml.find("<script"), std::string::npos);
  EXPECT_EQ(xml.find('\x1b'), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"critical\""), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"no NVIDIA driver is loaded\"/>"), std::string::npos);
}

TEST(Report, HtmlIsSelfContainedAndEscapesEverythingFromOutside) {
  const std::string html = RenderHtml(HostileRun());
  testing::ExpectGolden("report/hostile.html", html);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("href=\"javascript"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;host&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("href=\"https://docs.nvidia.com/deploy/xid-errors/\""), std::string::npos);
  // Nothing is fetched: no external scripts, styles, images or fonts; a policy forbids them.
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_EQ(html.find('\x1b'), std::string::npos);
}

// A reliability run: its timeline metrics become an inline SVG chart, a row per step.
TEST(Report, ReliabilityRunsGetATimelineChart) {
  RunRecord r;
  r.run.id = 7;
  r.run.command = "reliability";
  const auto m = [](const char* name, const char* step, double v) {
    return Metric{name, {{"step", step}, {"node", "gpu<1>"}}, v, "s"};
  };
  r.metrics = {m("reliability.detect", "xid79<script>", 0.2),
               m("reliability.out_of_service", "xid79<script>", 0.2),
               m("reliability.replaced", "xid79<script>", 0.4),
               m("reliability.watched", "xid79<script>", 1.0),
               m("reliability.watched", "no-drain", 30.0)};
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<h2>Timeline</h2>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("xid79&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("gpu&lt;1&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  const auto count = [&html](std::string_view what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"out\""), 1U);  // only the step that was taken out
  EXPECT_EQ(count("class=\"detect\""), 1U);
  EXPECT_EQ(count("class=\"spare\""), 1U);
  EXPECT_NE(html.find(">30.00s</text>"), std::string::npos);  // the axis ends at the longest watch
  // Other runs have no timeline.
  EXPECT_EQ(RenderHtml(HostileRun()).find("<h2>Timeline</h2>"), std::string::npos);
  // A store edited by hand: times no watch could take are left out, never drawn as NaN or
  // turned into a duration beyond range (which crashed the report).
  r.metrics.push_back(m("reliability.watched", "edited", HUGE_VAL));
  r.metrics.push_back(m("reliability.detect", "edited", -1e12));
  r.metrics.push_back(m("reliability.out_of_service", "edited", std::nan("")));
  const std::string edited = RenderHtml(r);
  const size_t chart = edited.find("<h2>Timeline</h2>");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = edited.substr(chart, edited.find("</svg>", chart) - chart);
  EXPECT_NE(svg.find(">30.00s</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
}

// An endpoint sweep: one point per concurrency level in each latency-against-throughput chart.
TEST(Report, EndpointSweepsGetThroughputAgainstLatency) {
  RunRecord r;
  r.run.command = "endpoint";
  for (const auto& [c, tput, ttft, tpot] :
       {std::tuple{"1", 90.0, 2.0, 10.0}, std::tuple{"4", 340.0, 3.0, 11.0},
        std::tuple{"16", 900.0, 40.0, 17.0}}) {
    const std::map<std::string, std::string> labels = {{"concurrency", c}, {"model", "m<x>"}};
    r.metrics.push_back({"endpoint.output_throughput", labels, tput, "tok/s"});
    r.metrics.push_back({"endpoint.ttft_p50", labels, ttft, "ms"});
    r.metrics.push_back({"endpoint.tpot_p50", labels, tpot, "ms"});
  }
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<h2>Concurrency sweep</h2>"), std::string::npos);
  size_t points = 0;
  for (size_t at = html.find("class=\"level\""); at != std::string::npos;
       at = html.find("class=\"level\"", at + 1)) {
    ++points;
  }
  EXPECT_EQ(points, 6U);  // three levels in each of the two charts
  EXPECT_NE(html.find("concurrency 16: 900.0 tok/s, 40.00 ms"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // A single run is no sweep.
  r.metrics.resize(3);
  EXPECT_EQ(RenderHtml(r).find("Concurrency sweep"), std::string::npos);
}

// An NCCL analysis: a chart per collective, a line per node count, the dip marked red and the
// kink grey; what came from the logs (file names, collectives) escaped; a bad shape skipped.
TEST(Report, NcclCurvesGetAChartPerCollectiveWithTheDipsMarked) {
  const nlohmann::json curve = {{"origin", "<b>run</b>.log table 1"},
                                {"collective", "all_reduce"},
                                {"nodes", 2},
                                {"ranks", 16},
                                {"points",
                                 {{{"size_bytes", 33554432}, {"busbw_gbs", 32.57}},
                                  {{"size_bytes", 67108864}, {"busbw_gbs", 19.1}},
                                  {{"size_bytes", 134217728}, {"busbw_gbs", 33.0}}}}};
  nlohmann::json other = curve;
  other["collective"] = "all<gather>";
  other["nodes"] = nullptr;
  const nlohmann::json analysis = {
      {"schema", "cmax.nccl-analysis/v1"},
      {"curves", {curve, other, {{"collective", 7}}, "not a curve"}},
      {"dips",
       {{{"curve", 0},
         {"kind", "dip"},
         {"at_size_bytes", 67108864},
         {"at_busbw_gbs", 19.1},
         {"depth_pct", 41.4}},
        {{"curve", 1},
         {"kind", "kink"},
         {"at_size_bytes", 67108864},
         {"at_busbw_gbs", 19.1},
         {"depth_pct", 41.4}},
        {{"curve", 99}, {"kind", "dip"}, {"at_size_bytes", 1}, {"at_busbw_gbs", 1}}}}};
  RunRecord r;
  r.run.command = "nccl";
  r.evidence.push_back({"nccl.analysis", analysis.dump()});
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<h2>NCCL bus bandwidth</h2>"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"chart-nccl-all_reduce\""), std::string::npos) << html;
  EXPECT_NE(html.find("<svg id=\"chart-nccl-all-gather-\""), std::string::npos) << html;
  EXPECT_NE(html.find("<circle class=\"dip\""), std::string::npos);
  EXPECT_NE(html.find("<circle class=\"kink\""), std::string::npos);
  EXPECT_NE(html.find("2 nodes, 16 ranks (&lt;b&gt;run&lt;/b&gt;.log table 1): dip: 19.10 GB/s at "
                      "64M, 41% below the best smaller size"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<b>run</b>"), std::string::npos);
  EXPECT_EQ(html.find("all<gather>"), std::string::npos);
  // Two collectives whose names make the same id get one each; a figure past what nccl-tests'
  // parser takes (1e6 GB/s) is not drawn, so it cannot flatten the rest of the chart.
  nlohmann::json spaced = curve;
  spaced["collective"] = "all reduce";
  nlohmann::json dashed = curve;
  dashed["collective"] = "all-reduce";
  dashed["points"].push_back({{"size_bytes", 268435456}, {"busbw_gbs", 1e300}});
  r.evidence = {{"nccl.analysis", nlohmann::json{{"curves", {spaced, dashed}}}.dump()}};
  const std::string twins = RenderHtml(r);
  EXPECT_NE(twins.find("<svg id=\"chart-nccl-all-reduce\""), std::string::npos) << twins;
  EXPECT_NE(twins.find("<svg id=\"chart-nccl-all-reduce-2\""), std::string::npos) << twins;
  EXPECT_EQ(twins.find("256M"), std::string::npos) << "the 1e300 GB/s point was drawn";
  // No analysis, or one of another shape: no section.
  r.evidence = {{"nccl.analysis", "[1, 2]"}};
  EXPECT_EQ(RenderHtml(r).find("NCCL bus bandwidth"), std::string::npos);
}

// A training run's charts from its evidence, a phase's copy too; a file's name is escaped;
// evidence of the wrong shape draws nothing.
TEST(Report, TrainingChartsFromTheirEvidence) {
  const nlohmann::json logs = {{"schema", "cmax.train-logs/v1"},
                               {"files",
                                {{{"file", "<b>run</b>.log"},
                                  {"tokens_per_s_per_gpu", 5846},
                                  {"warmup_steps", {1}},
                                  {"steps",
                                   {{{"step", 1}, {"tps", 1210}},
                                    {{"step", 10}, {"tps", 5800}},
                                    {{"step", 20}, {"tps", 5846}},
                                    {{"step", "x"}, {"tps", 1}}}}}}}};
  const nlohmann::json trace = {
      {"schema", "cmax.train-trace/v1"},
      {"verdict", "33% of step time is exposed all_to_all on ranks 8-15"},
      {"ranks",
       {{{"rank", 0}, {"compute_pct", 60}, {"exposed_communication_pct", 30}, {"idle_pct", 5}},
        {{"rank", 1}, {"compute_pct", "bad"}}}}};
  RunRecord r;
  r.run.command = "run";
  r.evidence.push_back({"phase.titan.train.analysis", logs.dump()});
  r.evidence.push_back({"train.trace", trace.dump()});
  r.evidence.push_back({"train.trace", "not json"});
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<h2>Training</h2>"), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"chart-train-throughput-1\""), std::string::npos) << html;
  EXPECT_NE(html.find("<svg id=\"chart-train-breakdown-1\""), std::string::npos) << html;
  EXPECT_EQ(html.find("chart-train-breakdown-2"), std::string::npos);
  EXPECT_NE(html.find("<circle class=\"warmup\""), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;run&lt;/b&gt;.log: 5846 tokens/s/GPU in steady state"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<b>run</b>"), std::string::npos);
  EXPECT_NE(html.find("rank 0: 30.0% exposed communication"), std::string::npos) << html;
  EXPECT_EQ(html.find("rank 1:"), std::string::npos);  // its figures were not numbers
  RunRecord none;
  none.evidence.push_back({"train.analysis", R"({"files": 3})"});
  EXPECT_EQ(RenderHtml(none).find("<h2>Training</h2>"), std::string::npos);

  // A store edited by hand: figures no log could hold are left out, never drawn as NaN or
  // infinity (the axis arithmetic overflows near the largest double).
  nlohmann::json edited = logs;
  edited["files"][0]["tokens_per_s_per_gpu"] = 1e300;
  edited["files"][0]["steps"].push_back({{"step", 30}, {"tps", 1e300}});
  edited["files"][0]["steps"].push_back({{"step", 1e300}, {"tps", 5000}});
  RunRecord hand;
  hand.run.command = "train";
  hand.evidence.push_back({"train.analysis", edited.dump()});
  const std::string page = RenderHtml(hand);
  const size_t chart = page.find("<svg id=\"chart-train-throughput-1\"");
  ASSERT_NE(chart, std::string::npos) << page;
  const std::string svg = page.substr(chart, page.find("</svg>", chart) - chart);
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">20</text>"), std::string::npos) << "the steps' axis ends at step 20";
}

// The fleet's active checks, one row a node: a failed check first, then the overdue and the
// never checked, the passing folded away; a node's name is escaped; a row of the wrong shape is
// skipped; a phase's copy draws too; no fleet view, no section.
TEST(Report, ActiveChecksByNodeFromTheFleetView) {
  const nlohmann::json rows = nlohmann::json::parse(R"([
    {"node": "gpu1", "state": "idle", "last_check": "2026-12-01T10:00:00Z", "age_days": 2.5,
     "run": 41, "pass": 9, "warn": 0, "fail": 0, "unknown": 0, "skip": 1, "overdue": false,
     "decision": "skip", "why": "checked 2.5 days ago"},
    {"node": "<b>gpu2</b>", "state": "mixed", "last_check": null, "overdue": true,
     "decision": "skip", "why": "mixed: a job runs there"},
    {"node": "gpu3", "state": "idle", "last_check": "2026-12-03T10:00:00Z", "age_days": 0.5,
     "run": 44, "pass": 7, "warn": 1, "fail": 2, "unknown": 0, "skip": 0, "overdue": false,
     "decision": "skip", "why": "checked 12.0 hours ago"},
    {"state": "idle"},
    "gpu9",
    {"node": "gpu8", "last_check": "2026-12-03T10:00:00Z", "fail": 4294967296},
    {"node": "gpu7", "last_check": "2026-12-03T10:00:00Z", "fail": -1},
    {"node": "gpu6", "last_check": "2026-12-03T10:00:00Z", "run": 18446744073709551615}
  ])");
  RunRecord r;
  r.run.command = "health";
  r.evidence.push_back({"active.fleet", rows.dump()});
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<h2>Active checks by node</h2>"), std::string::npos) << html;
  EXPECT_NE(html.find("3 nodes: 1 failed their latest check, 1 overdue (1 never checked)"),
            std::string::npos)
      << html;
  const size_t table = html.find("<table class=\"findings active-fleet\" id=\"active-fleet-1\">");
  const size_t gpu3 = html.find("<code>gpu3</code>");
  const size_t gpu2 = html.find("<code>&lt;b&gt;gpu2&lt;/b&gt;</code>");
  const size_t folded = html.find("1 node passed a check within the interval");
  const size_t gpu1 = html.find("<code>gpu1</code>");
  ASSERT_NE(table, std::string::npos) << html;
  EXPECT_TRUE(table < gpu3 && gpu3 < gpu2 && gpu2 < folded && folded < gpu1 &&
              gpu1 != std::string::npos)
      << html;
  EXPECT_EQ(html.find("<b>gpu2</b>"), std::string::npos);
  const size_t section = html.find("<h2>Active checks by node</h2>");
  const std::string drawn = html.substr(section, html.find("</section>", section) - section);
  for (const char* wrapped : {"gpu8", "gpu7", "gpu6"}) {  // counts no check has: not rows
    EXPECT_EQ(drawn.find(wrapped), std::string::npos) << wrapped;
  }
  EXPECT_NE(html.find("<span class=\"status FAIL\">FAIL</span><br><small>7 PASS, 1 WARN, 2 "
                      "FAIL</small>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<code>cmax report 44</code>"), std::string::npos);
  EXPECT_NE(html.find("never <span class=\"status WARN\">overdue</span>"), std::string::npos);
  EXPECT_NE(html.find("2.5 days ago"), std::string::npos);
  EXPECT_NE(html.find("12.0 hours ago"), std::string::npos);
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("## Active checks by node"), std::string::npos) << md;
  EXPECT_NE(md.find("| gpu3 | idle | 2026-12-03T10:00:00Z (12.0 hours ago) | FAIL (7 PASS, 1 "
                    "WARN, 2 FAIL) | 44 | skip: checked 12.0 hours ago |"),
            std::string::npos)
      << md;
  EXPECT_LT(md.find("| gpu3 |"), md.find("| gpu1 |"));

  RunRecord phase;
  phase.evidence.push_back({"phase.fleet.active.fleet", rows.dump()});
  phase.evidence.push_back({"active.fleet", "not json"});
  EXPECT_NE(RenderHtml(phase).find("id=\"active-fleet-1\""), std::string::npos);
  RunRecord none;
  none.evidence.push_back({"active.fleet", R"({"node": "gpu1"})"});
  none.evidence.push_back({"phase.x.active.fleetish", rows.dump()});
  EXPECT_EQ(RenderHtml(none).find("Active checks by node"), std::string::npos);
  EXPECT_EQ(RenderMarkdown(none).find("Active checks by node"), std::string::npos);
}

// Per category the problems come first, in full; what passed folds away under them, its
// result only: a pass has nothing to remediate, and a fleet's page stays small.
TEST(Report, PassesFoldAwayUnderTheProblems) {
  RunRecord r;
  r.run.command = "audit";
  Finding pass;
  pass.check_id = "versions.runc";
  pass.status = CheckStatus::kPass;
  pass.message = "1.3.6 on 64 nodes";
  pass.remediation = "upgrade runc";
  pass.links = {"https://example.com/advisory"};
  Finding fail = pass;
  fail.check_id = "versions.nvidia-driver";
  fail.status = CheckStatus::kFail;
  fail.message = "580.65 on gpu-07";
  fail.remediation = "upgrade the driver";
  r.findings = {pass, fail, pass};
  const std::string html = RenderHtml(r);
  const size_t problems = html.find("<table class=\"findings\">");
  const size_t passed = html.find(
      "<details class=\"passed\"><summary><span class=\"status "
      "PASS\">PASS</span> 2 passed</summary>");
  ASSERT_NE(problems, std::string::npos);
  ASSERT_NE(passed, std::string::npos);
  EXPECT_LT(problems, passed);
  EXPECT_LT(html.find("580.65 on gpu-07"), passed);
  EXPECT_GT(html.find("1.3.6 on 64 nodes"), passed);
  EXPECT_EQ(html.find("upgrade runc"), std::string::npos) << "a pass has nothing to remediate";
  EXPECT_NE(html.find("upgrade the driver"), std::string::npos);
  EXPECT_EQ(html.find("id=\"f-versions.runc\""), html.rfind("id=\"f-versions.runc\""));
}

TEST(Report, EmptyRunRendersInEveryFormat) {
  RunRecord empty;
  empty.run.id = 1;
  empty.run.command = "run";
  for (Format f :
       {Format::kText, Format::kJson, Format::kJunit, Format::kHtml, Format::kMarkdown}) {
    EXPECT_FALSE(Render(f, empty, {}).empty()) << FormatName(f);
  }
  EXPECT_NE(RenderHtml(empty).find("No findings were recorded."), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(RenderJson(empty))["run"]["ended_at"].is_null());
}

// JSON on a terminal: a C1 control from outside (U+009B, which xterm obeys as ESC [) is written
// as its escape, and the document still reads back as it was.
TEST(Report, JsonWritesC1ControlsAsEscapes) {
  RunRecord record;
  record.run.id = 1;
  record.metrics = {{"x.lat",
                     {{"node",
                       "n1\xC2\x9B"
                       "2J"}},
                     5,
                     "ms\xC2\x85"}};
  const std::string json = RenderJson(record);
  EXPECT_EQ(json.find("\xC2\x9B"), std::string::npos);
  EXPECT_EQ(json.find("\xC2\x85"), std::string::npos);
  const auto doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["metrics"][0]["unit"], "ms\xC2\x85");
  EXPECT_EQ(doc["metrics"][0]["labels"]["node"],
            "n1\xC2\x9B"
            "2J");
}

TEST(Report, ParsesFormatNames) {
  EXPECT_EQ(ParseFormat("junit").value(), Format::kJunit);
  EXPECT_FALSE(ParseFormat("pdf"));
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(XmlEscape("a\nb"), "a&#10;b");
}

}  // namespace
}  // namespace cmax::report
