#include "active/nvbandwidth.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "core/strings.hpp"

namespace cmax::active {
namespace {

std::optional<int> Index(std::string_view text) {
  const auto value = ParseWhole<int>(text);
  return value && *value >= 0 ? value : std::nullopt;
}

// "name: value" lines of the header; "" when `line` is not one.
std::string_view After(std::string_view line, std::string_view name) {
  if (!line.starts_with(name)) return {};
  return Trim(line.substr(name.size()));
}

}  // namespace

Result<NvbandwidthReport> ParseNvbandwidthText(std::string_view text) {
  NvbandwidthReport out;
  BandwidthTest* test = nullptr;
  size_t columns = 0;  // of the matrix being read, from its header
  for (std::string_view line : SplitLines(text)) {
    line = Trim(line);
    if (line.empty()) continue;
    if (const auto v = After(line, "nvbandwidth Version:"); !v.empty()) {
      out.version = SanitizeUtf8(v);
      continue;
    }
    if (const auto v = After(line, "Driver Version:"); !v.empty()) {
      out.driver_version = SanitizeUtf8(v);
      continue;
    }
    if (line.starts_with("Device ") && test == nullptr) {
      // "Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)"
      const size_t colon = line.find(':');
      const auto index =
          colon == std::string_view::npos ? std::nullopt : Index(line.substr(7, colon - 7));
      if (index && *index < 1024) {
        if (out.devices.size() <= static_cast<size_t>(*index)) {
          out.devices.resize(static_cast<size_t>(*index) + 1);
        }
        out.devices[static_cast<size_t>(*index)] = SanitizeUtf8(Trim(line.substr(colon + 1)));
      }
      continue;
    }
    if (line.starts_with("Running ")) {
      std::string_view name = Trim(line.substr(8));
      while (name.ends_with('.')) name.remove_suffix(1);
      out.tests.push_back({.name = SanitizeUtf8(name)});
      test = &out.tests.back();
      columns = 0;
      continue;
    }
    if (test == nullptr) continue;
    if (line.starts_with("SUM ")) {
      const std::vector<std::string_view> fields = SplitFields(line);
      if (fields.size() >= 3) test->sum = ParseNonNegative(fields.back());
      continue;
    }
    if (line.starts_with("Waived")) {
      test->waived = true;
      continue;
    }
    if (line.find("bandwidth") != std::string_view::npos && line.find("(GB/s)") != line.npos) {
      test->description = SanitizeUtf8(line);
      continue;
    }
    const std::vector<std::string_view> fields = SplitFields(line);
    bool all_indices = true;
    for (std::string_view f : fields) all_indices = all_indices && Index(f).has_value();
    if (all_indices) {  // the column header: "0 1 2 ... 7"
      columns = fields.size();
      continue;
    }
    if (Index(fields.front()) && fields.size() >= 2) {
      std::vector<std::optional<double>> row;
      bool numbers = true;
      for (size_t i = 1; i < fields.size(); ++i) {
        if (fields[i] == "N/A") {
          row.emplace_back(std::nullopt);
        } else if (const auto v = ParseNonNegative(fields[i])) {
          row.emplace_back(*v);
        } else {
          numbers = false;
        }
      }
      // A row shorter than the header is an output cut inside it: its last figure may be cut
      // too ("3" of "389.12"), so none of the row is taken.
      if (numbers && columns > 0 && row.size() < columns) {
        test->error = "the output stops inside its matrix";
        continue;
      }
      if (numbers) {
        test->matrix.push_back(std::move(row));
        continue;
      }
    }
    if (test->matrix.empty() && test->error.empty()) test->error = SanitizeUtf8(line);
  }
  if (out.tests.empty()) {
    return Fail(ErrorCode::kCorrupt,
                "nvbandwidth: no test in the output (no \"Running ...\" line)");
  }
  return out;
}

Result<NvbandwidthReport> ParseNvbandwidthJson(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  const nlohmann::json* root =
      doc.is_object() && doc.contains("nvbandwidth") ? &doc["nvbandwidth"] : nullptr;
  if (root == nullptr || !root->is_object()) {
    return Fail(ErrorCode::kCorrupt, "nvbandwidth: not its JSON document (no \"nvbandwidth\")");
  }
  NvbandwidthReport out;
  out.version = SanitizeUtf8(TextOf(*root, "version"));
  out.driver_version = SanitizeUtf8(TextOf(*root, "Driver Version"));
  if (const auto list = root->find("GPU Device list"); list != root->end() && list->is_array()) {
    for (const nlohmann::json& d : *list) {
      // "0: NVIDIA H100 80GB HBM3 (00000000:18:00): (node001)"
      if (!d.is_string()) continue;
      const std::string& line = d.get_ref<const std::string&>();
      const size_t colon = line.find(": ");
      out.devices.push_back(
          SanitizeUtf8(colon == std::string::npos ? line : line.substr(colon + 2)));
    }
  }
  const auto tests = root->find("testcases");
  if (tests == root->end() || !tests->is_array()) {
    const std::string error = TextOf(*root, "error", "no testcases");
    return Fail(ErrorCode::kCorrupt, "nvbandwidth: {}", SanitizeUtf8(Trim(error)));
  }
  for (const nlohmann::json& t : *tests) {
    const std::string name = TextOf(t, "name");
    if (name.empty()) continue;
    BandwidthTest test{.name = SanitizeUtf8(name)};
    const std::string status = TextOf(t, "status");
    test.description = SanitizeUtf8(TextOf(t, "bandwidth_description"));
    if (const auto sum = t.find("sum"); sum != t.end() && sum->is_number()) {
      test.sum = sum->get<double>();
    }
    if (const auto matrix = t.find("bandwidth_matrix"); matrix != t.end() && matrix->is_array()) {
      for (const nlohmann::json& r : *matrix) {
        if (!r.is_array()) continue;
        std::vector<std::optional<double>> row;
        for (const nlohmann::json& cell : r) {
          if (cell.is_string()) {
            row.push_back(ParseNonNegative(cell.get_ref<const std::string&>()));
          } else if (cell.is_number() && cell.get<double>() >= 0) {
            row.emplace_back(cell.get<double>());
          } else {
            row.emplace_back(std::nullopt);
          }
        }
        test.matrix.push_back(std::move(row));
      }
    }
    if (status == "Waived") {
      test.waived = true;
    } else if (status == "Running") {
      test.error = "the test never finished (nvbandwidth stopped during it)";
    } else if (status == "ERROR") {
      test.error = "nvbandwidth does not know this test";
    } else if (status != "Passed") {
      test.error = fmt::format("nvbandwidth said \"{}\"", SanitizeUtf8(status));
    }
    // A test that errs is listed twice (first "Running", then "Error"): the last word stands.
    std::erase_if(out.tests, [&](const BandwidthTest& b) { return b.name == test.name; });
    out.tests.push_back(std::move(test));
  }
  // A fatal assertion prints the document at once, with its message, during the last test.
  if (const std::string error = TextOf(*root, "error");
      !error.empty() && !out.tests.empty() && !out.tests.back().error.empty()) {
    out.tests.back().error = SanitizeUtf8(Trim(error));
  }
  if (out.tests.empty()) return Fail(ErrorCode::kCorrupt, "nvbandwidth: no test in the document");
  return out;
}

Result<NvbandwidthReport> ParseNvbandwidth(std::string_view text) {
  const std::string_view start = Trim(text);
  if (start.starts_with('{')) return ParseNvbandwidthJson(text);
  return ParseNvbandwidthText(text);
}

nlohmann::json NvbandwidthJson(const NvbandwidthReport& report) {
  nlohmann::json tests = nlohmann::json::array();
  for (const BandwidthTest& t : report.tests) {
    nlohmann::json matrix = nlohmann::json::array();
    for (const auto& row : t.matrix) {
      nlohmann::json cells = nlohmann::json::array();
      for (const auto& cell : row) cells.push_back(cell ? nlohmann::json(*cell) : nullptr);
      matrix.push_back(std::move(cells));
    }
    tests.push_back({{"name", t.name},
                     {"description", t.description},
                     {"waived", t.waived},
                     {"error", t.error},
                     {"matrix", std::move(matrix)},
                     {"sum", t.sum ? nlohmann::json(*t.sum) : nullptr}});
  }
  return {{"version", report.version},
          {"driver_version", report.driver_version},
          {"devices", report.devices},
          {"tests", std::move(tests)}};
}

const std::vector<BandwidthTestUse>& HealthBandwidthTests() {
  static const std::vector<BandwidthTestUse> kUses = {
      {"host_to_device_memcpy_ce", "nvbandwidth.host_to_device_gbs", "host to device", false},
      {"device_to_host_memcpy_ce", "nvbandwidth.device_to_host_gbs", "device to host", false},
      {"device_to_device_memcpy_read_ce", "nvbandwidth.device_to_device_read_gbs",
       "device to device read", true},
  };
  return kUses;
}

std::vector<Finding> JudgeBandwidth(const NvbandwidthReport& report, const GpuClass* gpu_class,
                                    const ActiveThresholds& thresholds) {
  std::vector<Finding> out;
  for (const BandwidthTestUse& use : HealthBandwidthTests()) {
    const std::string check_id = fmt::format("active.nvbandwidth.{}", use.test);
    const std::optional<Threshold> threshold =
        gpu_class != nullptr ? thresholds.For(*gpu_class, use.metric) : std::nullopt;
    const BandwidthTest* test = nullptr;
    for (const BandwidthTest& t : report.tests) {
      if (t.name == use.test) test = &t;
    }
    const auto unknown = [&](std::string why) {
      out.push_back({.check_id = check_id,
                     .status = CheckStatus::kUnknown,
                     .severity = Severity::kLow,
                     .observed = "no figure",
                     .expected = threshold ? threshold->words + " GB/s" : "a bandwidth matrix",
                     .message = fmt::format("{}: {}", use.words, why)});
    };
    if (test == nullptr) {
      // Asked of a class with a limit for it (or of a GPU not in the table): said; a test the
      // class has no limit for (P2P on a part without NVLink) is not asked.
      if (gpu_class == nullptr || threshold) unknown("not in nvbandwidth's output");
      continue;
    }
    if (test->waived) {
      unknown("waived by nvbandwidth (not supported on this system)");
      continue;
    }
    // The direction between a row's GPU and a column's, as the test describes it ("GPU(row)
    // -> GPU(column)" for reads); "and" when it does not say.
    const std::string_view arrow = test->description.find("(row) <-") != std::string::npos ? "<-"
                                   : test->description.find("(row) ->") != std::string::npos
                                       ? "->"
                                       : "and";
    // The worst cell, and every cell below the limit.
    std::optional<double> worst;
    std::string worst_label;
    std::vector<std::string> below;
    for (size_t r = 0; r < test->matrix.size(); ++r) {
      for (size_t c = 0; c < test->matrix[r].size(); ++c) {
        const auto& cell = test->matrix[r][c];
        if (!cell) continue;
        const std::string label =
            use.pairs ? fmt::format("GPU {} {} GPU {}", r, arrow, c)
                      : (test->matrix.size() == 1 ? fmt::format("GPU {}", c)
                                                  : fmt::format("row {} GPU {}", r, c));
        if (!worst || *cell < *worst) {
          worst = *cell;
          worst_label = label;
        }
        if (threshold && *cell < threshold->min) {
          below.push_back(fmt::format("{} ({})", label, FigureText(*cell)));
        }
      }
    }
    if (!worst) {
      unknown(test->error.empty() ? "no figure in its matrix" : test->error);
      continue;
    }
    Finding f = JudgeFigure({.check_id = check_id,
                             .label = fmt::format("{} {}", worst_label, use.words),
                             .observed = *worst,
                             .unit = "GB/s"},
                            gpu_class, threshold);
    if (below.size() > 1) {
      f.message += fmt::format("; {} below it: {}", below.size(), Join(below, ", "));
    }
    // A matrix read only in part: a figure below the limit stands; a pass does not (what is
    // missing was not measured).
    if (!test->error.empty() && f.status != CheckStatus::kFail) {
      f.status = CheckStatus::kUnknown;
      f.severity = Severity::kLow;
      f.message += fmt::format("; {}", test->error);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace cmax::active
