// deploy/kubernetes/rbac.yaml against what cmax really sends: every request the controller and
// the agent make in a full run against the stand-in API server is mapped to its RBAC (group,
// resource, verb, namespace), and must be allowed to that account; and every verb granted must
// be one that is used, so the manifests stay least-privilege as the code changes.
#include <gtest/gtest.h>
#include <set>
#include <tuple>
#include <yaml-cpp/yaml.h>

#include "core/strings.hpp"
#include "remediate/kube_conditions.hpp"
#include "remediate/kubernetes.hpp"
#include "support/conditions.hpp"
#include "support/fake_kube_api.hpp"
#include "support/temp_dir.hpp"

namespace cmax::remediate {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct Access {
  std::string group, resource, verb, ns;  // ns empty: cluster scope
  auto operator<=>(const Access&) const = default;
};

std::vector<std::string> Parts(const std::string& path) {
  std::vector<std::string> parts;
  for (std::string_view p : Split(std::string_view(path).substr(1), '/')) parts.emplace_back(p);
  return parts;
}

// The RBAC attributes the API server checks for a request.
Access ToAccess(const testing::FixtureRequest& r) {
  const auto p = Parts(r.Path());
  Access a;
  size_t at = 0;
  if (p[0] == "api") {
    at = 2;  // api v1
  } else {
    a.group = p[1];
    at = 3;  // apis GROUP VERSION
  }
  if (p[at] == "namespaces") {
    a.ns = p[at + 1];
    at += 2;
  }
  a.resource = p[at];
  const bool named = p.size() > at + 1;
  if (p.size() > at + 2) a.resource += "/" + p[at + 2];
  if (r.method == "GET") a.verb = named ? "get" : "list";
  if (r.method == "PATCH") a.verb = "patch";
  if (r.method == "POST") a.verb = "create";
  if (r.method == "DELETE") a.verb = "delete";
  return a;
}

// What the manifests grant to a service account: ClusterRoles through ClusterRoleBindings
// (cluster scope), Roles through RoleBindings (their namespace).
std::set<Access> Granted(const std::string& account) {
  const auto docs =
      YAML::LoadAllFromFile(std::string(CMAX_TEST_DATA) + "/../../deploy/kubernetes/rbac.yaml");
  std::map<std::pair<std::string, std::string>, YAML::Node> roles;  // (kind, name) -> rules
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>();
    if (kind == "ClusterRole" || kind == "Role")
      roles[{kind, d["metadata"]["name"].as<std::string>()}] = d["rules"];
  }
  std::set<Access> granted;
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>();
    if (kind != "ClusterRoleBinding" && kind != "RoleBinding") continue;
    bool ours = false;
    for (const YAML::Node& s : d["subjects"]) ours = ours || s["name"].as<std::string>() == account;
    if (!ours) continue;
    const std::string ns =
        kind == "RoleBinding" ? d["metadata"]["namespace"].as<std::string>() : "";
    const YAML::Node rules =
        roles.at({d["roleRef"]["kind"].as<std::string>(), d["roleRef"]["name"].as<std::string>()});
    for (const YAML::Node& rule : rules)
      for (const YAML::Node& g : rule["apiGroups"])
        for (const YAML::Node& res : rule["resources"])
          for (const YAML::Node& v : rule["verbs"])
            granted.insert({g.as<std::string>(), res.as<std::string>(), v.as<std::string>(), ns});
  }
  return granted;
}

bool Allowed(const std::set<Access>& granted, const Access& a) {
  return granted.contains({a.group, a.resource, a.verb, ""}) ||  // cluster-wide
         (!a.ns.empty() && granted.contains(a));
}

class KubeRbacTest : public ::testing::Test {
 protected:
  void SetUp() override {
    connection_.server = api_.Url();
    connection_.token = "token-1";
    api_.AddNode("gpu1");
    api_.AddNode("gpu2");
    api_.AddNode("spare1", {{"cmax.dev/spare", "true"}},
                 json::array({{{"key", "cmax.dev/spare"}, {"effect", "NoSchedule"}}}));
    api_.AddPod("team", "trainer-0", "gpu2");
  }
  void ExpectLeastPrivilege(const std::string& account) {
    const std::set<Access> granted = Granted(account);
    ASSERT_FALSE(granted.empty()) << account;
    std::set<Access> used;
    for (const auto& r : api_.Http().Requests()) {
      const Access a = ToAccess(r);
      EXPECT_TRUE(Allowed(granted, a))
          << account << " may not " << a.verb << " " << a.group << "/" << a.resource << " in '"
          << a.ns << "' (" << r.method << " " << r.target << ")";
      used.insert({a.group, a.resource, a.verb, ""});
      used.insert(a);
    }
    for (const Access& g : granted) {
      EXPECT_TRUE(used.contains(g)) << account << " is granted " << g.verb << " " << g.group << "/"
                                    << g.resource << " but never uses it";
    }
  }
  testing::TempDir dir_;
  sys::LocalFileSystem fs_;
  sys::CurlHttpClient http_;
  ManualClock clock_{WallTime(std::chrono::milliseconds(1'800'000'000'000))};
  testing::FakeKubeApi api_;
  KubeConnection connection_;
};

TEST_F(KubeRbacTest, TheControllerMayDoWhatItDoesAndNoMore) {
  KubernetesScheduler k(http_, fs_, clock_, connection_, {});
  ASSERT_TRUE(k.Nodes());
  ASSERT_TRUE(k.CmaxTakeOuts());
  ASSERT_TRUE(k.Drain("gpu2", "cmax: Xid 79"));
  ASSERT_TRUE(k.RequeueJobs("gpu2"));
  ASSERT_TRUE(k.BootTime("gpu2"));
  auto job = k.StartValidation("gpu2", {"true", 5min});
  ASSERT_TRUE(job);
  api_.FinishJob(*job, false, "BackoffLimitExceeded", 1);
  ASSERT_TRUE(k.PollValidation("gpu2", *job));
  ASSERT_TRUE(k.EndValidation("gpu2", true, ""));
  ASSERT_TRUE(k.Resume("gpu2"));
  auto spare = k.PickSpare();
  ASSERT_TRUE(spare);
  ASSERT_TRUE(k.SwapInSpare(*spare));
  ASSERT_TRUE(k.ReturnSpare(*spare));
  auto store = store::Store::Open({.path = dir_.File("cmax.db")});
  ASSERT_TRUE(store);
  KubeApi api(http_, fs_, clock_, connection_, {});
  ASSERT_TRUE(ImportKubeConditions(api, *store));
  ExpectLeastPrivilege("cmax-controller");
}

TEST_F(KubeRbacTest, TheAgentMayOnlyWriteOntoNodes) {
  KubeApi api(http_, fs_, clock_, connection_, {});
  KubeConditionPublisher publisher(api);
  const NodeCondition c = testing::XidCondition("gpu2", 79, "reset-gpu", clock_.Now());
  ASSERT_TRUE(publisher.Publish("gpu2", {c}));
  ExpectLeastPrivilege("cmax-agent");
}

}  // namespace
}  // namespace cmax::remediate
