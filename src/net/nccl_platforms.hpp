// What a healthy platform's large-message NCCL bus bandwidth is, as data
// (data/nccl_platforms.json, built into the binary; `--platforms FILE` for one's own): per
// platform, entries by collective and node count, each with the public measurement it rests on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax::net {

struct NcclExpectation {
  std::string collective;  // "all_reduce" ..., or "*" for any
  int min_nodes = 1;
  int max_nodes = 0;     // 0: no upper bound
  double busbw_gbs = 0;  // the large-message bus bandwidth a healthy platform reaches
  std::string basis;     // where the figure comes from
  bool Matches(std::string_view collective_name, int nodes) const;
};

struct NcclPlatform {
  std::string name;
  std::string title;
  int gpus_per_node = 8;                  // the figures are for whole nodes: ranks = nodes x this
  std::vector<NcclExpectation> expected;  // the first that matches applies
  const NcclExpectation* Find(std::string_view collective, int nodes) const;
};

class NcclPlatforms {
 public:
  // Strict: unknown keys (with the key meant), a duplicate name, a figure that is not a
  // positive number, a node range that is empty.
  static Result<NcclPlatforms> Parse(std::string_view json);
  static const NcclPlatforms& Builtin();

  const NcclPlatform* Find(std::string_view name) const;
  const std::vector<NcclPlatform>& All() const { return platforms_; }
  std::string Names() const;  // "h100-nvlink, h200-nvlink, ..."
  // Each platform with its figures and what they rest on, for `cmax nccl platforms`.
  std::string Text() const;

 private:
  std::vector<NcclPlatform> platforms_;
};

}  // namespace cmax::net
