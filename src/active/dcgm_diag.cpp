#include "active/dcgm_diag.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_read.hpp"
#include "core/strings.hpp"

namespace cmax::active {
namespace {

using nlohmann::json;

DiagStatus StatusOf(std::string_view word) {
  const std::string lower = ToLower(Trim(word));
  if (lower == "pass") return DiagStatus::kPass;
  if (lower == "fail") return DiagStatus::kFail;
  if (lower == "warn" || lower == "warning") return DiagStatus::kWarn;
  if (lower == "skip" || lower == "skipped") return DiagStatus::kSkip;
  if (lower == "not run" || lower == "notrun" || lower == "not_run") return DiagStatus::kNotRun;
  return DiagStatus::kOther;
}

// "0", "0,1,2", 3, [0, 1]: the GPUs a result is about.
std::vector<int> GpusOf(const json& value) {
  std::vector<int> out;
  if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() < 4096) {
    out.push_back(static_cast<int>(value.get<int64_t>()));
  } else if (value.is_string()) {
    std::string ids = value.get<std::string>();  // commas or spaces between them
    std::ranges::replace(ids, ',', ' ');
    for (std::string_view id : SplitFields(ids)) {
      if (const auto gpu = ParseWhole<int>(id); gpu && *gpu >= 0) out.push_back(*gpu);
    }
  } else if (value.is_array()) {
    for (const json& v : value) {
      const std::vector<int> more = GpusOf(v);
      out.insert(out.end(), more.begin(), more.end());
    }
  }
  return out;
}

DiagResult ResultOf(const json& r) {
  DiagResult out;
  out.status = StatusOf(TextOf(r, "status"));
  if (const json* group = Member(r, "entity_group"); group != nullptr) {
    // DCGM 4: only a GPU entity names a GPU (a CPU, a switch, a link are not GPUs).
    if (group->is_string() && ToLower(group->get<std::string>()) == "gpu") {
      if (const json* id = Member(r, "entity_id")) out.gpus = GpusOf(*id);
    }
  } else if (const json* ids = Member(r, "gpu_ids")) {
    out.gpus = GpusOf(*ids);
  } else if (const json* id = Member(r, "gpu_id")) {
    out.gpus = GpusOf(*id);
  }
  if (const json* warnings = Member(r, "warnings"); warnings != nullptr && warnings->is_array()) {
    for (const json& w : *warnings) {
      std::string said = w.is_string() ? w.get<std::string>() : TextOf(w, "warning");
      // DCGM 3's deployment checks write their message under "warnings" inside each warning.
      if (said.empty()) said = TextOf(w, "warnings");
      if (said.empty()) said = TextOf(w, "message");
      if (!said.empty()) out.warnings.push_back(SanitizeUtf8(said));
    }
  }
  if (const json* info = Member(r, "info")) {
    if (info->is_string()) {
      out.info = SanitizeUtf8(info->get<std::string>());
    } else if (info->is_array()) {
      std::vector<std::string> lines;
      for (const json& line : *info) {
        if (line.is_string()) lines.push_back(SanitizeUtf8(line.get<std::string>()));
      }
      out.info = Join(lines, "; ");
    }
  }
  return out;
}

}  // namespace

std::string DiagProblem(const DiagTest& test) {
  // The first result of the test's own status; where none has it (DCGM 4 sums a GPU's "Fail"
  // up as the test's "Warn"), the worst.
  DiagStatus wanted = test.status;
  if (std::ranges::none_of(test.results, [&](const DiagResult& r) { return r.status == wanted; }) &&
      !test.results.empty()) {
    wanted = std::ranges::max(test.results, {}, &DiagResult::status).status;
  }
  for (const DiagResult& r : test.results) {
    if (r.status != wanted) continue;
    std::string where;
    if (!r.gpus.empty()) {
      std::vector<std::string> ids;
      for (int gpu : r.gpus) ids.push_back(std::to_string(gpu));
      where = fmt::format("GPU {}: ", Join(ids, ","));
    }
    const std::string said = !r.warnings.empty() ? r.warnings.front() : r.info;
    return fmt::format("{}: {}{}", test.name, where,
                       said.empty() ? DiagStatusName(r.status) : said);
  }
  return fmt::format("{}: {}", test.name, DiagStatusName(test.status));
}

std::string_view DiagStatusName(DiagStatus status) {
  switch (status) {
    case DiagStatus::kPass: return "pass";
    case DiagStatus::kSkip: return "skip";
    case DiagStatus::kNotRun: return "not run";
    case DiagStatus::kOther: return "other";
    case DiagStatus::kWarn: return "warn";
    case DiagStatus::kFail: return "fail";
  }
  return "other";
}

Result<DiagReport> ParseDcgmDiagJson(std::string_view text) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Fail(ErrorCode::kCorrupt, "dcgmi diag: not a JSON document");
  }
  const json* root = nullptr;
  for (const char* key : {"DCGM Diagnostic", "DCGM GPU Diagnostic"}) {
    if (const json* r = Member(doc, key); r != nullptr && r->is_object()) root = r;
  }
  if (root == nullptr) {
    return Fail(ErrorCode::kCorrupt,
                "dcgmi diag: no \"DCGM Diagnostic\" (or DCGM 3's \"DCGM GPU Diagnostic\") object");
  }
  DiagReport out;
  // DCGM 4 under "metadata"; DCGM 3 beside the root object (or, with a runtime error, in it).
  out.version = TextAt(doc, {"metadata", "version"});
  if (out.version.empty()) out.version = TextOf(doc, "version");
  if (out.version.empty()) out.version = TextOf(*root, "version");
  out.version = SanitizeUtf8(out.version);
  if (const std::string error = TextOf(*root, "runtime_error"); !error.empty()) {
    return Fail(ErrorCode::kUnavailable, "dcgmi diag could not run: {}", SanitizeUtf8(error));
  }
  const json* categories = Member(*root, "test_categories");
  if (categories == nullptr || !categories->is_array()) {
    return Fail(ErrorCode::kCorrupt, "dcgmi diag: no test_categories list");
  }
  for (const json& category : *categories) {
    const json* tests = Member(category, "tests");
    if (tests == nullptr || !tests->is_array()) continue;
    for (const json& t : *tests) {
      if (!t.is_object()) continue;
      DiagTest test{.category = SanitizeUtf8(TextOf(category, "category")),
                    .name = SanitizeUtf8(TextOf(t, "name"))};
      if (const json* results = Member(t, "results"); results != nullptr && results->is_array()) {
        for (const json& r : *results) {
          if (r.is_object()) test.results.push_back(ResultOf(r));
        }
      }
      const std::string summary = TextAt(t, {"test_summary", "status"});
      if (!summary.empty()) {
        test.status = StatusOf(summary);
      } else if (!test.results.empty()) {
        test.status = std::ranges::max(test.results, {}, &DiagResult::status).status;
      }
      out.worst = std::max(out.worst, test.status);
      if (test.status == DiagStatus::kFail || test.status == DiagStatus::kWarn) {
        out.problems.push_back(DiagProblem(test));
      }
      out.tests.push_back(std::move(test));
    }
  }
  if (out.tests.empty()) return Fail(ErrorCode::kCorrupt, "dcgmi diag: no test in the document");
  return out;
}

json DiagReportJson(const DiagReport& report) {
  json tests = json::array();
  for (const DiagTest& t : report.tests) {
    json results = json::array();
    for (const DiagResult& r : t.results) {
      results.push_back({{"gpus", r.gpus},
                         {"status", DiagStatusName(r.status)},
                         {"warnings", r.warnings},
                         {"info", r.info}});
    }
    tests.push_back({{"category", t.category},
                     {"name", t.name},
                     {"status", DiagStatusName(t.status)},
                     {"results", std::move(results)}});
  }
  return {{"version", report.version},
          {"worst", DiagStatusName(report.worst)},
          {"problems", report.problems},
          {"tests", std::move(tests)}};
}

}  // namespace cmax::active
