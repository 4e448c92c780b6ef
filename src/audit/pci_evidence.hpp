// What the audit reads of the PCI tree through sysfs alone (no lspci, no setpci): the ACS
// control of the bridges between each GPU and each RDMA NIC that share a PCIe switch, and the
// BlueField DPUs with what of them the host can reach (RShim, tmfifo). Config space past its
// first 64 bytes, where ACS lives, is readable by root only: as anyone else the bridges' ACS is
// null (not read), never taken for "off".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/grading.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::audit {

// A bridge's ACS Control register (PCIe extended capability 0x000D, the 16 bits at +6).
struct AcsControl {
  bool present = false;  // the bridge has the capability at all
  uint16_t bits = 0;
};

// The ACS control in a device's config space as sysfs gives it (4,096 bytes to root, 64 to
// others). nullopt when the extended space was not readable (under 260 bytes), the device did
// not answer (all ones) or its list is garbled (a loop, an offset inside the standard header).
std::optional<AcsControl> ParseAcsControl(std::string_view config);

// lspci's spelling of the control bits: "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+
// UpstreamFwd+ EgressCtrl- DirectTrans-".
std::string AcsControlText(uint16_t bits);

// The bits that send peer-to-peer traffic up to the root complex instead of across the switch:
// P2P Request Redirect, P2P Completion Redirect and Egress Control.
bool AcsRedirects(uint16_t bits);

// The PCI addresses in a sysfs device path, root port first, the device itself last:
// "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:03:00.0" ->
// {0000:00:01.0, 0000:01:00.0, 0000:02:08.0, 0000:03:00.0}.
std::vector<std::string> PciPath(std::string_view sysfs_path);

// Adds pci.acs.path_bridges and the network.bluefield.* keys. Left out when /sys/bus/pci cannot
// be listed.
void CollectPciEvidence(const sys::FileSystem& fs, AuditEvidence& out);

}  // namespace cmax::audit
