#include "remediate/kube_config.hpp"

#include <yaml-cpp/yaml.h>

#include "core/strings.hpp"
#include "core/yaml_document.hpp"

namespace cmax::remediate {
namespace {

// A named entry in one of kubeconfig's lists (clusters, users, contexts); a null node (not a
// map) when there is none.
YAML::Node Named(const YAML::Node& list, const std::string& name, const std::string& field) {
  if (!list || !list.IsSequence()) return {};
  for (const YAML::Node& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name && item[field]) return item[field];
  }
  return {};
}

std::string Text(const YAML::Node& node, const char* key) {
  if (!node || !node[key] || !node[key].IsScalar()) return {};
  return node[key].as<std::string>();
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// `*-data` fields hold base64 PEM; the plain field a file name.
Result<void> Pem(const YAML::Node& node, const char* data_key, const char* file_key,
                 const std::string& base_dir, std::string& pem, std::string& file) {
  if (const std::string data = Text(node, data_key); !data.empty()) {
    auto decoded = DecodeBase64(data);
    if (!decoded) return Fail(ErrorCode::kInvalidArgument, "{} is not base64", data_key);
    pem = std::move(*decoded);
  } else {
    file = Resolve(Text(node, file_key), base_dir);
  }
  return {};
}

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

Result<KubeConnection> ParseKubeconfig(std::string_view text, const std::string& context,
                                       const std::string& base_dir) {
  YAML::Node root;
  try {
    auto one = LoadOneYamlDocument(text, "kubeconfig");
    if (!one) return tl::unexpected(one.error());
    root = *one;
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "kubeconfig is not YAML: {}", e.what());
  }
  if (!root.IsMap()) return Fail(ErrorCode::kInvalidArgument, "kubeconfig is not a YAML map");
  try {
    const std::string name = context.empty() ? Text(root, "current-context") : context;
    if (name.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "kubeconfig has no current-context; name one with --kube-context");
    }
    const YAML::Node ctx = Named(root["contexts"], name, "context");
    if (!ctx.IsMap()) return Fail(ErrorCode::kNotFound, "kubeconfig has no context '{}'", name);
    const std::string cluster_name = Text(ctx, "cluster");
    const std::string user_name = Text(ctx, "user");
    const YAML::Node cluster = Named(root["clusters"], cluster_name, "cluster");
    if (!cluster.IsMap()) {
      return Fail(ErrorCode::kNotFound,
                  "kubeconfig context '{}' names cluster '{}', which it lacks", name, cluster_name);
    }
    KubeConnection c;
    c.server = WithoutTrailingSlash(Text(cluster, "server"));
    if (c.server.empty())
      return Fail(ErrorCode::kInvalidArgument, "kubeconfig cluster '{}' has no server",
                  cluster_name);
    c.namespace_name = Text(ctx, "namespace");
    c.tls.insecure = Text(cluster, "insecure-skip-tls-verify") == "true";
    if (auto ok = Pem(cluster, "certificate-authority-data", "certificate-authority", base_dir,
                      c.tls.ca_pem, c.tls.ca_file);
        !ok) {
      return tl::unexpected(ok.error());
    }
    const YAML::Node user = Named(root["users"], user_name, "user");
    if (user.IsMap()) {
      if (user["exec"] || user["auth-provider"]) {
        return Fail(ErrorCode::kUnsupported,
                    "kubeconfig user '{}' gets its credentials from a plugin (exec or "
                    "auth-provider), which cmax does not run; give cmax a service-account token "
                    "with --kube-api and --kube-token-file",
                    user_name);
      }
      if (user["username"] || user["password"]) {
        return Fail(ErrorCode::kUnsupported,
                    "kubeconfig user '{}' logs in with a user name and password, which cmax does "
                    "not send; use a token or a client certificate",
                    user_name);
      }
      c.token = Text(user, "token");
      c.token_file = Resolve(Text(user, "tokenFile"), base_dir);
      if (auto ok = Pem(user, "client-certificate-data", "client-certificate", base_dir,
                        c.tls.client_cert_pem, c.tls.client_cert_file);
          !ok) {
        return tl::unexpected(ok.error());
      }
      if (auto ok = Pem(user, "client-key-data", "client-key", base_dir, c.tls.client_key_pem,
                        c.tls.client_key_file);
          !ok) {
        return tl::unexpected(ok.error());
      }
    }
    c.source = "kubeconfig context " + name;
    return c;
  } catch (const YAML::Exception& e) {
    return Fail(ErrorCode::kInvalidArgument, "kubeconfig: {}", e.what());
  }
}

Result<KubeConnection> InClusterConnection(sys::FileSystem& fs,
                                           const std::map<std::string, std::string>& env,
                                           const std::string& account_dir) {
  const auto host = env.find("KUBERNETES_SERVICE_HOST");
  const auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || host->second.empty()) {
    return Fail(ErrorCode::kNotFound, "not in a pod: KUBERNETES_SERVICE_HOST is not set");
  }
  KubeConnection c;
  // An IPv6 service address needs brackets in a URL.
  const bool v6 = host->second.find(':') != std::string::npos;
  c.server = "https://" + (v6 ? "[" + host->second + "]" : host->second) + ":" +
             (port == env.end() || port->second.empty() ? std::string("443") : port->second);
  c.token_file = account_dir + "/token";
  c.tls.ca_file = account_dir + "/ca.crt";
  if (!fs.Exists(c.token_file)) {
    return Fail(ErrorCode::kNotFound, "in a pod but {} is missing (automountServiceAccountToken?)",
                c.token_file);
  }
  if (auto ns = fs.ReadFile(account_dir + "/namespace", 256); ns) {
    c.namespace_name = std::string(Trim(*ns));
  }
  c.source = "in-cluster service account";
  return c;
}

Result<KubeConnection> ResolveKubeConnection(const KubeFlags& flags, sys::FileSystem& fs,
                                             const std::map<std::string, std::string>& env) {
  auto from_env = [&env](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  Result<KubeConnection> c = Fail(ErrorCode::kNotFound, "no Kubernetes API server");
  if (!flags.api_server.empty()) {
    KubeConnection direct;
    direct.server = WithoutTrailingSlash(flags.api_server);
    direct.token_file = flags.token_file;
    if (direct.token_file.empty()) direct.token = from_env("CMAX_KUBE_TOKEN");
    direct.tls.ca_file = flags.ca_file;
    direct.source = "--kube-api";
    c = direct;
  } else {
    std::string path = flags.kubeconfig;
    if (path.empty()) {
      const std::string list = from_env("KUBECONFIG");
      for (std::string_view p : Split(list, ':')) {
        if (!p.empty() && fs.Exists(std::string(p))) {
          path = std::string(p);
          break;
        }
      }
    }
    if (path.empty() && !from_env("KUBERNETES_SERVICE_HOST").empty()) {
      c = InClusterConnection(fs, env);
    } else {
      if (path.empty() && !from_env("HOME").empty()) path = from_env("HOME") + "/.kube/config";
      if (path.empty() || !fs.Exists(path)) {
        return Fail(ErrorCode::kNotFound,
                    "no Kubernetes API server: give --kube-api, --kubeconfig or KUBECONFIG, or "
                    "run in a pod");
      }
      auto text = fs.ReadFile(path, size_t{16} << 20);
      if (!text) return tl::unexpected(text.error());
      const size_t slash = path.rfind('/');
      c = ParseKubeconfig(*text, flags.context,
                          slash == std::string::npos ? std::string(".") : path.substr(0, slash));
      if (c) c->source = "kubeconfig " + path + " (" + c->source + ")";
    }
  }
  if (!c) return c;
  // Explicit flags win over what the file says.
  if (!flags.ca_file.empty()) {
    c->tls.ca_file = flags.ca_file;
    c->tls.ca_pem.clear();
  }
  if (!flags.token_file.empty()) {
    c->token_file = flags.token_file;
    c->token.clear();
  }
  if (flags.insecure) c->tls.insecure = true;
  if (!c->server.starts_with("https://") && !c->server.starts_with("http://")) {
    return Fail(ErrorCode::kInvalidArgument, "Kubernetes API server '{}' is not an http(s) URL",
                c->server);
  }
  return c;
}

}  // namespace cmax::remediate
