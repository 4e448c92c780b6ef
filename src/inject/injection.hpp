// `cmax inject`'s whole work, behind its thin command file: each injector resolves what it
// injects into (a GPU, a switch, a state file, a DCGM field, a PCIe bridge), shows exactly what
// it will do, checks the safety rules (inject/target.hpp), records the injection in the store
// before doing it, does it, and says how to undo it. A dry run stops after the checks.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "inject/target.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::inject {

// What an injector takes from the shell around it.
struct InjectionIo {
  std::string db_path;
  sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  Clock* clock = nullptr;
  std::function<std::vector<std::string>()> node_gpus;  // NVML's PCI addresses, by index
  std::function<void(std::string_view)> out;            // what it does, line by line
  std::function<void(std::string_view)> refused;        // why it will not
};

struct KernelEventOptions {
  bool sxid = false;  // an NVSwitch SXid (else an Xid)
  int code = 0;
  std::string gpu;  // xid: index or PCI address; sxid: the switch's PCI address
  std::string node;
  std::string text;
  int pid = 0;
  int switch_index = 0;
  int link = 0;
  bool fatal = false;
  std::string kmsg = "/dev/kmsg";
  SafetyFlags safety;  // `destructive` is the injector's to set
};

struct NvmlSimOptions {
  std::string fault;
  long value = 0;
  std::string gpu;
  std::string state;  // empty: $CMAX_NVML_SIM_STATE
  bool restore = false;
  std::string node;
  SafetyFlags safety;  // `destructive` is the injector's to set
};

struct DcgmOptions {
  std::string field;
  long long value = 0;
  std::string gpu;
  int offset_s = -1;  // negative: none
  std::string node;
  SafetyFlags safety;  // `destructive` is the injector's to set
};

struct PcieSbrOptions {
  std::string gpu;
  std::string node;
  SafetyFlags safety;  // `destructive` is the injector's to set
};

// This node's GPUs' PCI addresses, by index, from NVML when it loads (the lab's is
// libnvml-sim through CMAX_NVML_LIB); empty without NVML.
std::vector<std::string> NvmlGpuAddresses();

// Errors: kInvalidArgument for what the user gave or a refusal (its reasons went to
// io.refused), others when the injection could not be made.
Result<void> InjectKernelEvent(const KernelEventOptions& options, const InjectionIo& io);
Result<void> InjectNvmlSim(const NvmlSimOptions& options, const InjectionIo& io);
Result<void> InjectDcgm(const DcgmOptions& options, const InjectionIo& io);
Result<void> InjectPcieSbr(const PcieSbrOptions& options, const InjectionIo& io);

}  // namespace cmax::inject
