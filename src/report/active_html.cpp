#include "report/active_html.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "report/render.hpp"

namespace cmax::report {
namespace {

using nlohmann::json;

struct NodeRow {
  std::string node;
  std::string state;
  std::string last_check;  // ISO 8601; "" never checked
  std::optional<double> age_days;
  std::optional<int64_t> run;
  StatusCounts counts;
  bool overdue = false;
  std::string decision;
  std::string why;

  bool Checked() const { return !last_check.empty(); }
  // What the latest check found, as a finding's status would say it.
  std::string_view Result() const {
    if (!Checked()) return "never";
    if (counts.fail > 0) return "FAIL";
    if (counts.unknown > 0) return "UNKNOWN";
    if (counts.warn > 0) return "WARN";
    if (counts.pass == 0 && counts.skip > 0) return "SKIP";  // nothing was exercised
    return "PASS";
  }
  // Worth a reader's eye: a failed or unreadable check, a warning, or a node overdue.
  bool Attention() const { return overdue || Result() != "PASS"; }
  // Failed first, then unreadable, overdue or never checked, then warnings.
  int Rank() const {
    const std::string_view r = Result();
    if (r == "FAIL") return 0;
    if (r == "UNKNOWN") return 1;
    if (overdue || !Checked()) return 2;
    if (r == "WARN" || r == "SKIP") return 3;
    return 4;
  }
};

std::string Text(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A whole number from 0 to INT_MAX; absent is 0, anything else -1 (the row is not read).
int64_t Whole(const json& j, const char* key, int64_t most = INT_MAX) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_unsigned()) {
    const auto v = it->get<uint64_t>();
    return v <= static_cast<uint64_t>(most) ? static_cast<int64_t>(v) : -1;
  }
  if (!it->is_number_integer()) return -1;
  const auto v = it->get<int64_t>();
  return v >= 0 && v <= most ? v : -1;
}

bool IsFleetKey(const std::string& key) {
  return key == "active.fleet" || (key.starts_with("phase.") && key.ends_with(".active.fleet"));
}

std::vector<NodeRow> ReadRows(const std::string& value) {
  std::vector<NodeRow> out;
  const json doc = json::parse(value, nullptr, false);
  if (!doc.is_array()) return out;
  for (const json& r : doc) {
    if (!r.is_object()) continue;
    NodeRow row{.node = Text(r, "node"),
                .state = Text(r, "state"),
                .last_check = Text(r, "last_check"),
                .decision = Text(r, "decision"),
                .why = Text(r, "why")};
    if (row.node.empty()) continue;
    if (const auto it = r.find("age_days"); it != r.end() && it->is_number()) {
      const double age = it->get<double>();
      if (std::isfinite(age)) row.age_days = age;
    }
    const int64_t run = Whole(r, "run", INT64_MAX);
    const int64_t pass = Whole(r, "pass");
    const int64_t warn = Whole(r, "warn");
    const int64_t fail = Whole(r, "fail");
    const int64_t skip = Whole(r, "skip");
    const int64_t unknown = Whole(r, "unknown");
    if (std::min({run, pass, warn, fail, skip, unknown}) < 0) continue;  // not a row cmax wrote
    if (run > 0) row.run = run;
    row.counts = {.pass = static_cast<int>(pass),
                  .warn = static_cast<int>(warn),
                  .fail = static_cast<int>(fail),
                  .skip = static_cast<int>(skip),
                  .unknown = static_cast<int>(unknown)};
    const auto overdue = r.find("overdue");
    // A row written before `overdue` was: never checked is overdue whatever the interval.
    row.overdue =
        overdue != r.end() && overdue->is_boolean() ? overdue->get<bool>() : !row.Checked();
    out.push_back(std::move(row));
  }
  std::ranges::stable_sort(out, {}, &NodeRow::Rank);
  return out;
}

std::string CountsText(const StatusCounts& c) {
  std::vector<std::string> parts;
  for (const auto& [name, n] :
       {std::pair{"PASS", c.pass}, std::pair{"WARN", c.warn}, std::pair{"FAIL", c.fail},
        std::pair{"UNKNOWN", c.unknown}, std::pair{"SKIP", c.skip}}) {
    if (n > 0) parts.push_back(fmt::format("{} {}", n, name));
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string AgeText(const NodeRow& row) {
  if (!row.age_days) return "";
  const double days = *row.age_days;
  if (days < 1) return fmt::format("{:.1f} hours ago", days * 24);
  return fmt::format("{:.1f} days ago", days);
}

std::string Summary(const std::vector<NodeRow>& rows) {
  const auto count = [&](auto pred) { return std::ranges::count_if(rows, pred); };
  const auto failed = count([](const NodeRow& r) { return r.Result() == "FAIL"; });
  const auto overdue = count([](const NodeRow& r) { return r.overdue; });
  const auto never = count([](const NodeRow& r) { return !r.Checked(); });
  return fmt::format("{} node{}: {} failed their latest check, {} overdue ({} never checked)",
                     rows.size(), rows.size() == 1 ? "" : "s", failed, overdue, never);
}

std::string HtmlRow(const NodeRow& row) {
  const std::string_view result = row.Result();
  std::string checked = row.Checked() ? HtmlEscape(row.last_check) + "<br><small>" +
                                            HtmlEscape(AgeText(row)) + "</small>"
                                      : std::string("never");
  if (row.overdue) checked += " <span class=\"status WARN\">overdue</span>";
  const std::string result_cell =
      result == "never" ? std::string("&mdash;")
                        : fmt::format("<span class=\"status {0}\">{0}</span><br><small>{1}</small>",
                                      result, CountsText(row.counts));
  return fmt::format(
      "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
      "<td>{}<br><small>{}</small></td></tr>\n",
      HtmlEscape(row.node), HtmlEscape(row.state), checked, result_cell,
      row.run ? fmt::format("<code>cmax report {}</code>", *row.run) : std::string(),
      HtmlEscape(row.decision), HtmlEscape(row.why));
}

constexpr std::string_view kHtmlColumns =
    "<colgroup><col style=\"width:10rem\"><col style=\"width:7rem\"><col style=\"width:13rem\">"
    "<col style=\"width:10rem\"><col style=\"width:10rem\"><col></colgroup>\n"
    "<thead><tr><th>Node</th><th>Slurm state</th><th>Latest check</th><th>Result</th>"
    "<th>Run</th><th>Schedule</th></tr></thead>\n<tbody>\n";

}  // namespace

std::string RenderActiveFleetHtml(const RunRecord& record) {
  std::string out;
  int index = 0;
  for (const EvidenceItem& item : record.evidence) {
    if (!IsFleetKey(item.key)) continue;
    ++index;
    const std::vector<NodeRow> rows = ReadRows(item.value_json);
    if (rows.empty()) continue;
    out += fmt::format("<p>{}.</p>\n", HtmlEscape(Summary(rows)));
    const auto first_passing =
        std::ranges::find_if(rows, [](const NodeRow& r) { return !r.Attention(); });
    const auto table = [&](auto from, auto to, const std::string& id) {
      std::string t = fmt::format("<table class=\"findings active-fleet\"{}>\n", id);
      t += kHtmlColumns;
      for (auto it = from; it != to; ++it) t += HtmlRow(*it);
      return t + "</tbody>\n</table>\n";
    };
    const std::string id = fmt::format(" id=\"active-fleet-{}\"", index);
    if (first_passing != rows.begin()) out += table(rows.begin(), first_passing, id);
    if (first_passing != rows.end()) {
      out += fmt::format(
          "<details class=\"passed\"><summary><span class=\"status PASS\">PASS</span> {} "
          "node{} passed a check within the interval</summary>\n",
          rows.end() - first_passing, rows.end() - first_passing == 1 ? "" : "s");
      out += table(first_passing, rows.end(), first_passing == rows.begin() ? id : std::string());
      out += "</details>\n";
    }
  }
  if (out.empty()) return out;
  return "<section>\n<h2>Active checks by node</h2>\n<p><small>Each node's latest "
         "<code>cmax health --active</code> run, as <code>cmax health schedule</code> last "
         "saw the fleet.</small></p>\n" +
         out + "</section>\n";
}

std::string RenderActiveFleetMarkdown(const RunRecord& record) {
  std::string out;
  for (const EvidenceItem& item : record.evidence) {
    if (!IsFleetKey(item.key)) continue;
    const std::vector<NodeRow> rows = ReadRows(item.value_json);
    if (rows.empty()) continue;
    out += MarkdownEscape(Summary(rows)) + ".\n\n";
    out += "| Node | Slurm state | Latest check | Result | Run | Schedule |\n";
    out += "|---|---|---|---|---|---|\n";
    for (const NodeRow& row : rows) {
      const std::string_view result = row.Result();
      std::string checked =
          row.Checked() ? MarkdownEscape(row.last_check + " (" + AgeText(row) + ")") : "never";
      if (row.overdue) checked += ", overdue";
      out += fmt::format("| {} | {} | {} | {} | {} | {}: {} |\n", MarkdownEscape(row.node),
                         MarkdownEscape(row.state), checked,
                         result == "never" ? std::string("-")
                                           : fmt::format("{} ({})", result, CountsText(row.counts)),
                         row.run ? std::to_string(*row.run) : std::string(),
                         MarkdownEscape(row.decision), MarkdownEscape(row.why));
    }
    out += "\n";
  }
  if (out.empty()) return out;
  return "## Active checks by node\n\n" + out;
}

}  // namespace cmax::report
