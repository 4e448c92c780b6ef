// One YAML document from a file people write (plans, scenarios, attestations, kubeconfigs):
// yaml-cpp's Load reads the first and drops whatever follows a `---` line without a word, so a
// second document's claims or phases would be silently ignored. Header-only: for the libraries
// that link yaml-cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "core/result.hpp"

namespace cmax {

// The text's one document (a null node for an empty text), or kInvalidArgument when it holds
// more. Throws what yaml-cpp throws for text that is not YAML, as YAML::Load does.
inline Result<YAML::Node> LoadOneYamlDocument(std::string_view text, std::string_view what) {
  const std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
  if (documents.size() > 1) {
    return Fail(ErrorCode::kInvalidArgument,
                "{}: {} YAML documents (`---` lines); cmax reads one, and would ignore the rest",
                what, documents.size());
  }
  return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace cmax
