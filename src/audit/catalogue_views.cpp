#include "audit/catalogue_views.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/strings.hpp"

namespace cmax::audit {
namespace {

constexpr size_t kAllTargets = 5;

std::string TargetList(const CheckSpec& check) {
  if (check.targets.size() == kAllTargets) return "all";
  std::string out;
  for (const AuditTarget target : check.targets) {
    if (!out.empty()) out += ", ";
    out += TargetName(target);
  }
  return out;
}

size_t PublicCount(const std::vector<const CheckSpec*>& checks) {
  return static_cast<size_t>(std::count_if(checks.begin(), checks.end(), [](const CheckSpec* c) {
    return c->public_check.has_value();
  }));
}

std::string Text(const AuditCatalogue& catalogue, const std::vector<const CheckSpec*>& checks,
                 bool verbose) {
  size_t width = 0;
  for (const CheckSpec* check : checks) width = std::max(width, check->id.size());
  std::string out;
  for (const ProfileSpec& profile : catalogue.Profiles()) {
    std::vector<const CheckSpec*> mine;
    for (const CheckSpec* check : checks) {
      if (check->profile == profile.name) mine.push_back(check);
    }
    if (mine.empty()) continue;
    out += fmt::format("{} ({} check{}): {}\n", profile.name, mine.size(),
                       mine.size() == 1 ? "" : "s", profile.title);
    for (const CheckSpec* check : mine) {
      out += fmt::format("  {:<{}}  {:<8}  {}", check->id, width,
                         AuditSeverityName(check->severity), check->title);
      if (check->targets.size() != kAllTargets) out += " [" + TargetList(*check) + "]";
      if (!check->side_effect.empty()) out += " (side effect)";
      out += '\n';
      if (!verbose) continue;
      const std::string indent(width + 14, ' ');
      out += indent + "rule: " + check->predicate + "\n";
      out += indent + "evidence: " + Join(check->evidence, ", ") + "\n";
      out += indent + "reproduce: " + check->reproduce + "\n";
      if (!check->side_effect.empty()) out += indent + "side effect: " + check->side_effect + "\n";
      out += indent + "remediation: " + check->remediation + "\n";
      if (check->public_check) {
        out += indent + fmt::format("public audit: #{} {}\n", check->public_check->number,
                                    check->public_check->key);
      }
      for (const std::string& link : check->links) out += indent + "see: " + link + "\n";
    }
  }
  const size_t from_public = PublicCount(checks);
  out += fmt::format("{} check{}: {} of the public cmax audit, {} of cmax's own\n", checks.size(),
                     checks.size() == 1 ? "" : "s", from_public, checks.size() - from_public);
  return out;
}

std::string Cell(std::string text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

nlohmann::json CheckJson(const CheckSpec& check) {
  nlohmann::json targets = nlohmann::json::array();
  for (const AuditTarget target : check.targets) targets.push_back(TargetName(target));
  nlohmann::json out = {{"id", check.id},
                        {"title", check.title},
                        {"profile", check.profile},
                        {"targets", targets},
                        {"severity", AuditSeverityName(check.severity)},
                        {"evidence", check.evidence},
                        {"predicate", check.predicate},
                        {"remediation", check.remediation},
                        {"reproduce", check.reproduce},
                        {"links", check.links}};
  if (!check.side_effect.empty()) out["side_effect"] = check.side_effect;
  if (check.public_check) {
    out["public"] = {{"number", check.public_check->number},
                     {"key", check.public_check->key},
                     {"relation", check.public_check->relation},
                     {"difference", check.public_check->difference}};
  }
  return out;
}

}  // namespace

Result<CatalogueFormat> ParseCatalogueFormat(std::string_view name) {
  if (name == "text") return CatalogueFormat::kText;
  if (name == "markdown") return CatalogueFormat::kMarkdown;
  if (name == "json") return CatalogueFormat::kJson;
  if (name == "coverage") return CatalogueFormat::kCoverage;
  return Fail(ErrorCode::kInvalidArgument, "unknown format '{}' (text, markdown, json or coverage)",
              name);
}

std::string CoverageMarkdown(const AuditCatalogue& catalogue) {
  std::vector<const CheckSpec*> covered;
  for (const CheckSpec& check : catalogue.Checks()) {
    if (check.public_check) covered.push_back(&check);
  }
  std::ranges::sort(covered, {}, [](const CheckSpec* c) { return c->public_check->number; });
  std::map<std::string, int> counts;
  for (const CheckSpec* check : covered) ++counts[check->public_check->relation];
  std::string out = fmt::format(
      "# Coverage of the public `cmax audit`\n\n"
      "Each of the {} checks of the public audit (SemiAnalysisAI/ClusterMAX, by its number and "
      "key) and the cmax check that covers it: the same evidence and predicate, a stricter one "
      "(it fails or is UNKNOWN where the public one passes), a different one, or not yet graded. "
      "Generated from `data/audit_catalogue.json` by `cmax audit --show --format coverage` "
      "(`scripts/audit_table.sh --update`); a unit test fails when this file differs.\n\n"
      "What holds for every check and is not repeated below: on Slurm cmax reads every node of "
      "the partition or node list (the worst node decides), where the public audit reads one; "
      "what it cannot read is UNKNOWN, never dropped or passed; it is read-only, so a check that "
      "needs a side effect is N/A until it is allowed; on Kubernetes it reads the API only, so "
      "what needs a pod on the node is UNKNOWN unless side effects are allowed and an image "
      "given (--image: a pod on each node reads it, and is deleted).\n\n",
      covered.size());
  std::vector<std::string> tally;
  for (const char* relation : kPublicRelations) {
    tally.push_back(fmt::format("{} {}", counts[relation], relation));
  }
  out += fmt::format("Of {}: {}.\n\n", covered.size(), Join(tally, ", "));
  out += "| # | public key | cmax check | relation | how |\n|---|---|---|---|---|\n";
  for (const CheckSpec* check : covered) {
    const PublicCheck& p = *check->public_check;
    out += fmt::format("| {} | `{}` | `{}` | {} | {} |\n", p.number, Cell(p.key), check->id,
                       p.relation, Cell(p.difference));
  }
  return out;
}

std::string CatalogueMarkdown(const AuditCatalogue& catalogue) {
  std::vector<const CheckSpec*> all;
  for (const CheckSpec& check : catalogue.Checks()) all.push_back(&check);
  const size_t from_public = PublicCount(all);
  std::string out = fmt::format(
      "{} checks: the {} of the public `cmax audit` (SemiAnalysisAI/ClusterMAX), with the number "
      "it gives them, and {} of cmax's own (no number), which grade what it collects or names but "
      "never grades. Generated from `data/audit_catalogue.json` by `cmax audit --show --format "
      "markdown`.\n\n",
      all.size(), from_public, all.size() - from_public);
  out += "| check | severity | targets | what it checks | public |\n|---|---|---|---|---|\n";
  for (const ProfileSpec& profile : catalogue.Profiles()) {
    for (const CheckSpec* check : all) {
      if (check->profile != profile.name) continue;
      std::string what = Cell(check->title);
      if (!check->side_effect.empty()) what += " (side effect: " + Cell(check->side_effect) + ")";
      out += fmt::format("| `{}` | {} | {} | {} | {} |\n", check->id,
                         AuditSeverityName(check->severity), TargetList(*check), what,
                         check->public_check ? std::to_string(check->public_check->number) : "");
    }
  }
  return out;
}

Result<std::string> ShowCatalogue(const AuditCatalogue& catalogue, const ShowOptions& options) {
  auto format = ParseCatalogueFormat(options.format);
  if (!format) return tl::unexpected(format.error());
  auto checks = catalogue.Select(options.profile);
  if (!checks) return tl::unexpected(checks.error());
  switch (*format) {
    case CatalogueFormat::kCoverage:
      if (!options.profile.empty()) {
        return Fail(ErrorCode::kInvalidArgument,
                    "--format coverage maps every public check: no profile");
      }
      return CoverageMarkdown(catalogue);
    case CatalogueFormat::kMarkdown:
      if (!options.profile.empty()) {
        return Fail(ErrorCode::kInvalidArgument,
                    "--format markdown makes the README's table of every check: no profile");
      }
      return CatalogueMarkdown(catalogue);
    case CatalogueFormat::kJson: {
      // A catalogue itself (AuditCatalogue::Parse reads it): the profiles of the checks chosen.
      nlohmann::json out = {{"schema", "cmax.audit-catalogue/v1"},
                            {"profiles", nlohmann::json::array()},
                            {"checks", nlohmann::json::array()}};
      for (const ProfileSpec& profile : catalogue.Profiles()) {
        const bool chosen = std::any_of(checks->begin(), checks->end(), [&](const CheckSpec* c) {
          return c->profile == profile.name;
        });
        if (chosen) out["profiles"].push_back({{"name", profile.name}, {"title", profile.title}});
      }
      for (const CheckSpec* check : *checks) out["checks"].push_back(CheckJson(*check));
      return out.dump(2) + "\n";
    }
    case CatalogueFormat::kText: break;
  }
  return Text(catalogue, *checks, options.verbose);
}

std::vector<std::pair<std::string, std::string>> ExplainCheck(std::string_view check_id) {
  for (const CheckSpec& check : AuditCatalogue::Builtin().Checks()) {
    if (check.id != check_id) continue;
    return {{"why", check.predicate}, {"reproduce", check.reproduce}};
  }
  return {};
}

}  // namespace cmax::audit
