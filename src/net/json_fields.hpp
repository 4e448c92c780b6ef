// Strict reading of the net library's data files (the platforms' figures, the recipes): a key
// the reader does not know is an error naming it and the key meant; a text that must be there
// is. `what` opens each message ("nccl recipes").
#pragma once

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/result.hpp"
#include "core/strings.hpp"

namespace cmax::net {

inline Result<void> OnlyKeys(const nlohmann::json& object,
                             const std::vector<std::string_view>& known, std::string_view where) {
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(known, key) == known.end()) {
      return tl::unexpected(UnknownKey(where, SanitizeUtf8(key), 0, known));
    }
  }
  return {};
}

inline Result<std::string> TextOf(std::string_view what, const nlohmann::json& object,
                                  const char* key, std::string_view where,
                                  bool may_be_empty = false) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string() ||
      (!may_be_empty && it->get_ref<const std::string&>().empty())) {
    return Fail(ErrorCode::kInvalidArgument, "{}: {}: \"{}\" must be a{} string", what, where, key,
                may_be_empty ? "" : " non-empty");
  }
  // Each is printed on a line of its own (a listing, a verdict, the nccl.conf recommended): a
  // line break would forge another line, an escape would reach the terminal.
  const std::string& text = it->get_ref<const std::string&>();
  if (!text.empty() && !IsOneLine(text, 4096)) {
    return Fail(ErrorCode::kInvalidArgument,
                "{}: {}: \"{}\" must be one printable line (no line break or control character)",
                what, where, key);
  }
  return text;
}

}  // namespace cmax::net
