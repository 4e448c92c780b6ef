// The minimum-version table the versions checks grade against: per component, the lowest
// version vendor security advisories call fixed, by the component's own kind of release line
// (a driver branch, a runc release branch, a firmware train), with the date each fix became
// available (for a grace period), and the advisories. Data (data/audit_minimums.json, built into
// the binary; `cmax audit --minimums FILE` will take a newer one); every run records the table's
// date and SHA-256. Grading is a pure function of the table, the version seen and the time:
// a component or branch the table does not know is UNKNOWN, never PASS.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::audit {

// The components the audit's version checks grade (grading.cpp spells them from this list, checked
// when it compiles). A table's entry for any other is refused: a misspelt "nvidia_driver" would
// leave the driver's check UNKNOWN with only "no entry for nvidia-driver" to say why.
inline constexpr std::array<std::string_view, 11> kGradedComponents = {
    "nvidia-driver", "nvidia-container-toolkit", "cuda-toolkit", "docker",
    "runc",          "connectx-firmware",        "dcgm",         "dcgm-exporter",
    "nvhpc",         "linux-ubuntu-noble",       "amd-driver"};

// A component's name as a grading rule spells it: a name not in kGradedComponents does not
// compile.
struct GradedComponent {
  // NOLINTNEXTLINE(google-explicit-constructor): rules pass the name as a literal.
  consteval GradedComponent(const char* text) : name(text) {
    bool known = false;
    for (const std::string_view graded : kGradedComponents) known = known || graded == name;
    if (!known) throw "not in kGradedComponents";  // at compile time: an error there
  }
  std::string_view name;
};

// How a version finds its minimum.
enum class MinimumSelect {
  kWhole,       // one minimum for every version ("*")
  kMajor,       // by the first field: NVIDIA driver branches (570 for 570.211.01)
  kMajorMinor,  // by the first two: runc's release branches (1.3 for 1.3.6)
  kTrain,       // the first field names a firmware train; the last field must reach its minimum
  kModel,       // by the hardware it drives: AMD's driver for each Instinct model (MI300X)
};

// What a version whose branch the table does not list is, when some listed branch is newer.
enum class UnlistedBranch {
  kUnknown,  // not judged (an NVIDIA driver branch outside the bulletin)
  kFail,     // held to the next listed branch's minimum (an unmaintained runc branch)
};

struct ComponentMinimums {
  MinimumSelect select = MinimumSelect::kWhole;
  UnlistedBranch unlisted = UnlistedBranch::kUnknown;
  std::map<std::string, std::string> minimums;  // selector -> minimum version
  std::map<std::string, WallTime> available;    // selector -> when its fix became available
  std::vector<std::string> advisories;          // URLs (IsAdvisoryAddress)
  std::vector<std::string> cves;                // IsCveId
};

// What a table may name, as `--show-minimums` prints them and a failed check links them: a CVE
// id (CVE-YYYY-NNNN, four or more digits at the end) and an advisory's http(s) address of one
// printable line without spaces. Text from an advisory that is neither is not taken.
bool IsCveId(std::string_view text);
bool IsAdvisoryAddress(std::string_view text);

class MinimumTable {
 public:
  // Strict: unknown keys, a bad date, a minimum that is not a version, or a selector that does
  // not fit the component's kind is an error naming the component.
  static Result<MinimumTable> Parse(std::string_view json);
  static const MinimumTable& Builtin();

  WallTime Generated() const { return generated_; }
  const std::string& Sha256() const { return sha256_; }  // of the file as read
  int GraceDays() const { return grace_days_; }
  int MaxAgeDays() const { return max_age_days_; }
  const ComponentMinimums* Find(std::string_view component) const;
  const std::map<std::string, ComponentMinimums, std::less<>>& Components() const {
    return components_;
  }
  // A sentence to say loudly when the table is older than MaxAgeDays (fixes published since
  // are missing from it) or dated in the future; empty when neither.
  std::string AgeNotice(WallTime now) const;

 private:
  WallTime generated_{};
  std::string sha256_;
  int grace_days_ = 3;
  int max_age_days_ = 10;
  std::map<std::string, ComponentMinimums, std::less<>> components_;
};

struct VersionGrade {
  CheckStatus status = CheckStatus::kUnknown;  // kPass, kWarn (in grace), kFail or kUnknown
  std::string minimum;  // what the version was held to; empty when nothing was found
  std::string reason;   // one line for people
};

// The table for people: its date, age and digest, then per component its minimums by branch
// and its advisories.
std::string MinimumTableText(const MinimumTable& table, WallTime now);

// The selector ("*", "570", "1.3", "28") a version finds its minimum by, for a kind of
// component; nullopt when the version is not one. And two versions' order as the table sees
// them (1.5.0-rc.3 before 1.5.0); nullopt when either is not a version.
std::optional<std::string> MinimumSelector(MinimumSelect select, std::string_view version);
std::optional<int> CompareTableVersions(std::string_view a, std::string_view b);

// `observed` as the component reports it (a Debian epoch or revision, a leading 'v', and a
// release-candidate suffix such as 1.5.0-rc.3 are understood). A component whose minimums are
// by model is UNKNOWN here: it needs the models (below).
VersionGrade GradeVersion(const MinimumTable& table, std::string_view component,
                          std::string_view observed, WallTime now);

// A component whose minimum depends on the hardware it drives, graded against the minimum of
// each of the `models` present, the worst grade deciding (a minimum in force that is missed
// fails whatever the others say). A model the table does not list makes a version that passes
// the others UNKNOWN (never PASS for hardware the advisories were not read for).
VersionGrade GradeVersionForModels(const MinimumTable& table, std::string_view component,
                                   const std::vector<std::string>& models,
                                   std::string_view observed, WallTime now);

}  // namespace cmax::audit
