#include "audit/environment_modules.hpp"

#include <algorithm>
#include <set>

#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

std::string Variable(const std::map<std::string, std::string>& environment, const char* name) {
  const auto it = environment.find(name);
  return it == environment.end() ? std::string() : it->second;
}

// "lmod", "environment-modules", or empty when neither is installed.
std::string ModuleSystem(const sys::FileSystem& fs,
                         const std::map<std::string, std::string>& environment) {
  const std::string lmod_cmd = Variable(environment, "LMOD_CMD");
  if (!lmod_cmd.empty() && fs.Exists(lmod_cmd)) return "lmod";
  for (const char* lmod :
       {"/usr/share/lmod/lmod/libexec/lmod", "/opt/lmod/lmod/libexec/lmod",
        "/usr/local/lmod/lmod/libexec/lmod", "/opt/apps/lmod/lmod/libexec/lmod"}) {
    if (fs.Exists(lmod)) return "lmod";
  }
  const std::string home = Variable(environment, "MODULESHOME");
  if (!home.empty() && fs.Exists(home + "/libexec/modulecmd.tcl")) return "environment-modules";
  for (const char* tcl :
       {"/usr/share/Modules/libexec/modulecmd.tcl", "/usr/share/modules/libexec/modulecmd.tcl",
        "/usr/lib/x86_64-linux-gnu/modulecmd.tcl", "/usr/lib/aarch64-linux-gnu/modulecmd.tcl"}) {
    if (fs.Exists(tcl)) return "environment-modules";
  }
  return {};
}

bool IsKeyModule(std::string_view name) {
  const std::string lower = ToLower(name);
  return lower.starts_with("cuda") || lower.starts_with("hpcx") || lower.starts_with("hpc-x") ||
         lower.starts_with("nccl");
}

// "cuda.lua" is the module "cuda"; a folder's entries are its versions ("12.4.lua" -> "12.4").
std::string ModuleName(std::string_view entry) {
  for (std::string_view suffix : {".lua", ".tcl"}) {
    if (entry.ends_with(suffix)) return std::string(entry.substr(0, entry.size() - suffix.size()));
  }
  return std::string(entry);
}

}  // namespace

std::vector<std::string> ParseModulesPath(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : Split(text, '\n')) {
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty() || line.find('$') != std::string_view::npos) continue;
    out.emplace_back(line);
  }
  return out;
}

void CollectEnvironmentModules(const sys::FileSystem& fs,
                               const std::map<std::string, std::string>& environment,
                               AuditEvidence& out) {
  const std::string system = ModuleSystem(fs, environment);
  if (system.empty()) {
    out["software.modules.available"] = nullptr;
    return;
  }
  std::vector<std::string> folders;
  const std::string module_path = Variable(environment, "MODULEPATH");
  for (std::string_view dir : Split(module_path, ':')) {
    if (!dir.empty()) folders.emplace_back(dir);
  }
  for (const char* file :
       {"/etc/lmod/modulespath", "/usr/share/lmod/lmod/init/.modulespath",
        "/etc/environment-modules/modulespath", "/usr/share/Modules/init/.modulespath"}) {
    if (auto text = fs.ReadFile(file, size_t{64} << 10)) {
      for (std::string& dir : ParseModulesPath(*text)) folders.push_back(std::move(dir));
    }
  }
  // Where the init scripts and sites put them when no file says (Lmod's MODULEPATH_ROOT).
  for (const char* dir : {"/usr/share/modulefiles", "/usr/share/modulefiles/Core",
                          "/usr/share/modulefiles/Linux", "/etc/modulefiles", "/opt/modulefiles",
                          "/usr/share/modules/modulefiles", "/usr/share/Modules/modulefiles"}) {
    folders.emplace_back(dir);
  }
  json paths = json::array();
  std::set<std::string> seen;
  std::set<std::string> key;
  for (std::string dir : folders) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (!seen.insert(dir).second || !fs.IsDirectory(dir)) continue;
    paths.push_back(SanitizeUtf8(dir));
    const auto entries = fs.ListDir(dir);
    if (!entries) continue;
    for (const std::string& entry : *entries) {
      if (!IsKeyModule(entry)) continue;
      const std::string name = ModuleName(entry);
      const auto versions = fs.ListDir(dir + "/" + entry);
      bool listed = false;
      if (versions) {
        for (const std::string& version : *versions) {
          if (version.starts_with(".")) continue;  // .version, .modulerc
          key.insert(SanitizeUtf8(name + "/" + ModuleName(version)));
          listed = true;
        }
      }
      if (!listed) key.insert(SanitizeUtf8(name));
    }
  }
  out["software.modules.available"] = {{"system", system}, {"paths", paths}, {"key", key}};
}

}  // namespace cmax::audit
