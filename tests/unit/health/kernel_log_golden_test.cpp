// Golden files for every kernel-log shape: tests/data/health/kmsg/<case>.log is read line by
// line through ParseLogLine, the event parser and the condition tracker; <case>.expected.json
// holds the records, events and conditions that must come out (CMAX_UPDATE_GOLDEN=1 rewrites).
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "health/conditions.hpp"
#include "health/kernel_events.hpp"
#include "health/kernel_record.hpp"
#include "health/xid_catalog.hpp"
#include "support/golden.hpp"

namespace cmax::health {
namespace {

using Json = nlohmann::ordered_json;

Json RecordJson(const KernelRecord& r) {
  Json j = Json::object();
  if (r.priority >= 0) j["priority"] = r.priority;
  if (r.facility >= 0) j["facility"] = r.facility;
  if (r.sequence != 0) j["sequence"] = r.sequence;
  if (r.monotonic_us) j["monotonic_us"] = *r.monotonic_us;
  if (r.wall_time) j["wall_time"] = FormatIso8601(*r.wall_time);
  if (!r.host.empty()) j["host"] = r.host;
  if (r.continuation) j["continuation"] = true;
  j["message"] = r.message.substr(0, 160);
  return j;
}

Json EventJson(const KernelEvent& e) {
  Json j = {{"kind", KernelEventKindName(e.kind)}, {"device", e.device}};
  if (e.kind == KernelEventKind::kXid || e.kind == KernelEventKind::kSxid) {
    j["code"] = e.code;
    j["pci"] = e.device;
  }
  if (e.pid) j["pid"] = *e.pid;
  if (!e.process.empty()) j["process"] = e.process;
  if (e.gpu_instance) j["gpu_instance"] = *e.gpu_instance;
  if (e.compute_instance) j["compute_instance"] = *e.compute_instance;
  if (e.link) j["link"] = *e.link;
  if (e.cpu) j["cpu"] = *e.cpu;
  if (e.seconds) j["seconds"] = *e.seconds;
  if (e.fatal) j["fatal"] = true;
  if (e.corrected) j["corrected"] = true;
  if (!e.switch_name.empty()) j["switch"] = e.switch_name;
  if (!e.filesystem.empty()) j["filesystem"] = e.filesystem;
  if (!e.recovery_action.empty()) j["recovery_action"] = e.recovery_action;
  if (!e.uuid.empty()) j["uuid"] = e.uuid;
  return j;
}

std::string Replay(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KernelEventParser parser;
  ConditionTracker tracker(XidCatalog::Builtin());
  Json lines = Json::array();
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    Json entry = {{"line", number}};
    auto record = ParseLogLine(line, 2026);
    if (!record) {
      entry["record"] = nullptr;
      lines.push_back(std::move(entry));
      continue;
    }
    entry["record"] = RecordJson(*record);
    Json events = Json::array();
    for (const KernelEvent& event : parser.Feed(*record)) {
      events.push_back(EventJson(event));
      tracker.Observe(event, *record);
    }
    if (!events.empty()) entry["events"] = std::move(events);
    lines.push_back(std::move(entry));
  }
  Json conditions = Json::array();
  for (const Condition& c : tracker.Conditions()) {
    conditions.push_back({{"key", c.key},
                          {"component", ComponentName(c.component)},
                          {"count", c.count},
                          {"severity", SeverityName(c.meaning.severity)},
                          {"action", ActionName(c.meaning.action)},
                          {"known", c.meaning.known},
                          {"recovered", c.recovered},
                          {"gpu_uuid", c.gpu_uuid}});
  }
  Json out = {{"lines", lines}, {"conditions", conditions}};
  return out.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

class KernelLogGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelLogGolden, MatchesExpectedEventsAndConditions) {
  const std::string dir = std::string(CMAX_TEST_DATA) + "/health/kmsg/";
  testing::ExpectGolden("health/kmsg/" + GetParam() + ".expected.json",
                        Replay(dir + GetParam() + ".log"));
}

// Every NAME.log in the folder is a case; NAME.expected.json is what it must give.
INSTANTIATE_TEST_SUITE_P(Cases, KernelLogGolden,
                         ::testing::ValuesIn(testing::GoldenStems("health/kmsg", ".log")),
                         [](const auto& test) { return test.param; });

TEST(KernelLogGoldenFolder, EveryExpectationHasItsLog) {
  testing::ExpectNoOrphanGoldens("health/kmsg", ".log", ".expected.json");
  EXPECT_GE(testing::GoldenStems("health/kmsg", ".log").size(), 6U);
}

TEST(KernelLog, MegabyteLineIsParsedAndItsEvidenceCapped) {
  const std::string line =
      "[ 1.5] NVRM: Xid (PCI:0000:17:00): 31, pid=1, name=big, " + std::string(1 << 20, 'A');
  auto record = ParseLogLine(line, 2026);
  ASSERT_TRUE(record);
  KernelEventParser parser;
  const auto events = parser.Feed(*record);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, 31);
  ConditionTracker tracker(XidCatalog::Builtin());
  tracker.Observe(events[0], *record);
  EXPECT_LE(tracker.Conditions()[0].last_message.size(), 4096u);
}

}  // namespace
}  // namespace cmax::health
