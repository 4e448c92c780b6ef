#include "sys/http_client.hpp"

#include <memory>
#include <utility>

#include "core/strings.hpp"
#include "sys/curl_library.hpp"

namespace cmax::sys {
namespace {

constexpr size_t kMaxBody = size_t{64} << 20;  // a node list of a large cluster fits

size_t Append(char* data, size_t size, size_t count, void* out) {
  auto* body = static_cast<std::string*>(out);
  const size_t n = size * count;
  if (body->size() + n > kMaxBody) return 0;  // makes curl stop with a write error
  body->append(data, n);
  return n;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { Curl().easy_cleanup(curl); }
};
struct ListDeleter {
  void operator()(curl_slist* list) const { Curl().slist_free_all(list); }
};

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{};
  blob.data = const_cast<char*>(pem.data());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  blob.len = pem.size();
  blob.flags = CURL_BLOB_COPY;
  Curl().easy_setopt(curl, option, &blob);
}

void SetTls(CURL* c, const TlsOptions& tls) {
  if (!tls.ca_file.empty()) Curl().easy_setopt(c, CURLOPT_CAINFO, tls.ca_file.c_str());
  if (!tls.ca_pem.empty()) SetBlob(c, CURLOPT_CAINFO_BLOB, tls.ca_pem);
  if (!tls.client_cert_file.empty())
    Curl().easy_setopt(c, CURLOPT_SSLCERT, tls.client_cert_file.c_str());
  if (!tls.client_cert_pem.empty()) SetBlob(c, CURLOPT_SSLCERT_BLOB, tls.client_cert_pem);
  if (!tls.client_key_file.empty())
    Curl().easy_setopt(c, CURLOPT_SSLKEY, tls.client_key_file.c_str());
  if (!tls.client_key_pem.empty()) SetBlob(c, CURLOPT_SSLKEY_BLOB, tls.client_key_pem);
  if (tls.insecure) {
    Curl().easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    Curl().easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
}

}  // namespace

CurlHttpClient::CurlHttpClient(TlsOptions tls) : tls_(std::move(tls)) {}

Result<HttpResponse> CurlHttpClient::Send(const HttpRequest& request) {
  // Loaded at the first request, not at start (sys/curl_library.hpp).
  if (auto loaded = LoadCurl(); !loaded) return tl::unexpected(loaded.error());
  std::unique_ptr<CURL, CurlDeleter> curl(Curl().easy_init());
  if (!curl) return Fail(ErrorCode::kInternal, "curl_easy_init failed");
  curl_slist* list = nullptr;
  for (const std::string& h : request.headers) {
    curl_slist* next = Curl().slist_append(list, h.c_str());
    if (next == nullptr) {
      Curl().slist_free_all(list);
      return Fail(ErrorCode::kInternal, "out of memory for headers");
    }
    list = next;
  }
  const std::unique_ptr<curl_slist, ListDeleter> headers(list);
  HttpResponse response;
  CURL* c = curl.get();
  Curl().easy_setopt(c, CURLOPT_URL, request.url.c_str());
  Curl().easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  Curl().easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  Curl().easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  Curl().easy_setopt(
      c, CURLOPT_TIMEOUT_MS,
      static_cast<long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(request.timeout).count()));
  Curl().easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  Curl().easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  if (!request.body.empty() || request.method == "POST" || request.method == "PATCH" ||
      request.method == "PUT") {
    Curl().easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
    Curl().easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
  }
  SetTls(c, tls_);
  const CURLcode rc = Curl().easy_perform(c);
  if (rc != CURLE_OK) {
    // A user's URL may carry user:password (http://u:pw@prometheus:9090) or a key in its
    // query: the message names it without them. Headers are never part of it.
    return Fail(ErrorCode::kUnavailable, "{} {}: {}", request.method, ShownUrl(request.url),
                Curl().easy_strerror(rc));
  }
  Curl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace cmax::sys
