#include "net/netns_lab.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fmt/format.h>
#include <map>
#include <optional>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "sys/file_lock.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax::net {

Result<NetnsLabPlan> PlanNetnsLab(const std::string& tag, int hosts, int block) {
  const bool plain = !tag.empty() && tag.size() <= 6 && std::ranges::all_of(tag, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
  if (!plain) {
    return Fail(ErrorCode::kInvalidArgument,
                "namespace lab: the tag must be 1 to 6 lower-case letters or digits, not '{}'",
                SanitizeUtf8(tag));
  }
  if (hosts < 1 || hosts > 200) {
    return Fail(ErrorCode::kInvalidArgument, "namespace lab: 1 to 200 hosts, not {}", hosts);
  }
  if (block < 0 || block >= kNetnsLabBlocks) {
    return Fail(ErrorCode::kInvalidArgument, "namespace lab: block {} is outside 0 to {}", block,
                kNetnsLabBlocks - 1);
  }
  const std::string net = fmt::format("198.{}.{}.", 18 + block / 256, block % 256);
  NetnsLabPlan plan{.tag = tag,
                    .bridge = "cx" + tag + "br",
                    .bridge_address = net + "254",
                    .subnet = net + "0/24"};
  for (int i = 1; i <= hosts; ++i) {
    plan.hosts.push_back({.name = fmt::format("h{}", i),
                          .netns = fmt::format("cmax-{}-h{}", tag, i),
                          .address = fmt::format("{}{}", net, i),
                          .host_veth = fmt::format("cx{}v{}", tag, i)});
  }
  return plan;
}

namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// "a.b.c.d" or "a.b.c.d/len" as a 32-bit address and a prefix length; nothing for other words.
std::optional<std::pair<uint32_t, int>> ParsePrefix(std::string_view word) {
  int len = 32;
  if (const size_t slash = word.find('/'); slash != std::string_view::npos) {
    const std::string_view bits = word.substr(slash + 1);
    if (bits.empty() || bits.size() > 2 || !std::ranges::all_of(bits, IsDigit)) return {};
    len = std::stoi(std::string(bits));
    if (len > 32) return {};
    word = word.substr(0, slash);
  }
  uint32_t address = 0;
  int parts = 0;
  for (std::string_view rest = word; parts < 4; ++parts) {
    const size_t dot = rest.find('.');
    const std::string_view part = rest.substr(0, dot);
    if (part.empty() || part.size() > 3 || !std::ranges::all_of(part, IsDigit)) return {};
    const int value = std::stoi(std::string(part));
    if (value > 255) return {};
    address = (address << 8) | static_cast<uint32_t>(value);
    if (dot == std::string_view::npos) {
      if (parts != 3) return {};
      rest = {};
    } else {
      if (parts == 3) return {};
      rest = rest.substr(dot + 1);
    }
  }
  return std::pair{address, len};
}

}  // namespace

Result<int> FreeNetnsLabBlock(std::string_view ip_text) {
  constexpr uint32_t kBase = (198U << 24) | (18U << 16);  // 198.18.0.0
  std::vector<bool> taken(kNetnsLabBlocks, false);
  std::string first_use;
  for (std::string_view line : Split(ip_text, '\n')) {
    for (std::string_view word : SplitFields(line)) {
      const auto prefix = ParsePrefix(word);
      if (!prefix) continue;
      const auto [address, len] = *prefix;
      const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
      const uint64_t low = address & mask;
      const uint64_t high = low + (uint64_t{1} << (32 - len)) - 1;
      const uint64_t range_low = kBase;
      const uint64_t range_high = kBase + kNetnsLabBlocks * 256ULL - 1;
      if (high < range_low || low > range_high) continue;
      const uint64_t from = (std::max(low, range_low) - kBase) / 256;
      const uint64_t to = (std::min(high, range_high) - kBase) / 256;
      for (uint64_t b = from; b <= to; ++b) taken[b] = true;
      if (first_use.empty()) first_use = SanitizeUtf8(Trim(line).substr(0, 120));
    }
  }
  for (int b = 0; b < kNetnsLabBlocks; ++b) {
    if (!taken[b]) return b;
  }
  return Fail(ErrorCode::kUnavailable,
              "namespace lab: every /24 of 198.18.0.0/15 is in use here already ({}): other "
              "labs, or this host's own network; not touching it",
              first_use);
}

std::vector<std::vector<std::string>> NetnsUpCommands(const NetnsLabPlan& plan) {
  std::vector<std::vector<std::string>> out = {
      {"ip", "link", "add", plan.bridge, "type", "bridge"},
      {"ip", "addr", "add", plan.bridge_address + "/24", "dev", plan.bridge},
      {"ip", "link", "set", plan.bridge, "up"}};
  for (const NetnsHost& h : plan.hosts) {
    out.push_back({"ip", "netns", "add", h.netns});
    out.push_back({"ip", "link", "add", h.host_veth, "type", "veth", "peer", "name", "eth0",
                   "netns", h.netns});
    out.push_back({"ip", "link", "set", h.host_veth, "master", plan.bridge, "up"});
    out.push_back({"ip", "-n", h.netns, "addr", "add", h.address + "/24", "dev", "eth0"});
    out.push_back({"ip", "-n", h.netns, "link", "set", "eth0", "up"});
    out.push_back({"ip", "-n", h.netns, "link", "set", "lo", "up"});
  }
  return out;
}

std::vector<std::vector<std::string>> NetnsDownCommands(const NetnsLabPlan& plan) {
  std::vector<std::vector<std::string>> out;
  // Each veth pair deleted by its end here (a namespace's deletion takes its pair too, but
  // later: the kernel cleans namespaces up in the background), then the namespaces.
  for (const NetnsHost& h : plan.hosts) out.push_back({"ip", "link", "delete", h.host_veth});
  for (const NetnsHost& h : plan.hosts) out.push_back({"ip", "netns", "delete", h.netns});
  out.push_back({"ip", "link", "delete", plan.bridge});
  return out;
}

std::vector<std::vector<std::string>> SlowLinkCommands(const NetnsHost& host,
                                                       const std::string& rate) {
  // tbf shapes what leaves an interface: on the bridge's end toward the host, and on the
  // host's own end toward the bridge.
  const std::vector<std::string> tbf = {"root",  "tbf",  "rate",    rate,
                                        "burst", "64kb", "latency", "100ms"};
  std::vector<std::string> outside = {"tc", "qdisc", "replace", "dev", host.host_veth};
  std::vector<std::string> inside = {"ip",    "netns",   "exec", host.netns, "tc",
                                     "qdisc", "replace", "dev",  "eth0"};
  outside.insert(outside.end(), tbf.begin(), tbf.end());
  inside.insert(inside.end(), tbf.begin(), tbf.end());
  return {outside, inside};
}

std::string RshAgentScript(const NetnsLabPlan& plan) {
  std::string cases;
  for (const NetnsHost& h : plan.hosts) {
    cases += fmt::format("  {}) ns={}; name={} ;;\n", h.address, h.netns, h.name);
  }
  return fmt::format(
      "#!/bin/sh\n"
      "# Written by cmax for its namespace lab '{}': mpirun's rsh agent. mpirun calls it as\n"
      "# \"AGENT HOST COMMAND...\"; it runs COMMAND inside HOST's network namespace.\n"
      "host=$1\nshift\ncase \"$host\" in\n{}"
      "  *) echo \"cmax namespace lab: no host $host\" >&2; exit 1 ;;\nesac\n"
      "exec ip netns exec \"$ns\" env CMAX_MPI_PERF_HOST=\"$name\" /bin/sh -c \"$*\"\n",
      plan.tag, cases);
}

std::string NetnsAgentPath(std::string_view tag) {
  return fmt::format("/run/cmax-netns-{}-agent.sh", tag);
}

std::string NetnsAgentCommand(std::string_view tag) {
  return "/bin/sh " + NetnsAgentPath(tag);
}

Result<void> NetnsLab::Run(const std::vector<std::string>& argv) {
  auto r = runner_->Run({.argv = argv, .timeout = std::chrono::seconds(30)});
  if (!r) return tl::unexpected(r.error());
  if (!r->Succeeded()) {
    return Fail(ErrorCode::kInternal, "namespace lab: {} failed: {}", Join(argv, " "),
                SanitizeUtf8(Trim(r->stderr_text).substr(0, 300)));
  }
  return {};
}

Result<void> NetnsLab::Up(sys::FileSystem& fs) {
  fs_ = &fs;  // from the start: the Down below removes a crashed lab's agent too
  // Two labs coming up at once (two sweeps, or tests in parallel) would both read the same
  // free block before either had claimed it, and give their bridges one address: the route to
  // one lab's hosts then leads into the other's. Choosing and claiming the block is one step
  // among cmax processes on this host.
  auto claiming = sys::FileLock::Take(kNetnsLabLockPath, std::chrono::seconds(60));
  if (!claiming && claiming.error().code == ErrorCode::kBusy) {
    return Fail(ErrorCode::kBusy,
                "namespace lab: another lab is being brought up here and did not finish within "
                "60 s ({} is held)",
                kNetnsLabLockPath);
  }
  if (!claiming) {
    return Fail(claiming.error().code, "namespace lab: cannot take its lock: {}",
                claiming.error().message);
  }
  Down();  // what a crashed lab of this tag left
  RemoveLeftovers(fs);
  std::string in_use;
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"ip", "-o", "-4", "addr", "show"},
        std::vector<std::string>{"ip", "-4", "route", "show", "table", "all"}}) {
    auto shown = runner_->Run({.argv = argv, .timeout = std::chrono::seconds(10)});
    if (!shown) return tl::unexpected(shown.error());
    if (!shown->Succeeded()) {
      return Fail(ErrorCode::kInternal, "namespace lab: {} failed: {}", Join(argv, " "),
                  SanitizeUtf8(Trim(shown->stderr_text).substr(0, 300)));
    }
    in_use += shown->stdout_text + "\n";
  }
  const auto block = FreeNetnsLabBlock(in_use);
  if (!block) return tl::unexpected(block.error());
  auto moved = PlanNetnsLab(plan_.tag, static_cast<int>(plan_.hosts.size()), *block);
  if (!moved) return tl::unexpected(moved.error());
  plan_ = std::move(*moved);
  up_ = true;
  left_ = std::make_unique<sys::LeftBehind>(NetnsLeftBehind(plan_));
  for (const auto& argv : NetnsUpCommands(plan_)) {
    if (auto ok = Run(argv); !ok) {
      Down();
      return ok;
    }
  }
  if (auto ok = fs.WriteFileAtomic(AgentPath(), RshAgentScript(plan_), 0755); !ok) {
    Down();
    return ok;
  }
  return {};
}

Result<void> NetnsLab::SlowLink(const std::string& host_name, const std::string& rate) {
  for (const NetnsHost& h : plan_.hosts) {
    if (h.name != host_name) continue;
    for (const auto& argv : SlowLinkCommands(h, rate)) {
      if (auto ok = Run(argv); !ok) return ok;
    }
    return {};
  }
  return Fail(ErrorCode::kInvalidArgument, "namespace lab: no host {}", SanitizeUtf8(host_name));
}

void NetnsLab::RemoveLeftovers(sys::FileSystem& fs) {
  auto listed =
      runner_->Run({.argv = {"ip", "netns", "list"}, .timeout = std::chrono::seconds(10)});
  if (!listed || !listed->Succeeded()) return;  // nothing known to remove; the block check holds
  for (const NetnsLeftover& leftover : NetnsLeftovers(listed->stdout_text, sys::ProcessAlive)) {
    if (leftover.tag == plan_.tag) continue;
    auto plan = PlanNetnsLab(leftover.tag, std::min(leftover.hosts, 200));
    if (!plan) continue;
    for (const auto& argv : NetnsDownCommands(*plan)) {
      (void)runner_->Run(
          {.argv = argv, .timeout = std::chrono::seconds(30), .runs_past_interrupt = true});
    }
    (void)fs.RemoveFile(NetnsAgentPath(leftover.tag));
    log::Warn("namespace lab: removed lab {} ({} hosts), left by a cmax that is gone", leftover.tag,
              leftover.hosts);
  }
}

void NetnsLab::Down() {
  // After a Ctrl-C too: the stop it asked for is what runs this, and must not be cut short.
  for (const auto& argv : NetnsDownCommands(plan_)) {
    (void)runner_->Run(
        {.argv = argv, .timeout = std::chrono::seconds(30), .runs_past_interrupt = true});
  }
  if (fs_ != nullptr) (void)fs_->RemoveFile(AgentPath());
  up_ = false;
  left_.reset();
}

std::string NetnsLeftBehind(const NetnsLabPlan& plan) {
  return fmt::format(
      "the namespace lab {} ({} hosts, bridge {}, {}): ip link delete {}; for ns in $(ip netns "
      "list | grep -o '^cmax-{}-h[0-9]*'); do ip netns delete \"$ns\"; done; rm -f {}",
      plan.tag, plan.hosts.size(), plan.bridge, plan.subnet, plan.bridge, plan.tag,
      NetnsAgentPath(plan.tag));
}

std::string NetnsTagOf(int pid) {
  constexpr std::string_view kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string digits;
  auto left = static_cast<unsigned>(pid);
  do {
    digits.insert(digits.begin(), kDigits[left % 36]);
    left /= 36;
  } while (left > 0);
  return "s" + digits;
}

std::optional<int> NetnsTagProcess(std::string_view tag) {
  if (tag.size() < 2 || tag.size() > 6 || tag.front() != 's') return std::nullopt;
  int64_t pid = 0;
  for (const char c : tag.substr(1)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    pid = pid * 36 + digit;
  }
  if (pid <= 0 || tag[1] == '0') return std::nullopt;  // as NetnsTagOf writes it, no leading 0
  return static_cast<int>(pid);
}

std::vector<NetnsLeftover> NetnsLeftovers(std::string_view netns_list,
                                          const std::function<bool(int pid)>& alive) {
  std::map<std::string, int> hosts;  // tag -> its highest host number
  for (std::string_view line : SplitLines(netns_list)) {
    const std::vector<std::string_view> words = SplitFields(line);
    if (words.empty() || !words[0].starts_with("cmax-")) continue;
    const std::string_view name = words[0].substr(5);
    const size_t dash = name.rfind("-h");
    if (dash == std::string_view::npos) continue;
    const std::optional<int> host = ParseWhole<int>(name.substr(dash + 2));
    const std::string tag(name.substr(0, dash));
    const std::optional<int> pid = NetnsTagProcess(tag);
    if (!host || *host < 1 || !pid || alive(*pid)) continue;
    hosts[tag] = std::max(hosts[tag], *host);
  }
  std::vector<NetnsLeftover> out;
  for (const auto& [tag, n] : hosts) out.push_back({tag, n});
  return out;
}

std::vector<std::string> NetnsHostNames(int hosts) {
  std::vector<std::string> out;
  for (int i = 1; i <= hosts; ++i) out.push_back(fmt::format("h{}", i));
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseSlowLinks(
    const std::vector<std::string>& specs, int hosts) {
  const std::vector<std::string> names = NetnsHostNames(hosts);
  std::vector<std::pair<std::string, std::string>> slow;
  for (const std::string& s : specs) {
    const size_t colon = s.find(':');
    const std::string host = s.substr(0, colon);
    if (colon == std::string::npos || colon + 1 == s.size() ||
        std::ranges::find(names, host) == names.end()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "slowed link '{}': HOST:RATE with a lab host (h1 to h{}) and a rate tc reads "
                  "(200mbit)",
                  SanitizeUtf8(s), hosts);
    }
    slow.emplace_back(host, s.substr(colon + 1));
  }
  return slow;
}

Result<std::vector<std::pair<std::string, std::string>>> CheckNetnsLabRequest(
    const NetnsLabRequest& request) {
  if (request.hosts < 2 || request.hosts > 200) {
    return Fail(ErrorCode::kInvalidArgument, "namespace lab: 2 to 200 hosts, not {}",
                request.hosts);
  }
  return ParseSlowLinks(request.slow_links, request.hosts);
}

Result<void> WithNetnsLab(const NetnsLabRequest& request, sys::FileSystem& fs,
                          sys::ProcessRunner& runner,
                          const std::function<void(std::string_view)>& progress,
                          const std::function<Result<void>(const NetnsLabReach&)>& run) {
  auto slow = CheckNetnsLabRequest(request);
  if (!slow) return tl::unexpected(slow.error());
  // From the process id: another cmax's lab is never taken for a leftover of ours.
  auto plan =
      PlanNetnsLab(request.tag.empty() ? NetnsTagOf(::getpid()) : request.tag, request.hosts);
  if (!plan) return tl::unexpected(plan.error());
  NetnsLab lab(*plan, runner);
  if (auto up = lab.Up(fs); !up) return up;
  for (const auto& [host, rate] : *slow) {
    if (auto slowed = lab.SlowLink(host, rate); !slowed) return slowed;
  }
  if (progress) {
    progress(fmt::format("namespace lab up: {} hosts in {}{}", request.hosts, lab.Plan().subnet,
                         slow->empty() ? "" : ", links slowed as asked"));
  }
  return run({.hosts = lab.Plan().hosts, .agent = lab.AgentCommand(), .subnet = lab.Plan().subnet});
}  // the lab goes down with `lab`

}  // namespace cmax::net
