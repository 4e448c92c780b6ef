// The audit on every node (pure parts). Each node runs `cmax audit --node-evidence`, which
// prints its evidence as framed lines; the auditing host reads the frames back out of srun's
// merged output, grades each node, and keeps, per check, the worst node's finding.
//
// Why frames: srun merges the output of every task into one stream, and Slurm forwards a long
// line in pieces that another node's output can land between. So a node's evidence (one JSON
// document) is cut into numbered lines short enough to travel whole, each carrying the
// document's SHA-256; the reader puts a node's pieces back together, in any order and among
// any other output, and takes the document only when every piece is there and the digest holds.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"

namespace cmax::audit {

// Each line: "#cmax-evidence/1 NODE INDEX COUNT SHA256 PIECE", at most kFrameLineBytes long
// with its newline, so that it fits one of Slurm's I/O messages (1 KiB).
inline constexpr size_t kFrameLineBytes = 900;

// A node's document framed into lines. `node` is written with anything but [A-Za-z0-9._-]
// replaced by '_' (Slurm's node names never need it).
std::string FrameDocument(std::string_view node, const nlohmann::json& document);

struct NodeDocument {
  std::optional<nlohmann::json> document;  // set when every piece arrived and the digest holds
  std::string problem;                     // else why not ("3 of 7 pieces", "digest mismatch")
};
// Every node's document found in `text`; lines that are not frames are skipped.
std::map<std::string, NodeDocument> ReadFrames(std::string_view text);

// A node's document when it holds evidence; else why not: the pieces that did not come, the
// error the node sent (its deadline passed), or no evidence in it. Pure.
Result<nlohmann::json> UsableNodeDocument(NodeDocument heard);

// One node's findings, in the order of the checks graded.
struct NodeFindings {
  std::string node;
  std::vector<Finding> findings;
};
// Per check, the worst node's finding decides (FAIL, then UNKNOWN, WARN, ATTEST, PASS, N/A):
// its status, observed and expected values; its message names that node and how the nodes
// came out ("FAIL on 2, PASS on 6 of 8 nodes"). Every entry must hold the same checks in the
// same order. Pure.
std::vector<Finding> WorstNodeFindings(const std::vector<NodeFindings>& nodes);

// The node's findings when it gave no evidence: each UNKNOWN among `graded` (graded on no
// evidence) says why the node could not be read instead of "not collected".
std::vector<Finding> UnreachableNodeFindings(std::vector<Finding> graded, std::string_view reason);

// What the number of nodes says about the fabric, for networking.nccl-ib-qps: more than 64
// nodes cannot hang off one switch tier (the public audit's threshold too).
nlohmann::json FabricTiers(size_t nodes);

// Per check, which nodes came out how: {"CHECK": {"FAIL": ["gpu3"], "PASS": [...]}}.
nlohmann::json PerNodeStatuses(const std::vector<NodeFindings>& nodes);

// What a cluster audit (Slurm, Kubernetes) records beside its findings: audit.target,
// audit.coverage, audit.per_node (PerNodeStatuses) and audit.node.NAME for each node's document
// (`documents`: an object, node name to document).
std::vector<EvidenceItem> ClusterEvidence(std::string_view target, const nlohmann::json& coverage,
                                          const std::vector<NodeFindings>& nodes,
                                          const nlohmann::json& documents);

}  // namespace cmax::audit
