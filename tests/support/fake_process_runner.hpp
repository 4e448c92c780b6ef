// A stand-in ProcessRunner for tests of code that runs programs: it records every spec and
// answers from a table keyed by the program's base name, or by the base name and the first
// argument ("srun --help"), which comes first when both are there.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sys/process_runner.hpp"

namespace cmax::testing {

class FakeProcessRunner final : public sys::ProcessRunner {
 public:
  void Answer(const std::string& program, sys::ProcessResult result) {
    answers_[program] = std::move(result);
  }
  void AnswerStdout(const std::string& program, std::string text, int exit_code = 0) {
    sys::ProcessResult result;
    result.exit_code = exit_code;
    result.stdout_text = std::move(text);
    answers_[program] = std::move(result);
  }
  Result<sys::ProcessResult> Run(const sys::ProcessSpec& spec) override {
    calls.push_back(spec);
    const std::string& path = spec.argv.at(0);
    const std::string base = path.substr(path.rfind('/') + 1);
    auto it = spec.argv.size() > 1 ? answers_.find(base + " " + spec.argv[1]) : answers_.end();
    if (it == answers_.end()) it = answers_.find(base);
    if (it == answers_.end()) return Fail(ErrorCode::kNotFound, "cannot run {}", path);
    return it->second;
  }
  std::vector<sys::ProcessSpec> calls;

 private:
  std::map<std::string, sys::ProcessResult> answers_;
};

}  // namespace cmax::testing
