// A JSON document as cmax prints it (stdout, views, reports): indented, one line end, never a
// throw on text from outside that is not UTF-8 (such bytes become U+FFFD), and C1 controls
// written as \u escapes (EscapeC1InJson), so that a terminal shows the document and obeys
// nothing in it. Works for nlohmann::json and nlohmann::ordered_json alike.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/strings.hpp"

namespace cmax {

template <class Json>
std::string JsonText(const Json& doc) {
  return EscapeC1InJson(doc.dump(2, ' ', false, Json::error_handler_t::replace)) + "\n";
}

}  // namespace cmax
