// Where the Kubernetes API server is and how cmax proves who it is: from flags, from a
// kubeconfig file (the one kubectl uses), or from the service account Kubernetes mounts into
// every pod (in-cluster). Secrets (tokens, client keys) stay in memory or in their files; the
// token file is read again before each request, because service-account tokens rotate.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "sys/file_system.hpp"
#include "sys/http_client.hpp"

namespace cmax::remediate {

struct KubeConnection {
  std::string server;  // "https://10.0.0.1:6443", no trailing slash
  sys::TlsOptions tls;
  std::string token;           // a bearer token given directly (kubeconfig `token`, environment)
  std::string token_file;      // or read from here before each request
  std::string namespace_name;  // the namespace the kubeconfig context or the pod names
  std::string source;  // where this came from, for messages: "kubeconfig /root/.kube/config"
};

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// A kubeconfig's text. `context` empty: its current-context. Relative file names in it are
// relative to `base_dir`, the kubeconfig's folder, as kubectl reads them. Refuses what cmax
// does not do (exec credential plugins, auth providers, user name and password) with a message
// saying what to use instead.
Result<KubeConnection> ParseKubeconfig(std::string_view text, const std::string& context,
                                       const std::string& base_dir);

// The pod's own service account: KUBERNETES_SERVICE_HOST/PORT and the mounted token and CA.
Result<KubeConnection> InClusterConnection(
    sys::FileSystem& fs, const std::map<std::string, std::string>& env,
    const std::string& account_dir = std::string(kServiceAccountDir));

struct KubeFlags {
  std::string api_server;  // --kube-api
  std::string token_file;  // --kube-token-file
  std::string ca_file;     // --kube-ca
  std::string kubeconfig;  // --kubeconfig
  std::string context;     // --kube-context
  bool insecure = false;   // --kube-insecure
};

// The environment variables that locate the API server and prove who cmax is.
inline constexpr const char* kKubeEnvironment[] = {
    "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "HOME", "CMAX_KUBE_TOKEN"};

// The first that applies: --kube-api (with --kube-token-file or CMAX_KUBE_TOKEN, --kube-ca);
// --kubeconfig or KUBECONFIG (its first file when it lists several); in-cluster when
// KUBERNETES_SERVICE_HOST is set; ~/.kube/config.
Result<KubeConnection> ResolveKubeConnection(const KubeFlags& flags, sys::FileSystem& fs,
                                             const std::map<std::string, std::string>& env);

}  // namespace cmax::remediate
