#include "cli/cli.hpp"

namespace cmax::cli {

// CMAX_VERSION comes from CMake (project version plus `git describe`), set on this file only
// so that a new commit recompiles one file.
std::string VersionString() {
  return CMAX_VERSION;
}

std::string VersionLine() {
  return "cmax " + VersionString();
}

}  // namespace cmax::cli
