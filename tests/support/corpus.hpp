// The hostile-input corpus: tests/data/hostile/<kind>/NAME.<ext> is an input a reader must
// refuse, NAME.error the part of the message it must give. The folder is walked, never listed
// by hand, so a new case cannot be left out; an input without its .error (or the reverse)
// fails the test that reads the folder.
#pragma once

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cmax::testing {

struct CorpusCase {
  std::string name;  // the input's file name
  std::string path;
  std::string input;  // its bytes
  std::string error;  // what the refusal must say
};

inline std::string SlurpFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<CorpusCase> HostileCorpus(const std::string& kind) {
  const std::filesystem::path dir = std::filesystem::path(CMAX_TEST_DATA) / "hostile" / kind;
  std::map<std::string, std::filesystem::path> inputs;
  std::map<std::string, std::string> errors;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() == ".error") {
      std::string error = SlurpFile(p);
      while (!error.empty() && error.back() == '\n') error.pop_back();
      errors[p.stem().string()] = error;
    } else {
      inputs[p.stem().string()] = p;
    }
  }
  std::vector<CorpusCase> cases;
  for (const auto& [stem, path] : inputs) {
    const auto error = errors.find(stem);
    EXPECT_NE(error, errors.end()) << path << " has no .error beside it";
    if (error == errors.end()) continue;
    cases.push_back({path.filename().string(), path.string(), SlurpFile(path), error->second});
  }
  for (const auto& [stem, error] : errors) {
    EXPECT_TRUE(inputs.count(stem) > 0) << stem << ".error has no input";
  }
  EXPECT_FALSE(cases.empty()) << "no cases in " << dir;
  return cases;
}

}  // namespace cmax::testing
