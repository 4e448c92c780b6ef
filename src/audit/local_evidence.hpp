// The audit's evidence from this host: files through sys::FileSystem (/proc, /sys, /etc, /boot,
// the loader cache), a few programs' version lines through sys::ProcessRunner (each with a
// deadline, and only when the program is on PATH), never anything that changes state. Keys are
// the catalogue's; a value null means looked and absent, a key left out means not collected
// (the check is then UNKNOWN). The parsers are pure and table-tested.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/grading.hpp"
#include "audit/host_inventory.hpp"
#include "audit/side_effects.hpp"
#include "core/clock.hpp"
#include "sys/nvml.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::audit {

struct LocalProbeOptions {
  std::string path;                            // the PATH programs are looked up in
  Duration timeout = std::chrono::seconds(5);  // per program
  std::optional<WallTime> now;                 // to keep the last 7 days of the kernel log
  // Ask Slurm's accounting (sacct) from here; a node of a Slurm audit does not: the auditing
  // host asks once for the cluster, instead of every node asking slurmdbd at the same moment.
  bool ask_accounting = true;
  // $SLURM_CONF. When it names a file that is not there, Slurm's clients retry for a minute
  // before they give up, so none is asked.
  std::string slurm_conf;
  // NVML's readings (temperature, power, utilisation, processes), asked only where a driver is;
  // null: not collected.
  std::function<Result<sys::NvmlSnapshot>()> nvml;
  // An NVML library was named ($CMAX_NVML_LIB: the simulated one, a stand-in): asked even where
  // neither /proc/driver/nvidia nor /dev/nvidiactl is there. Otherwise NVML is not started on a
  // host with no driver loaded, where it could load the kernel module (nvidia-modprobe): the
  // audit only reads.
  bool nvml_named = false;
  // The process's variables the audit reads (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, the
  // SLURM_*GPUS* of a job step, NCCL_IB_QPS_PER_CONNECTION, NCCL_TOPO_FILE, NCCL_IB_HCA,
  // NCCL_SOCKET_IFNAME); empty: none set.
  std::map<std::string, std::string> environment;
  // This host's facts (host_inventory.hpp), where the caller has collected them already; null:
  // collected here.
  const HostFacts* host = nullptr;
  // What it may do beyond reading (side_effects.hpp), and how: the connection, the clock and
  // deadline, the enroot import's scratch file. Its file system, runner, PATH and timeout are
  // the ones above, filled in by CollectLocalEvidence.
  SideEffectOptions side_effects;
  SideEffectIo side_effect_io;
};

// The variables CollectLocalEvidence reads from LocalProbeOptions::environment.
inline constexpr const char* kAuditEnvironment[] = {"CUDA_VISIBLE_DEVICES",
                                                    "NVIDIA_VISIBLE_DEVICES",
                                                    "SLURM_STEP_ID",
                                                    "SLURM_STEP_GPUS",
                                                    "SLURM_JOB_GPUS",
                                                    "SLURM_GPUS_ON_NODE",
                                                    "NCCL_IB_QPS_PER_CONNECTION",
                                                    "NCCL_TOPO_FILE",
                                                    "NCCL_IB_HCA",
                                                    "NCCL_SOCKET_IFNAME",
                                                    "MODULEPATH",
                                                    "LMOD_CMD",
                                                    "MODULESHOME"};

// The program's path: the first `name` in the folders of `path_list` (as PATH), then in
// `extra_dirs`; nothing when absent.
std::optional<std::string> FindProgram(const sys::FileSystem& fs, const std::string& path_list,
                                       std::string_view name,
                                       const std::vector<std::string>& extra_dirs = {});

// NVML through its usual library ($CMAX_NVML_LIB, else libnvidia-ml.so.1): one snapshot.
Result<sys::NvmlSnapshot> SnapshotNvml();

AuditEvidence CollectLocalEvidence(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                   const LocalProbeOptions& options);

// "Cuda compilation tools, release 13.0, V13.0.48" -> "13.0"; empty when absent.
std::string ParseNvccRelease(std::string_view output);
// The first word of the first non-blank line that starts with a digit and holds a dot, after
// an optional 'v': "runc version 1.1.12", "NVIDIA Container Toolkit CLI version 1.17.8",
// "\ndcgmi  version: 4.7.0".
std::string FirstVersionWord(std::string_view output);
// KEY=VALUE lines (comments and blank lines skipped), as /etc/nccl.conf holds them.
std::map<std::string, std::string> ParseKeyValues(std::string_view text);
// /proc/self/limits: the soft limit of a row ("Max locked memory"), "unlimited" or a number.
std::optional<std::string> SoftLimit(std::string_view limits, std::string_view row);
// Whether sacct answers from here (a short query of the last minute's jobs); nullopt when sacct
// is not on PATH or did not answer in time.
std::optional<bool> SacctAnswers(const sys::FileSystem& fs, sys::ProcessRunner& runner,
                                 const std::string& path, Duration timeout);
// `srun --mpi=list` (to stdout or stderr, with or without "srun: " before each line): the
// plugin types and the specific versions ("none", "pmi2", "pmix", "pmix_v4").
std::vector<std::string> ParseMpiTypes(std::string_view output);
// Xid and SXid counts by code in a kernel log (journalctl -k -o short-iso, dmesg's shapes),
// read by the passive engine's parser; records dated before `since` are left out.
struct KernelXidCounts {
  std::map<int, int64_t> xid;
  std::map<int, int64_t> sxid;
  int64_t records = 0;
  std::optional<WallTime> oldest;  // the earliest dated record kept: how far back the log reaches
};
KernelXidCounts CountKernelXids(std::string_view log, std::optional<WallTime> since,
                                int default_year);
// The paths in the loader cache (/etc/ld.so.cache) of the libraries whose file name starts
// with `stem` ("libnccl.so").
std::vector<std::string> CachedLibraries(std::string_view cache, std::string_view stem);

}  // namespace cmax::audit
