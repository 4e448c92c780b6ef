#include "remediate/kube_conditions.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/log.hpp"
#include "core/strings.hpp"

namespace cmax::remediate {
namespace {

using nlohmann::json;

bool Serious(const NodeCondition& c) {
  return c.severity >= Severity::kHigh;
}

// "soft_lockup" and 0 -> "SoftLockup"; "xid" and 79 -> "Xid79": a condition reason is CamelCase.
std::string ReasonWord(const NodeCondition& c) {
  std::string word;
  bool upper = true;
  for (const char ch : c.kind) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0) {
      upper = true;
      continue;
    }
    word.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch);
    upper = false;
  }
  if (word.empty()) word = "Fault";
  if (c.code != 0) word += std::to_string(c.code);
  return word;
}

}  // namespace

std::string EncodeConditions(const std::vector<NodeCondition>& conditions, size_t max_items) {
  std::vector<const NodeCondition*> order;
  order.reserve(conditions.size());
  for (const NodeCondition& c : conditions) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const NodeCondition* a, const NodeCondition* b) {
    if (a->recovered != b->recovered) return !a->recovered;
    if (a->severity != b->severity) return a->severity > b->severity;
    return a->key < b->key;
  });
  if (order.size() > max_items) order.resize(max_items);
  json list = json::array();
  for (const NodeCondition* c : order) {
    list.push_back({{"key", c->key},
                    {"component", c->component},
                    {"device", c->device},
                    {"kind", c->kind},
                    {"code", c->code},
                    {"severity", SeverityName(c->severity)},
                    {"action", c->action},
                    {"message", SanitizeUtf8(c->message.substr(0, 300))},
                    {"count", c->count},
                    {"first_seen", FormatIso8601(c->first_seen)},
                    {"last_seen", FormatIso8601(c->last_seen)},
                    {"recovered", c->recovered}});
  }
  return list.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<NodeCondition>> DecodeConditions(const std::string& node,
                                                    std::string_view text) {
  const json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) {
    return Fail(ErrorCode::kCorrupt, "{} on {} is not a JSON list", kKubeConditionsAnnotation,
                node);
  }
  std::vector<NodeCondition> out;
  for (const json& item : list) {
    NodeCondition c;
    c.node = node;
    c.key = KubeStr(item, {"key"});
    if (c.key.empty()) {
      return Fail(ErrorCode::kCorrupt, "{} on {}: a condition without a key",
                  kKubeConditionsAnnotation, node);
    }
    c.component = KubeStr(item, {"component"});
    c.device = KubeStr(item, {"device"});
    c.kind = KubeStr(item, {"kind"});
    c.code = static_cast<int>(KubeInt(item, {"code"}));
    auto severity = ParseSeverity(KubeStr(item, {"severity"}));
    if (!severity) {
      return Fail(ErrorCode::kCorrupt, "{} on {}: {}", kKubeConditionsAnnotation, node,
                  severity.error().message);
    }
    c.severity = *severity;
    c.action = KubeStr(item, {"action"});
    c.action_source = "kubernetes";
    c.message = KubeStr(item, {"message"});
    const int64_t count = KubeInt(item, {"count"});
    c.count = count > 0 ? static_cast<uint64_t>(count) : 1;
    auto first = ParseIso8601(KubeStr(item, {"first_seen"}));
    auto last = ParseIso8601(KubeStr(item, {"last_seen"}));
    if (!first || !last) {
      return Fail(ErrorCode::kCorrupt, "{} on {}: condition {} has no readable times",
                  kKubeConditionsAnnotation, node, c.key);
    }
    c.first_seen = *first;
    c.last_seen = *last;
    const json& recovered = KubeField(item, {"recovered"});
    c.recovered = recovered.is_boolean() && recovered.get<bool>();
    out.push_back(std::move(c));
  }
  return out;
}

FaultSummary SummarizeFaults(const std::vector<NodeCondition>& conditions) {
  std::vector<const NodeCondition*> active;
  for (const NodeCondition& c : conditions) {
    if (!c.recovered && Serious(c)) active.push_back(&c);
  }
  if (active.empty()) return {false, "NoFault", "no serious fault"};
  std::stable_sort(
      active.begin(), active.end(),
      [](const NodeCondition* a, const NodeCondition* b) { return a->severity > b->severity; });
  const NodeCondition& worst = *active.front();
  std::string message = worst.message.empty() ? ReasonWord(worst) : worst.message;
  if (!worst.action.empty()) message += " (" + worst.action + ")";
  if (active.size() > 1) message += fmt::format("; {} more", active.size() - 1);
  return {true, ReasonWord(worst), SanitizeUtf8(message)};
}

Result<std::string> KubeConditionPublisher::Publish(const std::string& node,
                                                    const std::vector<NodeCondition>& conditions) {
  const std::string text = EncodeConditions(conditions);
  if (text == last_) return std::string("unchanged");
  const FaultSummary summary = SummarizeFaults(conditions);
  std::string was;  // the CmaxFault status on the Node before
  auto patched = api_.PatchNode(node, [&](const json& current, std::string& detail) -> json {
    was = KubeConditionStatus(current, kKubeFaultConditionType);
    if (KubeStr(current, {"metadata", "annotations", kKubeConditionsAnnotation.data()}) == text) {
      detail = "already published";
      return nullptr;
    }
    detail = fmt::format("published {} condition(s)", conditions.size());
    json patch;
    patch["metadata"]["annotations"][kKubeConditionsAnnotation] = text;
    return patch;
  });
  if (!patched) return patched;
  const std::string now_status = summary.active ? "True" : "False";
  if (!(was.empty() && !summary.active)) {  // no condition at all until there is something to say
    if (auto ok = api_.SetNodeCondition(node, kKubeFaultConditionType, summary.active,
                                        summary.reason, summary.message, was != now_status);
        !ok) {
      return tl::unexpected(ok.error());
    }
  }
  last_ = text;
  return patched;
}

Result<int> ImportKubeConditions(KubeApi& api, store::Store& store) {
  auto nodes = api.List("/api/v1/nodes", "");
  if (!nodes) return tl::unexpected(nodes.error());
  std::vector<NodeCondition> all;
  for (const json& node : *nodes) {
    const std::string text =
        KubeStr(node, {"metadata", "annotations", kKubeConditionsAnnotation.data()});
    if (text.empty()) continue;
    const std::string name = KubeStr(node, {"metadata", "name"});
    auto decoded = DecodeConditions(name, text);
    if (!decoded) {
      log::Warn("{}", decoded.error().message);
      continue;
    }
    all.insert(all.end(), std::make_move_iterator(decoded->begin()),
               std::make_move_iterator(decoded->end()));
  }
  if (auto ok = store.SaveConditions(all, {}); !ok) return tl::unexpected(ok.error());
  return static_cast<int>(all.size());
}

}  // namespace cmax::remediate
