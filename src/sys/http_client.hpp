// An HTTP client behind an interface: libcurl for real (TLS with a given CA, client
// certificates, a bearer token in a header), a stand-in server in tests. Used by the Kubernetes
// adapter to talk to the API server. Header values and keys may hold secrets: nothing here logs
// or echoes them, and PEM data goes to libcurl in memory, never to a file.
#pragma once

#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"

namespace cmax::sys {

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PATCH, DELETE, PUT
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  Duration timeout = std::chrono::seconds(10);
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

// How the server is trusted and how we prove who we are. Each pair is a file or PEM text in
// memory (kubeconfig's *-data fields); empty means not given.
struct TlsOptions {
  std::string ca_file;
  std::string ca_pem;  // trusted instead of the system's CAs
  std::string client_cert_file;
  std::string client_cert_pem;
  std::string client_key_file;
  std::string client_key_pem;
  bool insecure = false;  // skip verifying the server (kubeconfig insecure-skip-tls-verify)
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Fails (kUnavailable) only when no answer came: connection refused, timeout, TLS failure.
  // Any HTTP status is a response.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(TlsOptions tls = {});
  Result<HttpResponse> Send(const HttpRequest& request) override;

 private:
  TlsOptions tls_;
};

}  // namespace cmax::sys
