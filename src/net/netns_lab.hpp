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

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "sys/interrupt.hpp"

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
// Where a lab of `tag` writes its agent: in /run (root's, as the lock), never in the user's
// folder, because mpirun splits its agent's command line at blanks and a folder may hold them.
std::string NetnsAgentPath(std::string_view tag);
// The agent as mpirun's plm_rsh_agent runs it: through /bin/sh, because Debian's and Ubuntu's
// /run is mounted noexec, where the script itself could not be executed.
std::string NetnsAgentCommand(std::string_view tag);
// The lab as a second Ctrl-C would leave it, and the shell line that removes it by hand.
std::string NetnsLeftBehind(const NetnsLabPlan& plan);

// A process's own tag, "s" and its id in base 36 (up to 60 million in six characters): unique
// among the live processes of this host, so that no lab takes another's for its own leftover.
std::string NetnsTagOf(int pid);
// The process a tag of NetnsTagOf names; none for another tag (a test's, a user's).
std::optional<int> NetnsTagProcess(std::string_view tag);

// A lab that outlived its process (killed: SIGKILL, a power cut, a second Ctrl-C): its tag and
// its host count, from the output of `ip netns list`, the tags of processes `alive` says are
// gone. Pure.
struct NetnsLeftover {
  std::string tag;
  int hosts = 0;
};
std::vector<NetnsLeftover> NetnsLeftovers(std::string_view netns_list,
                                          const std::function<bool(int pid)>& alive);

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
  // Up from nothing (what a crashed lab of the same tag left is taken down first, and any lab
  // whose process is gone: NetnsLeftovers), in the first
  // free block (the plan's addresses are moved there: read Plan() after Up; the choice is made
  // under kNetnsLabLockPath, so that two labs never take one block); the agent script
  // written to AgentPath() (mode 0755). Refused when no block is free: two labs' routes would
  // mix, and the host's own would be touched. `fs` is kept to remove the agent in Down: it must
  // outlive the lab.
  Result<void> Up(sys::FileSystem& fs);
  Result<void> SlowLink(const std::string& host_name, const std::string& rate);
  // Everything the lab made, whatever is left of it, its agent too. Safe to call twice.
  void Down();
  const NetnsLabPlan& Plan() const { return plan_; }
  std::string AgentPath() const { return NetnsAgentPath(plan_.tag); }
  std::string AgentCommand() const { return NetnsAgentCommand(plan_.tag); }

 private:
  Result<void> Run(const std::vector<std::string>& argv);
  // Takes down the labs whose process is gone (under the lab lock, before the block is chosen).
  void RemoveLeftovers(sys::FileSystem& fs);
  NetnsLabPlan plan_;
  sys::ProcessRunner* runner_;
  sys::FileSystem* fs_ = nullptr;  // the one Up wrote the agent with
  bool up_ = false;
  std::unique_ptr<sys::LeftBehind> left_;  // said if a second Ctrl-C ends us while it is up
};

// A namespace lab for the length of one call, for whatever launches through mpirun: the
// network sweep, the bad-node finder, a training job.
struct NetnsLabRequest {
  int hosts = 0;                        // 2 to 200
  std::vector<std::string> slow_links;  // "h3:200mbit": that host's link slowed
  std::string tag;                      // empty: from this process's id
};

// What a launch over the lab needs once it is up.
struct NetnsLabReach {
  std::vector<NetnsHost> hosts;
  std::string agent;   // mpirun's rsh agent (NetnsAgentCommand)
  std::string subnet;  // for MPI's TCP
};

// The hosts' names, h1 ... hN, known before the lab is made. Pure.
std::vector<std::string> NetnsHostNames(int hosts);

// Each "HOST:RATE" of `specs` as (host, rate), the host one of a lab of `hosts`. Pure.
Result<std::vector<std::pair<std::string, std::string>>> ParseSlowLinks(
    const std::vector<std::string>& specs, int hosts);

// The request checked before anything is made (a wrong slowed link must not cost a lab): the
// host count, each "HOST:RATE" naming one of its hosts. The slowed links as
// (host, rate). Pure.
Result<std::vector<std::pair<std::string, std::string>>> CheckNetnsLabRequest(
    const NetnsLabRequest& request);

// Checks the request, brings the lab up with its links slowed, says so through `progress`
// (may be empty), calls `run`, and takes the lab down whatever `run` returns.
Result<void> WithNetnsLab(const NetnsLabRequest& request, sys::FileSystem& fs,
                          sys::ProcessRunner& runner,
                          const std::function<void(std::string_view)>& progress,
                          const std::function<Result<void>(const NetnsLabReach&)>& run);

}  // namespace cmax::net
