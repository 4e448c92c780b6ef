// dcgmi diag's table (without -j), read into the same report as its JSON. The geometry and the
// words are DCGM's dcgmi/Diag.cpp at v3.3.9, v4.2.3 and v4.6.0: every row 78 characters, "| "
// a 25-character name cell " | " a 46-character result cell " |"; a message cut into
// 45-character pieces, the first beside its label, the rest under an empty name cell.
#include <algorithm>
#include <cctype>
#include <optional>

#include "active/dcgm_diag.hpp"
#include "core/strings.hpp"

namespace cmax::active {
namespace {

DiagStatus WordStatus(std::string_view word) {
  const std::string lower = ToLower(Trim(word));
  if (lower == "pass") return DiagStatus::kPass;
  if (lower == "fail") return DiagStatus::kFail;
  if (lower == "warn") return DiagStatus::kWarn;
  if (lower == "skip") return DiagStatus::kSkip;
  if (lower == "not run") return DiagStatus::kNotRun;
  return DiagStatus::kOther;
}

std::optional<int> Number(std::string_view text) {
  const auto value = ParseWhole<int>(text);
  return value && *value >= 0 ? value : std::nullopt;
}

// One row of the table: its two cells; the result cell also as printed (45 characters of a
// message piece, spaces kept, so that pieces join back into the message).
struct TableRow {
  std::string_view name;
  std::string_view value;  // trimmed
  std::string_view piece;  // untrimmed, at most 45 characters
};

std::optional<TableRow> RowOf(std::string_view line) {
  if (line.size() < 4 || line.front() != '|') return std::nullopt;
  const size_t middle = line.find('|', 1);
  const size_t last = line.rfind('|');
  if (middle == std::string_view::npos || last <= middle) return std::nullopt;
  TableRow row;
  row.name = Trim(line.substr(1, middle - 1));
  std::string_view right = line.substr(middle + 1, last - middle - 1);
  if (!right.empty() && right.front() == ' ') right.remove_prefix(1);
  constexpr size_t kPiece = 45;  // DCGM's DATA_INFO_TAG_LEN
  row.piece = right.substr(0, kPiece);
  row.value = Trim(right);
  return row;
}

// "|-----  Hardware  ----------+---...|" or "+-----  Stress  ---...+": the category's name.
std::optional<std::string> CategoryOf(std::string_view line) {
  if (!(line.starts_with("|-----") || line.starts_with("+-----"))) return std::nullopt;
  const std::string_view rest = line.substr(6);
  const std::string_view name = Trim(rest.substr(0, rest.find('-')));
  if (name.empty()) return std::nullopt;
  return std::string(name);
}

// "0, 2, 3" -> {0, 2, 3}; nullopt for anything else.
std::optional<std::vector<int>> GpuList(std::string_view text) {
  std::vector<int> out;
  std::string ids(text);
  std::ranges::replace(ids, ',', ' ');
  for (std::string_view id : SplitFields(ids)) {
    const auto gpu = Number(id);
    if (!gpu) return std::nullopt;
    out.push_back(*gpu);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// DCGM 3.3's result group: "Pass - All", "Fail - GPU: 0", "Pass - GPUs: 0, 2, 3".
struct Group {
  DiagStatus status = DiagStatus::kOther;
  std::optional<std::vector<int>> gpus;  // nullopt: "All"
};
std::optional<Group> GroupOf(std::string_view value) {
  const size_t dash = value.find(" - ");
  if (dash == std::string_view::npos) return std::nullopt;
  const DiagStatus status = WordStatus(value.substr(0, dash));
  if (status == DiagStatus::kOther) return std::nullopt;
  const std::string_view rest = Trim(value.substr(dash + 3));
  if (rest == "All") return Group{status, std::nullopt};
  for (std::string_view prefix : {"GPUs:", "GPU:"}) {
    if (rest.starts_with(prefix)) {
      if (auto gpus = GpuList(rest.substr(prefix.size()))) return Group{status, std::move(gpus)};
    }
  }
  return std::nullopt;
}

// DCGM 4's entity row: "GPU0: Pass", "GPU1: " (not run, 4.0 to 4.4), "GPU1: Not Run",
// "CPU0: Pass"; the entity's group, id and word.
struct Entity {
  std::string group;
  int id = 0;
  DiagStatus status = DiagStatus::kOther;
};
std::optional<Entity> EntityOf(std::string_view value) {
  const size_t colon = value.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view name = value.substr(0, colon);
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1])) != 0) --digits;
  if (digits == 0 || digits == name.size()) return std::nullopt;
  if (!std::ranges::all_of(name.substr(0, digits), [](char c) {
        return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
      })) {
    return std::nullopt;
  }
  const std::string_view word = Trim(value.substr(colon + 1));
  const DiagStatus status = word.empty() ? DiagStatus::kNotRun : WordStatus(word);
  const auto id = Number(name.substr(digits));
  if (status == DiagStatus::kOther || !id) return std::nullopt;
  return Entity{.group = std::string(name.substr(0, digits)), .id = *id, .status = status};
}

// "Warning", "Error", "Info" (3.3), "Warning: GPU0", "Info: GPU0" (4): a message's kind and,
// in DCGM 4, its GPU.
struct Label {
  bool info = false;
  std::optional<int> gpu;
};
std::optional<Label> LabelOf(std::string_view name) {
  const size_t colon = name.find(':');
  const std::string_view kind = Trim(name.substr(0, colon));
  if (kind != "Warning" && kind != "Error" && kind != "Info") return std::nullopt;
  Label label{.info = kind == "Info"};
  if (colon != std::string_view::npos) {
    const std::string_view entity = Trim(name.substr(colon + 1));
    if (entity.starts_with("GPU")) label.gpu = Number(entity.substr(3));
  }
  return label;
}

// DCGM 3.3 names the GPU at the start of its message: "GPU 1 Max power of ...".
std::optional<int> GpuInWords(std::string_view message) {
  if (!message.starts_with("GPU ")) return std::nullopt;
  const std::string_view rest = message.substr(4);
  return Number(rest.substr(0, rest.find(' ')));
}

std::string_view TrimEnd(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

// The reading of one table, row by row.
class TableReader {
 public:
  void Row(std::string_view line) {
    if (auto name = CategoryOf(line)) {
      category_ = *name;
      test_ = std::nullopt;
      message_ = std::nullopt;
      return;
    }
    if (line.starts_with('+')) {
      // A border: the header's top, the === under it, or the table's end.
      if (line.starts_with("+---") && !category_.empty()) closed_ = true;
      message_ = std::nullopt;
      return;
    }
    const auto row = RowOf(line);
    if (!row || (row->name == "Diagnostic" && row->value == "Result")) return;
    closed_ = false;
    if (category_ == "Metadata") {
      if (row->name == "DCGM Version") report_.version = SanitizeUtf8(row->value);
      if (row->name == "GPU Device IDs Detected" && !row->value.ends_with("...")) {
        gpus_detected_ = static_cast<int>(Split(row->value, ',').size());
      }
      return;
    }
    if (category_.empty()) return;
    if (!row->name.empty()) {
      if (const auto label = LabelOf(row->name); label && test_) {
        Message(*label, *row);
      } else {
        Test(*row);
      }
      return;
    }
    if (!test_) return;
    // No name: another result group (3.3), an entity's row (4: "GPU0: Pass", which also ends
    // the message above it), or a message's next piece.
    if (const auto group = GroupOf(row->value); group && group->gpus) {
      Test().results.push_back({.gpus = *group->gpus, .status = group->status});
      Test().status = std::max(Test().status, group->status);
      message_ = std::nullopt;
    } else if (const auto entity = EntityOf(row->value)) {
      message_ = std::nullopt;
      if (entity->group == "GPU") Result(entity->id).status = entity->status;
    } else if (message_) {
      Text(*message_) += std::string(row->piece);
    }
  }

  bool Closed() const { return closed_; }
  DiagReport& Report() { return report_; }

 private:
  // Where a message's pieces go: a result's warning or its info.
  struct MessageAt {
    size_t result = 0;
    std::optional<size_t> warning;  // nullopt: the info
  };

  DiagTest& Test() { return report_.tests[*test_]; }
  std::string& Text(const MessageAt& at) {
    DiagResult& r = Test().results[at.result];
    return at.warning ? r.warnings[*at.warning] : r.info;
  }
  size_t ResultIndex(std::optional<int> gpu) {
    std::vector<DiagResult>& results = Test().results;
    for (size_t i = 0; i < results.size(); ++i) {
      if (gpu ? std::ranges::find(results[i].gpus, *gpu) != results[i].gpus.end()
              : results[i].gpus.empty()) {
        return i;
      }
    }
    DiagResult added{.status = Test().status};
    if (gpu) added.gpus = {*gpu};
    results.push_back(std::move(added));
    return results.size() - 1;
  }
  DiagResult& Result(int gpu) { return Test().results[ResultIndex(gpu)]; }

  void Test(const TableRow& row) {
    report_.tests.push_back({.category = category_, .name = SanitizeUtf8(row.name)});
    test_ = report_.tests.size() - 1;
    message_ = std::nullopt;
    if (const auto group = GroupOf(row.value)) {
      DiagResult r{.status = group->status};
      if (group->gpus) {
        r.gpus = *group->gpus;
      } else {
        for (int g = 0; g < gpus_detected_; ++g) r.gpus.push_back(g);
      }
      Test().status = group->status;
      Test().results.push_back(std::move(r));
    } else {
      // DCGM 4's word ("" for a test that did not run, 4.0 to 4.4), or 3.3's deployment check.
      Test().status = row.value.empty() ? DiagStatus::kNotRun : WordStatus(row.value);
    }
  }

  void Message(const Label& label, const TableRow& row) {
    // DCGM 3.3 prints the deployment checks' messages after all of them: they belong to the
    // check that failed or warned, not to the last one listed.
    if (category_ == "Deployment" && !label.gpu) {
      for (size_t i = report_.tests.size(); i-- > 0 && report_.tests[i].category == category_;) {
        if (report_.tests[i].status >= DiagStatus::kWarn) {
          test_ = i;
          break;
        }
      }
    }
    const std::optional<int> gpu = label.gpu ? label.gpu : GpuInWords(row.value);
    MessageAt at{.result = ResultIndex(gpu)};
    DiagResult& r = Test().results[at.result];
    if (label.info) {
      if (!r.info.empty()) r.info += "; ";
      r.info += std::string(row.piece);
    } else {
      r.warnings.emplace_back(row.piece);
      at.warning = r.warnings.size() - 1;
    }
    message_ = at;
  }

  DiagReport report_;
  std::string category_;
  std::optional<size_t> test_;
  std::optional<MessageAt> message_;
  int gpus_detected_ = 0;  // DCGM 3.3's "All", as GPU indices
  bool closed_ = false;
};

}  // namespace

Result<DiagReport> ParseDcgmDiagText(std::string_view text) {
  TableReader reader;
  bool in_table = false;
  std::string error_line;
  bool error_open = false;
  for (std::string_view raw : SplitLines(text)) {
    const std::string_view line = TrimEnd(raw);
    if (!in_table) {
      if (line.starts_with("Error:") && error_line.empty()) {
        error_line = std::string(Trim(line.substr(6)));
        error_open = true;
        continue;
      }
      // DCGM 4 puts the system's words on the line after "Return: (rc) ".
      if (error_open && !Trim(line).empty() && !line.starts_with('+')) {
        error_line += " " + std::string(Trim(line));
      }
      error_open = false;
      in_table = line.starts_with("+---");
      if (!in_table) continue;
    }
    reader.Row(line);
  }
  if (!in_table) {
    if (!error_line.empty()) {
      return Fail(ErrorCode::kUnavailable, "dcgmi diag could not run: {}",
                  SanitizeUtf8(error_line));
    }
    return Fail(ErrorCode::kCorrupt, "dcgmi diag: neither its table nor its JSON");
  }
  DiagReport& out = reader.Report();
  if (!reader.Closed()) {
    return Fail(ErrorCode::kCorrupt, "dcgmi diag: the table was cut short{}",
                out.tests.empty() ? "" : " after " + out.tests.back().name);
  }
  if (out.tests.empty()) return Fail(ErrorCode::kCorrupt, "dcgmi diag: no test in the table");
  for (DiagTest& t : out.tests) {
    for (DiagResult& r : t.results) {
      for (std::string& w : r.warnings) w = SanitizeUtf8(Trim(w));
      r.info = SanitizeUtf8(Trim(r.info));
    }
    out.worst = std::max(out.worst, t.status);
    if (t.status == DiagStatus::kFail || t.status == DiagStatus::kWarn) {
      out.problems.push_back(DiagProblem(t));
    }
  }
  return std::move(out);
}

Result<DiagReport> ParseDcgmDiag(std::string_view text) {
  const std::string_view start = Trim(text);
  return !start.empty() && start.front() == '{' ? ParseDcgmDiagJson(text) : ParseDcgmDiagText(text);
}

}  // namespace cmax::active
