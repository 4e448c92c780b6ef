// The namespace lab: hosts for the network sweep without a cluster. Each host is a network
// namespace with one veth link to a bridge in this namespace; addresses come from the
// benchmarking range 198.18.0.0/15 (RFC 2544), one /24 of it per lab (the first that no route
// or address here touches: another lab, a leftover of a killed one, or the machine's own
// network, as on a CI sandbox whose bridge holds 198.18.0.0/24), and nothing else is touched. A
// link is slowed with a token bucket (tc tbf, both directions: this kernel has tbf and htb, no
// netem). MPI reaches the hosts through an rsh agent the lab writes, which runs mpirun's daemon
// inside the host's namespace and names the host for cmax-mpi-perf. The plan is pure (names,
// addresses, the commands); NetnsLab runs it through a ProcessRunner (real `ip` and `tc`, as root).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::net {

struct NetnsHost {
  std::string name;       // "h3": what cmax-mpi-perf names it
  std::string netns;      // "cmax-<tag>-h3"
  std::string address;    // "198.18.0.3"
  std::string host_veth;  // "cx<tag>v3": this namespace's end, on the bridge
};

struct NetnsLabPlan {
  std::string tag;             // 1-6 letters or digits: several labs side by side
  std::string bridge;          // "cx<tag>br"
  std::string bridge_address;  // "198.18.0.254"
  std::string subnet;          // "198.18.0.0/24"
  std::vector<NetnsHost> hosts;
};

// Held while a lab chooses its block and claims it (its bridge's address): one lab at a time.
// In /run, which only root writes (a lab needs root), not the world-writable /run/lock, where
// anyone could plant the file and hold the lock.
inline constexpr const char* kNetnsLabLockPath = "/run/cmax-netns-lab.lock";

// The 512 blocks of 198.18.0.0/15, block b being 198.(18 + b / 256).(b % 256).0/24.
inline constexpr int kNetnsLabBlocks = 512;

// Up to 200 hosts in block `block`; the tag keeps interface names within Linux's 15 characters.
Result<NetnsLabPlan> PlanNetnsLab(const std::string& tag, int hosts, int block = 0);

// The first block that nothing in `ip_text` touches (the output of `ip -o -4 addr show` and of
// `ip -4 route show table all`: every address or prefix in it that overlaps 198.18.0.0/15 takes
// the blocks it covers); an error naming what is there when none is free.
Result<int> FreeNetnsLabBlock(std::string_view ip_text);

// The commands that bring the lab up, in order, and those that take it down (each may fail on
// what is already gone: down is run whole, whatever the state).
std::vector<std::vector<std::string>> NetnsUpCommands(const NetnsLabPlan& plan);
std::vector<std::vector<std::string>> NetnsDownCommands(const NetnsLabPlan& plan);
// A token bucket on both ends of `host`'s link: `rate` as tc reads it ("200mbit").
std::vector<std::vector<std::string>> SlowLinkCommands(const NetnsHost& host,
                                                       const std::string& rate);
// The rsh agent mpirun calls as "AGENT ADDRESS COMMAND...": runs COMMAND in the address's
// namespace with CMAX_MPI_PERF_HOST set to the host's name.
std::string RshAgentScript(const NetnsLabPlan& plan);

class NetnsLab {
 public:
  NetnsLab(NetnsLabPlan plan, sys::ProcessRunner& runner)
      : plan_(std::move(plan)), runner_(&runner) {}
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;
  // A lab that is up is taken down with its owner, on every path out.
  ~NetnsLab() {
    if (up_) Down();
  }
  // Up from nothing (what a crashed lab of the same tag left is taken down first), in the first
  // free block (the plan's addresses are moved there: read Plan() after Up; the choice is made
  // under kNetnsLabLockPath, so that two labs never take one block); the agent script
  // written to `agent_path` (mode 0755). Refused when no block is free: two labs' routes would
  // mix, and the host's own would be touched.
  Result<void> Up(sys::FileSystem& fs, const std::string& agent_path);
  Result<void> SlowLink(const std::string& host_name, const std::string& rate);
  // Everything the lab made, whatever is left of it. Safe to call twice.
  void Down();
  const NetnsLabPlan& Plan() const { return plan_; }

 private:
  Result<void> Run(const std::vector<std::string>& argv);
  NetnsLabPlan plan_;
  sys::ProcessRunner* runner_;
  bool up_ = false;
};

}  // namespace cmax::net
