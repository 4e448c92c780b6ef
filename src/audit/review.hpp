// `cmax audit review [RUN] [--regrade]`: a stored audit as it was graded, or graded again with
// today's rules and minimum table from the evidence it recorded (each node's, for a Slurm audit),
// with what changed. Nothing is collected and nothing is recorded: a review only reads.
#pragma once

#include <string>
#include <vector>

#include "audit/audit_run.hpp"
#include "core/run_record.hpp"

namespace cmax::audit {

struct ReviewOptions {
  std::string run = "latest";  // a run id, or "latest" (the newest audit)
  bool regrade = false;
  std::string minimums;  // the table to regrade with; empty: the built-in one
};

struct GradeChange {
  std::string check_id;
  CheckStatus was = CheckStatus::kUnknown;
  CheckStatus now = CheckStatus::kUnknown;
  std::string message;  // today's
};

struct Regrade {
  std::vector<Finding> findings;     // today's, one per check of the run's profile
  std::vector<GradeChange> changes;  // the checks whose status changed, in the checks' order
  std::string was_table;             // "2026-09-25T00:00:00.000Z (sha256 ...)" from the run
  std::string now_table;
};

struct AuditReview {
  RunRecord record;
  std::optional<Regrade> regrade;
};

Result<AuditReview> ReviewAudit(const ReviewOptions& options, const AuditIo& io);

// Pure parts.
// The findings a stored audit's evidence gets today: local runs from their evidence items,
// Slurm runs node by node (audit.node.*, the unreachable ones from audit.coverage), the worst
// node deciding. kInvalidArgument for a run that is not an audit with its evidence.
Result<std::vector<Finding>> RegradeRecord(const RunRecord& record, const MinimumTable& table,
                                           WallTime now);
// Checks present in both whose status differs, in `now`'s order; checks only in one are
// changes too (from or to UNKNOWN "not graded").
std::vector<GradeChange> CompareGrades(const std::vector<Finding>& was,
                                       const std::vector<Finding>& now);
// The regrade for a person: the tables, each change, and the count of the unchanged.
std::string RegradeText(const RunRecord& record, const Regrade& regrade);
// The same as JSON (schema cmax.audit-regrade/v1): the run, both tables, the changes and
// today's findings.
std::string RegradeJson(const RunRecord& record, const Regrade& regrade);

}  // namespace cmax::audit
