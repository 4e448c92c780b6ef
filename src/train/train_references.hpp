// Published training throughput as data (data/train_references.json, built into the binary):
// tokens/s per GPU for a named model, platform and parallelism, each copied unrounded from the
// file it was published in, with that file's address. A run's steady throughput is held
// against one (`cmax train log --reference ID`): its share, and a finding.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::train {

struct TrainReference {
  std::string id;  // "llama3_8b-h100-8gpu-fsdp-ac-selective"
  std::string model;
  std::string platform;
  int gpus = 0;
  std::string parallelism;
  std::string dtype;  // "" where the source does not say
  double tokens_per_s_per_gpu = 0;
  std::optional<double> mfu_pct;
  std::string date;  // "2024-12"; "" where the source does not say
  std::string source;
  std::string notes;
  std::string Words()
      const;  // "5,762 tokens/s/GPU: llama3_8b on 8 H100 ..., FSDP ..., bf16, 2024-12"
};

class TrainReferences {
 public:
  // Strict: unknown keys (with the key meant), an id twice, a throughput that is not positive,
  // a source that is not an address.
  static Result<TrainReferences> Parse(std::string_view json);
  static const TrainReferences& Builtin();

  const TrainReference* Find(std::string_view id) const;
  const std::vector<TrainReference>& All() const { return references_; }
  // Those whose id holds every word of `filter` ("llama3_8b h100", space-separated); all for "".
  std::vector<const TrainReference*> Matching(std::string_view filter) const;
  // The matching ones, one line each; "" when none matches.
  std::string Text(std::string_view filter = "") const;
  // The matching ones as a JSON array, every field of each (`cmax train references --json`).
  nlohmann::json Json(std::string_view filter = "") const;

 private:
  std::vector<TrainReference> references_;
};

// How a measured steady throughput stands against a reference: PASS at 90 % or more, WARN from
// 70 %, FAIL below (cmax's own bands: the published figure is one job's, on its day). Pure.
struct ReferenceShare {
  const TrainReference* reference = nullptr;
  double measured = 0;
  double share = 0;  // measured over the reference's
};
Finding ReferenceFinding(const std::string& label, const ReferenceShare& share);

}  // namespace cmax::train
