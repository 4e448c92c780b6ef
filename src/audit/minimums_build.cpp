#include "audit/minimums_build.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <set>

#include "audit/minimums.hpp"
#include "core/json_read.hpp"
#include "core/strings.hpp"
#include "sys/file_system.hpp"

namespace cmax::audit {
namespace {

using nlohmann::json;

// The components cmax grades, and how each finds its minimum (as data/audit_minimums.json).
struct Kind {
  std::string_view id;
  MinimumSelect select;
  std::string_view unlisted;  // empty: the table's default
};
constexpr std::array<Kind, 8> kKinds = {{
    {"nvidia-driver", MinimumSelect::kMajor, "unknown"},
    {"nvidia-container-toolkit", MinimumSelect::kWhole, ""},
    {"cuda-toolkit", MinimumSelect::kWhole, ""},
    {"runc", MinimumSelect::kMajorMinor, "fail"},
    {"docker", MinimumSelect::kWhole, ""},
    {"connectx-firmware", MinimumSelect::kTrain, "unknown"},
    {"dcgm", MinimumSelect::kWhole, ""},
    {"dcgm-exporter", MinimumSelect::kWhole, ""},
}};

const Kind* KindOf(std::string_view id) {
  const auto* it = std::ranges::find(kKinds, id, &Kind::id);
  return it == kKinds.end() ? nullptr : it;
}

bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Which component an NVIDIA CSAF product is, from its names from vendor to leaf (lower case).
std::string CsafComponent(const std::string& path) {
  if (Has(path, "container toolkit")) return "nvidia-container-toolkit";
  if (Has(path, "cuda toolkit")) return "cuda-toolkit";
  if (Has(path, "dcgm-exporter") || Has(path, "dcgm exporter")) return "dcgm-exporter";
  if (Has(path, "data center gpu manager") || Has(path, "dcgm")) return "dcgm";
  if (Has(path, "connectx")) return "connectx-firmware";
  // The Linux driver; vGPU software and Windows drivers have versions of their own.
  if (Has(path, "gpu display driver") && !Has(path, "windows") && !Has(path, "vgpu")) {
    return "nvidia-driver";
  }
  return {};
}

// Which component an OSV package is.
std::string OsvComponent(const std::string& package) {
  const std::string name = ToLower(package);
  if (name == "github.com/opencontainers/runc") return "runc";
  if (name == "github.com/docker/docker" || name == "github.com/moby/moby") return "docker";
  if (name == "github.com/nvidia/nvidia-container-toolkit" ||
      name == "github.com/nvidia/libnvidia-container") {
    return "nvidia-container-toolkit";
  }
  return {};
}

// The first version in a text: "570.211.01" of "R570 570.211.01 (Linux)", "1.2.8" of
// "v1.2.8+incompatible", "1.5.0-rc.3".
std::string VersionIn(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) != 0) &&
        text[i - 1] != 'v' && text[i - 1] != 'V') {
      continue;  // inside a word ("R570"): not where a version starts
    }
    size_t end = i;
    bool dot = false;
    while (end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
      dot = dot || text[end] == '.';
      ++end;
    }
    while (end > i && text[end - 1] == '.') --end;
    // A pre-release suffix: "-rc.3", "-rc3".
    if (end + 3 < text.size() && text.substr(end, 3) == "-rc") {
      size_t suffix = end + 3;
      if (suffix < text.size() && text[suffix] == '.') ++suffix;
      size_t digits = suffix;
      while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
        ++digits;
      }
      if (digits > suffix) end = digits;
    }
    if (dot) return std::string(text.substr(i, end - i));
    i = end;
  }
  return {};
}

// An OSV event's version, which is the whole of its text: digits and dots, a semver
// pre-release ("-rc.3", "-beta.1") and build ("+incompatible") allowed, a leading 'v' dropped
// ("1.2.8", "v1.2.8", "1.5.0-rc.3", "28.0.0+incompatible"); nothing for other text. Unlike a
// CSAF product's name, it is no sentence to find a version in ("banana runc 9.9.9" made a 9.9
// line of runc) and holds no Debian epoch ("9:1.2.8" would fail every 1.2.x).
std::string OsvVersion(std::string_view text) {
  if (!text.empty() && (text[0] == 'v' || text[0] == 'V')) text.remove_prefix(1);
  const auto identifier = [](std::string_view part) {
    return !part.empty() && std::ranges::all_of(part, [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-';
    });
  };
  const size_t plus = text.find('+');
  if (plus != std::string_view::npos && !identifier(text.substr(plus + 1))) return {};
  const std::string_view version = text.substr(0, plus);
  const size_t dash = version.find('-');
  if (dash != std::string_view::npos && !identifier(version.substr(dash + 1))) return {};
  const std::string_view numbers = version.substr(0, dash);
  const bool dotted =
      !numbers.empty() && numbers.front() != '.' && numbers.back() != '.' &&
      numbers.find("..") == std::string_view::npos && numbers.find('.') != std::string_view::npos &&
      std::ranges::all_of(numbers, [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  return dotted ? std::string(version) : std::string();
}

// A fix for one release line of one component, from one document.
struct Fix {
  std::string component;
  std::string version;
  std::string document;  // its name
  std::string date;      // YYYY-MM-DD the fix became available; may be empty
  std::set<std::string> advisories;
  std::set<std::string> cves;
  bool comparable = true;  // false: the advisory's text is no version (said, not taken)
};

std::string DateOf(const std::string& timestamp) {
  // A day the calendar has (as the table's reader takes it), or none: one advisory's
  // "2026-13-99" made the whole table invalid, naming no file.
  if (timestamp.size() >= 10 && timestamp[4] == '-' && timestamp[7] == '-' &&
      ParseIso8601(timestamp.substr(0, 10) + "T00:00:00Z")) {
    return timestamp.substr(0, 10);
  }
  return {};
}

// Every product of a CSAF product tree: its id -> (names from vendor to leaf, leaf category,
// leaf name).
struct CsafProduct {
  std::string path;
  std::string category;
  std::string leaf;
};
void WalkBranches(const json& branches, const std::string& path,
                  std::map<std::string, CsafProduct>& out, int depth) {
  if (!branches.is_array() || depth > 32) return;
  for (const json& branch : branches) {
    const std::string name = TextAt(branch, {"name"});
    const std::string here = path.empty() ? name : path + " " + name;
    const std::string id = TextAt(branch, {"product", "product_id"});
    if (!id.empty()) {
      out[id] = {ToLower(here + " " + TextAt(branch, {"product", "name"})),
                 TextAt(branch, {"category"}), name};
    }
    WalkBranches(JsonAt(branch, {"branches"}), here, out, depth + 1);
  }
}

std::vector<Fix> CsafFixes(const json& doc, const std::string& name) {
  std::map<std::string, CsafProduct> products;
  WalkBranches(JsonAt(doc, {"product_tree", "branches"}), "", products, 0);
  const json& names = JsonAt(doc, {"product_tree", "full_product_names"});
  if (names.is_array()) {
    for (const json& p : names) {
      const std::string id = TextAt(p, {"product_id"});
      if (!id.empty())
        products[id] = {ToLower(TextAt(p, {"name"})), "product_version", TextAt(p, {"name"})};
    }
  }
  std::set<std::string> advisories;
  const json& references = JsonAt(doc, {"document", "references"});
  if (references.is_array()) {
    for (const json& r : references) {
      if (TextAt(r, {"category"}) == "self" && IsAdvisoryAddress(TextAt(r, {"url"}))) {
        advisories.insert(TextAt(r, {"url"}));
      }
    }
  }
  // The clock of a fix's grace starts when the advisory first said it: a later revision (a
  // typo fixed, a score changed) must not open the grace period again.
  std::string date = DateOf(TextAt(doc, {"document", "tracking", "initial_release_date"}));
  if (date.empty()) date = DateOf(TextAt(doc, {"document", "tracking", "current_release_date"}));
  std::vector<Fix> fixes;
  const json& vulnerabilities = JsonAt(doc, {"vulnerabilities"});
  if (!vulnerabilities.is_array()) return fixes;
  for (const json& vulnerability : vulnerabilities) {
    const std::string cve = TextAt(vulnerability, {"cve"});
    const auto take = [&](const json& ids, bool affected_range) {
      if (!ids.is_array()) return;
      for (const json& id : ids) {
        if (!id.is_string()) continue;
        const auto it = products.find(id.get<std::string>());
        if (it == products.end()) continue;
        const std::string component = CsafComponent(it->second.path);
        if (component.empty()) continue;
        std::string version;
        if (affected_range) {
          // "vers:generic/<570.211.01" (or "< 570.211.01"): everything below the fix is affected.
          const std::string& leaf = it->second.leaf;
          const size_t below = leaf.find('<');
          if (it->second.category != "product_version_range" || below == std::string::npos ||
              (below + 1 < leaf.size() && leaf[below + 1] == '=')) {
            continue;
          }
          version = VersionIn(std::string_view(leaf).substr(below + 1));
        } else {
          const std::string& leaf = it->second.leaf;
          const size_t from = leaf.find(">=");
          version = VersionIn(from == std::string::npos ? std::string_view(leaf)
                                                        : std::string_view(leaf).substr(from + 2));
        }
        if (version.empty()) continue;
        if (component == "dcgm-exporter") {
          // Its releases are named DCGM-EXPORTER ("4.5.3-4.8.2"): the exporter's is the second.
          const std::string& leaf = it->second.leaf;
          const size_t at = leaf.find(version + "-");
          const std::string second = at == std::string::npos
                                         ? std::string()
                                         : VersionIn(leaf.substr(at + version.size() + 1));
          if (!second.empty()) version = second;
        }
        Fix fix{component, version, name, date, advisories, {}};
        if (IsCveId(cve)) fix.cves.insert(cve);
        fixes.push_back(std::move(fix));
      }
    };
    take(JsonAt(vulnerability, {"product_status", "fixed"}), false);
    take(JsonAt(vulnerability, {"product_status", "first_fixed"}), false);
    take(JsonAt(vulnerability, {"product_status", "known_affected"}), true);
  }
  return fixes;
}

// Versions an advisory calls affected: [introduced, end) when a fix ends them, [introduced,
// end] when the last affected one does, from introduced on when nothing does.
struct Affected {
  std::string component;
  std::string introduced;  // "0": from the first
  std::string end;         // empty: no end
  bool end_included = false;
  std::string document;
};

bool Inside(const Affected& range, const std::string& version) {
  const auto from = range.introduced == "0" ? std::optional<int>(1)
                                            : CompareTableVersions(version, range.introduced);
  if (!from || *from < 0) return false;
  if (range.end.empty()) return true;
  const auto to = CompareTableVersions(version, range.end);
  return to && (*to < 0 || (range.end_included && *to == 0));
}

std::vector<Fix> OsvFixes(const json& doc, const std::string& name,
                          std::vector<Affected>& affected_ranges,
                          std::vector<std::string>& ignored) {
  std::vector<Fix> fixes;
  std::set<std::string> cves;
  const json& aliases = JsonAt(doc, {"aliases"});
  if (aliases.is_array()) {
    for (const json& a : aliases) {
      if (a.is_string() && IsCveId(a.get_ref<const std::string&>()))
        cves.insert(a.get<std::string>());
    }
  }
  const std::string id = TextAt(doc, {"id"});
  if (IsCveId(id)) cves.insert(id);
  std::set<std::string> advisories;
  const json& references = JsonAt(doc, {"references"});
  if (references.is_array()) {
    for (const json& r : references) {
      if (TextAt(r, {"type"}) == "ADVISORY" && IsAdvisoryAddress(TextAt(r, {"url"}))) {
        advisories.insert(TextAt(r, {"url"}));
      }
    }
  }
  if (const std::string osv = "https://osv.dev/vulnerability/" + id;
      advisories.empty() && !id.empty() && IsAdvisoryAddress(osv)) {
    advisories.insert(osv);
  }
  const std::string date = DateOf(TextAt(doc, {"published"}));
  const json& affected = JsonAt(doc, {"affected"});
  if (!affected.is_array()) return fixes;
  for (const json& a : affected) {
    const std::string component = OsvComponent(TextAt(a, {"package", "name"}));
    if (component.empty()) continue;
    const json& ranges = JsonAt(a, {"ranges"});
    if (!ranges.is_array()) continue;
    for (const json& range : ranges) {
      if (TextAt(range, {"type"}) == "GIT") continue;  // commits, not versions
      const json& events = JsonAt(range, {"events"});
      if (!events.is_array()) continue;
      std::optional<std::string> open;  // the introduced version of the range being read
      for (const json& event : events) {
        if (const std::string introduced = TextAt(event, {"introduced"}); !introduced.empty()) {
          if (open) affected_ranges.push_back({component, *open, "", false, name});
          open = introduced == "0" ? introduced : OsvVersion(introduced);
          if (open->empty()) {
            ignored.push_back(
                fmt::format("{}: {} introduced in \"{}\", not a version: its range is "
                            "left out",
                            name, component, AsOneLine(introduced)));
          }
          continue;
        }
        const std::string fixed_text = TextAt(event, {"fixed"});
        const std::string fixed = OsvVersion(fixed_text);
        const std::string last_text = TextAt(event, {"last_affected"});
        const std::string last = OsvVersion(last_text);
        if (fixed.empty() && !fixed_text.empty()) {
          // Said by the build, as a fixed version it cannot compare.
          fixes.push_back({.component = component,
                           .version = fixed_text,
                           .document = name,
                           .comparable = false});
        }
        if (last.empty() && !last_text.empty()) {
          ignored.push_back(
              fmt::format("{}: {} last affected in \"{}\", not a version: its range "
                          "is left out",
                          name, component, AsOneLine(last_text)));
        }
        if (open && !open->empty() && (!fixed.empty() || !last.empty())) {
          affected_ranges.push_back(
              {component, *open, fixed.empty() ? last : fixed, fixed.empty(), name});
        }
        open.reset();
        if (fixed.empty()) continue;
        fixes.push_back({component, fixed, name, date, advisories, cves});
      }
      if (open && !open->empty()) affected_ranges.push_back({component, *open, "", false, name});
    }
  }
  return fixes;
}

// "2026-09-25T04:03:23Z": tables are dated to the second, as the public one is.
std::string WholeSeconds(WallTime time) {
  std::string text = FormatIso8601(time);
  const size_t dot = text.find('.');
  return dot == std::string::npos ? text : text.substr(0, dot) + "Z";
}

struct Line {
  std::string minimum;
  std::string document;
  std::string date;
};

}  // namespace

Result<MinimumsBuild> BuildMinimums(const std::vector<AdvisoryDocument>& documents,
                                    WallTime generated, const json* base) {
  MinimumsBuild out;
  json table = {{"schema", "cmax.audit-minimums/v1"},
                {"generated", WholeSeconds(generated)},
                {"note",
                 "Built by cmax audit minimums build from mirrored security advisories (NVIDIA "
                 "CSAF, OSV); per component and release line the highest version an advisory "
                 "calls fixed, available from that advisory's date."},
                {"grace_days", 3},
                {"max_age_days", 10},
                {"components", json::object()}};
  if (base != nullptr) {
    if (!base->is_object() || !base->contains("components") || !(*base)["components"].is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "--base: not a minimum table");
    }
    table["components"] = (*base)["components"];
    for (const char* key : {"grace_days", "max_age_days"}) {
      if (base->contains(key)) table[key] = (*base)[key];
    }
  }

  std::vector<Fix> fixes;
  std::vector<Affected> affected;
  for (const AdvisoryDocument& d : documents) {
    const std::string name = SanitizeUtf8(d.name);
    json doc;
    try {
      doc = json::parse(d.text);
    } catch (const json::exception& e) {
      return Fail(ErrorCode::kInvalidArgument, "{}: not JSON: {}", name,
                  AsOneLine(JsonParseProblem(e)));
    }
    if (!doc.is_object()) {
      return Fail(ErrorCode::kInvalidArgument, "{}: not a JSON object", name);
    }
    std::vector<Fix> found;
    if (doc.contains("document")) {
      found = CsafFixes(doc, name);  // an informational CSAF document names no fix
    } else if (doc.contains("affected") && doc.contains("id")) {
      if (!TextAt(doc, {"withdrawn"}).empty()) {
        out.ignored.push_back(name + ": withdrawn");
        continue;
      }
      found = OsvFixes(doc, name, affected, out.ignored);
    } else if (d.in_folder) {
      // A mirror holds other files too (provider-metadata.json, indexes, changes.csv's kin).
      out.ignored.push_back(name + ": neither a CSAF document nor an OSV record");
      continue;
    } else {
      return Fail(ErrorCode::kInvalidArgument,
                  "{}: neither a CSAF document (document, vulnerabilities) nor an OSV record "
                  "(id, affected)",
                  name);
    }
    if (found.empty()) {
      out.ignored.push_back(name + ": names no fixed version of a component cmax grades");
    }
    fixes.insert(fixes.end(), std::make_move_iterator(found.begin()),
                 std::make_move_iterator(found.end()));
  }

  // Per component and line, the highest fixed version; its document's date and every
  // advisory and CVE that raised any line of the component.
  std::map<std::string, std::map<std::string, Line>> lines;
  std::map<std::string, std::set<std::string>> advisories;
  std::map<std::string, std::set<std::string>> cves;
  for (const Fix& fix : fixes) {
    const Kind* kind = KindOf(fix.component);
    std::string minimum = fix.version;
    const auto selector = MinimumSelector(kind->select, fix.version);
    const auto left_out = [&out, &fix] {
      out.ignored.push_back(fmt::format("{}: {} fixed in \"{}\", not a version cmax can compare",
                                        fix.document, fix.component, AsOneLine(fix.version)));
    };
    if (!fix.comparable || !selector) {
      left_out();
      continue;
    }
    if (kind->select == MinimumSelect::kTrain) {
      // A firmware train's minimum is its last field (28.39.4702: train 28, 4702).
      minimum = minimum.substr(minimum.rfind('.') + 1);
    }
    Line& line = lines[fix.component][*selector];
    const auto newer =
        line.minimum.empty() ? std::optional<int>(1) : CompareTableVersions(minimum, line.minimum);
    if (!newer) {
      left_out();
      continue;
    }
    if (*newer > 0) {
      line = {minimum, fix.document, fix.date};
    } else if (*newer == 0 && !fix.date.empty() && (line.date.empty() || fix.date < line.date)) {
      line.date = fix.date;  // the same fix in two advisories: available since the first
      line.document = fix.document;
    }
    advisories[fix.component].insert(fix.advisories.begin(), fix.advisories.end());
    cves[fix.component].insert(fix.cves.begin(), fix.cves.end());
  }
  if (lines.empty()) {
    std::string known;
    for (const Kind& kind : kKinds) known += (known.empty() ? "" : ", ") + std::string(kind.id);
    return Fail(ErrorCode::kInvalidArgument,
                "no advisory names a fixed version of a component cmax grades ({})", known);
  }
  for (const auto& [component, by_line] : lines) {
    const Kind* kind = KindOf(component);
    json& entry = table["components"][component];
    if (!entry.is_object()) entry = json::object();
    static constexpr std::array<std::string_view, 5> kSelect = {"whole", "major", "major.minor",
                                                                "train", "model"};
    entry["select"] = kSelect.at(static_cast<size_t>(kind->select));
    if (!kind->unlisted.empty()) entry["unlisted"] = kind->unlisted;
    json& minimums = entry["minimums"];
    if (!minimums.is_object()) minimums = json::object();
    for (const auto& [selector, line] : by_line) {
      // A base table's minimum stays unless the advisories raise it.
      if (minimums.contains(selector) && minimums[selector].is_string()) {
        const auto raised =
            CompareTableVersions(line.minimum, minimums[selector].get<std::string>());
        if (!raised || *raised <= 0) continue;
      }
      minimums[selector] = line.minimum;
      if (!line.date.empty()) {
        entry["available"][selector] = line.date;
      } else if (entry.contains("available") && entry["available"].is_object()) {
        entry["available"].erase(selector);
      }
      out.used.push_back(
          fmt::format("{} {} -> {} ({})", component, selector, line.minimum, line.document));
    }
    std::set<std::string> all_advisories(advisories[component]);
    std::set<std::string> all_cves(cves[component]);
    for (const char* key : {"advisories", "cves"}) {
      if (!entry.contains(key) || !entry[key].is_array()) continue;
      for (const json& v : entry[key]) {
        if (v.is_string()) (key[0] == 'a' ? all_advisories : all_cves).insert(v.get<std::string>());
      }
    }
    entry["advisories"] = all_advisories;
    entry["cves"] = all_cves;
  }
  // A line whose minimum a later advisory still calls affected, with no fix of its own on
  // that line, has no fixed version: it is left out (the base's too), so that a version on it
  // is held to the next line (runc's older minors after a GHSA fixed only in newer ones).
  std::vector<std::string> emptied;
  for (auto& item : table["components"].items()) {
    const std::string component = item.key();
    json& entry = item.value();
    const Kind* kind = KindOf(component);
    if (kind == nullptr || !entry.is_object() || !entry.contains("minimums") ||
        !entry["minimums"].is_object()) {
      continue;
    }
    std::vector<std::string> dropped;
    for (const auto& [selector, minimum] : entry["minimums"].items()) {
      if (!minimum.is_string()) continue;
      const std::string version = minimum.get<std::string>();
      const std::string& line = selector;
      const bool superseded = std::ranges::any_of(affected, [&](const Affected& range) {
        return range.component == component && Inside(range, version) &&
               (range.end.empty() || MinimumSelector(kind->select, range.end) != line);
      });
      if (superseded) dropped.push_back(selector);
    }
    for (const std::string& selector : dropped) {
      out.ignored.push_back(fmt::format(
          "{} {}: its fix {} is still affected by a later advisory with no fix on that line",
          component, selector, entry["minimums"][selector].get<std::string>()));
      entry["minimums"].erase(selector);
      if (entry.contains("available") && entry["available"].is_object()) {
        entry["available"].erase(selector);
      }
      std::erase_if(out.used, [&](const std::string& used) {
        return used.starts_with(fmt::format("{} {} ", component, selector));
      });
    }
    if (entry["minimums"].empty()) emptied.push_back(component);
  }
  for (const std::string& component : emptied) {
    out.ignored.push_back(component + ": no line has a fix a later advisory leaves alone");
    table["components"].erase(component);
  }
  // What is made must be what cmax reads.
  if (auto parsed = MinimumTable::Parse(table.dump()); !parsed) {
    return Fail(ErrorCode::kInvalidArgument, "the table built is not valid: {}",
                parsed.error().message);
  }
  out.table = std::move(table);
  return out;
}

Result<MinimumsBuild> BuildMinimumsFromFiles(const std::vector<std::string>& paths,
                                             const std::string& base_path, WallTime generated,
                                             sys::FileSystem& fs) {
  constexpr size_t kMaxDocumentBytes = size_t{16} << 20;
  // Files named, and the *.json files of folders and their subfolders (CSAF mirrors keep a
  // folder per year).
  std::vector<std::pair<std::string, bool>> files;  // path, found in a folder
  std::vector<std::string> folders;
  for (const std::string& path : paths) {
    if (fs.IsDirectory(path)) {
      folders.push_back(path);
    } else {
      files.emplace_back(path, false);
    }
  }
  constexpr size_t kMaxFolders = 10'000;
  for (size_t i = 0; i < folders.size(); ++i) {
    if (i == kMaxFolders) {
      return Fail(ErrorCode::kInvalidArgument,
                  "more than {} folders below {}: name the folders of the advisories meant",
                  kMaxFolders,
                  paths.size() == 1 ? AsOneLine(paths.front()) : std::string("the folders given"));
    }
    auto names = fs.ListDir(folders[i]);
    if (!names) return tl::unexpected(names.error());
    std::ranges::sort(*names);
    for (const std::string& name : *names) {
      const std::string child = folders[i] + "/" + name;
      if (fs.IsDirectory(child)) {
        // A link to a folder is not followed: `ln -s . again` would list it all again and again.
        if (!fs.ReadLink(child)) folders.push_back(child);
      } else if (name.ends_with(".json") && fs.IsRegularFile(child)) {
        // Only files: a FIFO named *.json would wait for a writer forever.
        files.emplace_back(child, true);
      }
    }
  }
  if (files.empty() && folders.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "no advisory file given");
  }
  if (files.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "no advisory file (*.json) in {}{}",
                SanitizeUtf8(folders.front()), folders.size() > 1 ? " or any folder below it" : "");
  }
  std::vector<AdvisoryDocument> documents;
  for (const auto& [file, in_folder] : files) {
    auto text = fs.ReadFile(file, kMaxDocumentBytes);
    if (!text) return tl::unexpected(text.error());
    documents.push_back({file, std::move(*text), in_folder});
  }
  std::optional<json> base;
  if (!base_path.empty()) {
    auto text = fs.ReadFile(base_path, kMaxDocumentBytes);
    if (!text) return tl::unexpected(text.error());
    // The base must be a table cmax reads, so that its minimums mean what they say.
    if (auto parsed = MinimumTable::Parse(*text); !parsed) return Wrap(parsed.error(), base_path);
    base = json::parse(*text);
  }
  return BuildMinimums(documents, generated, base ? &*base : nullptr);
}

}  // namespace cmax::audit
