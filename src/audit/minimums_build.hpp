// `cmax audit minimums build`: a minimum-version table (cmax.audit-minimums/v1, as
// data/audit_minimums.json) made from security advisories a user has mirrored: NVIDIA's CSAF 2.0
// documents (the GPU driver, Container Toolkit, CUDA Toolkit, DCGM, dcgm-exporter, ConnectX
// firmware) and OSV records (runc, Docker/Moby, the NVIDIA Container Toolkit). Per component and
// per release line (a driver branch, a runc minor, a firmware train) the minimum is the highest
// version an advisory calls fixed, and the date the fix became available is that advisory's.
// Pure: documents in, a table out; nothing is fetched.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::audit {

struct AdvisoryDocument {
  std::string name;  // where it came from, for messages: its file name
  std::string text;  // JSON
  // Found in a folder rather than named: a file that is no advisory is passed over (a mirror
  // holds indexes and metadata too) instead of being an error.
  bool in_folder = false;
};

struct MinimumsBuild {
  nlohmann::json table;  // a table MinimumTable::Parse accepts
  std::vector<std::string>
      used;  // one line per minimum set: "nvidia-driver 570 -> 570.211.01 (a.json)"
  std::vector<std::string> ignored;  // one line per document that named nothing cmax grades
};

// `base`: a table whose minimums are kept unless an advisory raises them (null: start empty).
// An input that is not JSON, or neither a CSAF document nor an OSV record, is an error naming
// it; so is a build that yields no minimum at all.
Result<MinimumsBuild> BuildMinimums(const std::vector<AdvisoryDocument>& documents,
                                    WallTime generated, const nlohmann::json* base = nullptr);

// The command's work: reads `paths` (files, and the *.json files of folders and their
// subfolders, each at most 16 MiB) and the --base table, and builds the table. Dated `generated`.
Result<MinimumsBuild> BuildMinimumsFromFiles(const std::vector<std::string>& paths,
                                             const std::string& base_path, WallTime generated,
                                             sys::FileSystem& fs);

}  // namespace cmax::audit
