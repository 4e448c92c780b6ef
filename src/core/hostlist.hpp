// Slurm's host lists: "gpu[01-03,7],login1" as Slurm's tools write and take them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cmax {

// "gpu[01-03,7]" -> gpu01 gpu02 gpu03 gpu7 (widths kept); "a,b" -> a b. One bracket group
// per name. Refuses unbalanced brackets, a range that runs backwards or is not numbers, and a
// list of more than 200,000 names.
Result<std::vector<std::string>> ExpandHostList(std::string_view text);

}  // namespace cmax
