#include "net/nccl_recipe.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <set>

#include "core/json_read.hpp"
#include "core/keys.hpp"
#include "core/strings.hpp"
#include "net/json_fields.hpp"
#include "sys/file_system.hpp"

namespace cmax::net {

extern const char* const kBuiltinNcclRecipes;

namespace {

using nlohmann::json;

// A setting as nccl.conf and the environment name it: NCCL_IB_HCA, FI_PROVIDER.
bool IsSettingName(std::string_view name) {
  return !name.empty() && name.size() <= 128 && name[0] >= 'A' && name[0] <= 'Z' &&
         std::ranges::all_of(name, [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
         });
}

// Debugging settings that take a choice away from NCCL's tuner (NCCL's environment
// documentation: "should not be used in production").
constexpr std::string_view kTuningOverrides[] = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS"};

Result<std::vector<NcclRecipeSetting>> SettingsOf(const json& recipe, const char* key,
                                                  bool with_value, const std::string& where) {
  std::vector<NcclRecipeSetting> out;
  const auto it = recipe.find(key);
  if (it == recipe.end() || !it->is_array()) {
    return Fail(ErrorCode::kInvalidArgument, "nccl recipes: {}: \"{}\" must be a list", where, key);
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& s = (*it)[i];
    const std::string at = fmt::format("{} {}[{}]", where, key, i);
    if (!s.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "nccl recipes: {}: not an object", at);
    }
    std::vector<std::string_view> known = {"name", "why", "source"};
    if (with_value) known.emplace_back("value");
    if (auto ok = OnlyKeys(s, known, "nccl recipes: " + at); !ok) return tl::unexpected(ok.error());
    NcclRecipeSetting setting;
    auto name = TextOf("nccl recipes", s, "name", at);
    auto why = TextOf("nccl recipes", s, "why", at);
    auto source = TextOf("nccl recipes", s, "source", at);
    if (!name) return tl::unexpected(name.error());
    if (!why) return tl::unexpected(why.error());
    if (!source) return tl::unexpected(source.error());
    // A name goes into the nccl.conf recommended, before its '=': NCCL's own form only.
    if (!IsSettingName(*name)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "nccl recipes: {}: \"name\" must be an environment variable's name (capitals, "
                  "digits and '_': NCCL_IB_HCA, FI_PROVIDER)",
                  at);
    }
    setting.name = *name;
    setting.why = *why;
    setting.source = *source;
    if (with_value) {
      auto value = TextOf("nccl recipes", s, "value", at, /*may_be_empty=*/true);
      if (!value) return tl::unexpected(value.error());
      setting.value = *value;
    }
    out.push_back(std::move(setting));
  }
  return out;
}

Result<NcclRecipe> ParseRecipe(const json& value, size_t index) {
  const std::string where = fmt::format("recipes[{}]", index);
  if (!value.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "nccl recipes: {}: not an object", where);
  }
  if (auto ok = OnlyKeys(
          value,
          {"name", "title", "fabric", "settings", "avoid", "vendor_tuned", "needs_topology_file"},
          "nccl recipes: " + where);
      !ok) {
    return tl::unexpected(ok.error());
  }
  NcclRecipe r;
  auto name = TextOf("nccl recipes", value, "name", where);
  auto title = TextOf("nccl recipes", value, "title", where);
  auto fabric = TextOf("nccl recipes", value, "fabric", where);
  if (!name) return tl::unexpected(name.error());
  if (!title) return tl::unexpected(title.error());
  if (!fabric) return tl::unexpected(fabric.error());
  // The fabric decides which rules hold (RoCE's GID index): a misspelt one would turn them off.
  constexpr std::array<std::string_view, 6> kFabrics = {"any", "infiniband", "roce",
                                                        "efa", "tcpxo",      "ethernet"};
  if (std::ranges::find(kFabrics, *fabric) == kFabrics.end()) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl recipes: {}: \"fabric\" must be one of any, infiniband, roce, efa, tcpxo, "
                "ethernet",
                where);
  }
  r.name = *name;
  r.title = *title;
  r.fabric = *fabric;
  auto settings = SettingsOf(value, "settings", true, r.name);
  if (!settings) return tl::unexpected(settings.error());
  r.settings = std::move(*settings);
  auto avoid = SettingsOf(value, "avoid", false, r.name);
  if (!avoid) return tl::unexpected(avoid.error());
  r.avoid = std::move(*avoid);
  const auto tuned = value.find("vendor_tuned");
  if (tuned == value.end() || !tuned->is_array() ||
      !std::ranges::all_of(*tuned, [](const json& t) { return t.is_string(); })) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl recipes: {}: \"vendor_tuned\" must be a list of names", r.name);
  }
  r.vendor_tuned = tuned->get<std::vector<std::string>>();
  if (!std::ranges::all_of(r.vendor_tuned, IsSettingName)) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl recipes: {}: \"vendor_tuned\" must be environment variables' names", r.name);
  }
  const auto topo = value.find("needs_topology_file");
  if (topo == value.end() || !topo->is_boolean()) {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl recipes: {}: \"needs_topology_file\" must be true or false", r.name);
  }
  r.needs_topology_file = topo->get<bool>();
  return r;
}

// A device or interface name as NCCL's matcher reads an entry: its port cut off.
std::string_view EntryName(std::string_view entry) {
  return entry.substr(0, entry.find(':'));
}

}  // namespace

Result<NcclRecipes> NcclRecipes::Parse(std::string_view text) {
  const auto document = ParseJsonObject(text);
  if (!document) return Wrap(document.error(), "nccl recipes");
  const json& doc = *document;
  if (auto ok = OnlyKeys(doc, {"schema", "note", "recipes"}, "nccl recipes"); !ok) {
    return tl::unexpected(ok.error());
  }
  if (doc.value("schema", std::string()) != "cmax.nccl-recipes/v1") {
    return Fail(ErrorCode::kInvalidArgument,
                "nccl recipes: \"schema\" must be \"cmax.nccl-recipes/v1\"");
  }
  const auto list = doc.find("recipes");
  if (list == doc.end() || !list->is_array() || list->empty()) {
    return Fail(ErrorCode::kInvalidArgument, "nccl recipes: \"recipes\" must be a non-empty list");
  }
  NcclRecipes out;
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    auto recipe = ParseRecipe((*list)[i], i);
    if (!recipe) return tl::unexpected(recipe.error());
    if (!names.insert(recipe->name).second) {
      return Fail(ErrorCode::kInvalidArgument, "nccl recipes: '{}' is named twice",
                  SanitizeUtf8(recipe->name));
    }
    out.recipes_.push_back(std::move(*recipe));
  }
  return out;
}

const NcclRecipes& NcclRecipes::Builtin() {
  static const NcclRecipes kBuiltin = [] {
    auto parsed = Parse(kBuiltinNcclRecipes);
    return parsed ? std::move(*parsed) : NcclRecipes{};  // a test holds the data valid
  }();
  return kBuiltin;
}

const NcclRecipe* NcclRecipes::Find(std::string_view name) const {
  const auto it = std::ranges::find(recipes_, name, &NcclRecipe::name);
  return it == recipes_.end() ? nullptr : &*it;
}

std::string NcclRecipes::Names() const {
  std::vector<std::string> names;
  for (const NcclRecipe& r : recipes_) names.push_back(r.name);
  return Join(names, ", ");
}

std::map<std::string, std::string> ParseNcclConf(std::string_view text) {
  std::map<std::string, std::string> out;
  for (std::string_view line : Split(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0 || line.front() == '#') continue;
    out.emplace(SanitizeUtf8(line.substr(0, eq)), SanitizeUtf8(line.substr(eq + 1)));
  }
  return out;
}

std::vector<std::string> TuningOverrides(const std::map<std::string, std::string>& settings) {
  std::vector<std::string> out;
  for (std::string_view name : kTuningOverrides) {
    if (settings.contains(std::string(name))) out.emplace_back(name);
  }
  return out;
}

std::vector<std::string> NcclSelects(std::string_view value,
                                     const std::vector<std::string>& present) {
  value = Trim(value);
  bool exclude = false;
  bool exact = false;
  if (!value.empty() && value.front() == '^') {
    exclude = true;
    value.remove_prefix(1);
  }
  if (!value.empty() && value.front() == '=') {
    exact = true;
    value.remove_prefix(1);
  }
  std::vector<std::string_view> entries;
  for (std::string_view e : Split(value, ',')) {
    e = Trim(e);
    if (!e.empty()) entries.push_back(EntryName(e));
  }
  std::vector<std::string> out;
  for (const std::string& name : present) {
    // An empty list matches every device, as NCCL's matchIfList does ("^" alone: none).
    const bool listed = entries.empty() || std::ranges::any_of(entries, [&](std::string_view e) {
                          return exact ? name == e : std::string_view(name).starts_with(e);
                        });
    if (listed != exclude) out.push_back(name);
  }
  return out;
}

std::string NcclNodeSettings::Effective(const std::string& name) const {
  if (const auto it = env.find(name); it != env.end()) return it->second;
  if (const auto it = conf.find(name); it != conf.end()) return it->second;
  return "";
}

std::string NcclNodeSettings::Where(const std::string& name) const {
  if (env.contains(name)) return "the environment";
  if (const auto it = conf_origin.find(name); it != conf_origin.end()) return it->second;
  return "";
}

NcclNodeSettings CollectNcclSettings(const sys::FileSystem& fs,
                                     const std::function<std::string(const std::string&)>& env,
                                     const std::vector<std::string>& env_names) {
  NcclNodeSettings out;
  std::vector<std::string> files;
  if (const std::string named = env("NCCL_CONF_FILE"); !named.empty()) {
    files.push_back(named);
  } else if (const std::string home = env("HOME"); !home.empty()) {
    files.push_back(home + "/.nccl.conf");
  }
  files.emplace_back("/etc/nccl.conf");
  for (const std::string& file : files) {
    auto text = fs.ReadFile(file, size_t{1} << 20);
    if (!text) continue;
    out.conf_files.push_back(SanitizeUtf8(file));
    for (auto& [name, value] : ParseNcclConf(*text)) {
      if (out.conf.emplace(name, value).second) out.conf_origin[name] = SanitizeUtf8(file);
    }
  }
  for (const std::string& name : env_names) {
    if (std::string value = env(name); !value.empty()) out.env[name] = SanitizeUtf8(value);
  }
  const std::string root = "/sys/class/infiniband";
  if (auto devices = fs.ListDir(root)) {
    std::ranges::sort(*devices);
    for (const std::string& d : *devices) {
      auto layer = fs.ReadFile(root + "/" + d + "/ports/1/link_layer", 256);
      out.rdma_devices.push_back(
          {.name = SanitizeUtf8(d), .link_layer = layer ? SanitizeUtf8(Trim(*layer)) : ""});
    }
  }
  if (auto interfaces = fs.ListDir("/sys/class/net")) {
    std::ranges::sort(*interfaces);
    for (const std::string& i : *interfaces) out.interfaces.push_back(SanitizeUtf8(i));
  }
  return out;
}

std::vector<std::string> DeviceSelectionProblems(std::string_view name, std::string_view value,
                                                 std::string_view where,
                                                 const std::vector<std::string>& present,
                                                 std::string_view kind) {
  if (present.empty()) {
    return {fmt::format("{}={} (from {}), but this node has no {}", name, value, where, kind)};
  }
  if (NcclSelects(value, present).empty()) {
    return {fmt::format("{}={} (from {}) selects none of this node's {}s ({})", name, value, where,
                        kind, Join(present, ", "))};
  }
  // An entry of an include list that matches nothing: a device renamed or gone.
  std::vector<std::string> problems;
  std::string_view list = Trim(value);
  if (list.starts_with('^')) return problems;
  const bool exact = list.starts_with('=');
  if (exact) list.remove_prefix(1);
  for (std::string_view e : Split(list, ',')) {
    const std::string_view entry = EntryName(Trim(e));
    if (entry.empty()) continue;
    const bool matched = std::ranges::any_of(present, [&](const std::string& p) {
      return exact ? p == entry : std::string_view(p).starts_with(entry);
    });
    if (!matched) {
      problems.push_back(fmt::format("{}: '{}' matches no {} here (present: {})", name, entry, kind,
                                     Join(present, ", ")));
    }
  }
  return problems;
}

bool RecipeVerdict::Faulty() const {
  return std::ranges::any_of(items,
                             [](const RecipeItem& i) { return i.status != RecipeStatus::kOk; });
}

std::string_view RecipeStatusName(RecipeStatus status) {
  switch (status) {
    case RecipeStatus::kOk: return "ok";
    case RecipeStatus::kDefeats: return "defeats";
    case RecipeStatus::kNoDevice: return "no-device";
    case RecipeStatus::kMissing: return "missing";
    case RecipeStatus::kDiffers: return "differs";
    case RecipeStatus::kAvoid: return "avoid";
    case RecipeStatus::kIgnored: return "ignored";
  }
  return "?";
}

RecipeVerdict JudgeNcclSettings(const NcclNodeSettings& node, const NcclRecipe& recipe) {
  RecipeVerdict v{.recipe = recipe.name};
  const auto add = [&](std::string setting, RecipeStatus status, std::string message) {
    v.items.push_back({std::move(setting), status, std::move(message)});
  };
  // Lines NCCL reads under another name: spaces around '=' are part of the name.
  for (const auto& [name, value] : node.conf) {
    const std::string trimmed(Trim(name));
    if (trimmed != name && trimmed.starts_with("NCCL_")) {
      add(trimmed, RecipeStatus::kIgnored,
          fmt::format("'{}={}' in {}: NCCL takes the spaces as part of the name, so the line sets "
                      "nothing it reads; write {}={}",
                      name, value, node.Where(name), trimmed, Trim(value)));
    }
  }
  // Settings that defeat NCCL's tuning, unless the vendor's own profile sets them.
  std::map<std::string, std::string> all = node.conf;
  for (const auto& [name, value] : node.env) all[name] = value;
  for (const std::string& name : TuningOverrides(all)) {
    if (std::ranges::find(recipe.vendor_tuned, name) != recipe.vendor_tuned.end()) continue;
    add(name, RecipeStatus::kDefeats,
        fmt::format("{}={} (from {}) takes the choice from NCCL's tuner: a debugging setting, "
                    "not for production",
                    name, node.Effective(name), node.Where(name)));
  }
  // Device selections that select nothing here, or name what is not here.
  std::vector<std::string> hcas;
  for (const RdmaDevice& d : node.rdma_devices) hcas.push_back(d.name);
  const std::pair<const char*, const std::vector<std::string>*> selections[] = {
      {"NCCL_IB_HCA", &hcas}, {"NCCL_SOCKET_IFNAME", &node.interfaces}};
  for (const auto& [name, present] : selections) {
    const std::string value = node.Effective(name);
    if (value.empty()) continue;
    const std::string_view kind = present == &hcas ? "RDMA device" : "network interface";
    for (std::string& problem :
         DeviceSelectionProblems(name, value, node.Where(name), *present, kind)) {
      add(name, RecipeStatus::kNoDevice, std::move(problem));
    }
  }
  // RoCE: the GID index; mixed link layers: which HCAs carry the jobs.
  std::vector<std::string> roce;
  std::vector<std::string> infiniband;
  for (const RdmaDevice& d : node.rdma_devices) {
    if (d.link_layer == "Ethernet") roce.push_back(d.name);
    if (d.link_layer == "InfiniBand") infiniband.push_back(d.name);
  }
  const bool roce_fabric =
      recipe.fabric == "roce" || (!roce.empty() && infiniband.empty() && recipe.fabric == "any");
  if (!roce.empty() && roce_fabric && node.Effective("NCCL_IB_GID_INDEX").empty() &&
      std::ranges::none_of(recipe.settings, [](const NcclRecipeSetting& s) {
        return s.name == "NCCL_IB_GID_INDEX";
      })) {
    add("NCCL_IB_GID_INDEX", RecipeStatus::kMissing,
        fmt::format("RoCE ports ({}) and no NCCL_IB_GID_INDEX: NCCL's default (-1) picks a GID "
                    "itself, which a port with several addresses can get wrong; set the fabric's "
                    "RoCE v2 index (3 on most deployments: show_gids tells)",
                    Join(roce, ", ")));
    v.recommended.push_back({.name = "NCCL_IB_GID_INDEX",
                             .value = "3",
                             .why = "the RoCE v2 GID of most deployments: check with show_gids",
                             .source = "NVIDIA/nccl issue #1454"});
  }
  if (!roce.empty() && !infiniband.empty() && node.Effective("NCCL_IB_HCA").empty()) {
    add("NCCL_IB_HCA", RecipeStatus::kMissing,
        fmt::format("InfiniBand ports ({}) beside Ethernet RDMA ports ({}) and no NCCL_IB_HCA: "
                    "NCCL may spread jobs onto the Ethernet ones",
                    Join(infiniband, ", "), Join(roce, ", ")));
    v.recommended.push_back({.name = "NCCL_IB_HCA",
                             .value = "=" + Join(infiniband, ","),
                             .why = "the InfiniBand HCAs only, by exact name",
                             .source = "NCCL's environment documentation (NCCL_IB_HCA)"});
  }
  // The platform's topology file.
  if (recipe.needs_topology_file && node.Effective("NCCL_TOPO_FILE").empty()) {
    add("NCCL_TOPO_FILE", RecipeStatus::kMissing,
        fmt::format("{} needs a topology file and NCCL_TOPO_FILE is not set", recipe.name));
  }
  // The recipe's own settings, and what it says not to set.
  for (const NcclRecipeSetting& s : recipe.settings) {
    v.recommended.push_back(s);
    const std::string have = node.Effective(s.name);
    if (s.name == "NCCL_TOPO_FILE" && recipe.needs_topology_file) continue;  // said above
    if (have.empty()) {
      add(s.name, RecipeStatus::kMissing,
          fmt::format("{} not set; {} recommends {} ({})", s.name, recipe.name,
                      s.value.empty() ? std::string("setting it") : s.value, s.why));
    } else if (!s.value.empty() && have != s.value) {
      add(s.name, RecipeStatus::kDiffers,
          fmt::format("{}={} (from {}); {} recommends {} ({})", s.name, have, node.Where(s.name),
                      recipe.name, s.value, s.why));
    }
  }
  for (const NcclRecipeSetting& s : recipe.avoid) {
    if (!node.Effective(s.name).empty()) {
      add(s.name, RecipeStatus::kAvoid,
          fmt::format("{}={} (from {}): {} says not to set it ({})", s.name, node.Effective(s.name),
                      node.Where(s.name), recipe.name, s.why));
    }
  }
  if (node.conf_files.empty()) v.notes.push_back("no NCCL configuration file here");
  if (node.rdma_devices.empty()) v.notes.push_back("no RDMA device here");
  return v;
}

nlohmann::json RecipeVerdictJson(const RecipeVerdict& verdict, const NcclNodeSettings& node) {
  json items = json::array();
  for (const RecipeItem& i : verdict.items) {
    items.push_back(
        {{"setting", i.setting}, {"status", RecipeStatusName(i.status)}, {"message", i.message}});
  }
  json recommended = json::array();
  for (const NcclRecipeSetting& s : verdict.recommended) {
    recommended.push_back(
        {{"name", s.name}, {"value", s.value}, {"why", s.why}, {"source", s.source}});
  }
  json devices = json::array();
  for (const RdmaDevice& d : node.rdma_devices) {
    devices.push_back({{"name", d.name}, {"link_layer", d.link_layer}});
  }
  return {{"schema", "cmax.nccl-recipe/v1"}, {"recipe", verdict.recipe},
          {"conf_files", node.conf_files},   {"conf", node.conf},
          {"environment", node.env},         {"rdma_devices", devices},
          {"interfaces", node.interfaces},   {"items", items},
          {"recommended", recommended},      {"notes", verdict.notes}};
}

std::string RecipeVerdictText(const RecipeVerdict& verdict, const NcclNodeSettings& node) {
  // Messages quote the node's values, which the environment can give any bytes: one line each,
  // or NCCL_ALGO=$'Ring\n  ok  fine' would print a verdict of its own.
  std::string out = fmt::format("NCCL settings against the {} recipe ({})\n", verdict.recipe,
                                node.conf_files.empty() ? std::string("no configuration file")
                                                        : AsOneLine(Join(node.conf_files, ", ")));
  for (const RecipeItem& i : verdict.items) {
    out += fmt::format("  {:<9} {}\n", RecipeStatusName(i.status), AsOneLine(i.message));
  }
  if (verdict.items.empty()) out += "  ok        nothing to change\n";
  for (const std::string& n : verdict.notes) out += "note: " + AsOneLine(n) + "\n";
  if (!verdict.recommended.empty()) {
    out += "\n# The recommended /etc/nccl.conf for this node\n";
    for (const NcclRecipeSetting& s : verdict.recommended) {
      // A value can come from this node (its HCAs' names): one line, as every other.
      out += fmt::format("# {} ({})\n{}{}={}\n", AsOneLine(s.why), AsOneLine(s.source),
                         s.value.empty() ? "# " : "", AsOneLine(s.name),
                         s.value.empty() ? "<set me>" : AsOneLine(s.value));
    }
  }
  return out;
}

Result<NcclRecipes> LoadNcclRecipes(const std::string& path, const sys::FileSystem& fs) {
  if (path.empty()) return NcclRecipes::Builtin();
  auto text = fs.ReadFile(path, size_t{4} << 20);
  if (!text) {
    return Fail(text.error().code == ErrorCode::kNotFound ? ErrorCode::kNotFound
                                                          : ErrorCode::kInvalidArgument,
                "{}: {}", SanitizeUtf8(path), text.error().message);
  }
  auto recipes = NcclRecipes::Parse(*text);
  if (!recipes) {
    return Fail(ErrorCode::kInvalidArgument, "{}: {}", SanitizeUtf8(path), recipes.error().message);
  }
  return recipes;
}

Result<NcclRecipeReport> CheckNcclRecipe(
    const NcclRecipeOptions& options, const NcclAnalyzeIo& io,
    const std::function<std::string(const std::string&)>& env) {
  auto recipes = LoadNcclRecipes(options.recipes_file, *io.fs);
  if (!recipes) return tl::unexpected(recipes.error());
  const NcclRecipe* recipe = recipes->Find(options.recipe);
  if (recipe == nullptr) {
    return Fail(ErrorCode::kInvalidArgument, "no recipe '{}' (known: {})",
                SanitizeUtf8(options.recipe), recipes->Names());
  }
  // Every variable any recipe or rule speaks of, read from the environment.
  std::set<std::string> names = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX",
                                 "NCCL_TOPO_FILE"};
  for (std::string_view n : kTuningOverrides) names.emplace(n);
  for (const NcclRecipe& r : recipes->All()) {
    for (const NcclRecipeSetting& s : r.settings) names.insert(s.name);
    for (const NcclRecipeSetting& s : r.avoid) names.insert(s.name);
  }
  const WallTime started = io.clock->Now();
  NcclRecipeReport report;
  report.node = CollectNcclSettings(*io.fs, env, {names.begin(), names.end()});
  report.verdict = JudgeNcclSettings(report.node, *recipe);
  std::vector<Finding> findings;
  for (const RecipeItem& i : report.verdict.items) {
    const bool fail = i.status == RecipeStatus::kDefeats || i.status == RecipeStatus::kNoDevice;
    findings.push_back({.check_id = "network.nccl-recipe",
                        .status = fail ? CheckStatus::kFail : CheckStatus::kWarn,
                        .severity = fail ? Severity::kHigh : Severity::kMedium,
                        .message = i.message});
  }
  if (findings.empty()) {
    findings.push_back(
        {.check_id = "network.nccl-recipe",
         .status = CheckStatus::kPass,
         .severity = Severity::kMedium,
         .message = fmt::format("this node's NCCL settings follow the {} recipe", recipe->name)});
  }
  const std::vector<EvidenceItem> evidence = {
      {"nccl.recipe", RecipeVerdictJson(report.verdict, report.node)
                          .dump(-1, ' ', false, json::error_handler_t::replace)}};
  auto recorded =
      RecordNcclRun(io, {.target = "nccl recipe " + recipe->name,
                         .started_at = started,
                         .evidence = evidence,
                         .findings = std::move(findings),
                         .metrics = {{.name = "nccl.recipe_changes",
                                      .labels = {{"recipe", recipe->name}},
                                      .value = static_cast<double>(report.verdict.items.size()),
                                      .unit = "changes"}}});
  if (!recorded) return tl::unexpected(recorded.error());
  report.record = std::move(recorded->record);
  report.exit_code = report.verdict.Faulty() ? 1 : 0;
  if (options.exit_zero) report.exit_code = 0;
  return report;
}

}  // namespace cmax::net
