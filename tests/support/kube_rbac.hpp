// The RBAC manifests in deploy/kubernetes against what cmax really sends: each request the
// stand-in API server received is mapped to the attributes the API server authorises (group,
// resource, verb, namespace) and must be allowed to the subject; every rule granted must be used,
// so the manifests stay least-privilege as the code changes.
#pragma once

#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "core/strings.hpp"
#include "support/http_fixture.hpp"

namespace cmax::testing {

struct RbacAccess {
  std::string group, resource, verb, ns;  // ns empty: cluster scope
  auto operator<=>(const RbacAccess&) const = default;
};

// What the API server checks for a request: /api/v1/namespaces/cmax/pods/x/log is ("", pods/log,
// get, cmax).
inline RbacAccess ToRbacAccess(const FixtureRequest& request) {
  const std::string path = request.Path();
  std::vector<std::string> p;
  for (std::string_view part : Split(std::string_view(path).substr(1), '/')) {
    p.emplace_back(part);
  }
  RbacAccess a;
  const size_t at_least = p[0] == "api" ? 3 : 4;  // api v1 RESOURCE, apis GROUP VERSION RESOURCE
  if (p.size() < at_least || (p[0] != "api" && p[0] != "apis")) {
    ADD_FAILURE() << "not a resource's path: " << path;
    return a;
  }
  size_t at = 0;
  if (p[0] == "api") {
    at = 2;
  } else {
    a.group = p[1];
    at = 3;
  }
  // namespaces/NAME/RESOURCE...: a namespaced resource; namespaces/NAME/status and /finalize are
  // the Namespace's own subresources.
  const bool namespaced =
      p[at] == "namespaces" && p.size() > at + 2 &&
      !(p.size() == at + 3 && (p[at + 2] == "status" || p[at + 2] == "finalize"));
  if (namespaced) {
    a.ns = p[at + 1];
    at += 2;
  }
  a.resource = p[at];
  const bool named = p.size() > at + 1;
  if (p.size() > at + 2) a.resource += "/" + p[at + 2];
  if (request.method == "GET") a.verb = named ? "get" : "list";
  if (request.method == "PATCH") a.verb = "patch";
  if (request.method == "POST") a.verb = "create";
  if (request.method == "DELETE") a.verb = "delete";
  return a;
}

// What deploy/kubernetes/`file` grants to the subject (a service account, user or group) named
// `subject`: ClusterRoles through ClusterRoleBindings (cluster scope), Roles and ClusterRoles
// through RoleBindings (their namespace).
inline std::set<RbacAccess> GrantedBy(const std::string& file, const std::string& subject) {
  const auto docs =
      YAML::LoadAllFromFile(std::string(CMAX_TEST_DATA) + "/../../deploy/kubernetes/" + file);
  std::map<std::pair<std::string, std::string>, YAML::Node> roles;  // (kind, name) -> rules
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>();
    if (kind == "ClusterRole" || kind == "Role")
      roles[{kind, d["metadata"]["name"].as<std::string>()}] = d["rules"];
  }
  std::set<RbacAccess> granted;
  for (const YAML::Node& d : docs) {
    const std::string kind = d["kind"].as<std::string>();
    if (kind != "ClusterRoleBinding" && kind != "RoleBinding") continue;
    bool ours = false;
    for (const YAML::Node& s : d["subjects"]) ours = ours || s["name"].as<std::string>() == subject;
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

inline bool RbacAllows(const std::set<RbacAccess>& granted, const RbacAccess& a) {
  return granted.contains({a.group, a.resource, a.verb, ""}) ||  // cluster-wide
         (!a.ns.empty() && granted.contains(a));
}

// Every request allowed to `subject`, and every rule granted to it used by one of them.
inline void ExpectLeastPrivilege(const std::vector<FixtureRequest>& requests,
                                 const std::set<RbacAccess>& granted, const std::string& subject) {
  ASSERT_FALSE(granted.empty()) << subject;
  std::set<RbacAccess> used;
  for (const FixtureRequest& r : requests) {
    const RbacAccess a = ToRbacAccess(r);
    EXPECT_TRUE(RbacAllows(granted, a))
        << subject << " may not " << a.verb << " " << a.group << "/" << a.resource << " in '"
        << a.ns << "' (" << r.method << " " << r.target << ")";
    used.insert({a.group, a.resource, a.verb, ""});
    used.insert(a);
  }
  for (const RbacAccess& g : granted) {
    EXPECT_TRUE(used.contains(g)) << subject << " is granted " << g.verb << " " << g.group << "/"
                                  << g.resource << " but never uses it";
  }
}

}  // namespace cmax::testing
