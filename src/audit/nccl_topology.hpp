// The NCCL topology file a node's jobs would load: NCCL_TOPO_FILE from the environment, else
// from /etc/nccl.conf, else NCCL's default path (/var/run/nvidia-topologyd/virtualTopology.xml,
// which NCCL loads when it is there). Read-only: the file is read, never started in a container.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "audit/grading.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::audit {

// Where NCCL looks when NCCL_TOPO_FILE is not set (NCCL's src/graph/topo.cc).
inline constexpr const char* kNcclDefaultTopoFile = "/var/run/nvidia-topologyd/virtualTopology.xml";
// NCCL keeps at most 256 nodes of a topology: a real file is a few kB.
inline constexpr size_t kNcclTopoFileMaxBytes = size_t{4} << 20;

// Why NCCL's own reader (src/graph/xml.cc) would not load `text` as a topology, with the line:
// tags that do not nest or close, a value not in double quotes, text or a tab where it takes
// only spaces and line ends, an XML declaration, a root other than <system version="1">, more
// than its 256 elements. Nothing when it would.
std::optional<std::string> NcclTopologyXmlProblem(std::string_view text);

// Adds network.nccl.topo_file: null when no file is named and the default is absent; else
// {path, source ("NCCL_TOPO_FILE", "/etc/nccl.conf" or "NCCL's default path"), found, bytes,
// problem (null: a topology file)}; and network.nccl.topo_file_sha256 of what was read (null
// when nothing was). `environment` holds NCCL_TOPO_FILE where it is set; `nccl_conf` is the
// parsed /etc/nccl.conf (network.nccl.conf), or nullptr.
void CollectNcclTopologyFile(const sys::FileSystem& fs,
                             const std::map<std::string, std::string>& environment,
                             const nlohmann::json* nccl_conf, AuditEvidence& out);

}  // namespace cmax::audit
