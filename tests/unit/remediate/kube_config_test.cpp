// Finding the Kubernetes API server: kubeconfig contexts (inline and file credentials,
// relative paths, what cmax refuses), the in-cluster service account, and the order flags,
// KUBECONFIG, the pod and ~/.kube/config are tried in.
#include "remediate/kube_config.hpp"

#include <gtest/gtest.h>

namespace cmax::remediate {
namespace {

// "-----BEGIN CERTIFICATE-----\n" and "-----BEGIN KEY-----\n" in base64.
constexpr const char* kKubeconfig = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
- name: lab-cluster
  cluster:
    server: https://lab.example:6443
    certificate-authority: certs/ca.pem
    insecure-skip-tls-verify: true
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin, namespace: gpu-ops}
- name: lab
  context: {cluster: lab-cluster, user: lab-user}
- name: cloud
  context: {cluster: prod-cluster, user: cloud-user}
- name: basic
  context: {cluster: prod-cluster, user: basic-user}
- name: dangling
  context: {cluster: nowhere, user: admin}
users:
- name: admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
    client-key-data: LS0tLS1CRUdJTiBLRVktLS0tLQo=
- name: lab-user
  user:
    tokenFile: secrets/token
    client-certificate: /abs/cert.pem
- name: cloud-user
  user:
    exec: {command: gke-gcloud-auth-plugin, apiVersion: client.authentication.k8s.io/v1beta1}
- name: basic-user
  user: {username: admin, password: hunter2}
)";

TEST(Kubeconfig, CurrentContextWithInlineCredentials) {
  auto c = ParseKubeconfig(kKubeconfig, "", "/home/ops/.kube");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->tls.ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(c->tls.client_cert_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(c->tls.client_key_pem, "-----BEGIN KEY-----\n");
  EXPECT_TRUE(c->tls.ca_file.empty());
  EXPECT_FALSE(c->tls.insecure);
  EXPECT_EQ(c->namespace_name, "gpu-ops");
  EXPECT_EQ(c->source, "kubeconfig context prod");
}

TEST(Kubeconfig, NamedContextWithFilesRelativeToTheKubeconfig) {
  auto c = ParseKubeconfig(kKubeconfig, "lab", "/home/ops/.kube");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://lab.example:6443");
  EXPECT_EQ(c->tls.ca_file, "/home/ops/.kube/certs/ca.pem");
  EXPECT_EQ(c->token_file, "/home/ops/.kube/secrets/token");
  EXPECT_EQ(c->tls.client_cert_file, "/abs/cert.pem");
  EXPECT_TRUE(c->tls.insecure);
}

TEST(Kubeconfig, RefusesWhatCmaxDoesNotDoAndSaysWhatToUse) {
  auto plugin = ParseKubeconfig(kKubeconfig, "cloud", "");
  ASSERT_FALSE(plugin);
  EXPECT_EQ(plugin.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(plugin.error().message.find("--kube-token-file"), std::string::npos);
  auto basic = ParseKubeconfig(kKubeconfig, "basic", "");
  ASSERT_FALSE(basic);
  EXPECT_EQ(basic.error().message.find("hunter2"), std::string::npos);
  EXPECT_EQ(ParseKubeconfig(kKubeconfig, "dangling", "").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(ParseKubeconfig(kKubeconfig, "nope", "").error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(ParseKubeconfig("clusters: [", "", ""));
  EXPECT_FALSE(ParseKubeconfig("- a list", "", ""));
  EXPECT_FALSE(ParseKubeconfig("apiVersion: v1\n", "", ""));  // no current-context
  EXPECT_FALSE(ParseKubeconfig(
      "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: s, certificate-authority-data: '!!'}}]\n",
      "", ""));
  // Wrong types where maps are expected do not throw.
  EXPECT_FALSE(ParseKubeconfig("current-context: x\ncontexts: {x: 1}\n", "", ""));
  EXPECT_FALSE(ParseKubeconfig("current-context: [1]\n", "", ""));
}

TEST(Kubeconfig, InCluster) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/sa/token", "abc");
  fs.AddFile("/sa/namespace", "cmax\n");
  auto c = InClusterConnection(
      fs, {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, "/sa");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, "/sa/token");
  EXPECT_TRUE(c->token.empty());  // read before each request, never held
  EXPECT_EQ(c->tls.ca_file, "/sa/ca.crt");
  EXPECT_EQ(c->namespace_name, "cmax");
  auto v6 = InClusterConnection(fs, {{"KUBERNETES_SERVICE_HOST", "fd00::1"}}, "/sa");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
  EXPECT_FALSE(InClusterConnection(fs, {}, "/sa"));
  EXPECT_FALSE(InClusterConnection(fs, {{"KUBERNETES_SERVICE_HOST", "h"}}, "/other"));
}

TEST(Kubeconfig, ResolutionOrder) {
  sys::MemoryFileSystem fs;
  fs.AddFile("/home/ops/.kube/config", kKubeconfig);
  fs.AddFile("/etc/k/second",
             "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
             "clusters: [{name: c, cluster: {server: 'http://second:8080'}}]\n");
  const std::map<std::string, std::string> home = {{"HOME", "/home/ops"}};

  // Flags first; the token from the environment when no file is named.
  KubeFlags direct{.api_server = "https://api:6443/", .ca_file = "/ca.pem"};
  auto c = ResolveKubeConnection(direct, fs, {{"CMAX_KUBE_TOKEN", "t0k"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://api:6443");
  EXPECT_EQ(c->token, "t0k");
  EXPECT_EQ(c->tls.ca_file, "/ca.pem");

  // KUBECONFIG: its first file that exists.
  c = ResolveKubeConnection({}, fs,
                            {{"KUBECONFIG", "/missing:/etc/k/second"}, {"HOME", "/home/ops"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "http://second:8080");
  EXPECT_EQ(c->source, "kubeconfig /etc/k/second (kubeconfig context x)");

  // ~/.kube/config, with flags that override what it says.
  KubeFlags over{.token_file = "/tok", .context = "lab", .insecure = false};
  c = ResolveKubeConnection(over, fs, home);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://lab.example:6443");
  EXPECT_EQ(c->token_file, "/tok");

  // In a pod (and no kubeconfig named): the service account.
  fs.AddFile(std::string(kServiceAccountDir) + "/token", "abc");
  c = ResolveKubeConnection({}, fs,
                            {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"HOME", "/home/ops"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->source, "in-cluster service account");

  // Nothing at all.
  auto none = ResolveKubeConnection({}, fs, {{"HOME", "/nobody"}});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("--kube-api"), std::string::npos);
  KubeFlags bad{.api_server = "api:6443"};
  EXPECT_EQ(ResolveKubeConnection(bad, fs, {}).error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace cmax::remediate
