// A stand-in Kubernetes API server for tests, on the HTTP fixture: nodes, pods, Jobs and
// evictions in memory, with what the adapter relies on done the way the real one does it:
// bearer-token check, JSON merge patch with resourceVersion (409 on a stale one), strategic
// merge of node conditions by type, paged lists with `continue`, field and label selectors,
// evictions refused with 429 when a PodDisruptionBudget blocks them. No API server can be
// installed on the build machines; this is what the adapter is tested against.
#pragma once

#include <chrono>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/http_fixture.hpp"
#include "sys/process_runner.hpp"

namespace cmax::testing {

// The environment for a cmax started by a test: `env`, plus HOME at `home` and KUBECONFIG and
// KUBERNETES_SERVICE_HOST empty unless `env` sets them, so that no kubeconfig of the machine's
// leaks in.
inline std::vector<std::string> WithoutMachineKubeconfig(std::vector<std::string> env,
                                                         const std::string& home) {
  for (const std::string& base :
       {"HOME=" + home, std::string("KUBECONFIG="), std::string("KUBERNETES_SERVICE_HOST=")}) {
    const std::string key = base.substr(0, base.find('=') + 1);
    bool set = false;
    for (const std::string& e : env) set = set || e.starts_with(key);
    if (!set) env.push_back(base);
  }
  return env;
}

// The cmax under test, its store and HOME in `dir` and WithoutMachineKubeconfig: `cmax --db
// DIR/cmax.db ARGS...`, with a minute to finish. A failure to start it fails the test.
inline sys::ProcessResult RunCmaxWithoutMachineKubeconfig(sys::ProcessRunner& runner,
                                                          const std::string& dir,
                                                          const std::vector<std::string>& args,
                                                          std::vector<std::string> env = {}) {
  std::vector<std::string> argv{CMAX_BINARY, "--db", dir + "/cmax.db"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = runner.Run({.argv = argv,
                       .env_add = WithoutMachineKubeconfig(std::move(env), dir),
                       .timeout = std::chrono::seconds(60)});
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : sys::ProcessResult{};
}

// The stand-in kubelet (a stand-in: no kubelet or container runtime runs on the build
// machines): a pod created through the stand-in API server has its first container's command
// run on this machine as a process, `cmax` being the binary under test; a hostPath volume is
// "mounted" by putting the node's host folder in place of its mount path in the command's
// arguments (an argument that is the mount path, or ends in "=" and it). The process's stdout
// is the pod's log and its exit code the pod's phase, as the kubelet reports them.
struct StandInKubelet {
  std::string cmax_binary;
  std::map<std::string, std::string> host_roots;  // node -> its "/" (default "/")
  // Nodes whose pods never start: they stay Pending with the image pull failing.
  std::set<std::string> image_pull_fails;
};

class FakeKubeApi {
 public:
  using json = nlohmann::json;

  FakeKubeApi() : http_([this](const FixtureRequest& r) { return Handle(r); }) {}
  ~FakeKubeApi() {
    for (std::thread& run : pod_runs_) run.join();
  }
  FakeKubeApi(const FakeKubeApi&) = delete;
  FakeKubeApi& operator=(const FakeKubeApi&) = delete;

  // Set before the pods are created: the stand-in kubelet that runs them.
  void SetKubelet(StandInKubelet kubelet) {
    const std::lock_guard lock(mutex_);
    kubelet_ = std::move(kubelet);
  }
  // Every pod created, as it was posted; and how many were deleted.
  std::vector<json> CreatedPods() {
    const std::lock_guard lock(mutex_);
    return created_pods_;
  }
  int DeletedPods() {
    const std::lock_guard lock(mutex_);
    return deleted_pods_;
  }
  size_t PodCount() {
    const std::lock_guard lock(mutex_);
    return pods_.size();
  }

  std::string Url() const { return http_.Url(); }
  HttpFixture& Http() { return http_; }

  // A Ready node with the given labels, taints and cordon.
  void AddNode(const std::string& name, json labels = json::object(), json taints = json::array(),
               bool unschedulable = false) {
    const std::lock_guard lock(mutex_);
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata",
                  {{"name", name},
                   {"resourceVersion", std::to_string(++version_)},
                   {"labels", labels},
                   {"annotations", json::object()}}},
                 {"spec", json::object()},
                 {"status",
                  {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
                   {"nodeInfo", {{"bootID", "boot-" + name + "-1"}}}}}};
    if (!taints.empty()) node["spec"]["taints"] = taints;
    if (unschedulable) node["spec"]["unschedulable"] = true;
    nodes_[name] = node;
  }
  void AddPod(const std::string& ns, const std::string& name, const std::string& node,
              const std::string& owner_kind = "ReplicaSet", const std::string& phase = "Running",
              json annotations = json::object(), json labels = json::object(),
              const std::string& owner_name = "owner") {
    const std::lock_guard lock(mutex_);
    pods_[ns + "/" + name] = {
        {"metadata",
         {{"name", name},
          {"namespace", ns},
          {"annotations", annotations},
          {"labels", labels},
          {"ownerReferences", {{{"kind", owner_kind}, {"name", owner_name}}}}}},
        {"spec", {{"nodeName", node}}},
        {"status", {{"phase", phase}}}};
  }
  void SetAllocatable(const std::string& node, const std::string& resource,
                      const std::string& amount) {
    const std::lock_guard lock(mutex_);
    nodes_.at(node)["status"]["allocatable"][resource] = amount;
  }
  // The pod is terminating (deleted, in its grace period): it stays listed.
  void MarkLeaving(const std::string& key) {
    const std::lock_guard lock(mutex_);
    pods_.at(key)["metadata"]["deletionTimestamp"] = "2026-12-07T05:00:00Z";
  }
  json Node(const std::string& name) {
    const std::lock_guard lock(mutex_);
    return nodes_.at(name);
  }
  bool HasPod(const std::string& key) {
    const std::lock_guard lock(mutex_);
    return pods_.contains(key);
  }
  json Job(const std::string& key) {
    const std::lock_guard lock(mutex_);
    return jobs_.contains(key) ? jobs_.at(key) : json();
  }
  // Sets the Job's status as the Job controller would.
  void FinishJob(const std::string& key, bool succeeded, const std::string& reason = "",
                 int exit_code = 0) {
    const std::lock_guard lock(mutex_);
    json& job = jobs_.at(key);
    if (succeeded) {
      job["status"] = {{"succeeded", 1},
                       {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
    } else {
      job["status"] = {{"failed", 1},
                       {"conditions",
                        {{{"type", "Failed"},
                          {"status", "True"},
                          {"reason", reason},
                          {"message", "the job failed"}}}}};
      const std::string ns = job["metadata"]["namespace"];
      const std::string name = job["metadata"]["name"];
      json pod;
      pod["metadata"] = {{"name", name + "-abcde"}, {"namespace", ns}};
      pod["metadata"]["labels"]["job-name"] = name;
      pod["spec"]["nodeName"] = "elsewhere";
      pod["status"]["phase"] = "Failed";
      json terminated;
      terminated["state"]["terminated"]["exitCode"] = exit_code;
      pod["status"]["containerStatuses"] = json::array({terminated});
      pods_[ns + "/" + name + "-abcde"] = pod;
    }
  }
  // Sets what the kubelet reports (status.capacity, status.nodeInfo, conditions ...): a JSON
  // merge patch onto the node.
  void MergeIntoNode(const std::string& name, const json& patch) {
    const std::lock_guard lock(mutex_);
    nodes_.at(name).merge_patch(patch);
  }
  // An operator (kubectl) changes the node: its resourceVersion moves on.
  void Touch(const std::string& name) {
    const std::lock_guard lock(mutex_);
    nodes_.at(name)["metadata"]["resourceVersion"] = std::to_string(++version_);
  }

  // Objects of other kinds, listed (paged) at their collection's path, e.g.
  // "/apis/apps/v1/daemonsets"; a kind with no object is a CRD not installed (404).
  void AddObject(const std::string& collection, json object) {
    const std::lock_guard lock(mutex_);
    objects_[collection].push_back(std::move(object));
  }
  // A collection that exists with nothing in it yet.
  void AddCollection(const std::string& collection) {
    const std::lock_guard lock(mutex_);
    objects_[collection];
  }
  void MergeIntoPod(const std::string& key, const json& patch) {
    const std::lock_guard lock(mutex_);
    pods_.at(key).merge_patch(patch);
  }

  std::string token = "token-1";
  std::string stuck_continue;       // when set, every page of a list ends with this continue token
  std::set<std::string> forbidden;  // paths answered 403, as RBAC would
  std::map<std::string, json> configz;  // node -> its kubelet's /configz; absent: 503
  // How many times the node list was read: a test waits for a watcher's next look with it.
  int NodeLists() {
    const std::lock_guard lock(mutex_);
    return node_lists_;
  }
  std::set<std::string> pdb_blocked;  // "ns/name"
  int unavailable_next = 0;           // answer this many requests with 503
  int conflicts_next = 0;             // node patches answered 409 after a concurrent change
  int lose_pod_creates = 0;  // pods created whose answer is lost (a 504 after the pod is kept)

 private:
  static std::string Decode(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '%' && i + 2 < text.size()) {
        out.push_back(
            static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(text[i]);
      }
    }
    return out;
  }
  static std::map<std::string, std::string> Query(const FixtureRequest& r) {
    std::map<std::string, std::string> q;
    const std::string query = r.Query();
    std::string_view rest = query;
    while (!rest.empty()) {
      const size_t amp = rest.find('&');
      const std::string_view pair = rest.substr(0, amp);
      const size_t eq = pair.find('=');
      q[std::string(pair.substr(0, eq))] =
          eq == std::string_view::npos ? "" : Decode(pair.substr(eq + 1));
      rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    }
    return q;
  }
  static FixtureResponse Status(int code, const std::string& message) {
    return {code, json{{"kind", "Status"}, {"code", code}, {"message", message}}.dump()};
  }
  // A selector of "key=value" terms joined by commas, all of which must hold.
  static bool Matches(const json& object, const std::string& selector) {
    size_t start = 0;
    while (start < selector.size()) {
      size_t comma = selector.find(',', start);
      if (comma == std::string::npos) comma = selector.size();
      const std::string term = selector.substr(start, comma - start);
      start = comma + 1;
      const size_t eq = term.find('=');
      const std::string key = term.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : term.substr(eq + 1);
      if (key == "spec.nodeName") {
        if (object["spec"].value("nodeName", "") != value) return false;
        continue;
      }
      const json& labels = object["metadata"]["labels"];
      if (!labels.is_object() || !labels.contains(key)) return false;
      if (eq != std::string::npos && labels.value(key, "") != value) return false;
    }
    return true;
  }
  FixtureResponse List(const std::vector<json>& all, const std::map<std::string, std::string>& q) {
    std::vector<json> items;
    for (const json& o : all) {
      if (Matches(o, q.contains("fieldSelector") ? q.at("fieldSelector") : "") &&
          Matches(o, q.contains("labelSelector") ? q.at("labelSelector") : ""))
        items.push_back(o);
    }
    const size_t start = q.contains("continue") ? std::stoul(q.at("continue")) : 0;
    const size_t limit = q.contains("limit") ? std::stoul(q.at("limit")) : items.size();
    json page = {{"kind", "List"}, {"metadata", json::object()}, {"items", json::array()}};
    for (size_t i = start; i < items.size() && i < start + limit; ++i)
      page["items"].push_back(items[i]);
    if (start + limit < items.size()) page["metadata"]["continue"] = std::to_string(start + limit);
    if (!stuck_continue.empty()) page["metadata"]["continue"] = stuck_continue;
    return {200, page.dump()};
  }

  FixtureResponse Handle(const FixtureRequest& r) {
    const std::lock_guard lock(mutex_);
    if (unavailable_next > 0) {
      --unavailable_next;
      return Status(503, "etcd is away");
    }
    const auto auth = r.headers.find("authorization");
    if (auth == r.headers.end() || auth->second != "Bearer " + token) {
      return Status(401, "Unauthorized");
    }
    const std::string path = r.Path();
    const auto q = Query(r);
    const std::string nodes = "/api/v1/nodes";
    if (forbidden.contains(path)) {
      return Status(403, "forbidden: User \"auditor\" cannot get path \"" + path + "\"");
    }
    if (r.method == "GET" && objects_.contains(path)) return List(objects_[path], q);
    if (r.method == "GET" && path.starts_with(nodes + "/") && path.ends_with("/proxy/configz")) {
      const std::string name = path.substr(nodes.size() + 1, path.size() - nodes.size() - 15);
      if (!configz.contains(name)) return Status(503, "error trying to reach service: dial tcp");
      return {200, configz[name].dump()};
    }
    if (r.method == "GET" && path == nodes) {
      ++node_lists_;
      std::vector<json> all;
      for (const auto& [name, n] : nodes_) all.push_back(n);
      return List(all, q);
    }
    if (path.starts_with(nodes + "/")) {
      std::string name = path.substr(nodes.size() + 1);
      const bool status = name.ends_with("/status");
      if (status) name = name.substr(0, name.size() - 7);
      if (!nodes_.contains(name)) return Status(404, "nodes \"" + name + "\" not found");
      json& node = nodes_[name];
      if (r.method == "GET") return {200, node.dump()};
      if (r.method != "PATCH") return Status(405, "method");
      json patch = json::parse(r.body);
      if (status) {
        if (r.headers.at("content-type") != "application/strategic-merge-patch+json")
          return Status(415, "want a strategic merge patch");
        json& conditions = node["status"]["conditions"];
        for (const json& c : patch["status"]["conditions"]) {
          bool merged = false;
          for (json& have : conditions) {
            if (have["type"] == c["type"]) {
              have.merge_patch(c);
              merged = true;
            }
          }
          if (!merged) conditions.push_back(c);
        }
        return {200, node.dump()};
      }
      if (r.headers.at("content-type") != "application/merge-patch+json")
        return Status(415, "want a merge patch");
      if (conflicts_next > 0) {
        --conflicts_next;
        node["metadata"]["resourceVersion"] = std::to_string(++version_);
      }
      if (patch["metadata"].value("resourceVersion", "") != node["metadata"]["resourceVersion"]) {
        return Status(
            409, "the object has been modified; please apply your changes to the latest version");
      }
      node.merge_patch(patch);
      node["metadata"]["resourceVersion"] = std::to_string(++version_);
      return {200, node.dump()};
    }
    if (r.method == "GET" && path == "/api/v1/pods") {
      std::vector<json> all;
      for (const auto& [key, p] : pods_) all.push_back(p);
      return List(all, q);
    }
    if (path.starts_with("/api/v1/namespaces/")) {
      const auto parts = Parts(path);  // api v1 namespaces NS pods [NAME eviction|log]
      if (parts.size() == 5 && parts[4] == "pods" && r.method == "POST")
        return CreatePod(parts[3], r.body);
      if (parts.size() >= 6 && parts[4] == "pods" && (parts.size() == 6 || parts[6] == "log")) {
        const std::string key = parts[3] + "/" + parts[5];
        if (!pods_.contains(key)) return Status(404, "pods \"" + parts[5] + "\" not found");
        if (parts.size() == 7 && r.method == "GET") {
          if (!pod_logs_.contains(key)) {
            return Status(400, "container \"audit\" in pod \"" + parts[5] +
                                   "\" is waiting to start: ContainerCreating");
          }
          return {200, pod_logs_[key], "text/plain"};
        }
        if (parts.size() == 6 && r.method == "GET") return {200, pods_[key].dump()};
        if (parts.size() == 6 && r.method == "DELETE") {
          pods_.erase(key);
          ++deleted_pods_;
          return {200, json{{"kind", "Status"}, {"status", "Success"}}.dump()};
        }
      }
      if (parts.size() == 5 && parts[4] == "pods" && r.method == "GET") {
        std::vector<json> all;
        for (const auto& [key, p] : pods_)
          if (p["metadata"]["namespace"] == parts[3]) all.push_back(p);
        return List(all, q);
      }
      if (parts.size() == 7 && parts[6] == "eviction" && r.method == "POST") {
        const std::string key = parts[3] + "/" + parts[5];
        if (!pods_.contains(key)) return Status(404, "pods \"" + parts[5] + "\" not found");
        if (pdb_blocked.contains(key))
          return Status(429, "Cannot evict pod as it would violate the pod's disruption budget.");
        pods_.erase(key);
        return {201, json{{"kind", "Status"}, {"status", "Success"}}.dump()};
      }
    }
    if (path.starts_with("/apis/batch/v1/namespaces/")) {
      const auto parts = Parts(path);  // apis batch v1 namespaces NS jobs [NAME]
      if (parts[4] != "cmax") return Status(404, "namespaces \"" + parts[4] + "\" not found");
      if (parts.size() == 6 && r.method == "POST") {
        json job = json::parse(r.body);
        const std::string key = parts[4] + "/" + job["metadata"]["name"].get<std::string>();
        if (jobs_.contains(key)) return Status(409, "jobs.batch already exists");
        job["status"] = json::object();
        jobs_[key] = job;
        return {201, job.dump()};
      }
      if (parts.size() == 7) {
        const std::string key = parts[4] + "/" + parts[6];
        if (!jobs_.contains(key)) return Status(404, "jobs.batch not found");
        if (r.method == "GET") return {200, jobs_[key].dump()};
        if (r.method == "DELETE") {
          jobs_.erase(key);
          return {200, json{{"kind", "Status"}, {"status", "Success"}}.dump()};
        }
      }
    }
    return Status(404, "the server could not find the requested resource");
  }

  // POST of a pod: kept Pending, then run by the stand-in kubelet when there is one.
  FixtureResponse CreatePod(const std::string& ns, const std::string& body) {
    if (ns != "cmax") return Status(404, "namespaces \"" + ns + "\" not found");
    json pod = json::parse(body);
    const std::string name = pod["metadata"]["name"];
    const std::string key = ns + "/" + name;
    if (pods_.contains(key)) return Status(409, "pods \"" + name + "\" already exists");
    created_pods_.push_back(pod);
    pod["status"] = {{"phase", "Pending"}};
    pods_[key] = pod;
    const bool lost = lose_pod_creates > 0;
    if (lost) --lose_pod_creates;
    const FixtureResponse answer = RunPod(key, pod);
    if (lost) return Status(504, "the gateway gave up waiting");
    return answer;
  }
  // The stand-in kubelet's part: the pod run here, when there is a kubelet.
  FixtureResponse RunPod(const std::string& key, const json& pod) {
    if (!kubelet_) return {201, pod.dump()};
    const std::string node = pod["spec"].value("nodeName", "");
    if (kubelet_->image_pull_fails.contains(node)) {
      json waiting;
      waiting["name"] = "audit";
      waiting["state"]["waiting"] = {
          {"reason", "ImagePullBackOff"},
          {"message",
           "Back-off pulling image \"" + pod["spec"]["containers"][0].value("image", "") + "\""}};
      pods_[key]["status"]["containerStatuses"] = json::array({waiting});
      return {201, pods_[key].dump()};
    }
    // The container's command as this machine runs it.
    const json& container = pod["spec"]["containers"][0];
    const std::string root =
        kubelet_->host_roots.contains(node) ? kubelet_->host_roots.at(node) : "/";
    std::map<std::string, std::string> mounts;  // mount path -> host folder
    for (const json& mount : container.value("volumeMounts", json::array())) {
      for (const json& volume : pod["spec"].value("volumes", json::array())) {
        if (volume["name"] == mount["name"] && volume.contains("hostPath")) {
          const std::string host = volume["hostPath"]["path"];
          mounts[mount["mountPath"]] = host == "/" ? root : root + host;
        }
      }
    }
    std::vector<std::string> argv;
    for (const json& word : container["command"]) {
      std::string arg = word;
      if (argv.empty() && arg == "cmax") arg = kubelet_->cmax_binary;
      for (const auto& [at, host] : mounts) {
        if (arg == at) arg = host;
        if (arg.ends_with("=" + at)) arg = arg.substr(0, arg.size() - at.size()) + host;
      }
      argv.push_back(arg);
    }
    std::vector<std::string> env;
    for (const json& e : container.value("env", json::array())) {
      const std::string field =
          e.contains("valueFrom") ? e["valueFrom"]["fieldRef"]["fieldPath"] : "";
      env.push_back(e["name"].get<std::string>() + "=" +
                    (field == "spec.nodeName" ? node : e.value("value", "")));
    }
    pods_[key]["status"] = {{"phase", "Running"}};
    pod_runs_.emplace_back([this, key, argv, env] {
      sys::PosixProcessRunner runner;
      auto ran = runner.Run({.argv = argv, .env_add = env, .timeout = std::chrono::seconds(60)});
      const std::lock_guard lock(mutex_);
      if (!pods_.contains(key)) return;  // deleted meanwhile
      const int exit_code = ran ? ran->exit_code : 128;
      pod_logs_[key] = ran ? ran->stdout_text : "";
      pods_[key]["status"] = {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                              {"containerStatuses",
                               {{{"name", "audit"},
                                 {"state",
                                  {{"terminated",
                                    {{"exitCode", exit_code},
                                     {"reason", exit_code == 0 ? "Completed" : "Error"}}}}}}}}};
    });
    return {201, pods_[key].dump()};
  }

  static std::vector<std::string> Parts(const std::string& path) {
    std::vector<std::string> parts;
    size_t start = 1;
    while (start <= path.size()) {
      const size_t slash = path.find('/', start);
      parts.push_back(path.substr(start, slash - start));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return parts;
  }

  std::mutex mutex_;
  int version_ = 100;
  int node_lists_ = 0;
  std::map<std::string, json> nodes_;
  std::map<std::string, json> pods_;
  std::map<std::string, json> jobs_;
  std::map<std::string, std::vector<json>> objects_;
  std::optional<StandInKubelet> kubelet_;
  std::vector<json> created_pods_;
  int deleted_pods_ = 0;
  std::map<std::string, std::string> pod_logs_;  // "ns/name" -> its container's output
  std::vector<std::thread> pod_runs_;            // joined before the state goes
  HttpFixture http_;  // last: it stops (and joins its thread) before the state goes
};

}  // namespace cmax::testing
