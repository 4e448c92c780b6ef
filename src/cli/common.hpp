// Helpers the reading commands (db, report) share.
#pragma once

#include <cstdint>
#include <string>

#include "cli/cli.hpp"
#include "core/result.hpp"
#include "core/run_record.hpp"
#include "store/store.hpp"

namespace cmax::cli {

// Opens an existing store (never creates one) and migrates it if it is older.
Result<store::Store> OpenExistingStore(const Context& ctx);
// "latest", "" (also latest) or a run id; with a command, "latest" is that command's latest run.
Result<int64_t> ResolveRunId(store::Store& store, const std::string& text,
                             const std::string& command = "");
// The state to show: a run still "running" whose process is gone on this host is "abandoned".
std::string DisplayState(const RunInfo& run);

}  // namespace cmax::cli
