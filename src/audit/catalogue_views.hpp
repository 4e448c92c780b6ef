// What `cmax audit --show` prints: the catalogue's checks, one per line under their profile
// (text), the README's check table (markdown), or the selected checks as JSON. Pure.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/catalogue.hpp"
#include "core/result.hpp"

namespace cmax::audit {

enum class CatalogueFormat { kText, kMarkdown, kJson, kCoverage };
// text, markdown, json, coverage
Result<CatalogueFormat> ParseCatalogueFormat(std::string_view name);

struct ShowOptions {
  std::string profile;  // empty: every check; "security": versions and isolation
  std::string format = "text";
  bool verbose = false;  // text: each check's predicate, evidence, reproduce line and side effect
};

// The catalogue's checks as `options` ask; kInvalidArgument for an unknown profile or format.
Result<std::string> ShowCatalogue(const AuditCatalogue& catalogue, const ShowOptions& options);

// docs/AUDIT_COVERAGE.md: each of the public audit's checks, by its number, and how cmax's
// check compares with it.
std::string CoverageMarkdown(const AuditCatalogue& catalogue);

// What the audit's report says at -vv about a check of the catalogue: why (its rule) and how to
// see it yourself (its reproduce line); nothing for an id the catalogue does not have.
std::vector<std::pair<std::string, std::string>> ExplainCheck(std::string_view check_id);

// The block the README carries between its audit-checks markers: every check in a table, and
// how many are the public audit's and how many cmax's own.
std::string CatalogueMarkdown(const AuditCatalogue& catalogue);

}  // namespace cmax::audit
