// The catalogue that says what a kernel event means and what to do about it: NVIDIA Xid codes
// (from NVIDIA's Xid catalogue) and cmax's rules for the other kernel events. It is data
// (data/xid_catalog.json, built into the binary, replaceable with --xid-catalog FILE).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/run_record.hpp"
#include "health/kernel_events.hpp"

namespace cmax::health {

using cmax::ActionName;
using cmax::ParseAction;
using cmax::RecommendedAction;

struct EventMeaning {
  std::string name;     // "FALLEN_OFF_THE_BUS", "soft_lockup"
  std::string meaning;  // one line for people
  Severity severity = Severity::kHigh;
  RecommendedAction action = RecommendedAction::kContactSupport;
  std::string source;  // where the action comes from: a catalogue bucket, a rule, a URL
  bool known = false;  // false: not in the catalogue (an unknown Xid is never ignored)
};

class XidCatalog {
 public:
  // Parses a catalogue in the data/xid_catalog.json shape (schema cmax.xid-catalog/v1).
  static Result<XidCatalog> Parse(std::string_view json);
  // The catalogue built into the binary from data/xid_catalog.json.
  static const XidCatalog& Builtin();

  // An Xid code's entry; an unknown code means "contact support", never "ignore".
  EventMeaning Xid(int code) const;
  // What one event means: Xid 154's own text overrides the catalogue, NVLink5 errors (Xid
  // 144-150) follow their Fatal/Nonfatal field, other kinds follow the catalogue's rules.
  EventMeaning Explain(const KernelEvent& event) const;
  size_t XidCount() const { return xids_.size(); }

 private:
  std::map<int, EventMeaning> xids_;
  std::map<std::string, EventMeaning> rules_;  // by rule name: "soft_lockup", "sxid_fatal" ...
};

}  // namespace cmax::health
