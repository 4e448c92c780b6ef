// One YAML document from a file people write (plans, scenarios, attestations, kubeconfigs):
// yaml-cpp's Load reads the first and drops whatever follows a `---` line without a word, so a
// second document's claims or phases would be silently ignored. Header-only: for the libraries
// that link yaml-cpp.
#pragma once

#include <string>
#include <string_view>
#include <yaml-cpp/yaml.h>

#include "core/result.hpp"

namespace cmax {

// Whether `text` holds a second document: a `---` line at the start of a line after one that
// holds content, followed by another that holds content (a comment, a blank line, `...` and a
// lone closing `---` are none). A `---` at the start of a line cannot be inside a scalar of a
// document (YAML forbids document markers there), so the lines tell. Read from the text, not by
// yaml-cpp's LoadAll, which a fuzzed attestation drove past 2 GB.
inline bool HoldsASecondYamlDocument(std::string_view text) {
  bool content = false;       // in the document being read
  bool after_marker = false;  // a `---` came after content
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool marker =
        line.starts_with("---") && (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
    if (marker) {
      if (content) after_marker = true;
      const std::string_view rest = line.substr(3);
      const size_t first = rest.find_first_not_of(" \t");
      if (first != std::string_view::npos && rest[first] != '#') {
        if (after_marker) return true;  // `--- value` after content
        content = true;
      }
      continue;
    }
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#' || line == "..." ||
        line.starts_with("%")) {
      continue;
    }
    if (after_marker) return true;
    content = true;
  }
  return false;
}

// The text's one document (a null node for an empty text), or kInvalidArgument when it holds
// more than one that is not empty. Throws what yaml-cpp throws for text that is not YAML, as
// YAML::Load does.
inline Result<YAML::Node> LoadOneYamlDocument(std::string_view text, std::string_view what) {
  if (HoldsASecondYamlDocument(text)) {
    return Fail(ErrorCode::kInvalidArgument,
                "{}: a second YAML document (after a `---` line); cmax reads one, and would "
                "ignore the rest",
                what);
  }
  return YAML::Load(std::string(text));
}

}  // namespace cmax
