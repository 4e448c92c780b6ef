// The audit is read-only (issue 15): the real binary runs under strace, which logs every program
// it and its children start and every file any of them opens for writing, creates, removes or
// renames. The programs cmax starts must be the read-only queries below, exactly; nothing in the
// whole process tree may write anywhere but the run's own store (and a node's part of a Slurm
// audit not even there: it opens no store).
#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/strings.hpp"
#include "support/temp_dir.hpp"
#include "sys/file_system.hpp"
#include "sys/process_runner.hpp"

namespace cmax {
namespace {

using namespace std::chrono_literals;

// What the audit may ask of other programs: each one a query that prints and exits.
const std::set<std::string>& ReadOnlyQueries() {
  static const std::set<std::string> kQueries = {
      "nvcc --version",
      "nvc --version",  // the HPC SDK's compilers, where /opt/nvidia/hpc_sdk holds a release
      "nvc++ --version",
      "nvfortran --version",
      "runc --version",
      "nvidia-ctk --version",
      "dcgmi --version",
      "docker version --format {{.Server.Version}}",
      "ofed_info -s",
      "srun --mpi=list",
      "srun --help",
      "scontrol show config",
      "sacct --noheader -X -o JobID -S now-1minutes",
      "journalctl -k -q --no-pager -o short-iso --since=-7d",
      "dmesg --time-format=iso",
      "sudo -n true",
      "ipmitool mc info",  // where an IPMI device is: does the BMC answer (it only reports)
      "modinfo amdgpu",    // the rest of the AMD driver's chain: only where an AMD GPU is
  };
  return kQueries;
}

// Queries whose last word is a path or package the audit found (the AMD driver's chain).
bool ReadOnlyQuery(const std::string& child) {
  static constexpr std::string_view kWithAnArgument[] = {
      "modinfo -F srcversion /var/lib/dkms/amdgpu/", "dpkg-query -S ",
      "dpkg-query -W -f=${Version} ",
      "apt-cache -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= policy "};
  if (ReadOnlyQueries().contains(child)) return true;
  // Whether sudo would let this user set vboost: -l asks the policy and runs nothing.
  if (child.starts_with("sudo -n -k -l /") &&
      child.ends_with("/nvidia-smi boost-slider --vboost 2")) {
    return std::ranges::count(child, ' ') == 7;
  }
  for (std::string_view prefix : kWithAnArgument) {
    if (child.starts_with(prefix) && child.find(' ', prefix.size()) == std::string::npos) {
      return true;
    }
  }
  return false;
}

struct Traced {
  int main_pid = 0;
  std::vector<std::string> children;  // what cmax itself started: "base arg arg"
  std::vector<std::string> writes;    // "PID call PATH" of every successful write-like call
};

// One strace line: "NAME(ARGS) = RESULT"; the first quoted argument (a path); the bracketed
// list after it (execve's argv); the word after the path (open's flags). Read by hand: a
// std::regex over long lines recurses too deep.
struct Call {
  std::string name;
  std::string path;
  std::vector<std::string> list;
  std::string flags;
  std::string result;
};

std::optional<Call> ParseCall(std::string_view line) {
  const size_t open = line.find('(');
  const size_t eq = line.rfind(" = ");
  if (open == std::string_view::npos || eq == std::string_view::npos || eq < open) {
    return std::nullopt;
  }
  Call call{.name = std::string(line.substr(0, open)), .result = std::string(line.substr(eq + 3))};
  const std::string_view args = line.substr(open + 1, eq - open - 1);
  const size_t quote = args.find('"');
  if (quote == std::string_view::npos) return call;
  const size_t end = args.find('"', quote + 1);
  if (end == std::string_view::npos) return call;
  call.path = std::string(args.substr(quote + 1, end - quote - 1));
  std::string_view rest = args.substr(end + 1);
  if (rest.starts_with(", [")) {
    const size_t close = rest.find(']');
    for (std::string_view word : Split(rest.substr(3, close - 3), ',')) {
      std::string w(Trim(word));
      if (w.size() >= 2 && w.front() == '"' && w.back() == '"') w = w.substr(1, w.size() - 2);
      call.list.push_back(w);
    }
  } else if (rest.starts_with(", ")) {
    call.flags = std::string(rest.substr(2, rest.find(',', 2) - 2));
  }
  return call;
}

// strace -ff writes one file per process, PREFIX.PID, so no line is split between processes.
Traced ReadTrace(const std::string& dir) {
  static const std::set<std::string> kForks = {"clone", "clone3", "vfork", "fork"};
  static const std::set<std::string> kOpens = {"open", "openat", "creat"};
  static const std::set<std::string> kChanges = {"unlink",   "unlinkat",  "rename",
                                                 "renameat", "renameat2", "mkdir",
                                                 "mkdirat",  "truncate",  "rmdir"};
  sys::LocalFileSystem fs;
  std::map<int, int> parent;
  std::map<int, std::vector<std::string>> execs;
  Traced traced;
  const std::vector<std::string> files = fs.ListDir(dir).value();
  for (const std::string& name : files) {
    if (!name.starts_with("trace.")) continue;
    const int pid = std::stoi(name.substr(6));
    const std::string text = fs.ReadFile(dir + "/" + name, size_t{64} << 20).value();
    for (std::string_view line : Split(text, '\n')) {
      const auto call = ParseCall(line);
      if (!call || call->result.starts_with("-1")) continue;  // failed calls changed nothing
      if (kForks.contains(call->name)) {
        // "= ?" when the process was killed inside the call (a probe past its deadline, on a
        // loaded machine): no child came of it.
        if (call->result.empty() ||
            std::isdigit(static_cast<unsigned char>(call->result[0])) == 0) {
          continue;
        }
        parent[std::stoi(call->result)] = pid;
      } else if (call->name == "execve") {
        std::string argv = call->path.substr(call->path.rfind('/') + 1);
        for (size_t i = 1; i < call->list.size(); ++i) argv += " " + call->list[i];
        execs[pid].push_back(argv);
      } else if (kOpens.contains(call->name)) {
        const std::string& flags = call->flags;
        const bool writes = call->name == "creat" || flags.find("O_WRONLY") != std::string::npos ||
                            flags.find("O_RDWR") != std::string::npos ||
                            flags.find("O_CREAT") != std::string::npos ||
                            flags.find("O_TRUNC") != std::string::npos;
        if (writes) traced.writes.push_back(fmt::format("{} {} {}", pid, call->name, call->path));
      } else if (kChanges.contains(call->name)) {
        traced.writes.push_back(fmt::format("{} {} {}", pid, call->name, call->path));
      }
    }
  }
  for (const auto& [pid, argvs] : execs) {
    if (!parent.contains(pid)) traced.main_pid = pid;  // the one strace started
  }
  for (const auto& [pid, argvs] : execs) {
    const auto up = parent.find(pid);
    if (up != parent.end() && up->second == traced.main_pid) {
      traced.children.insert(traced.children.end(), argvs.begin(), argvs.end());
    }
  }
  return traced;
}

Traced TraceCmax(const testing::TempDir& dir, std::vector<std::string> args) {
  const std::string strace = sys::FindProgram("strace");
  if (strace.empty()) {
    ADD_FAILURE() << "strace is needed (scripts/setup.sh installs it)";
    return {};
  }
  sys::LocalFileSystem fs;
  EXPECT_TRUE(fs.CreateDirs(dir.File("trace"), 0755));
  sys::ProcessSpec spec{.argv = {strace, "-ff", "-qq", "-o", dir.File("trace/trace"), "-e",
                                 "trace=execve,clone,clone3,vfork,fork,open,openat,creat,unlink,"
                                 "unlinkat,rename,renameat,renameat2,mkdir,mkdirat,truncate,rmdir",
                                 CMAX_BINARY}};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = 120s;
  auto ran = sys::PosixProcessRunner().Run(spec);
  EXPECT_TRUE(ran && !ran->timed_out) << (ran ? ran->Describe() : ran.error().message);
  if (ran) {
    EXPECT_EQ(ran->exit_code, 0) << ran->stderr_text;
  }
  return ReadTrace(dir.File("trace"));
}

void ExpectOnlyReadOnlyQueries(const Traced& traced) {
  EXPECT_GT(traced.main_pid, 0);
  for (const std::string& child : traced.children) {
    EXPECT_TRUE(ReadOnlyQuery(child)) << "the audit started: " << child;
  }
}

TEST(AuditReadOnly, TheLocalAuditStartsOnlyQueriesAndWritesOnlyItsStore) {
  testing::TempDir dir;
  const std::string db = dir.File("store/cmax.db");
  const Traced traced = TraceCmax(dir, {"--db", db, "audit", "--local", "--exit-zero"});
  ExpectOnlyReadOnlyQueries(traced);
  EXPECT_FALSE(traced.children.empty()) << "at least the Slurm client and the journal are asked";
  bool wrote_store = false;
  for (const std::string& write : traced.writes) {
    const std::string path = write.substr(write.rfind(' ') + 1);
    const bool store = path == dir.File("store") || path.starts_with(db);
    EXPECT_TRUE(store) << "written outside the store: " << write;
    wrote_store = wrote_store || path == db;
  }
  EXPECT_TRUE(wrote_store) << "the run is recorded";
}

TEST(AuditReadOnly, ANodesPartOfASlurmAuditWritesNothingAtAll) {
  testing::TempDir dir;
  const Traced traced = TraceCmax(dir, {"audit", "--node-evidence"});
  ExpectOnlyReadOnlyQueries(traced);
  for (const std::string& write : traced.writes) {
    ADD_FAILURE() << "a node's part wrote: " << write;
  }
}

}  // namespace
}  // namespace cmax
