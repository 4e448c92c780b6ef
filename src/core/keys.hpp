// Strict schemas for the files people write (scenarios, price tables, and the plan and rubric
// files to come): a key the reader does not know is an error that names it, where it is, and
// the known key it was most likely meant to be. A misspelt `timeuot_s` silently ignored would
// run with the default instead of what was asked.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax {

// The known key within two edits of `key` (case ignored), the nearest first; nullopt if none.
std::optional<std::string_view> NearestKey(std::string_view key,
                                           const std::vector<std::string_view>& known);

// "scenario line 7: unknown key 'timeuot_s' (did you mean 'timeout_s'? known: ...)".
// line 0: the line is not known.
Error UnknownKey(std::string_view what, std::string_view key, int line,
                 const std::vector<std::string_view>& known);

// The 1-based line of the first `"key":` in a JSON text (or of the `occurrence`th), 0 when not
// found (nlohmann's DOM keeps no positions; the first occurrence is where a person looks).
int LineOfJsonKey(std::string_view text, std::string_view key, int occurrence = 1);

}  // namespace cmax
