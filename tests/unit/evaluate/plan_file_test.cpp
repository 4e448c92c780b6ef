// The evaluation plan: the example in data/ parses to the phases it names, with paths taken from
// the plan's folder and the load's defaults; and every malformed field is refused naming its
// line, a misspelt key with the key it was meant to be.
#include "evaluate/plan_file.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace cmax::evaluate {
namespace {

std::string Example() {
  std::ifstream in(std::string(CMAX_TEST_DATA) + "/../../data/plan.example.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PlanFile, TheExampleNamesEveryPhase) {
  const auto plan = ParsePlan(Example(), "/plans");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->provider, "Example Cloud");
  EXPECT_EQ(plan->attestation, "/plans/attestation.example.yaml");
  EXPECT_EQ(plan->rubric, "");
  EXPECT_TRUE(plan->health);
  EXPECT_EQ(plan->health_since, "24h");
  ASSERT_EQ(plan->endpoints.size(), 1U);
  const EndpointPhasePlan& chat = plan->endpoints[0];
  EXPECT_EQ(chat.name, "chat");
  EXPECT_EQ(chat.target.url, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(chat.target.api, "chat");
  EXPECT_EQ(chat.target.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(chat.target.api_key_env, "PROVIDER_API_KEY");
  EXPECT_EQ(chat.target.timeout_s, 120);
  EXPECT_EQ(chat.pace.concurrency, 8U);
  EXPECT_EQ(chat.pace.requests, 64U);
  EXPECT_EQ(chat.workload.input_len, 1024U);
  EXPECT_EQ(chat.workload.prefix_len, 512U);
  ASSERT_EQ(plan->reliability.size(), 1U);
  EXPECT_EQ(plan->reliability[0].scenario, "/plans/scenarios/xid79.yaml");
  ASSERT_EQ(plan->network.size(), 1U);
  EXPECT_EQ(plan->network[0].name, "all-reduce-8-nodes");
  ASSERT_EQ(plan->training.size(), 1U);
}

TEST(PlanFile, ASmallPlanTakesTheDefaults) {
  const auto plan = ParsePlan(
      "schema: cmax.plan/v1\n"
      "health: false\n"
      "endpoints: [{name: e, url: 'https://api.example/v1', model: m}]\n",
      "");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(plan->health);
  EXPECT_EQ(plan->provider, "");
  ASSERT_EQ(plan->endpoints.size(), 1U);
  EXPECT_EQ(plan->endpoints[0].target.api, "chat");
  EXPECT_EQ(plan->endpoints[0].pace.concurrency, 8U);
  EXPECT_EQ(plan->endpoints[0].pace.requests, 64U);
  EXPECT_EQ(plan->endpoints[0].target.label, "cmax-plan-e");
  EXPECT_EQ(plan->endpoints[0].workload.prefix_len, 0U);  // no shared prefix unless asked
  // Relative paths stay relative to where cmax runs when the plan has no folder.
  const auto relative = ParsePlan("schema: cmax.plan/v1\nattestation: a.yaml\n", "");
  ASSERT_TRUE(relative);
  EXPECT_EQ(relative->attestation, "a.yaml");
  const auto absolute = ParsePlan("schema: cmax.plan/v1\nattestation: /etc/a.yaml\n", "/p");
  ASSERT_TRUE(absolute);
  EXPECT_EQ(absolute->attestation, "/etc/a.yaml");
}

TEST(PlanFile, BadPlansAreRefusedWithTheirLine) {
  const std::string head = "schema: cmax.plan/v1\n";
  const std::string endpoint = "endpoints:\n  - name: e\n    url: http://h:1/v1\n    model: m\n";
  const struct {
    std::string yaml;
    std::string says;
  } cases[] = {
      {"", "not a map"},
      {"[1, 2]", "not a map"},
      {"schema: [", "not YAML"},
      {"provider: x\n", "schema must be cmax.plan/v1"},
      {"schema: cmax.plan/v2\n", "schema must be cmax.plan/v1"},
      {head + "endpoint:\n  - name: e\n",
       "line 2: unknown key 'endpoint' (did you mean 'endpoints'"},
      {head + endpoint + "    concurency: 4\n", "line 6: unknown key 'concurency'"},
      {head + endpoint + "    concurrency: 0\n", "line 6: concurrency must be a whole number"},
      {head + endpoint + "    concurrency: 2.5\n", "concurrency must be a whole number"},
      {head + endpoint + "    requests: .nan\n", "requests must be a whole number"},
      {head + endpoint + "    timeout_s: -1\n", "timeout_s must be a number"},
      {head + endpoint + "    prefix_len: -8\n", "prefix_len must be a whole number"},
      {head + endpoint + "    prefix_len: 2000000\n", "prefix_len must be a whole number"},
      {head + endpoint + "    api: grpc\n", "api must be chat, completions or anthropic"},
      {head + "endpoints:\n  - name: e\n    model: m\n", "url must be an http"},
      {head + "endpoints:\n  - name: e\n    url: ftp://h/\n    model: m\n", "url must be an http"},
      {head + "endpoints:\n  - name: e\n    url: http://h/\n", "model names the model"},
      {head + "endpoints:\n  - url: http://h/\n    model: m\n", "each phase needs a name"},
      {head + "endpoints:\n  - name: 'a b'\n    url: http://h/\n    model: m\n", "letters, digits"},
      {head + "endpoints: {name: e}\n", "endpoints must be a list"},
      {head + "endpoints: [3]\n", "each of endpoints must be a map"},
      {head + endpoint + "reliability:\n  - {name: e, scenario: s.yaml}\n",
       "a second phase named \"e\""},
      {head + "reliability:\n  - {name: r}\n", "scenario names its file"},
      {head + "reliability:\n  - {name: r, scenario: s.yaml, yes: true}\n", "unknown key 'yes'"},
      {head + "network:\n  - {size: 8}\n", "each phase needs a name"},
      {head + "health: sometimes\n", "health must be true, false or a map"},
      {head + "health: {since: 1h, every: 2}\n", "unknown key 'every'"},
      {head + "provider: \"a\\nb\"\n", "provider must be text"},
      {head + "provider: " + std::string(129, 'p') + "\n", "provider must be text of 1 to 128"},
      {head + "attestation: [a]\n", "attestation must be text"},
      {head + endpoint + "endpoints:\n  - {name: f, url: http://h/, model: m}\n",
       "line 6: endpoints appears twice in the file"},
      {head + endpoint + "    model: n\n", "line 6: model appears twice in an endpoint"},
  };
  for (const auto& c : cases) {
    const auto plan = ParsePlan(c.yaml, "/p");
    ASSERT_FALSE(plan) << c.yaml;
    EXPECT_EQ(plan.error().code, ErrorCode::kInvalidArgument) << c.yaml;
    EXPECT_NE(plan.error().message.find(c.says), std::string::npos)
        << c.yaml << "\n  said: " << plan.error().message << "\n  expected: " << c.says;
  }
}

}  // namespace
}  // namespace cmax::evaluate
