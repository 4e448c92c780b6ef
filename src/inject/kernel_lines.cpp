#include "inject/kernel_lines.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "core/strings.hpp"

namespace cmax::inject {
namespace {

bool Hex(std::string_view text, size_t digits) {
  if (text.size() != digits) return false;
  for (const char c : text) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

struct Pci {
  std::string domain = "0000";
  std::string bus;
  std::string device;
  std::string function = "0";
};

Result<Pci> ParsePci(std::string_view text) {
  const std::string lower = ToLower(Trim(text));
  std::string_view rest = lower;
  Pci pci;
  if (const size_t dot = rest.find('.'); dot != std::string_view::npos) {
    pci.function = std::string(rest.substr(dot + 1));
    rest = rest.substr(0, dot);
    if (pci.function.size() != 1 || pci.function[0] < '0' || pci.function[0] > '7') {
      return Fail(ErrorCode::kInvalidArgument, "'{}' is not a PCI address (bad function)", text);
    }
  }
  const auto parts = Split(rest, ':');
  if (parts.size() == 3) {
    pci.domain = std::string(parts[0]);
    pci.bus = std::string(parts[1]);
    pci.device = std::string(parts[2]);
  } else if (parts.size() == 2) {
    pci.bus = std::string(parts[0]);
    pci.device = std::string(parts[1]);
  } else {
    return Fail(ErrorCode::kInvalidArgument,
                "'{}' is not a PCI address (DDDD:BB:DD.F, DDDD:BB:DD or BB:DD.F)", text);
  }
  if (!Hex(pci.domain, 4) || !Hex(pci.bus, 2) || !Hex(pci.device, 2)) {
    return Fail(ErrorCode::kInvalidArgument,
                "'{}' is not a PCI address (DDDD:BB:DD.F, DDDD:BB:DD or BB:DD.F)", text);
  }
  return pci;
}

// Text from the command line goes into the kernel log: one line, printable.
std::string OneLine(std::string_view text) {
  std::string out;
  for (const char c : text) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 ? ' ' : c);
  }
  return std::string(Trim(out));
}

}  // namespace

Result<std::string> XidBusAddress(std::string_view pci) {
  auto p = ParsePci(pci);
  if (!p) return tl::unexpected(p.error());
  return fmt::format("{}:{}:{}", p->domain, p->bus, p->device);
}

Result<std::string> FullPciAddress(std::string_view pci) {
  auto p = ParsePci(pci);
  if (!p) return tl::unexpected(p.error());
  return fmt::format("{}:{}:{}.{}", p->domain, p->bus, p->device, p->function);
}

Result<std::string> XidRecord(const XidSpec& spec, const health::XidCatalog& catalog) {
  if (spec.code <= 0 || spec.code > 9999) {
    return Fail(ErrorCode::kInvalidArgument, "Xid code {} is out of range (1-9999)", spec.code);
  }
  auto bus = XidBusAddress(spec.pci);
  if (!bus) return tl::unexpected(bus.error());
  std::string text = OneLine(spec.text);
  if (text.empty()) {
    const health::EventMeaning meaning = catalog.Xid(spec.code);
    text = meaning.known ? meaning.meaning : "Unknown error";
  }
  // The driver writes pid='<unknown>' when no process is involved (Xid 79, 48, ...).
  const std::string pid = spec.pid > 0 ? std::to_string(spec.pid) : "'<unknown>'";
  return fmt::format("<3>NVRM: Xid (PCI:{}): {}, pid={}, name={}, {}", *bus, spec.code, pid,
                     kInjectedProcess, text);
}

Result<std::string> SxidRecord(const SxidSpec& spec) {
  if (spec.code <= 0 || spec.code > 99999) {
    return Fail(ErrorCode::kInvalidArgument, "SXid code {} is out of range (1-99999)", spec.code);
  }
  if (spec.switch_index < 0 || spec.switch_index > 63 || spec.link < 0 || spec.link > 255) {
    return Fail(ErrorCode::kInvalidArgument, "switch index or link out of range");
  }
  auto pci = FullPciAddress(spec.pci);
  if (!pci) return tl::unexpected(pci.error());
  // The driver prints the code with five digits ("%05d").
  return fmt::format("<3>nvidia-nvswitch{}: SXid (PCI:{}): {:05d}, {}, Link {} {}",
                     spec.switch_index, *pci, spec.code, spec.fatal ? "Fatal" : "Non-fatal",
                     spec.link, OneLine(spec.text));
}

Result<void> WriteKernelRecord(const std::string& path, const std::string& record) {
  // The newline matters: without it the kernel keeps the text as an unfinished continuation,
  // and readers see the record only when the next one arrives (seen on this kernel: 30 s late).
  const std::string line = record.ends_with('\n') ? record : record + '\n';
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_APPEND);
  if (fd < 0) return Fail(ErrorCode::kIo, "cannot open {}: {}", path, std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Fail(ErrorCode::kIo, "cannot write {}: {}", path, std::strerror(saved));
  }
  return {};
}

}  // namespace cmax::inject
