// What `cmax lab up`, `status` and `down` print, from their results: text for people or JSON for
// programs (schema cmax.lab/v1), what goes to stderr, and the exit code. Pure.
#pragma once

#include <string>

#include "core/result.hpp"
#include "lab/lab.hpp"

namespace cmax::lab {

struct LabView {
  std::string out;
  std::string err;
  int exit_code = 0;  // 0; 1: a daemon is not running (status); 2: bad input; 3: it failed
};

// `asked`: the spec of the command line, to note a running lab of another size.
LabView UpView(const LabSpec& asked, const Result<UpResult>& result, bool json);
LabView StatusView(const std::string& dir, const Result<LabStatus>& status, bool json);
LabView DownView(const std::string& dir, const Result<DownResult>& result, bool json);

// The lab's folder: `dir` made absolute against `cwd`, the data folder's lab when empty.
std::string LabDir(const std::string& dir, const std::string& cwd, const std::string& data_dir);

}  // namespace cmax::lab
