// Reading JSON that people write: the error says where to look.
#include "core/json_read.hpp"

#include <gtest/gtest.h>
#include <string>

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
  EXPECT_EQ(std::string(ParseJsonObject(std::string(100000, '[')).error().message).substr(0, 9),
            "not JSON:");
}

TEST(ParseJsonObject, AKeyTwiceInOneObjectIsRefused) {
  // nlohmann keeps the last; which of the two a person meant is not ours to guess.
  const auto twice = ParseJsonObject(R"({"name": "a", "items": [], "name": "b"})");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "the key \"name\" appears twice in one object");
  const auto nested = ParseJsonObject(R"({"a": {"w": 1, "w": 2}})");
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("\"w\""), std::string::npos);
  // The same key in two objects, at any depth, is no repeat.
  EXPECT_TRUE(ParseJsonObject(R"({"w": 0, "a": [{"w": 1}, {"w": 2}], "b": {"w": {"w": 3}}})"));
}

}  // namespace
}  // namespace cmax
