// Reading JSON that people write: the error says where to look.
#include "core/json_read.hpp"

#include <gtest/gtest.h>
#include <string>

#include "core/keys.hpp"

namespace cmax {
namespace {

TEST(ParseJsonObject, SaysWhereTheTextStopsBeingJson) {
  EXPECT_EQ(ParseJsonObject(R"({"a": 1})").value()["a"], 1);
  const auto cut = ParseJsonObject("{\n  \"a\": [1,\n");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(cut.error().message.rfind("not JSON: at line 3, column 1: ", 0), 0U)
      << cut.error().message;
  const auto nan = ParseJsonObject(R"({"a": NaN})");
  ASSERT_FALSE(nan);
  EXPECT_NE(nan.error().message.find("line 1, column 7"), std::string::npos) << nan.error().message;
  for (const char* other : {"[1]", "\"x\"", "null", "3"}) {
    const auto doc = ParseJsonObject(other);
    ASSERT_FALSE(doc) << other;
    EXPECT_EQ(doc.error().message.rfind("not a JSON object (the text is a JSON ", 0), 0U)
        << doc.error().message;
  }
  // What it quotes of the text is made printable.
  const auto odd = ParseJsonObject("\x1b[31m\xff");
  ASSERT_FALSE(odd);
  EXPECT_EQ(SanitizeUtf8(odd.error().message), odd.error().message);
}

// A file nested past what any file cmax reads does (a rubric 60,000 levels deep crashed `rate`
// when the bad value was printed) is refused before it is parsed; 64 levels are read.
TEST(ParseJsonObject, ATextNestedPastSixtyFourLevelsIsRefused) {
  const auto nested = [](int levels) {
    return "{\"a\": " + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_TRUE(ParseJsonObject(nested(64)));
  for (const std::string& text : {nested(65), nested(60000), std::string(100000, '[')}) {
    const auto doc = ParseJsonObject(text);
    ASSERT_FALSE(doc);
    EXPECT_EQ(doc.error().message, "nested deeper than 64 levels: no file cmax reads");
  }
  EXPECT_TRUE(ParseJsonObject(
      R"({"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})"))
      << "a bracket in a string is no level";
}

TEST(ParseJsonObject, AKeyTwiceInOneObjectIsRefused) {
  // nlohmann keeps the last; which of the two a person meant is not ours to guess.
  const auto twice = ParseJsonObject(R"({"name": "a", "items": [], "name": "b"})");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "line 1: the key \"name\" appears twice in one object");
  // The line is the repeat's, past the same key in other objects before it.
  const auto nested = ParseJsonObject(
      "{\"w\": 0,\n \"a\": [{\"w\": 1}],\n \"b\": {\"w\": 1,\n"
      "  \"x\": 2,\n  \"w\": 2}}");
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.error().message, "line 5: the key \"w\" appears twice in one object");
  // With an escape in the text, counting could point elsewhere: no line then.
  const auto escaped = ParseJsonObject(R"({"x": {"n\u0061me": 1, "name": 2}, "name": 3})");
  ASSERT_FALSE(escaped);
  EXPECT_EQ(escaped.error().message, "the key \"name\" appears twice in one object");
  // The same key in two objects, at any depth, is no repeat.
  EXPECT_TRUE(ParseJsonObject(R"({"w": 0, "a": [{"w": 1}, {"w": 2}], "b": {"w": {"w": 3}}})"));
}

// Where a key is, for the errors that name a line: only a key counts, never the same text as a
// value or inside one, and the n-th occurrence when asked.
TEST(LineOfJsonKey, CountsKeysNotValues) {
  const std::string text =
      "{\"note\": \"m\",\n"
      " \"x\": \"\\\"m\\\": 1\",\n"
      " \"a\": {\"m\": 1},\n"
      " \"b\", \" :m\": 2,\n"
      " \"m\"\n  : 2}";
  EXPECT_EQ(LineOfJsonKey(text, "m"), 3);
  EXPECT_EQ(LineOfJsonKey(text, "m", 2), 5);
  EXPECT_EQ(LineOfJsonKey(text, "m", 3), 0);
  EXPECT_EQ(LineOfJsonKey(text, " :m"), 4);
  EXPECT_EQ(LineOfJsonKey(text, "note"), 1);
  EXPECT_EQ(LineOfJsonKey(text, "absent"), 0);
  EXPECT_EQ(LineOfJsonKey("{\"m\": \"unclosed", "x"), 0);
}

}  // namespace
}  // namespace cmax
