// The evaluation plan: the example in data/ parses to the phases it names, with paths taken from
// the plan's folder and the load's defaults; and every malformed field is refused naming its
// line, a misspelt key with the key it was meant to be.
#include "evaluate/plan_file.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

#include "rate/attestation.hpp"
#include "reliability/scenario.hpp"
#include "remediate/kube_config.hpp"

namespace cmax::evaluate {
namespace {

// ", *a" `count` times: YAML aliases to the anchor `a`.
std::string Aliases(int count) {
  std::string aliases;
  for (int i = 0; i < count; ++i) aliases += ", *a";
  return aliases;
}

std::string Example() {
  std::ifstream in(std::string(CMAX_TEST_DATA) + "/../../data/plan.example.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every YAML file cmax reads holds one document: yaml-cpp's Load kept the first and dropped a
// second after `---` without a word (a plan's reliability phases, an attestation's security
// claims, then "does not say"). The four parsers refuse a second document.
TEST(PlanFile, EveryYamlFileHoldsOneDocument) {
  const std::string second = "\n---\nreliability: [{name: x, scenario: s.yaml}]\n";
  const std::string plan = Example() + second;
  const auto parsed = ParsePlan(plan, "/plans");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message,
            "plan: a second YAML document (after a `---` line); cmax reads one, and would ignore "
            "the rest");
  const auto attestation = rate::ParseAttestation(
      "schema: cmax.attestation/v1\nprovider: P\n---\nsecurity: {}\n", WallTime{});
  ASSERT_FALSE(attestation);
  EXPECT_EQ(attestation.error().message.rfind("attestation: a second YAML document", 0), 0U)
      << attestation.error().message;
  const auto scenario = reliability::ParseScenario(
      "steps: [{inject: xid, code: 79, node: n, gpu: '17:00.0'}]\n---\npoll_s: 1\n");
  ASSERT_FALSE(scenario);
  EXPECT_EQ(scenario.error().message.rfind("scenario: a second YAML document", 0), 0U)
      << scenario.error().message;
  const auto kubeconfig =
      remediate::ParseKubeconfig("apiVersion: v1\n---\nkind: Config\n", "", "/");
  ASSERT_FALSE(kubeconfig);
  EXPECT_EQ(kubeconfig.error().message.rfind("kubeconfig: a second YAML document", 0), 0U)
      << kubeconfig.error().message;
  // A closing `---` (editors and tools write one) opens no second document.
  EXPECT_TRUE(ParsePlan(Example() + "\n---\n", "/plans"));
  EXPECT_TRUE(ParsePlan("---\n" + Example() + "\n...\n", "/plans"));
}

TEST(PlanFile, ANetworkSweepTakesTheSweepsOptions) {
  const auto plan = ParsePlan(
      "schema: cmax.plan/v1\n"
      "network:\n"
      "  - name: fabric\n"
      "    platform: h100-nvlink\n"
      "    sweep: {hostfile: hosts.txt, nccl_tests: nt/build, launcher: srun, collectives:\n"
      "            [all_reduce], variants: [default, network], nodes: [1, 2], min_bytes: 1M,\n"
      "            max_bytes: 1G, factor: 4, iters: 5, warmup: 1, gpus_per_node: 4,\n"
      "            step_timeout_s: 90, env: [NCCL_DEBUG=INFO]}\n",
      "/plans");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->network.size(), 1U);
  ASSERT_TRUE(plan->network[0].sweep);
  const net::NcclSweepRequest& r = *plan->network[0].sweep;
  EXPECT_EQ(r.hostfile, "/plans/hosts.txt");
  EXPECT_EQ(r.nccl_tests_dir, "/plans/nt/build");
  EXPECT_EQ(r.sweep.launcher, net::NcclLauncher::kSrun);
  EXPECT_EQ(r.sweep.variants, (std::vector<std::string>{"default", "network"}));
  EXPECT_EQ(r.sweep.node_counts, (std::vector<int>{1, 2}));
  EXPECT_EQ(r.sweep.max_bytes, "1G");
  EXPECT_EQ(r.sweep.factor, 4);
  EXPECT_EQ(r.sweep.gpus_per_node, 4);
  EXPECT_EQ(r.sweep.step_timeout, std::chrono::seconds(90));
  EXPECT_EQ(r.sweep.env, std::vector<std::string>{"NCCL_DEBUG=INFO"});
}

// find_bad_node takes the hosts and sizes as a sweep does, and the finder's own bounds; its
// tolerance is the entry's.
TEST(PlanFile, ABadNodeSearchTakesTheHostsAsASweepDoesAndTheFindersBounds) {
  const auto plan = ParsePlan(
      "schema: cmax.plan/v1\n"
      "network:\n"
      "  - name: pairs\n"
      "    tolerance_pct: 80\n"
      "    find_bad_node: {netns_lab: 4, slow_links: [\"h3:200mbit\"], min_bytes: 1M,\n"
      "                    max_bytes: 1M, iters: 5, reference_gbs: 2.5, max_measurements: 12}\n"
      "  - {name: hosts, find_bad_node: {hostfile: hosts.txt}}\n",
      "/plans");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->network.size(), 2U);
  const NetworkPhasePlan& pairs = plan->network[0];
  EXPECT_FALSE(pairs.sweep);
  ASSERT_TRUE(pairs.find_bad_node);
  EXPECT_EQ(pairs.find_bad_node->lab_hosts, 4);
  EXPECT_EQ(pairs.find_bad_node->slow_links, std::vector<std::string>{"h3:200mbit"});
  EXPECT_EQ(pairs.find_bad_node->sweep.max_bytes, "1M");
  EXPECT_EQ(pairs.find_bad_node->sweep.iters, 5);
  EXPECT_EQ(pairs.reference_gbs, 2.5);
  EXPECT_EQ(pairs.max_measurements, 12);
  EXPECT_EQ(pairs.tolerance_pct, 80);
  const NetworkPhasePlan& hosts = plan->network[1];
  ASSERT_TRUE(hosts.find_bad_node);
  EXPECT_EQ(hosts.find_bad_node->hostfile, "/plans/hosts.txt");
  EXPECT_FALSE(hosts.reference_gbs);  // the best pair measured
  EXPECT_EQ(hosts.max_measurements, 64);
  EXPECT_EQ(hosts.tolerance_pct, 10);
  // `cmax nccl find-bad-node`'s defaults, not a sweep's: one large size.
  const net::NcclSweepOptions& o = hosts.find_bad_node->sweep;
  EXPECT_EQ(o.min_bytes, "256M");
  EXPECT_EQ(o.max_bytes, "256M");
  EXPECT_EQ(o.iters, 10);
  EXPECT_EQ(o.warmup, 2);
}

// A training command over a namespace lab: one rank a host, the named links slowed.
TEST(PlanFile, ATrainingCommandCanRunOverANamespaceLab) {
  const auto plan = ParsePlan(
      "schema: cmax.plan/v1\n"
      "training:\n"
      "  - {name: job, netns_lab: 4, slow_links: [\"h3:200mbit\"], deadline_s: 120,\n"
      "     command: [/opt/cmax/bin/cmax-train-sim, --steps, \"30\"], env: [OMP_NUM_THREADS=1]}\n"
      "  - {name: plain, command: [./run_train.sh]}\n",
      "/plans");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->training.size(), 2U);
  const TrainingPhasePlan& job = plan->training[0];
  EXPECT_EQ(job.netns_lab, 4);
  EXPECT_EQ(job.slow_links, std::vector<std::string>{"h3:200mbit"});
  EXPECT_EQ(job.command,
            (std::vector<std::string>{"/opt/cmax/bin/cmax-train-sim", "--steps", "30"}));
  EXPECT_EQ(job.env, std::vector<std::string>{"OMP_NUM_THREADS=1"});
  EXPECT_EQ(plan->training[1].netns_lab, 0);
  EXPECT_TRUE(plan->training[1].slow_links.empty());
}

TEST(PlanFile, TheExampleNamesEveryPhase) {
  const auto plan = ParsePlan(Example(), "/plans");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->provider, "Example Cloud");
  EXPECT_EQ(plan->attestation, "/plans/attestation.example.yaml");
  EXPECT_EQ(plan->rubric, "");
  EXPECT_TRUE(plan->health);
  EXPECT_EQ(plan->health_since, "24h");
  EXPECT_EQ(plan->active.level, "quick");
  EXPECT_EQ(plan->active.burn_s, 60);
  EXPECT_EQ(plan->active.deadline_s, 300);
  EXPECT_EQ(plan->active.gpu_class, "");
  EXPECT_TRUE(plan->active.fleet);
  EXPECT_EQ(plan->active.fleet_max_age_days, 8);
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
  ASSERT_EQ(plan->network[0].logs.size(), 1U);
  EXPECT_TRUE(plan->network[0].logs[0].ends_with("/nccl/all_reduce_8n.log"))
      << plan->network[0].logs[0];
  EXPECT_EQ(plan->network[0].platform, "ib-ndr-400g-8rail");
  ASSERT_EQ(plan->training.size(), 4U);
  EXPECT_TRUE(plan->training[0].logs.at(0).ends_with("/titan/llama3_8b_rank0.log"));
  EXPECT_EQ(plan->training[1].traces.size(), 2U);
  const TrainingPhasePlan& run = plan->training[2];
  EXPECT_EQ(run.command, (std::vector<std::string>{"srun", "-N", "2", "--gpus-per-node", "8",
                                                   "./run_train.sh"}));
  EXPECT_EQ(run.env.size(), 1U);
  EXPECT_TRUE(run.cwd.ends_with("/titan")) << run.cwd;
  EXPECT_EQ(run.steps, 100);
  EXPECT_EQ(run.deadline_s, 3600);
  EXPECT_EQ(plan->training[3].netns_lab, 4);
  EXPECT_EQ(plan->training[3].slow_links, (std::vector<std::string>{"h3:200mbit"}));
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
  // This host is not exercised unless asked; the fleet's view is read.
  EXPECT_EQ(plan->active.level, "");
  EXPECT_FALSE(plan->active.burn_s);
  EXPECT_TRUE(plan->active.fleet);
  const auto off = ParsePlan("schema: cmax.plan/v1\nactive: false\n", "");
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->active.fleet);
  const auto full = ParsePlan(
      "schema: cmax.plan/v1\nactive: {level: full, gpu_class: h200, "
      "burn_s: 0, fleet: false}\n",
      "");
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_EQ(full->active.level, "full");
  EXPECT_EQ(full->active.burn_s, 0);  // no burn, said: not the level's
  EXPECT_EQ(full->active.gpu_class, "h200");
  EXPECT_FALSE(full->active.fleet);
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
      {head + "network:\n  - {size: 8}\n", "unknown key 'size'"},
      {head + "network:\n  - {logs: [a.log]}\n", "each phase needs a name"},
      {head + "network:\n  - {name: n, logs: a.log}\n", "logs must be a list of files"},
      {head + "network:\n  - {name: n, logs: []}\n", "logs must be a list of files"},
      {head + "network:\n  - {name: n, logs: [[a]]}\n", "each of logs is a file's path"},
      {head + "network:\n  - {name: n, platform: h1OO}\n", "no platform \"h1OO\" (known: h100"},
      {head + "network:\n  - {name: n, tolerance_pct: 0}\n", "tolerance_pct must be a number"},
      {head + "network:\n  - {name: n, logs: [a], sweep: {hosts: [a]}}\n",
       "logs, a sweep or find_bad_node, one of them"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a]}, find_bad_node: {hosts: [a]}}\n",
       "logs, a sweep or find_bad_node, one of them"},
      {head + "network:\n  - {name: n, find_bad_node: {iters: 2}}\n",
       "network n: find_bad_node needs hosts, a hostfile or a netns_lab"},
      {head + "network:\n  - {name: n, find_bad_node: {hosts: [a], reference_gbs: 0}}\n",
       "reference_gbs must be a number"},
      {head + "network:\n  - {name: n, find_bad_node: {hosts: [a], max_measurements: 1}}\n",
       "max_measurements must be a whole number from 2"},
      {head + "network:\n  - {name: n, find_bad_node: {hosts: [a], tolerance: 5}}\n",
       "unknown key 'tolerance'"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], reference_gbs: 2}}\n",
       "unknown key 'reference_gbs'"},
      {head + "network:\n  - {name: n, platform: h100-nvlink, find_bad_node: {hosts: [a]}}\n",
       "a platform is for logs or a sweep"},
      {head + "network:\n  - {name: n, tolerance_pct: 95, sweep: {hosts: [a]}}\n",
       "tolerance_pct must be a number from 0.1 to 90"},
      {head + "network:\n  - {name: n, find_bad_node: {hosts: [a], collectives: [alltoall]}}\n",
       "network n: collectives is for a sweep (find_bad_node runs all_reduce"},
      {head + "network:\n  - {name: n, find_bad_node: {hosts: [a], variants: [network]}}\n",
       "variants is for a sweep"},
      {head + "network:\n  - {name: n, find_bad_node: {hosts: [a], nodes: [2]}}\n",
       "nodes is for a sweep"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], slow_links: [\"a:1mbit\"]}}\n",
       "slow_links slow a netns_lab's hosts: give the netns_lab"},
      {head + "network:\n  - {name: n, find_bad_node: {netns_lab: 3, hostfile: h.txt}}\n",
       "a netns_lab makes its own hosts"},
      {head + "network:\n  - {name: n, sweep: {netns_lab: 3, nccl_tests: nt}}\n",
       "a netns_lab runs the CPU stand-in"},
      {head + "network:\n  - {name: n, sweep: {netns_lab: 3, launcher: srun}}\n",
       "a netns_lab is reached through mpirun, not srun"},
      {head + "training:\n  - {name: t, logs: [a], traces: [b]}\n", "logs, traces or a command"},
      {head + "training:\n  - {name: t, traces: []}\n", "traces must be a list of files"},
      {head + "training:\n  - {name: t, logs: [a], steps: 10}\n", "steps is for a command"},
      {head + "training:\n  - {name: t, command: [x], steps: 0}\n", "steps must be a whole number"},
      {head + "training:\n  - {name: t, command: [x], env: [NOEQ]}\n",
       "env is a list of NAME=VALUE"},
      {head + "training:\n  - {name: t, command: [x], env: [\"1A=x\"]}\n",
       "env is a list of NAME=VALUE"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], env: [sk-secret]}}\n",
       "env is a list of NAME=VALUE"},
      {head + "endpoints:\n  - {name: e, url: \"http://h:1\", model: m, api_key_env: sk-secret}\n",
       "api_key_env names an environment variable"},
      {head + "training:\n  - {name: t, comand: [x]}\n", "unknown key 'comand'"},
      {head + "training:\n  - {name: t, logs: [a], netns_lab: 4}\n", "netns_lab is for a command"},
      {head + "training:\n  - {name: t, command: [x], netns_lab: 1}\n",
       "netns_lab must be a whole number from 2 to 200"},
      {head + "training:\n  - {name: t, command: [x], slow_links: [\"h1:1mbit\"]}\n",
       "slow_links slow a netns_lab's hosts: give the netns_lab"},
      {head + "training:\n  - {name: t, command: [x], netns_lab: 2, slow_links: [\"h3:1mbit\"]}\n",
       "slowed link 'h3:1mbit': HOST:RATE with a lab host (h1 to h2)"},
      {head + "training:\n  - {name: t, command: [x], netns_lab: 2, slow_links: [h1]}\n",
       "slowed link 'h1'"},
      {head + "network:\n  - {name: n, sweep: {netns_lab: 3, slow_links: [\"h4:1mbit\"]}}\n",
       "slowed link 'h4:1mbit'"},
      {head + "training:\n  - {name: t, logs: [a], reference: llama9}\n",
       "no reference \"llama9\""},
      {head + "training:\n  - {name: t, traces: [a], reference: llama9}\n",
       "a reference is for logs"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], rate: 2}}\n", "unknown key 'rate'"},
      {head + "network:\n  - {name: n, sweep: {iters: 2}}\n", "needs hosts, a hostfile or a"},
      {head + "network:\n  - {name: n, sweep: {hosts: a}}\n", "hosts must be a list"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], launcher: pbs}}\n",
       "launcher is mpirun or srun"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], nodes: [two]}}\n",
       "nodes are whole numbers"},
      {head + "network:\n  - {name: n, sweep: {netns_lab: 1}}\n", "netns_lab must be a whole"},
      {head + "network:\n  - {name: n, sweep: {hosts: [a], step_timeout_s: 0}}\n",
       "step_timeout_s must be a number"},
      {head + "health: sometimes\n", "health must be true, false or a map"},
      {head + "active: true\n", "active: say the level ({level: quick})"},
      {head + "active: often\n", "active must be false or a map"},
      {head + "active: {level: deep}\n", "active: level is quick or full"},
      {head + "active: {burn_s: 60}\n", "active: burn_s is for this host's checks: give a level"},
      {head + "active: {level: quick, burn_s: -1}\n", "burn_s must be a number from 0"},
      {head + "active: {level: quick, gpu_class: h1OO}\n",
       "active: no GPU class \"h1OO\" (known: "},
      {head + "active: {fleet: weekly}\n", "active: fleet is true or false"},
      {head + "active: {fleet_max_age_days: 0}\n", "fleet_max_age_days must be a number"},
      {head + "active: {level: quick, force: true}\n", "unknown key 'force'"},
      {head + "endpoints:\n  - {name: active-fleet, url: http://h/, model: m}\n",
       "\"active-fleet\" is the name of a phase of every run"},
      {head + "training:\n  - {name: health, logs: [a]}\n", "\"health\" is the name of a phase"},
      {head + "health: {since: 1h, every: 2}\n", "unknown key 'every'"},
      {head + "health: {since: yesterday}\n", "health.since: --since takes a duration"},
      {head + "training:\n  - {name: t, command: [a], env: [&a \"K=" + std::string(4000, 'v') +
           "\"" + Aliases(300) + "]}\n",
       "env holds more than 1048576 bytes of text"},
      {head + "training:\n  - {name: t, command: [a], env: [&a K=1" + Aliases(10000) + "]}\n",
       "env holds 10001 entries, more than 10000"},
      {head + "health: {since: 11000d}\n", "health.since: --since takes a duration"},
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
    // What may be a secret, written where a name or a setting goes, is never repeated.
    EXPECT_EQ(plan.error().message.find("sk-secret"), std::string::npos) << plan.error().message;
  }
}

}  // namespace
}  // namespace cmax::evaluate
