// The network sweep: nccl-tests (or, without GPUs, cmax-mpi-perf, its CPU stand-in) over the
// first 1, 2, 4 ... N nodes, each collective, each variant, every message size from -b to -e,
// launched by mpirun or by Slurm's srun --mpi=pmix. Each step has a deadline: one that hangs
// is killed, reported, and the sweep goes on. Every step's log is kept; the logs are then
// analysed and recorded as one run, as `cmax nccl analyze` would.
//
// The plan is pure (the steps, their command lines and environments); RunNcclSweep runs it
// through a ProcessRunner.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "net/bad_node_finder.hpp"
#include "net/nccl_analyze_run.hpp"

namespace cmax::sys {
class FileSystem;
class ProcessRunner;
}  // namespace cmax::sys

namespace cmax::net {

enum class NcclLauncher { kMpirun, kSrun };

// nccl-tests' six collectives by binary name without "_perf".
inline constexpr std::string_view kNcclTestsCollectives[] = {
    "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast"};

// The variants, by name: what each adds to the environment.
//   default   NCCL's own choices
//   nvlink    one node only: NVLink and NVSwitch (NVLS where the part has it), no network
//   network   NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: every byte through the NICs, even
//             between GPUs of one node (how ClusterMAX times InfiniBand alone)
//   no-nvls   NCCL_NVLS_ENABLE=0: what NVLink SHARP adds, by its absence
inline constexpr std::string_view kNcclVariants[] = {"default", "nvlink", "network", "no-nvls"};

struct NcclSweepOptions {
  std::vector<std::string> hosts;  // node names, in order: steps run over the first 1, 2, 4 ...
  // Where mpirun reaches a node (a namespace lab's address); a node not here: its name.
  std::map<std::string, std::string> addresses;
  NcclLauncher launcher = NcclLauncher::kMpirun;
  // nccl-tests binaries by collective ("all_reduce" -> ".../all_reduce_perf"); empty: the CPU
  // stand-in `cpu_perf`, one rank per node.
  std::map<std::string, std::string> binaries;
  std::string cpu_perf;
  std::vector<std::string> collectives;  // empty: every one the benchmark has
  std::vector<std::string> variants = {"default"};
  std::vector<int> node_counts;  // empty: 1 (2 for the stand-in), 2, 4 ... and all of them
  std::string min_bytes = "8";
  std::string max_bytes = "16G";
  int factor = 2;
  int iters = 20;
  int warmup = 5;
  int gpus_per_node = 8;  // ranks per node with nccl-tests, one GPU each (-g 1)
  Duration step_timeout = std::chrono::minutes(10);
  std::string mpirun = "mpirun";
  std::string srun = "srun";
  std::string srun_mpi = "pmix";  // srun --mpi=: pmix, pmix_v4, pmi2 (srun --mpi=list)
  std::string agent;              // mpirun's rsh agent (a namespace lab's)
  std::string subnet;             // MPI's TCP network (a namespace lab's)
  std::vector<std::string> env;   // "NAME=VALUE" for every step, the variant's after it
  // nccl-tests 2.17.3 and later: each step also writes its JSON file (-J) into this folder as
  // <log name>.json (rank 0 writes it on its node: here when the folder is shared). Empty: not.
  std::string json_dir;
  // Others' Slurm jobs the steps ran beside, forced ("gpu2 (job 1234)"): the run records a WARN
  // that its figures hold their traffic. Empty: none known.
  std::string beside_others_jobs;
};

struct NcclSweepStep {
  std::string collective;
  std::string variant;
  std::vector<std::string> nodes;
  std::vector<std::string> argv;
  // The launcher's environment: srun passes it on; mpirun passes the names its -x give.
  std::vector<std::string> env_add;
  std::string log_name;  // "all_reduce-default-2n.log"
};

// Where a sweep keeps its logs unless told: beside the store `db_path`, "<kind>-<UTC time>"
// ("nccl-sweep-2026-12-03T184012.745Z": no ':' in names).
std::string NcclLogFolder(const std::string& db_path, std::string_view kind, WallTime now);
// The same name in `folder`.
std::string NcclLogFolderIn(const std::string& folder, std::string_view kind, WallTime now);

// What `cmax nccl find-bad-node` measures unless told: all_reduce at one large size, 256 MiB
// (the link's rate, not its latency), 10 iterations after 2 warm-up.
void UseBadNodeSearchSizes(NcclSweepOptions& options);

// cmax-mpi-perf where the build puts it: beside the cmax binary.
std::string CpuStandInBeside(const std::string& cmax_binary);

// Whether an nccl-tests binary writes JSON (-J, nccl-tests 2.17.3 and later): its -h names the
// option.
bool NcclTestsHelpOffersJson(std::string_view help);

// nccl-tests' binaries in its build folder (`build/`), by collective: <c>_perf_mpi where the
// MPI build named them so, else <c>_perf. An error when the folder holds none.
Result<std::map<std::string, std::string>> FindNcclTestsBinaries(const std::string& dir,
                                                                 const sys::FileSystem& fs);

// The hosts of a hostfile: one per line, the first word (mpirun's "node7 slots=8" too), blank
// lines and '#' comments skipped.
std::vector<std::string> ParseHostfile(std::string_view text);

// Errors for what cannot be planned: no hosts, an unknown collective or variant, a collective
// the stand-in does not run, a variant the stand-in cannot honour, a node count past the hosts.
Result<std::vector<NcclSweepStep>> PlanNcclSweep(const NcclSweepOptions& options);

struct NcclStepOutcome {
  NcclSweepStep step;
  std::string log_path;  // its standard output, kept; "" when nothing could be written
  std::string problem;   // empty: it ran and printed a table
  Duration took{0};
  int crashes = 0;  // launcher crashes retried
};

struct NcclSweepIo {
  NcclAnalyzeIo analyze;  // the store, the clock, the file system
  sys::FileSystem* fs = nullptr;
  sys::ProcessRunner* runner = nullptr;
  std::function<bool()> interrupted;               // Ctrl-C: the steps left are not run
  std::function<void(std::string_view)> progress;  // a line per step
  // A program's path on PATH, "" when absent (Slurm's squeue and sinfo); null: sys::FindProgram.
  std::function<std::string(const std::string&)> find_program;
};

struct NcclSweepReport {
  std::vector<NcclStepOutcome> steps;
  size_t steps_planned = 0;
  bool interrupted = false;
  NcclAnalyzeReport analyzed;  // its exit code counts failed steps as faults
};

// Runs the plan, keeping each step's log in `out_dir` (made if missing), analyses what the steps
// printed with `analysis` (its files are ignored) and records one run (command "nccl"): the
// analysis's findings, and a network.nccl-step FAIL per step that hung, crashed or printed no
// table.
Result<NcclSweepReport> RunNcclSweep(const NcclSweepOptions& options, const std::string& out_dir,
                                     const NcclAnalyzeOptions& analysis, const NcclSweepIo& io);

// `cmax nccl sweep`: where the hosts come from and what runs, as the user said it.
struct NcclSweepRequest {
  NcclSweepOptions sweep;      // its hosts, and binaries or cpu_perf, are filled from below
  std::string hostfile;        // hosts from this file, after sweep.hosts
  std::string nccl_tests_dir;  // nccl-tests' build folder; empty: the CPU stand-in
  // Hosts made on this machine (root): a namespace lab of this many hosts, h1 ... hN; the
  // sweep's hosts, addresses, agent and subnet are the lab's, and it is taken down at the end.
  int lab_hosts = 0;
  std::vector<std::string> slow_links;  // "h5:200mbit": that lab host's link slowed (tc tbf)
  std::string lab_tag;                  // empty: from the process id
  std::string out_dir;
  NcclAnalyzeOptions analysis;
  // mpirun starts ranks on whatever hosts it is given, so first Slurm, when there is one to ask
  // (squeue here), says whether they run others' jobs (sys/slurm_jobs.hpp): such a sweep is
  // refused unless forced. srun's steps are Slurm's to place, and need no such look.
  bool force = false;
  std::string own_job;  // $SLURM_JOB_ID: the allocation the sweep runs in is not "others'"
};

// Where a sweep or search runs, for what its request leaves unsaid.
struct NcclSweepPlace {
  std::string cpu_perf;  // cmax-mpi-perf (CpuStandInBeside cmax)
  std::string db_path;
  std::string logs_dir;  // "": the logs beside the store
  std::string own_job;   // $SLURM_JOB_ID
  WallTime now{};
};
// The request with what it leaves unsaid filled in from `place`: the CPU stand-in when no
// nccl-tests folder is named, a log folder named by `kind` and the time, the job cmax runs for.
void PlaceNcclRequest(NcclSweepRequest& request, std::string_view kind,
                      const NcclSweepPlace& place);

Result<NcclSweepReport> SweepNccl(NcclSweepRequest request, const NcclSweepIo& io);

// `cmax nccl find-bad-node`: all_reduce over the hosts (from the request, as the sweep takes
// them, its sizes and deadline), then by halves, then pairs (net/bad_node_finder), each
// measurement's log kept in out_dir; recorded as a run with a network.nccl-bad-node FAIL per
// node named, with its figures, or a PASS.
struct NcclBadNodeReport {
  BadNodeVerdict verdict;
  bool interrupted = false;
  bool clean = false;  // every group measured and none slow: no node drags the group down
  RunRecord record;
  int exit_code = 0;
};

Result<NcclBadNodeReport> FindNcclBadNodes(NcclSweepRequest request, const BadNodeOptions& finder,
                                           const NcclSweepIo& io);

nlohmann::json NcclBadNodeJson(const NcclBadNodeReport& report);
std::string NcclBadNodeText(const NcclBadNodeReport& report);

std::string NcclSweepText(const NcclSweepReport& report, bool per_size);
nlohmann::json NcclSweepJson(const NcclSweepReport& report);

}  // namespace cmax::net
