#include "net/nccl_tests_output.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>

#include "core/json_read.hpp"
#include "core/strings.hpp"

namespace cmax::net {
namespace {

using nlohmann::json;

constexpr size_t kMaxWarnings = 20;
constexpr size_t kMaxWarningBytes = 300;

std::string_view TrimLeft(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

std::string_view Trim(std::string_view text) {
  text = TrimLeft(text);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The words of `text` into `out` (kept, so that a line's words cost no allocation).
void WordsInto(std::string_view text, std::vector<std::string_view>& out) {
  out.clear();
  size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r')) ++at;
    const size_t start = at;
    while (at < text.size() && text[at] != ' ' && text[at] != '\t' && text[at] != '\r') ++at;
    if (at > start) out.push_back(text.substr(start, at - start));
  }
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  WordsInto(text, out);
  return out;
}

// Text from the output kept as it is when it is plain ASCII (the usual case), else made valid.
std::string Kept(std::string_view word) {
  const bool plain = std::ranges::all_of(word, [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  return plain ? std::string(word) : SanitizeUtf8(word);
}

// A petabyte a second: past any link there is, so a figure above it is a slip or a corrupt file,
// not a measurement to rank a network by.
constexpr double kMaxGbs = 1e6;

// Every figure of a placement could have been measured: none negative, no bandwidth past kMaxGbs.
bool Measurable(const NcclPlacement& p) {
  const auto ok = [](const std::optional<double>& v, double max) {
    return !v || (*v >= 0 && *v <= max);
  };
  const double any = std::numeric_limits<double>::max();
  return ok(p.time_us, any) && ok(p.algbw_gbs, kMaxGbs) && ok(p.busbw_gbs, kMaxGbs) &&
         ok(p.wrong, any);
}

bool IsDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// The launcher's prefix, taken off: OpenMPI's `[job,rank]<stdout>:` (after a date with
// --timestamp-output) and srun -l's `rank: `. `source` says which rank, or stays empty.
std::string_view WithoutPrefix(std::string_view line, std::string& source) {
  source.clear();
  for (std::string_view tag : {std::string_view("<stdout>:"), std::string_view("<stderr>:")}) {
    const size_t at = line.find(tag);
    if (at == std::string_view::npos || at > 80) continue;
    const std::string_view before = line.substr(0, at);
    const size_t open = before.rfind('[');
    const size_t comma = before.rfind(',');
    if (open != std::string_view::npos && comma != std::string_view::npos && comma > open &&
        before.back() == ']') {
      source.assign("rank ").append(before.substr(comma + 1, before.size() - comma - 2));
    } else {
      source.assign("tagged");
    }
    return line.substr(at + tag.size());
  }
  // srun -l: digits, a colon, a space.
  const std::string_view trimmed = TrimLeft(line);
  size_t digits = 0;
  while (digits < trimmed.size() && IsDigit(trimmed[digits])) ++digits;
  if (digits > 0 && digits < 8 && trimmed.size() > digits + 1 && trimmed[digits] == ':' &&
      trimmed[digits + 1] == ' ') {
    source.assign("rank ").append(trimmed.substr(0, digits));
    return trimmed.substr(digits + 2);
  }
  return line;
}

// Which columns a row has, from the table's header: the leading ones, then per placement its
// fields ("time", "algbw", "busbw", "wrong", or "" for one cmax does not read).
enum class Column { kOther, kSize, kCount, kType, kRedop, kRoot, kTime, kAlgbw, kBusbw, kWrong };

struct Layout {
  std::vector<Column> leading = {Column::kSize, Column::kCount, Column::kType, Column::kRedop,
                                 Column::kRoot};
  std::vector<std::vector<Column>> placements = {
      {Column::kTime, Column::kAlgbw, Column::kBusbw, Column::kWrong},
      {Column::kTime, Column::kAlgbw, Column::kBusbw, Column::kWrong}};
  // The older `error` column holds the largest deviation found (2e-07 is a float sum's
  // rounding), not a count of wrong values.
  bool error_column = false;
};

std::optional<Layout> HeaderLayout(std::string_view body) {
  const std::vector<std::string_view> words = Words(body);
  const bool has_size =
      std::ranges::any_of(words, [](std::string_view w) { return w == "size" || w == "bytes"; });
  const bool has_time = std::ranges::find(words, std::string_view("time")) != words.end();
  if (!has_size || !has_time) return std::nullopt;
  Layout layout;
  layout.leading.clear();
  layout.placements.clear();
  for (std::string_view word : words) {
    if (word == "time") {
      layout.placements.emplace_back();
    }
    if (layout.placements.empty()) {
      layout.leading.push_back(word == "size" || word == "bytes" ? Column::kSize
                               : word == "count" || word == "N"  ? Column::kCount
                               : word == "type"                  ? Column::kType
                               : word == "redop" || word == "op" ? Column::kRedop
                               : word == "root"                  ? Column::kRoot
                                                                 : Column::kOther);
      continue;
    }
    if (word == "error" || word == "res") layout.error_column = true;
    // i_min, i_max, cputime ...: printed, not read.
    layout.placements.back().push_back(
        word == "time"                                                            ? Column::kTime
        : word == "algbw"                                                         ? Column::kAlgbw
        : word == "busbw"                                                         ? Column::kBusbw
        : word == "#wrong" || word == "wrong" || word == "error" || word == "res" ? Column::kWrong
                                                                                  : Column::kOther);
  }
  if (layout.leading.empty() || layout.leading.front() != Column::kSize) return std::nullopt;
  return layout;
}

struct Parser {
  NcclTestsOutput out;
  struct Current {
    size_t table = 0;  // index into out.tables
    Layout layout;
  };
  std::map<std::string, Current> current;  // by source
  std::string pending_nccl_version;
  std::vector<std::string_view> row_words;  // a row's, reused
  std::string line_source;                  // a line's launcher prefix, reused
  std::set<std::pair<std::string, uint64_t>> tuning_seen;
  // Each table's hosts so far (by its index): a run over thousands of hosts names each once,
  // without a scan of the list per rank line (100,000 ranks took minutes).
  std::set<std::pair<size_t, std::string>> hosts_seen;

  NcclTable& NewTable(const std::string& source) {
    // A launcher's prefix is whatever bytes the log holds: made valid text once, per table.
    out.tables.push_back({.source = SanitizeUtf8(source)});
    NcclTable& table = out.tables.back();
    table.nccl_version = pending_nccl_version;
    current[source] = {.table = out.tables.size() - 1};
    return table;
  }
  NcclTable& TableOf(const std::string& source) {
    const auto it = current.find(source);
    return it == current.end() ? NewTable(source) : out.tables[it->second.table];
  }
  const Current& CurrentOf(const std::string& source) {
    auto it = current.find(source);
    if (it == current.end()) {
      NewTable(source);
      it = current.find(source);
    }
    return it->second;
  }

  void Comment(std::string_view body, const std::string& source) {
    const std::string_view text = Trim(body.substr(1));
    if (text.starts_with("nccl-tests version")) {
      NcclTable& table = NewTable(source);
      const std::vector<std::string_view> words = Words(text);
      if (words.size() > 2) table.tests_version = SanitizeUtf8(words[2]);
      table.cpu_stand_in = text.find("CPU stand-in") != std::string_view::npos;
      return;
    }
    if (text.starts_with("Collective test starting:")) {
      const auto it = current.find(source);
      NcclTable& table = it != current.end() && out.tables[it->second.table].rows.empty() &&
                                 out.tables[it->second.table].collective.empty()
                             ? out.tables[it->second.table]
                             : NewTable(source);
      table.collective = SanitizeUtf8(Trim(text.substr(text.find(':') + 1)));
      return;
    }
    if (text.starts_with("Collective test concluded")) {
      TableOf(source).concluded = true;
      return;
    }
    if (text.starts_with("Out of bounds values")) {
      TableOf(source).out_of_bounds_ok = text.find("OK") != std::string_view::npos;
      return;
    }
    if (text.starts_with("Avg bus bandwidth")) {
      const std::vector<std::string_view> words = Words(text.substr(text.find(':') + 1));
      NcclTable& table = TableOf(source);
      if (!words.empty()) {
        table.reported_avg_busbw = ParseWhole<double>(words[0]);
        if (table.reported_avg_busbw && !std::isfinite(*table.reported_avg_busbw)) {
          table.reported_avg_busbw.reset();
        }
      }
      // Versions that print no start line print no closing one either: this footer ends them.
      if (table.collective.empty()) table.concluded = true;
      return;
    }
    // A run's first lines (its parameters, its ranks) after a table with rows: the next run,
    // in versions that print no start line.
    if (text.starts_with("nThread ") || text.starts_with("Rank ")) {
      if (const auto it = current.find(source);
          it != current.end() && !out.tables[it->second.table].rows.empty()) {
        NewTable(source);
      }
    }
    if (text.starts_with("Rank ")) {
      NcclTable& table = TableOf(source);
      ++table.ranks;
      const std::vector<std::string_view> words = Words(text);
      const auto on = std::ranges::find(words, std::string_view("on"));
      if (on != words.end() && on + 1 != words.end()) {
        std::string host = SanitizeUtf8(*(on + 1));
        const auto index = static_cast<size_t>(&table - out.tables.data());
        if (hosts_seen.emplace(index, host).second) table.hosts.push_back(std::move(host));
      }
      return;
    }
    if (auto layout = HeaderLayout(text)) {
      const auto it = current.find(source);
      if (it == current.end() || !out.tables[it->second.table].rows.empty()) NewTable(source);
      out.tables[current[source].table].wrong_is_count = !layout->error_column;
      current[source].layout = std::move(*layout);
    }
  }

  void Row(std::string_view body, const std::string& source) {
    WordsInto(body, row_words);
    const std::vector<std::string_view>& words = row_words;
    const Current& now = CurrentOf(source);
    const Layout& layout = now.layout;
    NcclTable& table = out.tables[now.table];
    NcclRow row;
    size_t at = 0;
    for (const Column column : layout.leading) {
      if (at >= words.size()) break;
      const std::string_view word = words[at++];
      if (column == Column::kSize) {
        const auto size = ParseWhole<uint64_t>(word);
        if (!size) return Problem(fmt::format("a row whose size is not a number: {}", Shown(body)));
        row.size_bytes = *size;
      } else if (column == Column::kCount) {
        row.count = ParseWhole<uint64_t>(word).value_or(0);
      } else if (column == Column::kType) {
        row.type = Kept(word);
      } else if (column == Column::kRedop) {
        row.redop = Kept(word);
      } else if (column == Column::kRoot) {
        row.root = Kept(word);
      }
    }
    if (at < layout.leading.size()) {
      return Problem(fmt::format("a row cut short: {}", Shown(body)));
    }
    bool cut = false;
    for (size_t p = 0; p < layout.placements.size(); ++p) {
      const std::vector<Column>& fields = layout.placements[p];
      if (at + fields.size() > words.size()) {
        cut = true;
        break;
      }
      NcclPlacement placement;
      bool readable = true;
      for (const Column field : fields) {
        const std::string_view word = words[at++];
        if (field == Column::kOther) continue;
        std::optional<double> value = word == "N/A" ? std::nullopt : ParseWhole<double>(word);
        if (!value && word != "N/A") readable = false;
        if (value && !std::isfinite(*value)) value.reset();  // nan, inf: read, and no figure
        if (field == Column::kTime) placement.time_us = value;
        if (field == Column::kAlgbw) placement.algbw_gbs = value;
        if (field == Column::kBusbw) placement.busbw_gbs = value;
        if (field == Column::kWrong) placement.wrong = value;
      }
      if (!readable) {
        return Problem(fmt::format("a row with a value that is not a number: {}", Shown(body)));
      }
      if (!Measurable(placement)) {
        return Problem(
            fmt::format("a row with a figure no network measures (negative, or past "
                        "{:.0f} GB/s): {}",
                        kMaxGbs, Shown(body)));
      }
      if (p == 0) {
        row.out_of_place = placement;
      } else if (p == 1) {
        row.in_place = placement;
      }
    }
    if (cut) {
      if (at == layout.leading.size()) {
        return Problem(fmt::format("a row cut short: {}", Shown(body)));
      }
      Problem(fmt::format("a row cut short (its in-place half is missing): {}", Shown(body)));
    }
    table.rows.push_back(std::move(row));
  }

  void Line(std::string_view raw) {
    std::string& source = line_source;
    const std::string_view line = Trim(WithoutPrefix(raw, source));
    if (line.empty()) return;
    if (line.front() == '#') return Comment(line, source);
    // A row: its first word all digits (an NCCL line's starts with a host name and a colon). A
    // first word of a minus and digits is a row no run prints: said, not passed over.
    const bool negative = line.front() == '-' && line.size() > 1 && IsDigit(line[1]);
    if (IsDigit(line.front()) || negative) {
      size_t end = negative ? 1 : 0;
      while (end < line.size() && IsDigit(line[end])) ++end;
      if (end == line.size() || line[end] == ' ' || line[end] == '\t') return Row(line, source);
    }
    if (const size_t at = line.find("NCCL WARN"); at != std::string_view::npos) {
      if (out.warnings.size() < kMaxWarnings) {
        out.warnings.push_back(SanitizeUtf8(line.substr(0, kMaxWarningBytes)));
      }
      return;
    }
    if (const size_t at = line.find("NCCL version "); at != std::string_view::npos) {
      const std::vector<std::string_view> words = Words(line.substr(at + 13));
      if (!words.empty()) {
        pending_nccl_version = SanitizeUtf8(words[0]);
        if (const auto it = current.find(source); it != current.end()) {
          out.tables[it->second.table].nccl_version = pending_nccl_version;
        }
      }
      return;
    }
    if (const size_t at = line.find("NCCL INFO "); at != std::string_view::npos) {
      Tuning(line.substr(at + 10));
    }
  }

  // "AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..31}"
  void Tuning(std::string_view text) {
    const size_t colon = text.find(": ");
    if (colon == std::string_view::npos || colon == 0 || out.tuning.size() >= kMaxNcclTunings) {
      return;
    }
    const std::string_view function = text.substr(0, colon);
    if (!std::ranges::all_of(
            function, [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; })) {
      return;
    }
    WordsInto(text.substr(colon + 2), row_words);
    const std::vector<std::string_view>& w = row_words;
    if (w.size() < 7 || w[1] != "Bytes" || w[2] != "->" || w[3] != "Algo" || w[5] != "proto") {
      return;
    }
    const auto bytes = ParseWhole<uint64_t>(w[0]);
    if (!bytes) return;
    if (!tuning_seen.emplace(std::string(function), *bytes).second) return;
    out.tuning.push_back({.function = SanitizeUtf8(function),
                          .bytes = *bytes,
                          .algo = SanitizeUtf8(w[4].substr(0, 32)),
                          .proto = SanitizeUtf8(w[6].substr(0, 32))});
  }

  void Problem(std::string what) {
    if (out.problems.size() < 100) out.problems.push_back(std::move(what));
  }
  static std::string Shown(std::string_view body) { return SanitizeUtf8(body.substr(0, 160)); }

  void Finish() {
    for (size_t i = 0; i < out.tables.size(); ++i) {
      NcclTable& table = out.tables[i];
      uint64_t largest = 0;
      for (const NcclRow& row : table.rows) {
        const std::optional<double> best = row.BestBusbw();
        if (best && (!table.peak_busbw_gbs || *best > *table.peak_busbw_gbs)) {
          table.peak_busbw_gbs = best;
          table.peak_size_bytes = row.size_bytes;
        }
        if (row.size_bytes >= largest) {
          largest = row.size_bytes;
          table.largest_size_busbw_gbs = best;
        }
      }
      const std::string name = fmt::format(
          "table {}{}{}", i + 1, table.collective.empty() ? "" : " (" + table.collective + ")",
          table.source.empty() ? "" : " from " + table.source);
      if (table.rows.empty()) {
        Problem(name + " has no rows");
      } else if (!table.concluded) {
        Problem(fmt::format("{} has no footer: cut short after {} bytes", name,
                            table.rows.back().size_bytes));
      }
    }
  }
};

json PlacementJson(const NcclPlacement& p) {
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"time_us", optional(p.time_us)},
          {"algbw_gbs", optional(p.algbw_gbs)},
          {"busbw_gbs", optional(p.busbw_gbs)},
          {"wrong", optional(p.wrong)}};
}

}  // namespace

std::optional<double> NcclRow::BestBusbw() const {
  std::optional<double> best = out_of_place.busbw_gbs;
  if (in_place && in_place->busbw_gbs && (!best || *in_place->busbw_gbs > *best)) {
    best = in_place->busbw_gbs;
  }
  return best;
}

namespace {

// A number of nccl-tests' JSON: a number, or "nan"/"N/A" written as a string (none).
std::optional<double> JsonReal(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

std::string JsonText(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return "";
  return SanitizeUtf8((it->is_string() ? it->get<std::string>() : it->dump()).substr(0, 64));
}

std::optional<NcclPlacement> JsonPlacement(const json& result, const char* key) {
  const auto it = result.find(key);
  if (it == result.end() || !it->is_object()) return std::nullopt;
  NcclPlacement p{.time_us = JsonReal(*it, "time"),
                  .algbw_gbs = JsonReal(*it, "alg_bw"),
                  .busbw_gbs = JsonReal(*it, "bus_bw"),
                  .wrong = JsonReal(*it, "nwrong")};
  if (!p.time_us) p.time_us = JsonReal(*it, "cpu_time");  // -C: the CPU's time instead
  return p;
}

// A DOM parser that keeps what it built when the text ends early: a file that a killed run
// left half written still yields the sizes it finished.
class KeepingSaxParser : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  explicit KeepingSaxParser(json& into) : json_sax_dom_parser(into, false) {}
  bool parse_error(std::size_t position, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    error_at = position;
    return false;
  }
  std::optional<size_t> error_at;
};

// nccl-tests' -J file (JSON_FILE_VERSION 3, nccl-tests 2.17.3 and later): one table.
NcclTestsOutput ParseNcclTestsJson(std::string_view text) {
  NcclTestsOutput out;
  if (JsonNesting(text, kMaxFileJsonNesting) > kMaxFileJsonNesting) {
    out.problems.push_back(
        fmt::format("not nccl-tests JSON: nested deeper than {} levels (its files nest 4)",
                    kMaxFileJsonNesting));
    return out;
  }
  json doc;
  KeepingSaxParser sax(doc);
  json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json, false);
  if (!doc.is_object()) {
    out.problems.push_back("not nccl-tests JSON: no object at the top");
    return out;
  }
  NcclTable table;
  if (const auto args = doc.find("args");
      args != doc.end() && args->is_array() && !args->empty() && (*args)[0].is_string()) {
    const std::string binary = (*args)[0].get<std::string>();
    table.collective = SanitizeUtf8(binary.substr(binary.rfind('/') + 1).substr(0, 64));
  }
  table.nccl_version = JsonText(doc, "nccl_version");
  if (const auto devices = doc.find("devices"); devices != doc.end() && devices->is_array()) {
    std::set<std::string> seen;
    for (const json& d : *devices) {
      if (!d.is_object()) continue;
      ++table.ranks;
      const std::string host = JsonText(d, "hostname");
      if (!host.empty() && seen.insert(host).second) table.hosts.push_back(host);
    }
  }
  if (const auto results = doc.find("results"); results != doc.end() && results->is_array()) {
    for (const json& r : *results) {
      if (!r.is_object()) continue;
      const auto size = r.find("size");
      auto out_of_place = JsonPlacement(r, "out_of_place");
      auto in_place = JsonPlacement(r, "in_place");
      if (size == r.end() || !size->is_number_unsigned() || !out_of_place) {
        // (A file cut short ends in a result it did not finish: said once, below.)
        if (!sax.error_at && out.problems.size() < 100)
          out.problems.push_back(
              fmt::format("a result without a size (a whole number of bytes) "
                          "or its out_of_place figures: {}",
                          SanitizeUtf8(r.dump().substr(0, 120))));
        continue;
      }
      if (!Measurable(*out_of_place) || (in_place && !Measurable(*in_place))) {
        if (out.problems.size() < 100)
          out.problems.push_back(
              fmt::format("size {}: a figure no network measures (negative, or "
                          "past {:.0f} GB/s)",
                          size->get<uint64_t>(), kMaxGbs));
        continue;
      }
      NcclRow row{.size_bytes = size->get<uint64_t>(),
                  .type = JsonText(r, "type"),
                  .redop = JsonText(r, "redop"),
                  .root = JsonText(r, "root"),
                  .out_of_place = *out_of_place,
                  .in_place = in_place};
      if (const auto count = r.find("count"); count != r.end() && count->is_number_unsigned()) {
        row.count = count->get<uint64_t>();
      }
      table.rows.push_back(std::move(row));
    }
  }
  if (const auto bounds = doc.find("out_of_bounds"); bounds != doc.end() && bounds->is_object()) {
    if (const auto okay = bounds->find("okay"); okay != bounds->end() && okay->is_boolean()) {
      table.out_of_bounds_ok = okay->get<bool>();
    }
  }
  if (const auto avg = doc.find("average_bus_bandwidth"); avg != doc.end() && avg->is_object()) {
    table.reported_avg_busbw = JsonReal(*avg, "bandwidth");
  }
  if (const auto errors = doc.find("errors"); errors != doc.end() && errors->is_array()) {
    for (const json& e : *errors) {
      if (out.warnings.size() < 20 && e.is_string()) {
        out.warnings.push_back(SanitizeUtf8(e.get<std::string>().substr(0, 300)));
      }
    }
  }
  table.concluded = doc.contains("end_time") && !sax.error_at;
  // A result the cut ran through has no figure yet: not a size the run finished.
  while (sax.error_at && !table.rows.empty() && !table.rows.back().BestBusbw()) {
    table.rows.pop_back();
  }
  if (sax.error_at) {
    out.problems.push_back(
        fmt::format("the JSON ends early (byte {}): what it finished is kept", *sax.error_at));
  }
  out.tables.push_back(std::move(table));
  return out;
}

}  // namespace

NcclTestsOutput ParseNcclTestsOutput(std::string_view text) {
  // nccl-tests' -J file is a JSON object; its stdout never starts with '{'.
  if (const size_t first = text.find_first_not_of(" \t\r\n");
      first != std::string_view::npos && text[first] == '{') {
    NcclTestsOutput out = ParseNcclTestsJson(text);
    Parser figures;  // the same figures and problems as for a printed table
    figures.out = std::move(out);
    figures.Finish();
    return std::move(figures.out);
  }
  Parser parser;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    parser.Line(text.substr(start, end - start));
    start = end + 1;
  }
  parser.Finish();
  return std::move(parser.out);
}

json NcclTestsOutputJson(const NcclTestsOutput& output) {
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json tables = json::array();
  for (const NcclTable& t : output.tables) {
    json rows = json::array();
    for (const NcclRow& r : t.rows) {
      rows.push_back({{"size_bytes", r.size_bytes},
                      {"count", r.count},
                      {"type", r.type},
                      {"redop", r.redop},
                      {"root", r.root},
                      {"out_of_place", PlacementJson(r.out_of_place)},
                      {"in_place", r.in_place ? PlacementJson(*r.in_place) : json(nullptr)}});
    }
    tables.push_back(
        {{"source", t.source},
         {"collective", t.collective},
         {"tests_version", t.tests_version},
         {"cpu_stand_in", t.cpu_stand_in},
         {"nccl_version", t.nccl_version},
         {"ranks", t.ranks},
         {"hosts", t.hosts},
         {"concluded", t.concluded},
         {"wrong_is_count", t.wrong_is_count},
         {"out_of_bounds_ok", t.out_of_bounds_ok ? json(*t.out_of_bounds_ok) : json(nullptr)},
         {"reported_avg_busbw_gbs", optional(t.reported_avg_busbw)},
         {"peak_busbw_gbs", optional(t.peak_busbw_gbs)},
         {"peak_size_bytes", t.peak_busbw_gbs ? json(t.peak_size_bytes) : json(nullptr)},
         {"largest_size_busbw_gbs", optional(t.largest_size_busbw_gbs)},
         {"rows", rows}});
  }
  json tuning = json::array();
  for (const NcclTuning& t : output.tuning) {
    tuning.push_back(
        {{"function", t.function}, {"bytes", t.bytes}, {"algo", t.algo}, {"proto", t.proto}});
  }
  return {{"schema", "cmax.nccl-tests/v1"},
          {"tables", tables},
          {"tuning", tuning},
          {"warnings", output.warnings},
          {"problems", output.problems}};
}

}  // namespace cmax::net
