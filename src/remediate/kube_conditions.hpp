// Conditions from node agents to a central controller through the Kubernetes API, the way
// node-problem-detector hands its findings to remediators: each agent writes its node's
// conditions onto its own Node object (annotation cmax.dev/conditions, JSON, for machines; node
// condition CmaxFault, for `kubectl describe node` and alerting), and `cmax remediate run
// --conditions-from kubernetes` reads them all into its store before each step. Agents then need
// no rights but patching nodes; the controller alone evicts, cordons and runs Jobs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/run_record.hpp"
#include "remediate/kube_api.hpp"
#include "store/store.hpp"

namespace cmax::remediate {

inline constexpr std::string_view kKubeConditionsAnnotation = "cmax.dev/conditions";
inline constexpr std::string_view kKubeFaultConditionType = "CmaxFault";

// Worst first, unrecovered before recovered, at most `max_items` (an annotation is small);
// messages are cut to 300 bytes.
std::string EncodeConditions(const std::vector<NodeCondition>& conditions, size_t max_items = 100);
// The conditions `text` holds, as conditions of `node` (the Node's own name: what the text
// says about its node is ignored, so no agent speaks for another node).
Result<std::vector<NodeCondition>> DecodeConditions(const std::string& node, std::string_view text);

// The node condition that sums the conditions up: True while a serious one (high or critical)
// has not recovered; its reason names the worst ("Xid79", "SoftLockup").
struct FaultSummary {
  bool active = false;
  std::string reason;
  std::string message;
};
FaultSummary SummarizeFaults(const std::vector<NodeCondition>& conditions);

class KubeConditionPublisher {
 public:
  explicit KubeConditionPublisher(KubeApi& api) : api_(api) {}
  // Writes the node's conditions to its Node. Sends nothing when they are what it last wrote,
  // so calling it every few seconds costs nothing while nothing changes.
  Result<std::string> Publish(const std::string& node,
                              const std::vector<NodeCondition>& conditions);

 private:
  KubeApi& api_;
  std::string last_;  // the annotation last written
};

// Every Node's published conditions into the store; returns how many. A node whose annotation
// cannot be read is skipped with a warning, never the whole import.
Result<int> ImportKubeConditions(KubeApi& api, store::Store& store);

}  // namespace cmax::remediate
