#include "audit/fanout.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "core/sha256.hpp"
#include "core/strings.hpp"

namespace cmax::audit {
namespace {

constexpr std::string_view kFrameTag = "#cmax-evidence/1";

std::string NodeWord(std::string_view node) {
  std::string word(node.empty() ? "unnamed" : node);
  for (char& c : word) {
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!kept) c = '_';
  }
  return word;
}

// The worse a status, the higher: a node that fails outweighs one that cannot be read, which
// outweighs a warning; a check that does not apply on a node says nothing about the others.
int Badness(CheckStatus status) {
  switch (status) {
    case CheckStatus::kFail: return 5;
    case CheckStatus::kUnknown: return 4;
    case CheckStatus::kWarn: return 3;
    case CheckStatus::kAttest: return 2;
    case CheckStatus::kPass: return 1;
    case CheckStatus::kSkip: return 0;
  }
  return 0;
}

// One document's pieces as they arrive.
struct Pieces {
  size_t count = 0;
  std::map<size_t, std::string> pieces;
};

}  // namespace

std::string FrameDocument(std::string_view node, const nlohmann::json& document) {
  const std::string text = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string digest = Sha256Hex(text);
  const std::string name = NodeWord(node);
  // The header's length with the widest index and count this document can have.
  const size_t header = kFrameTag.size() + name.size() + digest.size() + 2 * 20 + 6;
  const size_t room = kFrameLineBytes > header + 64 ? kFrameLineBytes - header : 64;
  const size_t count = std::max<size_t>(1, (text.size() + room - 1) / room);
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    out += fmt::format("{} {} {} {} {} {}\n", kFrameTag, name, i, count, digest,
                       std::string_view(text).substr(i * room, room));
  }
  return out;
}

Result<nlohmann::json> UsableNodeDocument(NodeDocument heard) {
  if (!heard.document) return Fail(ErrorCode::kIo, "{}", heard.problem);
  nlohmann::json& doc = *heard.document;
  if (doc.contains("error")) {
    return Fail(ErrorCode::kIo, "{}",
                SanitizeUtf8(doc["error"].is_string() ? doc["error"].get<std::string>()
                                                      : doc["error"].dump()));
  }
  if (!doc.contains("evidence") || !doc["evidence"].is_object()) {
    return Fail(ErrorCode::kIo, "its answer holds no evidence");
  }
  return std::move(doc);
}

std::map<std::string, NodeDocument> ReadFrames(std::string_view text) {
  // Keyed by node, then digest: a node heard twice (a step retried) keeps each try apart.
  std::map<std::string, std::map<std::string, Pieces>> heard;
  for (std::string_view line : Split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t at = line.find(kFrameTag);
    if (at == std::string_view::npos) continue;  // srun's own words, a label before the tag
    line.remove_prefix(at + kFrameTag.size());
    std::vector<std::string_view> fields;
    for (int i = 0; i < 4; ++i) {  // node, index, count, digest; the piece follows
      if (line.empty() || line[0] != ' ') break;
      line.remove_prefix(1);
      const size_t end = line.find(' ');
      fields.push_back(line.substr(0, end));
      line = end == std::string_view::npos ? std::string_view() : line.substr(end);
    }
    if (fields.size() != 4 || line.empty() || line[0] != ' ') continue;
    const auto index = ParseWhole<size_t>(fields[1]);
    const auto count = ParseWhole<size_t>(fields[2]);
    if (!index || !count || *count == 0 || *index >= *count || fields[3].size() != 64) continue;
    Pieces& pieces = heard[std::string(fields[0])][std::string(fields[3])];
    if (pieces.count != 0 && pieces.count != *count) continue;  // a garbled line
    pieces.count = *count;
    pieces.pieces.emplace(*index, std::string(line.substr(1)));
  }
  std::map<std::string, NodeDocument> documents;
  for (const auto& [node, tries] : heard) {
    NodeDocument& result = documents[node];
    for (const auto& [digest, pieces] : tries) {
      if (pieces.pieces.size() != pieces.count) {
        result.problem = fmt::format("its evidence was cut short: {} of {} pieces arrived",
                                     pieces.pieces.size(), pieces.count);
        continue;
      }
      std::string whole;
      for (const auto& [index, piece] : pieces.pieces) whole += piece;
      if (Sha256Hex(whole) != digest) {
        result.problem = "its evidence arrived garbled (the digest does not match)";
        continue;
      }
      auto parsed = nlohmann::json::parse(whole, nullptr, false);
      if (parsed.is_discarded() || !parsed.is_object()) {
        result.problem = "its evidence is not a JSON object";
        continue;
      }
      result.document = std::move(parsed);
      result.problem.clear();
      break;
    }
  }
  return documents;
}

std::vector<Finding> WorstNodeFindings(const std::vector<NodeFindings>& nodes) {
  std::vector<Finding> combined;
  if (nodes.empty()) return combined;
  const size_t checks = nodes.front().findings.size();
  for (size_t c = 0; c < checks; ++c) {
    const NodeFindings* worst = &nodes.front();
    std::map<int, std::pair<CheckStatus, size_t>, std::greater<>> tally;  // by badness
    std::set<std::string> messages;
    for (const NodeFindings& node : nodes) {
      const Finding& f = node.findings.at(c);
      auto& [status, count] = tally[Badness(f.status)];
      status = f.status;
      ++count;
      messages.insert(f.message);
      if (Badness(f.status) > Badness(worst->findings.at(c).status)) worst = &node;
    }
    Finding finding = worst->findings.at(c);
    std::vector<std::string> counts;
    for (const auto& [badness, entry] : tally) {
      counts.push_back(fmt::format("{} on {}", StatusName(entry.first), entry.second));
    }
    const std::string spread =
        nodes.size() == 1   ? fmt::format("on the 1 node")
        : tally.size() == 1 ? fmt::format("{} on all {} nodes",
                                          StatusName(tally.begin()->second.first), nodes.size())
                            : fmt::format("{} of {} nodes", Join(counts, ", "), nodes.size());
    finding.message = messages.size() == 1 && tally.size() == 1 && nodes.size() > 1
                          ? fmt::format("{} ({})", finding.message, spread)
                          : fmt::format("{}: {} ({})", worst->node, finding.message, spread);
    combined.push_back(std::move(finding));
  }
  return combined;
}

std::vector<Finding> UnreachableNodeFindings(std::vector<Finding> graded, std::string_view reason) {
  for (Finding& f : graded) {
    if (f.status == CheckStatus::kUnknown) f.message = fmt::format("no evidence: {}", reason);
  }
  return graded;
}

nlohmann::json FabricTiers(size_t nodes) {
  constexpr size_t kOneTierNodes = 64;
  return {{"nodes", nodes}, {"multi_tier", nodes > kOneTierNodes}, {"source", "node count"}};
}

nlohmann::json PerNodeStatuses(const std::vector<NodeFindings>& nodes) {
  nlohmann::json out = nlohmann::json::object();
  for (const NodeFindings& node : nodes) {
    for (const Finding& f : node.findings) {
      out[f.check_id][std::string(StatusName(f.status))].push_back(node.node);
    }
  }
  return out;
}

std::vector<EvidenceItem> ClusterEvidence(std::string_view target, const nlohmann::json& coverage,
                                          const std::vector<NodeFindings>& nodes,
                                          const nlohmann::json& documents) {
  std::vector<EvidenceItem> out = {{"audit.target", nlohmann::json(target).dump()},
                                   {"audit.coverage", coverage.dump()},
                                   {"audit.per_node", PerNodeStatuses(nodes).dump()}};
  for (const auto& [node, doc] : documents.items()) {
    out.push_back({"audit.node." + node, doc.dump()});
  }
  return out;
}

}  // namespace cmax::audit
