// libFuzzer target for the kernel-log path: /dev/kmsg records, saved-log lines in every shape,
// and the event parsers behind them. No input may crash them, and what they return holds
// together (an Xid has a non-negative code, or kUnreadableCode when its digits were too many to
// read, and a lowercase device).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "health/conditions.hpp"
#include "health/kernel_events.hpp"
#include "health/kernel_record.hpp"
#include "health/xid_catalog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Fresh per input: a tracker kept across inputs would only grow.
  cmax::health::ConditionTracker tracker(cmax::health::XidCatalog::Builtin());
  cmax::health::KernelEventParser parser;
  if (auto record = cmax::health::ParseKmsgRecord(input)) {
    if (record->priority < 0 || record->priority > 7) std::abort();
    (void)parser.Feed(*record);
  }
  if (auto record = cmax::health::ParseLogLine(input, 2026)) {
    for (const auto& event : parser.Feed(*record)) {
      const bool xid = event.kind == cmax::health::KernelEventKind::kXid ||
                       event.kind == cmax::health::KernelEventKind::kSxid;
      if (xid && event.code < 0 && event.code != cmax::health::kUnreadableCode) std::abort();
      // PCI addresses are reported lowercased (server names and interfaces are not).
      for (char c : xid ? event.device : std::string()) {
        if (c >= 'A' && c <= 'F') std::abort();
      }
      tracker.Observe(event, *record);
    }
  }
  (void)cmax::health::ParseXid(input);
  (void)cmax::health::ParseSxid(input);
  (void)cmax::health::MonthFromName(input);
  return 0;
}
