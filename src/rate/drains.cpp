#include "rate/drains.hpp"

#include <algorithm>
#include <array>
#include <cctype>

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

}  // namespace cmax::rate
