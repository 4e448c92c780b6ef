// The kernel-log records a GPU fault produces, in the driver's exact formats, for writing to
// /dev/kmsg: what a provider's health checks read. Pure; the records parse back with cmax's own
// passive parsers to the same code, device and action (tests/unit/inject).
#pragma once

#include <string>

#include "core/result.hpp"
#include "health/xid_catalog.hpp"

namespace cmax::inject {

// Injected records carry this process name, so a person reading the log can tell them apart
// (the driver's format has the field; checks that key on code and device are not affected).
inline constexpr const char* kInjectedProcess = "cmax-inject";

// "0000:17:00.0", "0000:17:00" or "17:00.0" -> the bus address the NVRM driver prints in an
// Xid, "0000:17:00". Refuses anything that is not a PCI address.
Result<std::string> XidBusAddress(std::string_view pci);
// The same, with the function, as an NVSwitch SXid prints it: "0000:05:00.0".
Result<std::string> FullPciAddress(std::string_view pci);

struct XidSpec {
  int code = 0;
  std::string pci;   // any form XidBusAddress accepts
  int pid = 0;       // 0: the driver's "'<unknown>'", as for faults outside a process
  std::string text;  // empty: the catalogue's description of the code
};
// "<3>NVRM: Xid (PCI:0000:17:00): 79, pid='<unknown>', name=cmax-inject, GPU has fallen off
// the bus." The "<3>" asks /dev/kmsg for priority err.
Result<std::string> XidRecord(const XidSpec& spec, const health::XidCatalog& catalog);

struct SxidSpec {
  int code = 0;
  std::string pci;       // the NVSwitch, any form FullPciAddress accepts
  int switch_index = 0;  // nvidia-nvswitchN
  bool fatal = false;
  int link = 0;
  std::string text = "egress non-posted PRIV error (First)";
};
// "<3>nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted
// PRIV error (First)"
Result<std::string> SxidRecord(const SxidSpec& spec);

// Writes one record to /dev/kmsg (or a file standing in for it): one write() is one record, and
// a fresh open per record keeps clear of the per-file rate limit. The one part here that is I/O.
Result<void> WriteKernelRecord(const std::string& path, const std::string& record);

}  // namespace cmax::inject
