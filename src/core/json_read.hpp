// Reading JSON that comes from outside (request bodies, webhook posts, prompt and price files):
// a member that is missing, or of another type than expected, reads as the fallback. nlohmann's
// own value() throws on a type it did not expect, which turned one odd field into a crash
// (serve-sim died on {"stream": "yes"}). Header-only: every user links nlohmann already.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/result.hpp"
#include "core/strings.hpp"

namespace cmax {

// The member `key` of an object; nullptr when `object` is not an object or has no such member.
inline const nlohmann::json* Member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

inline std::string TextOf(const nlohmann::json& object, std::string_view key,
                          std::string_view fallback = {}) {
  const nlohmann::json* v = Member(object, key);
  return v && v->is_string() ? v->get<std::string>() : std::string(fallback);
}

inline bool BoolOf(const nlohmann::json& object, std::string_view key, bool fallback) {
  const nlohmann::json* v = Member(object, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

// The value at a path of members ({"status", "nodeInfo", "kernelVersion"}); null when any step
// is missing or not an object.
inline const nlohmann::json& JsonAt(const nlohmann::json& j,
                                    std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    at = Member(*at, key);
    if (at == nullptr) return kNull;
  }
  return *at;
}

// The text at a path; empty when it is missing or not a string.
inline std::string TextAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json& v = JsonAt(j, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// How deep `text` nests arrays and objects (brackets inside strings not counted), counting no
// further than `stop_past`. JSON from someone else's store is taken only when shallow: nlohmann
// parses without recursion but dumps with one call per level, and 100,000 levels (200 KB) broke
// the stack of every report.
inline int JsonNesting(std::string_view text, int stop_past) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > stop_past) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// What nlohmann says of text that is not JSON, without its exception's prefix: "at line 3,
// column 14: syntax error while parsing value - ...", cut to 240 bytes; it quotes the text it
// read, so the caller sanitizes it for where it goes.
inline std::string JsonParseProblem(const nlohmann::json::exception& e) {
  std::string why = e.what();
  if (const size_t at = why.find("parse error "); at != std::string::npos) why.erase(0, at + 12);
  return why.substr(0, 240);
}

// The deepest JSON cmax writes into a store is a few levels; a stored value deeper than this is
// not cmax's, and is shown as a note instead of parsed.
inline constexpr int kMaxStoredJsonNesting = 64;

// The first key that appears twice in one object of a JSON text, read as its events: `repeat`
// empty when none, `occurrence` which `"key":` of the whole text (by count) is the repeat.
struct JsonRepeatedKey : nlohmann::json_sax<nlohmann::json> {
  std::vector<std::set<std::string>> keys_by_depth;
  std::map<std::string, int> times_seen;
  std::string repeat;
  int occurrence = 0;

  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*size*/) override {
    keys_by_depth.emplace_back();
    return true;
  }
  bool key(string_t& name) override {
    if (!repeat.empty() || keys_by_depth.empty()) return true;
    const int seen = ++times_seen[name];
    if (!keys_by_depth.back().insert(name).second) {
      repeat = name;
      occurrence = seen;
    }
    return true;
  }
  bool end_object() override {
    if (!keys_by_depth.empty()) keys_by_depth.pop_back();
    return true;
  }
  bool start_array(std::size_t /*size*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }
};

// The deepest a file people write for cmax nests (rubrics, platforms, tables, nccl-tests'
// output: a few levels); deeper is no such file, and is refused before it is parsed (a rubric
// nested 60,000 levels crashed `rate` when its bad value was printed).
inline constexpr int kMaxFileJsonNesting = 64;

// `text` as a JSON object, or an error (kInvalidArgument) that says where a person should look:
// "not JSON: at line 3, column 14: syntax error ... unexpected end of input", or "not a JSON
// object (an array)". For the files people write (rubrics, platforms, tables).
inline Result<nlohmann::json> ParseJsonObject(std::string_view text) {
  if (JsonNesting(text, kMaxFileJsonNesting) > kMaxFileJsonNesting) {
    return Fail(ErrorCode::kInvalidArgument, "nested deeper than {} levels: no file cmax reads",
                kMaxFileJsonNesting);
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "not JSON: {}", SanitizeUtf8(JsonParseProblem(e)));
  }
  // nlohmann keeps the last of two equal keys in an object; a person who wrote both meant one
  // of them, and which is not ours to guess. Found in a second pass of events: nlohmann's parser
  // with a callback scans an array's elements at the end of each object in it (8,000 rubric
  // items took 6 s there).
  JsonRepeatedKey repeated;
  (void)nlohmann::json::sax_parse(text, &repeated);
  if (!doc.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "not a JSON object (the text is a JSON {})",
                doc.type_name());
  }
  if (!repeated.repeat.empty()) {
    // Counted in the text as written: with an escape anywhere (a key written "n\u0061me", a
    // value holding \"name\":) the count could point at another line, so none is said.
    const int line = text.find('\\') == std::string_view::npos
                         ? LineOfJsonKey(text, repeated.repeat, repeated.occurrence)
                         : 0;
    return Fail(ErrorCode::kInvalidArgument, "{}the key \"{}\" appears twice in one object",
                line > 0 ? fmt::format("line {}: ", line) : std::string(),
                SanitizeUtf8(repeated.repeat.substr(0, 60)));
  }
  return doc;
}

}  // namespace cmax
