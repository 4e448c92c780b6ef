#include "active/ib_write_bw.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/strings.hpp"

namespace cmax::active {
namespace {

// " Device         : mlx5_0" and the two-column lines ("Dual-port : OFF\t\tDevice : mlx5_0"):
// each "name : value" pair of the settings block.
void ReadSettings(std::string_view line, IbWriteBwReport& out) {
  size_t at = 0;
  while (at < line.size()) {
    const size_t tab = line.find('\t', at);
    const std::string_view pair =
        line.substr(at, tab == std::string_view::npos ? line.npos : tab - at);
    at = tab == std::string_view::npos ? line.size() : tab + 1;
    const size_t colon = pair.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = Trim(pair.substr(0, colon));
    const std::string_view value = Trim(pair.substr(colon + 1));
    if (name == "Device") out.device = SanitizeUtf8(value);
    if (name == "Link type") out.link_type = SanitizeUtf8(value);
    if (name == "Transport type") out.transport = SanitizeUtf8(value);
    if (name == "Connection type") out.connection = SanitizeUtf8(value);
    if (name == "Number of qps")
      out.qps = static_cast<int>(ParseWhole<uint64_t>(value).value_or(0));
    if (name == "Mtu") {
      // "4096[B]"
      out.mtu =
          static_cast<int>(ParseWhole<uint64_t>(value.substr(0, value.find('['))).value_or(0));
    }
  }
}

// The factor from the printed unit to Gb/s; 0 for a unit this reader does not know.
double ToGbits(std::string_view unit) {
  if (unit == "Gb/sec") return 1.0;
  // perftest's MB is 2^20 bytes (its format factor 0x100000), whichever way it is written.
  if (unit == "MB/sec" || unit == "MiB/sec") return 1048576.0 * 8 / 1e9;
  return 0;
}

// `trimmed`: a line without its surrounding spaces.
bool IsError(std::string_view trimmed) {
  for (std::string_view start :
       {"Couldn't", "Unable", "Failed", "Error", "error", "ERROR", "Completion with error"}) {
    if (trimmed.starts_with(start)) return true;
  }
  return false;
}

}  // namespace

double IbWriteBwReport::AverageGbits() const {
  if (rows.empty()) return 0;
  return std::ranges::max(rows, {}, &IbBwRow::bytes).average_gbits;
}

Result<IbWriteBwReport> ParseIbWriteBw(std::string_view text) {
  IbWriteBwReport out;
  double factor = 0;
  bool in_table = false;
  std::string first_error;
  for (const std::string_view line : SplitLines(text)) {
    const std::string_view trimmed = Trim(line);
    if (trimmed.empty()) continue;
    if (trimmed.starts_with("---")) {
      in_table = false;
      continue;
    }
    if (trimmed.starts_with("#bytes")) {
      // " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
      const size_t open = trimmed.find("BW peak[");
      const size_t close = open == std::string_view::npos ? open : trimmed.find(']', open);
      if (close == std::string_view::npos) {
        return Fail(ErrorCode::kCorrupt, "ib_write_bw: a result header without its unit: {}",
                    SanitizeUtf8(trimmed));
      }
      out.unit = SanitizeUtf8(trimmed.substr(open + 8, close - open - 8));
      factor = ToGbits(out.unit);
      if (factor == 0) {
        return Fail(ErrorCode::kCorrupt,
                    "ib_write_bw: bandwidth in {}, a unit this reader does not know", out.unit);
      }
      in_table = true;
      continue;
    }
    if (in_table) {
      const std::vector<std::string_view> fields = SplitFields(trimmed);
      const auto bytes = fields.size() >= 4 ? ParseWhole<uint64_t>(fields[0]) : std::nullopt;
      const auto iterations = fields.size() >= 4 ? ParseWhole<uint64_t>(fields[1]) : std::nullopt;
      const auto peak = fields.size() >= 4 ? ParseNonNegative(fields[2]) : std::nullopt;
      const auto average = fields.size() >= 4 ? ParseNonNegative(fields[3]) : std::nullopt;
      if (bytes && iterations && peak && average) {
        const auto rate = fields.size() >= 5 ? ParseNonNegative(fields[4]) : std::nullopt;
        out.rows.push_back({.bytes = *bytes,
                            .iterations = *iterations,
                            .peak_gbits = *peak * factor,
                            .average_gbits = *average * factor,
                            .msg_rate_mpps = rate.value_or(0)});
        continue;
      }
      // A line inside the table that is no row: a warning perftest printed between rows.
    }
    if (trimmed.find("BW Test") != std::string_view::npos && out.test.empty()) {
      out.test = SanitizeUtf8(trimmed);
      continue;
    }
    if (trimmed.find(" : ") != std::string_view::npos ||
        trimmed.find(": ") != std::string_view::npos) {
      ReadSettings(line, out);
    }
    if (trimmed.starts_with("Conflicting CPU frequency") || trimmed.starts_with("Warning") ||
        trimmed.starts_with("WARNING")) {
      out.notes.push_back(SanitizeUtf8(trimmed));
    } else if (IsError(trimmed) && first_error.empty()) {
      first_error = SanitizeUtf8(trimmed);
    }
  }
  if (out.rows.empty()) {
    if (!first_error.empty()) return Fail(ErrorCode::kCorrupt, "ib_write_bw: {}", first_error);
    return Fail(ErrorCode::kCorrupt, "ib_write_bw: no result table in the output");
  }
  return out;
}

nlohmann::json IbWriteBwJson(const IbWriteBwReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const IbBwRow& r : report.rows) {
    rows.push_back({{"bytes", r.bytes},
                    {"iterations", r.iterations},
                    {"peak_gbits", r.peak_gbits},
                    {"average_gbits", r.average_gbits},
                    {"msg_rate_mpps", r.msg_rate_mpps}});
  }
  return {{"test", report.test},
          {"device", report.device},
          {"link_type", report.link_type},
          {"transport", report.transport},
          {"connection", report.connection},
          {"qps", report.qps},
          {"mtu", report.mtu},
          {"unit", report.unit},
          {"average_gbits", report.AverageGbits()},
          {"rows", std::move(rows)},
          {"notes", report.notes}};
}

}  // namespace cmax::active
