// The rating in the report: a run rated by rate/ (its `rating` evidence, as `cmax run` keeps
// it) leads the HTML page with its card and chart and the Markdown with the same content; a
// rating from a tampered store is read defensively and rendered as text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rate/rating.hpp"
#include "report/rating_view.hpp"
#include "report/render.hpp"
#include "support/golden.hpp"
#include "support/rated_run.hpp"

namespace cmax::report {
namespace {

using nlohmann::json;

size_t Count(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Finding Found(const char* id, CheckStatus status) {
  Finding f;
  f.check_id = id;
  f.status = status;
  f.message = std::string(id) + " <observed>";
  return f;
}

RunRecord RatedRun() {
  RunRecord r;
  r.run.id = 9;
  r.run.command = "run";
  r.run.host = "gpu-01";
  r.run.cmax_version = "0.1.0-golden";
  r.run.started_at = WallTime{std::chrono::milliseconds(1795944148911)};
  r.findings = {Found("versions.nvidia-driver", CheckStatus::kPass),
                Found("versions.cuda-toolkit", CheckStatus::kFail)};
  r.metrics = {{"reliability.detect", {{"step", "xid79"}}, 90, "s"}};
  testing::AddRating(r);
  return r;
}

TEST(RatingReport, RatedRunLeadsWithItsCardChartAndItems) {
  const RunRecord run = RatedRun();
  const std::string html = RenderHtml(run);
  ASSERT_NE(html.find("<section id=\"rating\" class=\"card\">"), std::string::npos);
  EXPECT_LT(html.find("id=\"rating\""), html.find("<h2>Findings</h2>"));  // the card comes first
  EXPECT_NE(html.find("<svg id=\"chart-categories\""), std::string::npos);
  // Security and reliability have scores; pricing has no evidence and is drawn as such.
  EXPECT_EQ(Count(html, "class=\"bar\""), 2U);
  EXPECT_EQ(Count(html, "class=\"no-evidence\""), 1U);
  // The failed check in the versions item links to its finding, which carries the anchor once.
  EXPECT_NE(html.find("<a href=\"#f-versions.cuda-toolkit\">versions.cuda-toolkit</a>"),
            std::string::npos);
  EXPECT_EQ(Count(html, "id=\"f-versions.cuda-toolkit\""), 1U);
  EXPECT_NE(html.find("<h3 id=\"cat-pricing\">Pricing <small>no evidence</small></h3>"),
            std::string::npos);
  EXPECT_NE(html.find("Gates not verified"), std::string::npos) << "SOC 2 had no evidence";
  EXPECT_NE(html.find("<h2>Cost of failures</h2>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // A run that was not rated has no card.
  RunRecord unrated = run;
  unrated.evidence.clear();
  EXPECT_EQ(RenderHtml(unrated).find("id=\"rating\""), std::string::npos);
}

TEST(RatingReport, ReadsBackWhatTheRatingWrote) {
  const RunRecord run = RatedRun();
  const rate::Rating rating = rate::RateEvidence(testing::ReportRubric(), {{&run}, nullptr});
  const std::optional<RatingView> view = ReadRating(run);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->tier, rating.tier);
  ASSERT_TRUE(view->score && rating.score);
  EXPECT_DOUBLE_EQ(*view->score, *rating.score);
  EXPECT_DOUBLE_EQ(view->confidence, rating.confidence);
  ASSERT_EQ(view->categories.size(), rating.categories.size());
  ASSERT_EQ(view->items.size(), rating.items.size());
  for (size_t i = 0; i < rating.items.size(); ++i) {
    EXPECT_EQ(view->items[i].id, rating.items[i].id);
    EXPECT_EQ(view->items[i].evidence, rating.items[i].evidence);
    EXPECT_EQ(view->items[i].score.has_value(), rating.items[i].score.has_value());
    EXPECT_EQ(view->items[i].gate_cap, rating.items[i].gate_cap.value_or(""));
  }
  EXPECT_EQ(view->gates_unverified, rating.gates_unverified);
  EXPECT_EQ(view->runs, rating.runs);
}

TEST(RatingReport, MarkdownMatchesGoldenAndKeepsTablesWhole) {
  const std::string md = RenderMarkdown(RatedRun());
  testing::ExpectGolden("report/rated.md", md);
  EXPECT_NE(md.find("## Rating: "), std::string::npos);
  EXPECT_NE(md.find("| Security | "), std::string::npos);
  EXPECT_EQ(ParseFormat("markdown").value(), Format::kMarkdown);
  EXPECT_EQ(ParseFormat("md").value(), Format::kMarkdown);
}

// A store is a file: a rating in it may have been edited into anything. Wrong types are
// skipped, numbers are clamped to their scale, and every string is text in both renderings.
TEST(RatingReport, TamperedRatingIsReadDefensivelyAndEscaped) {
  RunRecord r;
  r.run.id = 3;
  r.findings = {Found("isolation.grafana", CheckStatus::kFail)};
  const json hostile = {
      {"tier", "<script>alert(1)</script>"},
      {"score", 1e9},
      {"confidence", -4},
      {"provider", "p|x\n# heading [link](javascript:alert(1))"},
      {"runs", {1, "two", 3}},
      {"gates_failed", {"sec.soc2: no <b>SOC 2</b>", 7}},
      {"categories",
       {{{"id", "security"}, {"title", "<img src=x>"}, {"score", 1e9}, {"confidence", 0.5}},
        {{"id", "pricing"}, {"score", "high"}},
        "not an object",
        {{"title", "no id"}}}},
      {"items",
       {{{"id", "sec.x"},
         {"category", "security"},
         {"title", "t"},
         {"score", 7},
         {"evidence", "FAIL: isolation.grafana, <i>x</i>"}},
        {{"id", 5}}}},
      {"goodput", {{"inputs", {{{"name", "mtbf"}, {"value", "x"}}}}, {"failures", "many"}}}};
  r.evidence = {{"rating", hostile.dump()}};
  const std::optional<RatingView> view = ReadRating(r);
  ASSERT_TRUE(view);
  EXPECT_DOUBLE_EQ(*view->score, 100);
  EXPECT_DOUBLE_EQ(view->confidence, 0);
  EXPECT_EQ(view->runs, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(view->gates_failed.size(), 1U);
  ASSERT_EQ(view->categories.size(), 2U);
  EXPECT_FALSE(view->categories[1].score);
  ASSERT_EQ(view->items.size(), 1U);
  EXPECT_DOUBLE_EQ(*view->items[0].score, 1);

  const std::string html = RenderHtml(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<b>SOC"), std::string::npos);
  EXPECT_EQ(html.find("<i>x"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"#f-isolation.grafana\">"), std::string::npos);
  // The bar is clamped to the axis: 100 of 100 ends at the axis's right end (150 + 420).
  EXPECT_NE(html.find("class=\"bar\" x=\"150\" y=\"26.0\" width=\"420.0\""), std::string::npos)
      << html;

  const std::string md = RenderMarkdown(r);
  EXPECT_EQ(md.find("<script"), std::string::npos);
  EXPECT_NE(md.find("\\[link\\](javascript"), std::string::npos) << "no link without brackets";
  EXPECT_EQ(md.find("\n# heading"), std::string::npos) << "a value cannot start a heading";
  EXPECT_NE(md.find("p\\|x"), std::string::npos);

  // Not JSON, or not an object, or no tier: no rating.
  for (const char* bad : {"{not json", "[1,2]", "\"Gold\"", R"({"score": 90})", R"({"tier": 5})"}) {
    r.evidence = {{"rating", bad}};
    EXPECT_FALSE(ReadRating(r)) << bad;
    EXPECT_EQ(RenderHtml(r).find("id=\"rating\""), std::string::npos) << bad;
  }
}

// The SLA risk, rated with the built-in rubric's gold template and an attested price: its
// table on the page and in the Markdown; without terms, why there is none.
TEST(RatingReport, SlaRiskHasItsTable) {
  RunRecord r = RatedRun();
  r.evidence.clear();
  rate::Attestation attested;
  attested.provider = "P";
  attested.source = "S <sales>";
  attested.sla_template = "gold";
  attested.facts["pricing.gpu_hour_usd"] = 2.0;
  attested.facts["availability.delivery_late_days"] = 2;
  const rate::Rating rating = rate::RateEvidence(
      rate::Rubric::Builtin(),
      {{&r},
       &attested,
       std::vector<rate::DrainRecord>{{"n1", std::nullopt, "cmax: Xid 79 on <b>0000:17:00</b>"},
                                      {"n2", std::nullopt, "cmax: soft_lockup"},
                                      {"n3", std::nullopt, "cmax: Xid 48 on x"}}});
  ASSERT_TRUE(rating.sla) << rating.sla_missing;
  r.evidence.push_back({"rating", rate::RatingJson(rating).dump()});
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<section id=\"sla-risk\">"), std::string::npos);
  EXPECT_NE(html.find("Terms: gold node, 99.9% monthly uptime (credits 10% under 99.9%, 25% "
                      "under 99%, 100% under 95%)"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr><th>Delivery</th><td>2 days late</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("attested by S &lt;sales&gt;"), std::string::npos);
  EXPECT_NE(html.find("<h3>Formulas</h3>\n<pre class=\"formulas\">outages per node-month N ~ "
                      "Poisson(8 * 730 / MTBF), each D hours\n"),
            std::string::npos)
      << html;
  // The drains by cause, their reasons escaped.
  EXPECT_NE(html.find("<section id=\"drains\">"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>GPU</td><td>2</td><td>cmax: Xid 79 on &lt;b&gt;0000:17:00&lt;/b&gt;"
                      "<br>cmax: Xid 48 on x</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr><td>CPU lockup</td><td>1</td>"), std::string::npos);
  EXPECT_NE(html.find("3 drain(s) by the cause their reason names: 3 in the remediation journal, "
                      "0 seen on the provider&#39;s scheduler during the rated runs"),
            std::string::npos)
      << html;
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("```text\noutages per node-month N ~ Poisson(8 * 730 / MTBF), each D hours\n"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| GPU | 2 | cmax: Xid 79 on &lt;b&gt;0000:17:00&lt;/b&gt;; cmax: Xid 48 on x |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("### SLA risk"), std::string::npos);
  EXPECT_NE(md.find("| Breaches per contract-year | "), std::string::npos);
  EXPECT_NE(md.find(" USD of "), std::string::npos);
  // A formula from a store someone else wrote: one line in the fence, nothing a terminal obeys.
  nlohmann::json forged = nlohmann::json::parse(r.evidence.back().value_json);
  forged["sla"]["formulas"] = {"N ~ x\x1b[2J\n# forged heading"};
  r.evidence.back().value_json = forged.dump();
  const std::string forged_md = RenderMarkdown(r);
  EXPECT_EQ(forged_md.find('\x1b'), std::string::npos) << forged_md;
  EXPECT_EQ(forged_md.find("\n# forged heading"), std::string::npos) << forged_md;
  EXPECT_NE(forged_md.find("[2J?# forged heading\n```"), std::string::npos) << forged_md;

  attested.sla_template.clear();
  const rate::Rating none = rate::RateEvidence(rate::Rubric::Builtin(), {{&r}, &attested});
  r.evidence = {{"rating", rate::RatingJson(none).dump()}};
  EXPECT_NE(RenderHtml(r).find("the attestation gives no SLA terms"), std::string::npos);

  // A reason that would start a Markdown list or a numbered list stays a paragraph of text.
  nlohmann::json stored = rate::RatingJson(none);
  stored["sla_missing"] = "- not\n1. a list";
  r.evidence = {{"rating", stored.dump()}};
  const std::string text = RenderMarkdown(r);
  EXPECT_NE(text.find("\n\\- not 1. a list\n"), std::string::npos) << text;
  stored["sla_missing"] = "12) nor this";
  r.evidence = {{"rating", stored.dump()}};
  const std::string numbered = RenderMarkdown(r);
  EXPECT_NE(numbered.find("\n12\\) nor this\n"), std::string::npos) << numbered;
}

// Every Markdown table row has as many cell separators as its header, whatever the strings.
TEST(RatingReport, MarkdownEscapesItsSyntaxAndInlineHtml) {
  EXPECT_EQ(MarkdownEscape("a|b"), "a\\|b");
  EXPECT_EQ(MarkdownEscape("<b>x</b>"), "&lt;b&gt;x&lt;/b&gt;");
  EXPECT_EQ(MarkdownEscape("line\nnext"), "line next");
  EXPECT_EQ(MarkdownEscape("[x](javascript:y)"), "\\[x\\](javascript:y)");
  EXPECT_EQ(MarkdownEscape("*_`#!~$"), "\\*\\_\\`\\#!\\~\\$");
  EXPECT_EQ(TierClass("Participation Ribbon"), "participation-ribbon");
  EXPECT_EQ(TierClass("<x> y"), "x-y");
  EXPECT_EQ(TierClass("!!"), "none");
}

}  // namespace
}  // namespace cmax::report
