// A node condition as the agent writes it for an Xid: the shape every remediation test feeds
// the controller with.
#pragma once

#include <string>

#include "core/run_record.hpp"

namespace cmax::testing {

inline NodeCondition XidCondition(const std::string& node, int code, const std::string& action,
                                  WallTime seen, const std::string& device = "0000:17:00") {
  NodeCondition c;
  c.node = node;
  c.key = "xid/" + device + "/" + std::to_string(code);
  c.component = "gpu";
  c.device = device;
  c.kind = "xid";
  c.code = code;
  c.severity = Severity::kCritical;
  c.action = action;
  c.message = "NVRM: Xid (PCI:" + device + "): " + std::to_string(code);
  c.count = 1;
  c.first_seen = c.last_seen = seen;
  return c;
}

}  // namespace cmax::testing
