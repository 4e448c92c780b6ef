// The golden NCCL recipe: what a platform's nodes should set for NCCL to perform out of the
// box (data/nccl_recipes.json, each setting with its public source), and this node's settings
// judged against it and against the rules that hold everywhere:
//   - NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS are debugging settings that defeat NCCL's
//     own tuning (NCCL's environment documentation), unless the platform's vendor profile sets
//     them on purpose;
//   - NCCL_IB_HCA and NCCL_SOCKET_IFNAME must select devices that are here, read as NCCL reads
//     them (a comma list of prefixes, '^' excluding, '=' exact, ':port');
//   - RoCE wants NCCL_IB_GID_INDEX set; both InfiniBand and Ethernet RDMA ports on one node want
//     NCCL_IB_HCA to say which carry the jobs;
//   - a platform that needs a topology file has NCCL_TOPO_FILE set.
// The judging is pure; CollectNcclSettings reads this node (through a FileSystem). The audit's
// NCCL checks use the same parsing and rules.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/run_record.hpp"
#include "net/nccl_analyze_run.hpp"

namespace cmax::sys {
class FileSystem;
}  // namespace cmax::sys

namespace cmax::net {

struct NcclRecipeSetting {
  std::string name;
  std::string value;  // empty: must be set, to a value of the node's own (a file's path)
  std::string why;
  std::string source;
};

struct NcclRecipe {
  std::string name;
  std::string title;
  std::string fabric;  // infiniband, roce, efa, tcpxo, any
  std::vector<NcclRecipeSetting> settings;
  std::vector<NcclRecipeSetting> avoid;   // names only (value unused)
  std::vector<std::string> vendor_tuned;  // tuning overrides the vendor sets on purpose
  bool needs_topology_file = false;
};

class NcclRecipes {
 public:
  // Strict: unknown keys, a duplicate name, a setting without a name or a source.
  static Result<NcclRecipes> Parse(std::string_view json);
  static const NcclRecipes& Builtin();
  const NcclRecipe* Find(std::string_view name) const;
  const std::vector<NcclRecipe>& All() const { return recipes_; }
  std::string Names() const;

 private:
  std::vector<NcclRecipe> recipes_;
};

// NAME=VALUE lines as NCCL reads its configuration files (setEnvFile in NCCL's src/misc/param.cc):
// the name is everything before the first '=', the value everything after, nothing trimmed
// ("NCCL_ALGO = Ring" sets a variable named "NCCL_ALGO " that NCCL never reads); the first of a
// name wins (NCCL sets each without overwriting). Lines without '=' and '#' lines are skipped.
std::map<std::string, std::string> ParseNcclConf(std::string_view text);

// The settings that defeat NCCL's tuning among `settings`, by name ("NCCL_ALGO").
std::vector<std::string> TuningOverrides(const std::map<std::string, std::string>& settings);

// Which of `present` an NCCL_IB_HCA or NCCL_SOCKET_IFNAME value selects: a comma list of
// prefixes ("mlx5" takes mlx5_0 ...), '^' first excluding those instead, '=' first matching
// names exactly; ":N" after an entry names a port (HCAs), ignored for the match. An empty list
// matches all ("^" alone: none), as in NCCL; an unset variable is the caller's to skip.
std::vector<std::string> NcclSelects(std::string_view value,
                                     const std::vector<std::string>& present);

// What is wrong with a device selection (`name`=`value`, NCCL_IB_HCA or NCCL_SOCKET_IFNAME, set
// in `where`) on a node whose devices of `kind` ("RDMA device", "network interface") are
// `present`: no device at all, none selected, or an entry of an include list that matches
// nothing (a device renamed or gone). Empty: NCCL would use devices that are here. `cmax nccl
// recipe` and the audit's networking.nccl-devices both judge by it.
std::vector<std::string> DeviceSelectionProblems(std::string_view name, std::string_view value,
                                                 std::string_view where,
                                                 const std::vector<std::string>& present,
                                                 std::string_view kind);

struct RdmaDevice {
  std::string name;        // mlx5_0
  std::string link_layer;  // InfiniBand, Ethernet (RoCE), or what the kernel says
};

// What this node's NCCL would run with.
struct NcclNodeSettings {
  // The files read, in NCCL's order: NCCL_CONF_FILE's (else ~/.nccl.conf), then /etc/nccl.conf.
  std::vector<std::string> conf_files;
  std::map<std::string, std::string> conf;         // the first file's value of each name
  std::map<std::string, std::string> conf_origin;  // the file each name came from
  std::map<std::string, std::string> env;          // NCCL_*, FI_*, RDMAV_* and the recipe's names
  std::vector<RdmaDevice> rdma_devices;            // /sys/class/infiniband, port 1's link layer
  std::vector<std::string> interfaces;             // /sys/class/net
  // The value NCCL takes: the environment's, else the file's; empty when neither sets it.
  std::string Effective(const std::string& name) const;
  std::string Where(const std::string& name) const;  // "environment", the file, ""
};

// Reads the files as NCCL does (NCCL_CONF_FILE's, else $HOME/.nccl.conf; then /etc/nccl.conf;
// the environment over both), the variables through `env`, and the devices.
NcclNodeSettings CollectNcclSettings(const sys::FileSystem& fs,
                                     const std::function<std::string(const std::string&)>& env,
                                     const std::vector<std::string>& env_names);

enum class RecipeStatus { kOk, kDefeats, kNoDevice, kMissing, kDiffers, kAvoid, kIgnored };

struct RecipeItem {
  std::string setting;  // the variable it is about
  RecipeStatus status = RecipeStatus::kOk;
  std::string message;
};

struct RecipeVerdict {
  std::string recipe;  // its name
  std::vector<RecipeItem> items;
  // The settings recommended for this node: the recipe's, with NCCL_IB_HCA added where the
  // node needs it, as NAME=VALUE lines with their reasons.
  std::vector<NcclRecipeSetting> recommended;
  std::vector<std::string> notes;
  bool Faulty() const;  // anything but kOk
};

RecipeVerdict JudgeNcclSettings(const NcclNodeSettings& node, const NcclRecipe& recipe);

std::string_view RecipeStatusName(RecipeStatus status);  // "ok", "defeats", ...
nlohmann::json RecipeVerdictJson(const RecipeVerdict& verdict, const NcclNodeSettings& node);
// The findings, then the recommended /etc/nccl.conf with a comment per line.
std::string RecipeVerdictText(const RecipeVerdict& verdict, const NcclNodeSettings& node);

// `cmax nccl recipe`: this node's settings judged and recorded as a run (command "nccl"), a
// network.nccl-recipe finding per item (FAIL for a tuning override or a selection of no device,
// WARN for the rest) or one PASS.
struct NcclRecipeOptions {
  std::string recipe = "generic";
  std::string recipes_file;  // empty: the built-in recipes
  bool exit_zero = false;
};

struct NcclRecipeReport {
  NcclNodeSettings node;
  RecipeVerdict verdict;
  RunRecord record;
  int exit_code = 0;  // 0 nothing to change, 1 something
};

Result<NcclRecipes> LoadNcclRecipes(const std::string& path, const sys::FileSystem& fs);

Result<NcclRecipeReport> CheckNcclRecipe(const NcclRecipeOptions& options, const NcclAnalyzeIo& io,
                                         const std::function<std::string(const std::string&)>& env);

}  // namespace cmax::net
