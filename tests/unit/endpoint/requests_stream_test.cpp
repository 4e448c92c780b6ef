// The requests file as it grows: every record given gets its line, in the order given, with the
// secrets taken out; a sink that fails is said once and takes no more.
#include "endpoint/requests_stream.hpp"

#include <gtest/gtest.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/wait.hpp"

namespace cmax::endpoint {
namespace {

RequestRecord Record(uint64_t index, std::string error = "") {
  RequestRecord r;
  r.index = index;
  r.timing.ok = error.empty();
  r.error_message = std::move(error);
  return r;
}

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(RequestsStream, EveryRecordIsWrittenInOrderWithoutItsSecrets) {
  std::mutex mutex;
  std::string text;
  size_t writes = 0;
  size_t finished = 0;
  RequestsStream stream({.append = [&](std::string_view more) -> Result<void> {
                           const std::lock_guard lock(mutex);
                           text += more;
                           ++writes;
                           return {};
                         },
                         .finish = [&]() -> Result<void> {
                           ++finished;
                           return {};
                         }},
                        {"sk-secret-key-1234"}, std::chrono::milliseconds(1));
  for (uint64_t i = 0; i < 1000; ++i) {
    stream.Add(Record(i, i == 7 ? "401 bad key sk-secret-key-1234" : ""));
  }
  ASSERT_TRUE(stream.Finish());
  EXPECT_TRUE(stream.Finish());  // once finished, again is nothing
  const auto lines = Lines(text);
  ASSERT_EQ(lines.size(), 1000U);
  for (uint64_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["index"], i);
  EXPECT_EQ(lines[7]["error_message"], "401 bad key [redacted]");
  EXPECT_EQ(text.find("sk-secret"), std::string::npos);
  EXPECT_GE(writes, 1U);
  EXPECT_EQ(finished, 1U);  // once, after the last line
}

// A file whose last sync or close fails (a full disk on NFS may say so only then) fails the run.
TEST(RequestsStream, AFinishThatFailsIsSaid) {
  RequestsStream stream({.append = [](std::string_view) -> Result<void> { return {}; },
                         .finish = []() -> Result<void> {
                           return Fail(ErrorCode::kIo, "cannot finish: No space left on device");
                         }},
                        {}, std::chrono::milliseconds(1));
  stream.Add(Record(0));
  const auto result = stream.Finish();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "cannot finish: No space left on device");
}

TEST(RequestsStream, AFailedWriteIsSaidAndTakesNoMore) {
  size_t writes = 0;
  bool finished = false;
  RequestsStream stream({.append = [&](std::string_view) -> Result<void> {
                           ++writes;
                           return Fail(ErrorCode::kIo, "cannot write: No space left on device");
                         },
                         .finish = [&]() -> Result<void> {
                           finished = true;
                           return {};
                         }},
                        {}, std::chrono::milliseconds(1));
  stream.Add(Record(0));
  ASSERT_TRUE(testing::WaitUntil([&] { return stream.Failed(); }));
  stream.Add(Record(1));  // dropped: nothing more is written
  const auto result = stream.Finish();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "cannot write: No space left on device");
  EXPECT_TRUE(stream.Failed());
  EXPECT_EQ(writes, 1U);
  EXPECT_FALSE(finished);  // a file that failed is not said to be finished
}

TEST(RequestsStream, NothingGivenWritesNothing) {
  size_t writes = 0;
  {
    RequestsStream stream({.append = [&](std::string_view) -> Result<void> {
                            ++writes;
                            return {};
                          }},
                          {});
  }  // the destructor finishes it
  EXPECT_EQ(writes, 0U);
}

}  // namespace
}  // namespace cmax::endpoint
