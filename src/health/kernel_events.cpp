#include "health/kernel_events.hpp"

#include <charconv>

#include "core/strings.hpp"

namespace cmax::health {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// "0000:17:00", "0000:17:00.0", "17:00.0": the shapes drivers print PCI addresses in.
bool IsPciAddress(std::string_view text) {
  const auto parts = Split(text, ':');
  if (parts.size() < 2 || parts.size() > 3) return false;
  std::string_view last = parts.back();
  if (const size_t dot = last.find('.'); dot != std::string_view::npos) {
    if (dot + 2 != last.size() || last[dot + 1] < '0' || last[dot + 1] > '7') return false;
    last = last.substr(0, dot);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = i + 1 == parts.size() ? last : parts[i];
    const size_t width = (parts.size() == 3 && i == 0) ? 4 : 2;
    if (part.size() != width) return false;
    for (char c : part) {
      if (!IsHex(c)) return false;
    }
  }
  return true;
}

// The first PCI address among the whitespace-separated fields of text (':' and ',' trimmed).
std::string FindPciAddress(std::string_view text) {
  for (std::string_view field : SplitFields(text)) {
    while (!field.empty() && (field.back() == ':' || field.back() == ',' || field.back() == ')')) {
      field.remove_suffix(1);
    }
    if (field.rfind("PCI:", 0) == 0) field.remove_prefix(4);
    if (IsPciAddress(field)) return ToLower(field);
  }
  return {};
}

// Leading decimal digits of text as an int (nullopt past 9 digits rather than a truncated
// number); the count of digits read goes to used.
std::optional<int> LeadingInt(std::string_view text, size_t* used = nullptr) {
  size_t n = 0;
  while (n < text.size() && IsDigit(text[n])) ++n;
  if (n == 0 || n > 9) return std::nullopt;
  int value = 0;
  std::from_chars(text.data(), text.data() + n, value);
  if (used != nullptr) *used = n;
  return value;
}

// An Xid or SXid code: its leading digits, or kUnreadableCode when there are too many of them
// to be a code (an Xid line whose code cannot be read is still an Xid, never dropped).
std::optional<int> EventCode(std::string_view text, size_t* used) {
  size_t n = 0;
  while (n < text.size() && IsDigit(text[n])) ++n;
  if (n == 0) return std::nullopt;
  if (n > 9) {
    *used = n;
    return kUnreadableCode;
  }
  return LeadingInt(text, used);
}

// The number after the first occurrence of marker ("Link 10" -> 10 for marker "Link ").
std::optional<int> NumberAfter(std::string_view text, std::string_view marker) {
  const size_t pos = text.find(marker);
  if (pos == std::string_view::npos) return std::nullopt;
  return LeadingInt(text.substr(pos + marker.size()));
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// "key=value, rest" -> value (up to ", "), and text advanced past it.
std::string TakeField(std::string_view& text, std::string_view key) {
  if (text.substr(0, key.size()) != key) return {};
  text.remove_prefix(key.size());
  const size_t end = text.find(", ");
  std::string value(text.substr(0, end));
  text = end == std::string_view::npos ? std::string_view() : text.substr(end + 2);
  return value;
}

std::optional<KernelEvent> ParseFallenOffBusShort(std::string_view message) {
  // "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."
  if (!Contains(message, "fallen off the bus") || Contains(message, "Xid (")) return std::nullopt;
  KernelEvent event;
  event.kind = KernelEventKind::kGpuFallenOffBus;
  event.device = FindPciAddress(message);
  event.detail = std::string(Trim(message));
  return event;
}

std::optional<KernelEvent> ParseGpuUuid(std::string_view message) {
  // "NVRM: GPU at PCI:0000:9b:00: GPU-5a3c6e3e-..."
  const size_t at = message.find("NVRM: GPU at PCI:");
  const size_t uuid = message.find("GPU-", at == std::string_view::npos ? 0 : at + 17);
  if (at == std::string_view::npos || uuid == std::string_view::npos) return std::nullopt;
  KernelEvent event;
  event.kind = KernelEventKind::kGpuUuid;
  event.device = FindPciAddress(message.substr(at + 13, uuid - at - 13));
  event.uuid = std::string(SplitFields(message.substr(uuid))[0]);
  if (event.device.empty()) return std::nullopt;
  return event;
}

std::optional<KernelEvent> ParseSoftLockup(std::string_view message) {
  // "watchdog: BUG: soft lockup - CPU#19 stuck for 22s! [jbd2/pmem0-8:1002]"
  const size_t pos = message.find("soft lockup - CPU#");
  if (pos == std::string_view::npos) return std::nullopt;
  KernelEvent event;
  event.kind = KernelEventKind::kSoftLockup;
  event.cpu = LeadingInt(message.substr(pos + 18));
  event.seconds = NumberAfter(message, "stuck for ");
  const size_t open = message.rfind('[');
  const size_t close = message.rfind(']');
  if (open != std::string_view::npos && close != std::string_view::npos && open < close &&
      open > pos) {
    const std::string_view task = message.substr(open + 1, close - open - 1);
    const size_t colon = task.rfind(':');
    event.process = std::string(task.substr(0, colon));
    if (colon != std::string_view::npos) event.pid = LeadingInt(task.substr(colon + 1));
  }
  event.device = event.cpu ? "cpu" + std::to_string(*event.cpu) : "cpu";
  event.detail = std::string(Trim(message));
  return event;
}

std::optional<KernelEvent> ParseHungTask(std::string_view message) {
  // "INFO: task kworker/u8:2:123 blocked for more than 120 seconds."
  const size_t pos = message.find("INFO: task ");
  const size_t blocked = message.find(" blocked for more than ");
  if (pos == std::string_view::npos || blocked == std::string_view::npos || blocked < pos) {
    return std::nullopt;
  }
  KernelEvent event;
  event.kind = KernelEventKind::kHungTask;
  const std::string_view task = message.substr(pos + 11, blocked - pos - 11);
  const size_t colon = task.rfind(':');
  event.process = std::string(task.substr(0, colon));
  if (colon != std::string_view::npos) event.pid = LeadingInt(task.substr(colon + 1));
  event.seconds = LeadingInt(message.substr(blocked + 23));
  event.device = "node";
  event.detail = std::string(Trim(message));
  return event;
}

std::optional<KernelEvent> ParseRcuStall(std::string_view message) {
  // "rcu: INFO: rcu_sched self-detected stall on CPU", "... detected stalls on CPUs/tasks:"
  if (!Contains(message, "rcu") ||
      !(Contains(message, "detected stall") || Contains(message, "detected expedited stall"))) {
    return std::nullopt;
  }
  KernelEvent event;
  event.kind = KernelEventKind::kRcuStall;
  event.device = "node";
  event.detail = std::string(Trim(message));
  return event;
}

std::optional<KernelEvent> ParseAer(std::string_view message) {
  // "pcieport 0000:89:02.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=..."
  // "pcieport 0000:00:1c.0: AER: Corrected error received: 0000:01:00.0"
  // "pcieport 0000:00:03.1: DPC: containment event, status:0x1f01 source:0x0000"
  const bool dpc = Contains(message, "DPC: containment event");
  const size_t aer = message.find("AER:");
  if (!dpc && (aer == std::string_view::npos ||
               !(Contains(message, "severity=") || Contains(message, "error received")))) {
    return std::nullopt;
  }
  KernelEvent event;
  event.kind = KernelEventKind::kPcieAer;
  const size_t received = message.find("received: ");
  event.device = received != std::string_view::npos ? FindPciAddress(message.substr(received + 10))
                                                    : std::string();
  if (event.device.empty()) event.device = FindPciAddress(message);
  event.corrected = Contains(message, "Corrected") && !Contains(message, "Uncorrected");
  event.fatal = dpc || Contains(message, "(Fatal)");
  event.detail = std::string(Trim(message));
  return event;
}

std::optional<KernelEvent> ParseNic(std::string_view message) {
  // "mlx5_core 0000:3b:00.0 ens1f0np0: Link down"; Intel: "ice 0000:17:00.0 eth0: NIC Link is Down"
  static constexpr std::string_view kFatal[] = {"device's health compromised",
                                                "unrecoverable hardware error",
                                                "timeout. Will cause a leak of a command resource"};
  KernelEvent event;
  event.device = FindPciAddress(message.substr(0, std::min<size_t>(message.size(), 48)));
  event.detail = std::string(Trim(message));
  if (Contains(message, "mlx5")) {
    for (std::string_view pattern : kFatal) {
      if (Contains(message, pattern)) {
        event.kind = KernelEventKind::kNicFatal;
        event.fatal = true;
        return event;
      }
    }
  }
  if (event.device.empty()) return std::nullopt;
  const bool down = Contains(message, ": Link down") || Contains(message, "NIC Link is Down");
  const bool up = Contains(message, ": Link up") || Contains(message, "NIC Link is Up");
  if (!down && !up) return std::nullopt;
  event.kind = down ? KernelEventKind::kNicLinkDown : KernelEventKind::kNicLinkUp;
  // The interface name sits between the address and ": Link".
  const auto fields = SplitFields(message);
  for (size_t i = 0; i + 1 < fields.size(); ++i) {
    if (ToLower(fields[i]) == event.device && fields[i + 1].back() == ':') {
      event.process = std::string(fields[i + 1].substr(0, fields[i + 1].size() - 1));
    }
  }
  return event;
}

std::optional<KernelEvent> ParseFilesystem(std::string_view message) {
  KernelEvent event;
  event.detail = std::string(Trim(message));
  // "nfs: server 10.0.0.5 not responding, still trying" / "nfs: server 10.0.0.5 OK"
  if (const size_t pos = message.find("nfs: server "); pos != std::string_view::npos) {
    const auto fields = SplitFields(message.substr(pos + 12));
    if (fields.empty()) return std::nullopt;
    event.filesystem = "nfs";
    event.device = std::string(fields[0]);
    if (Contains(message, "not responding")) {
      event.kind = KernelEventKind::kFsTimeout;
      return event;
    }
    if (fields.size() >= 2 && fields[1] == "OK") {
      event.kind = KernelEventKind::kFsRecovered;
      return event;
    }
    return std::nullopt;
  }
  // "Lustre: lustre-OST0001-osc-ffff: Connection to lustre-OST0001 (at 10.0.0.2@o2ib) was lost"
  // "LustreError: ...: Request sent has timed out for slow reply"; "Connection restored to"
  if (message.rfind("Lustre", 0) != 0 && !Contains(message, " Lustre: ") &&
      !Contains(message, "LustreError:")) {
    return std::nullopt;
  }
  event.filesystem = "lustre";
  const size_t at = message.find("(at ");
  if (at != std::string_view::npos) {
    const size_t close = message.find(')', at);
    event.device = std::string(message.substr(at + 4, close - at - 4));
  }
  if (Contains(message, "Connection restored to")) {
    event.kind = KernelEventKind::kFsRecovered;
  } else if (Contains(message, "was lost") || Contains(message, "timed out") ||
             Contains(message, "not responding")) {
    event.kind = KernelEventKind::kFsTimeout;
  } else {
    return std::nullopt;
  }
  if (event.device.empty()) event.device = "lustre";
  return event;
}

std::optional<KernelEvent> ParseOom(std::string_view message) {
  // "Out of memory: Killed process 1234 (python) total-vm:..." (older: "Kill process")
  // "Memory cgroup out of memory: Killed process 1234 (python) ..."
  size_t pos = message.find("out of memory: Kill");
  if (pos == std::string_view::npos) pos = message.find("Out of memory: Kill");
  if (pos == std::string_view::npos) return std::nullopt;
  KernelEvent event;
  event.kind = KernelEventKind::kOomKill;
  const size_t process = message.find("process ", pos);
  if (process != std::string_view::npos) {
    size_t used = 0;
    event.pid = LeadingInt(message.substr(process + 8), &used);
    const size_t open = message.find('(', process);
    const size_t close = message.find(')', process);
    if (open != std::string_view::npos && close != std::string_view::npos && open < close) {
      event.process = std::string(message.substr(open + 1, close - open - 1));
    }
  }
  event.device = "node";
  event.detail = std::string(Trim(message));
  return event;
}

std::optional<KernelEvent> ParseMachineCheck(std::string_view message) {
  // "mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: ..."; "EDAC MC0: 1 CE ..."
  const bool hardware_error = Contains(message, "[Hardware Error]");
  const bool edac =
      message.rfind("EDAC ", 0) == 0 && (Contains(message, " CE ") || Contains(message, " UE "));
  if (!hardware_error && !edac && !Contains(message, "Machine check events logged")) {
    return std::nullopt;
  }
  KernelEvent event;
  event.kind = KernelEventKind::kMachineCheck;
  event.corrected = Contains(message, "Corrected error") || (edac && Contains(message, " CE "));
  event.fatal = edac ? Contains(message, " UE ") : Contains(message, "Uncorrected");
  event.cpu = NumberAfter(message, "CPU ");
  event.device = "node";
  event.detail = std::string(Trim(message));
  return event;
}

}  // namespace

std::string_view KernelEventKindName(KernelEventKind kind) {
  switch (kind) {
    case KernelEventKind::kXid: return "xid";
    case KernelEventKind::kSxid: return "sxid";
    case KernelEventKind::kGpuFallenOffBus: return "gpu_fallen_off_bus";
    case KernelEventKind::kGpuUuid: return "gpu_uuid";
    case KernelEventKind::kSoftLockup: return "soft_lockup";
    case KernelEventKind::kHungTask: return "hung_task";
    case KernelEventKind::kRcuStall: return "rcu_stall";
    case KernelEventKind::kPcieAer: return "pcie_aer";
    case KernelEventKind::kNicLinkDown: return "nic_link_down";
    case KernelEventKind::kNicLinkUp: return "nic_link_up";
    case KernelEventKind::kNicFatal: return "nic_fatal";
    case KernelEventKind::kFsTimeout: return "fs_timeout";
    case KernelEventKind::kFsRecovered: return "fs_recovered";
    case KernelEventKind::kOomKill: return "oom_kill";
    case KernelEventKind::kMachineCheck: return "machine_check";
  }
  return "unknown";
}

std::optional<KernelEvent> ParseXid(std::string_view message) {
  size_t pos = message.find("Xid (");
  // "SXid (" is an NVSwitch error, not a GPU's.
  while (pos != std::string_view::npos && pos > 0 && message[pos - 1] == 'S') {
    pos = message.find("Xid (", pos + 1);
  }
  if (pos == std::string_view::npos) return std::nullopt;
  const size_t open = pos + 5;
  const size_t close = message.find("): ", open);
  if (close == std::string_view::npos) return std::nullopt;
  KernelEvent event;
  event.kind = KernelEventKind::kXid;
  // "PCI:0000:17:00", "0000:17:00", and MIG: "PCI:0000:17:00 GPU-I:01 GPU-CI:02".
  const auto inner = SplitFields(message.substr(open, close - open));
  if (inner.empty()) return std::nullopt;
  std::string_view bus = inner[0];
  if (bus.rfind("PCI:", 0) == 0) bus.remove_prefix(4);
  if (!IsPciAddress(bus)) return std::nullopt;
  event.device = ToLower(bus);
  for (size_t i = 1; i < inner.size(); ++i) {
    if (inner[i].rfind("GPU-I:", 0) == 0) event.gpu_instance = LeadingInt(inner[i].substr(6));
    if (inner[i].rfind("GPU-CI:", 0) == 0) event.compute_instance = LeadingInt(inner[i].substr(7));
  }
  std::string_view rest = message.substr(close + 3);
  size_t used = 0;
  const auto code = EventCode(rest, &used);
  if (!code) return std::nullopt;
  event.code = *code;
  rest.remove_prefix(used);
  if (rest.substr(0, 2) == ", ") rest.remove_prefix(2);
  if (rest.substr(0, 4) == "pid=") {
    const std::string pid = TakeField(rest, "pid=");
    if (auto value = LeadingInt(pid)) event.pid = value;  // "'<unknown>'" stays empty
  }
  if (rest.substr(0, 5) == "name=") {
    std::string name = TakeField(rest, "name=");
    if (name != "<unknown>") event.process = std::move(name);
  }
  event.detail = std::string(Trim(rest));
  if (event.code == 154) {
    // "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"
    const size_t last_open = event.detail.rfind('(');
    const size_t last_close = event.detail.rfind(')');
    if (last_open != std::string::npos && last_close != std::string::npos &&
        last_open < last_close) {
      event.recovery_action = event.detail.substr(last_open + 1, last_close - last_open - 1);
    }
  }
  if (event.code == 74) event.link = NumberAfter(event.detail, "link ");
  if (event.code >= 144 && event.code <= 150) {
    // "RLW_SRC_TRACK Nonfatal XC1 i0 Link 10 (0x04082907 ...)"
    const auto fields = SplitFields(event.detail);
    event.fatal = fields.size() >= 2 && fields[1] == "Fatal";
    event.link = NumberAfter(event.detail, "Link ");
  }
  return event;
}

std::optional<KernelEvent> ParseSxid(std::string_view message) {
  // "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress ..."
  const size_t pos = message.find("SXid (");
  if (pos == std::string_view::npos) return std::nullopt;
  const size_t close = message.find("): ", pos);
  if (close == std::string_view::npos) return std::nullopt;
  KernelEvent event;
  event.kind = KernelEventKind::kSxid;
  std::string_view bus = Trim(message.substr(pos + 6, close - pos - 6));
  if (bus.rfind("PCI:", 0) == 0) bus.remove_prefix(4);
  if (!IsPciAddress(bus)) return std::nullopt;
  event.device = ToLower(bus);
  const std::string_view before = Trim(message.substr(0, pos));
  if (!before.empty()) {
    std::string_view name = SplitFields(before).back();
    if (!name.empty() && name.back() == ':') name.remove_suffix(1);
    if (name.rfind("nvidia-", 0) == 0) name.remove_prefix(7);
    event.switch_name = std::string(name);
  }
  std::string_view rest = message.substr(close + 3);
  size_t used = 0;
  const auto code = EventCode(rest, &used);
  if (!code) return std::nullopt;
  event.code = *code;
  rest.remove_prefix(used);
  if (rest.substr(0, 2) == ", ") rest.remove_prefix(2);
  event.fatal = rest.rfind("Fatal", 0) == 0;
  event.link = NumberAfter(rest, "Link ");
  event.detail = std::string(Trim(rest));
  return event;
}

std::vector<KernelEvent> KernelEventParser::Feed(const KernelRecord& record) {
  std::vector<KernelEvent> events;
  const std::string_view message = record.message;
  if (pending_left_ > 0) --pending_left_;
  if (pending_left_ == 0) pending_gpu_.clear();

  if (auto xid = ParseXid(message)) {
    events.push_back(std::move(*xid));
    return events;
  }
  if (auto sxid = ParseSxid(message)) {
    events.push_back(std::move(*sxid));
    return events;
  }
  // "NVRM: The NVIDIA GPU 0000:b3:00.0" / "(PCI ID: 10de:26b5) installed in this system has" /
  // "fallen off the bus and is not responding to commands." - one to three records.
  if (const size_t gpu = message.find("The NVIDIA GPU "); gpu != std::string_view::npos) {
    const std::string bus = FindPciAddress(message.substr(gpu + 15));
    if (!bus.empty() && !Contains(message, "fallen off the bus")) {
      pending_gpu_ = bus;
      pending_left_ = 3;
      return events;
    }
  }
  if (auto fallen = ParseFallenOffBusShort(message)) {
    if (fallen->device.empty()) fallen->device = pending_gpu_.empty() ? "unknown" : pending_gpu_;
    pending_gpu_.clear();
    pending_left_ = 0;
    events.push_back(std::move(*fallen));
    return events;
  }
  using Parser = std::optional<KernelEvent> (*)(std::string_view);
  static constexpr Parser kParsers[] = {ParseGpuUuid,    ParseSoftLockup, ParseHungTask,
                                        ParseRcuStall,   ParseAer,        ParseNic,
                                        ParseFilesystem, ParseOom,        ParseMachineCheck};
  for (Parser parse : kParsers) {
    if (auto event = parse(message)) {
      events.push_back(std::move(*event));
      break;
    }
  }
  return events;
}

}  // namespace cmax::health
