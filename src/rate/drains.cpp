#include "rate/drains.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "core/strings.hpp"

namespace cmax::rate {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Whether `word` stands in `text` as a word of its own (letters or digits on neither side), so
// that "ib" does not match "lib" and "nic" does not match "panic".
bool HasWord(const std::string& text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || std::isalnum(static_cast<unsigned char>(text[at - 1])) == 0;
    const size_t end = at + word.size();
    const bool right =
        end >= text.size() || std::isalnum(static_cast<unsigned char>(text[end])) == 0;
    if (left && right) return true;
  }
  return false;
}

struct CauseWords {
  DrainCause cause;
  std::vector<std::string_view> words;
};

// Tried in order: a reason that names a GPU and a link ("nvlink") is the GPU's.
const std::array<CauseWords, 4>& Table() {
  static const std::array<CauseWords, 4> kTable = {{
      {DrainCause::kGpu,
       {"xid", "sxid", "gpu", "gpus", "gpu_fallen_off_bus", "ecc", "nvlink", "nvswitch", "dcgm",
        "hbm", "nvml"}},
      {DrainCause::kCpuLockup, {"soft_lockup", "lockup", "hung_task", "hung", "rcu_stall", "rcu"}},
      {DrainCause::kFilesystem,
       {"fs_timeout", "filesystem", "nfs", "lustre", "gpfs", "weka", "mount", "autofs",
        "virtiofs"}},
      {DrainCause::kNetwork,
       {"nic_link_down", "nic_fatal", "nic", "link", "infiniband", "ib", "roce", "mlx5", "network",
        "ethernet", "port"}},
  }};
  return kTable;
}

}  // namespace

std::string_view DrainCauseName(DrainCause cause) {
  switch (cause) {
    case DrainCause::kGpu: return "GPU";
    case DrainCause::kCpuLockup: return "CPU lockup";
    case DrainCause::kFilesystem: return "filesystem";
    case DrainCause::kNetwork: return "network";
    case DrainCause::kOther: return "other";
  }
  return "other";
}

DrainCause CauseOfDrain(std::string_view reason) {
  const std::string text = Lower(reason);
  for (const CauseWords& entry : Table()) {
    for (const std::string_view word : entry.words) {
      if (HasWord(text, word)) return entry.cause;
    }
  }
  return DrainCause::kOther;
}

std::vector<DrainsOfCause> SplitDrains(const std::vector<std::string>& reasons) {
  std::vector<DrainsOfCause> out;
  for (const DrainCause cause : {DrainCause::kGpu, DrainCause::kCpuLockup, DrainCause::kFilesystem,
                                 DrainCause::kNetwork, DrainCause::kOther}) {
    out.push_back({.cause = cause});
  }
  for (const std::string& reason : reasons) {
    DrainsOfCause& entry = out[static_cast<size_t>(CauseOfDrain(reason))];
    ++entry.drains;
    const std::string clean = SanitizeUtf8(reason);
    if (entry.examples.size() < 3 &&
        std::ranges::find(entry.examples, clean) == entry.examples.end()) {
      entry.examples.push_back(clean);
    }
  }
  return out;
}

std::vector<DrainRecord> DrainsSeenInTimelines(const std::vector<const RunRecord*>& runs) {
  std::vector<DrainRecord> drains;
  std::set<std::tuple<std::string, std::string, std::string>> counted;  // node, at, reason
  for (const RunRecord* run : runs) {
    for (const EvidenceItem& item : run->evidence) {
      const bool timeline =
          item.key.ends_with(".timeline") &&
          (item.key.starts_with("reliability.") ||
           (item.key.starts_with("phase.") && item.key.find(".reliability.") != std::string::npos));
      if (!timeline) continue;
      const nlohmann::json doc = nlohmann::json::parse(item.value_json, nullptr, false);
      if (!doc.is_object() || !doc.contains("observations") || !doc["observations"].is_array()) {
        continue;
      }
      const auto text = [](const nlohmann::json& object, const char* key) {
        const auto it = object.find(key);
        return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      const std::string step_node = text(doc, "node");
      const std::string injected = text(doc, "record");
      for (const nlohmann::json& seen : doc["observations"]) {
        if (!seen.is_object() || seen.value("kind", nlohmann::json()) != "drained") continue;
        const std::string node = text(seen, "node");
        const std::string at = text(seen, "at");
        // Where the scheduler gave no reason of its own (none, or only the maintenance
        // reservation a node is validated in: remediate::SchedulerNode::ServiceReason) for the
        // node the step injected into, the drain followed that fault, and that is its cause.
        std::string reason = text(seen, "detail");
        if ((reason.empty() || reason == "in a maintenance reservation") && !injected.empty() &&
            !node.empty() && node == step_node) {
          reason = "after the injected " + injected;
        }
        if (reason.empty()) reason = "(the scheduler gave no reason)";
        if (!counted.emplace(node, at, reason).second) continue;
        const auto when = ParseIso8601(at);
        drains.push_back({node, when ? std::optional(*when) : std::nullopt, std::move(reason)});
      }
    }
  }
  return drains;
}

std::vector<std::string> MergeDrains(const std::vector<DrainRecord>& journal,
                                     const std::vector<DrainRecord>& seen) {
  constexpr auto kSameDrain = std::chrono::minutes(15);
  std::vector<std::string> out;
  std::vector<bool> matched(journal.size(), false);
  for (const DrainRecord& drain : journal) out.push_back(drain.reason);
  for (const DrainRecord& drain : seen) {
    bool same = false;
    for (size_t i = 0; i < journal.size() && !same; ++i) {
      const DrainRecord& j = journal[i];
      if (matched[i] || j.node != drain.node || !j.at || !drain.at) continue;
      const auto apart = *j.at > *drain.at ? *j.at - *drain.at : *drain.at - *j.at;
      if (apart <= kSameDrain) same = matched[i] = true;
    }
    if (!same) out.push_back(drain.reason);
  }
  return out;
}

}  // namespace cmax::rate
