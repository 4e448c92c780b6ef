#include "net/nccl_platforms.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <set>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"
#include "net/json_fields.hpp"

namespace cmax::net {

extern const char* const kBuiltinNcclPlatforms;

namespace {

using nlohmann::json;

constexpr int kMaxNodes = 1 << 20;

// nccl-tests' benchmarks, by the name a curve carries ("all_reduce" of all_reduce_perf_mpi).
constexpr std::string_view kCollectives[] = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
    "alltoall",   "sendrecv",   "scatter",        "gather",    "hypercube"};

// A platform's name is what --platform takes: a word of letters, digits and ._-.
bool IsPlatformName(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Result<int> Nodes(const json& object, const char* key, int fallback, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxNodes) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl platforms: {}: \"{}\" must be a whole number of nodes in [0, {}]", where, key,
                kMaxNodes);
  }
  return static_cast<int>(it->get<int64_t>());
}

Result<NcclExpectation> ParseExpectation(const json& value, std::string_view where) {
  if (!value.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "nccl platforms: {}: not an object", where);
  }
  if (auto ok = OnlyKeys(value, {"collective", "min_nodes", "max_nodes", "busbw_gbs", "basis"},
                         fmt::format("nccl platforms: {}", where));
      !ok) {
    return tl::unexpected(ok.error());
  }
  NcclExpectation e;
  auto collective = TextOf("nccl platforms", value, "collective", where);
  auto basis = TextOf("nccl platforms", value, "basis", where);
  auto min_nodes = Nodes(value, "min_nodes", 1, where);
  auto max_nodes = Nodes(value, "max_nodes", 0, where);
  if (!collective) return tl::unexpected(collective.error());
  if (!basis) return tl::unexpected(basis.error());
  if (!min_nodes) return tl::unexpected(min_nodes.error());
  if (!max_nodes) return tl::unexpected(max_nodes.error());
  if (*collective != "*" && std::ranges::count(kCollectives, *collective) == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl platforms: {}: \"collective\" {} is none of nccl-tests' ({}, or * for any)",
                where, SanitizeUtf8(*collective), fmt::join(kCollectives, ", "));
  }
  e.collective = *collective;
  e.basis = *basis;
  e.min_nodes = std::max(1, *min_nodes);
  e.max_nodes = *max_nodes;
  if (e.max_nodes != 0 && e.max_nodes < e.min_nodes) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl platforms: {}: max_nodes {} is below min_nodes {}", where, e.max_nodes,
                e.min_nodes);
  }
  const auto bw = value.find("busbw_gbs");
  if (bw == value.end() || !bw->is_number() || !std::isfinite(bw->get<double>()) ||
      bw->get<double>() <= 0 || bw->get<double>() > 1e6) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl platforms: {}: \"busbw_gbs\" must be a number of GB/s in (0, 1e6]", where);
  }
  e.busbw_gbs = bw->get<double>();
  return e;
}

}  // namespace

bool NcclExpectation::Matches(std::string_view collective_name, int nodes) const {
  return (collective == "*" || collective == collective_name) && nodes >= min_nodes &&
         (max_nodes == 0 || nodes <= max_nodes);
}

const NcclExpectation* NcclPlatform::Find(std::string_view collective, int nodes) const {
  for (const NcclExpectation& e : expected) {
    if (e.Matches(collective, nodes)) return &e;
  }
  return nullptr;
}

Result<NcclPlatforms> NcclPlatforms::Parse(std::string_view text) {
  const auto document = ParseJsonObject(text);
  if (!document) return Wrap(document.error(), "nccl platforms");
  const json& doc = *document;
  if (auto ok = OnlyKeys(doc, {"schema", "note", "platforms"}, "nccl platforms"); !ok) {
    return tl::unexpected(ok.error());
  }
  if (doc.value("schema", json()) != "cmax.nccl-platforms/v1") {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl platforms: \"schema\" must be \"cmax.nccl-platforms/v1\"");
  }
  const auto list = doc.find("platforms");
  if (list == doc.end() || !list->is_array() || list->empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl platforms: \"platforms\" must be a list, not empty");
  }
  NcclPlatforms out;
  std::set<std::string> names;
  for (const json& value : *list) {
    const std::string where = fmt::format("platform {}", out.platforms_.size() + 1);
    if (!value.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "nccl platforms: {}: not an object", where);
    }
    if (auto ok = OnlyKeys(value, {"name", "title", "gpus_per_node", "expected"},
                           "nccl platforms: " + where);
        !ok) {
      return tl::unexpected(ok.error());
    }
    NcclPlatform platform;
    auto name = TextOf("nccl platforms", value, "name", where);
    auto title = TextOf("nccl platforms", value, "title", where);
    if (!name) return tl::unexpected(name.error());
    if (!title) return tl::unexpected(title.error());
    if (!IsPlatformName(*name)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "nccl platforms: {}: \"name\" '{}' must be a word of letters, digits and ._- "
                  "(what --platform takes), at most 64",
                  where, SanitizeUtf8(*name));
    }
    platform.name = *name;
    platform.title = *title;
    const auto gpus = value.find("gpus_per_node");
    if (gpus == value.end() || !gpus->is_number_integer() || gpus->get<int64_t>() < 1 ||
        gpus->get<int64_t>() > 1024) {
      return Fail(ErrorCode::kInvalidArgument,
                  "nccl platforms: platform '{}': \"gpus_per_node\" must be a whole number in "
                  "[1, 1024]",
                  SanitizeUtf8(platform.name));
    }
    platform.gpus_per_node = static_cast<int>(gpus->get<int64_t>());
    if (!names.insert(platform.name).second) {
      return Fail(ErrorCode::kInvalidArgument, "nccl platforms: platform '{}' is listed twice",
                  SanitizeUtf8(platform.name));
    }
    const auto expected = value.find("expected");
    if (expected == value.end() || !expected->is_array() || expected->empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "nccl platforms: platform '{}': \"expected\" must be a list, not empty",
                  SanitizeUtf8(platform.name));
    }
    for (const json& entry : *expected) {
      auto parsed =
          ParseExpectation(entry, fmt::format("platform '{}' entry {}", SanitizeUtf8(platform.name),
                                              platform.expected.size() + 1));
      if (!parsed) return tl::unexpected(parsed.error());
      platform.expected.push_back(std::move(*parsed));
    }
    out.platforms_.push_back(std::move(platform));
  }
  return out;
}

const NcclPlatforms& NcclPlatforms::Builtin() {
  static const NcclPlatforms kPlatforms = [] {
    auto parsed = Parse(kBuiltinNcclPlatforms);
    // The built-in file is checked by the tests; a build with a broken one is a broken build.
    if (!parsed) std::abort();
    return std::move(*parsed);
  }();
  return kPlatforms;
}

const NcclPlatform* NcclPlatforms::Find(std::string_view name) const {
  for (const NcclPlatform& p : platforms_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string NcclPlatforms::Text() const {
  std::string out;
  for (const NcclPlatform& p : platforms_) {
    out += fmt::format("{}  {} ({} GPUs per node)\n", p.name, p.title, p.gpus_per_node);
    for (const NcclExpectation& e : p.expected) {
      const std::string nodes =
          e.max_nodes == e.min_nodes
              ? fmt::format("{} node{}", e.min_nodes, e.min_nodes == 1 ? "" : "s")
          : e.max_nodes == 0 ? fmt::format("{}+ nodes", e.min_nodes)
                             : fmt::format("{}-{} nodes", e.min_nodes, e.max_nodes);
      out += fmt::format("  {:<14} {:<10} {:>7.1f} GB/s  {}\n",
                         e.collective == "*" ? "any collective" : e.collective, nodes, e.busbw_gbs,
                         e.basis);
    }
  }
  return out;
}

std::string NcclPlatforms::Names() const {
  std::string out;
  for (const NcclPlatform& p : platforms_) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace cmax::net
