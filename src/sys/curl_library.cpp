#include "sys/curl_library.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace cmax::sys {
namespace {

CurlLibrary library;
std::atomic<bool> loaded{false};
std::once_flag once;
Error load_error;

template <typename Function>
bool Resolve(void* handle, const char* name, Function& slot) {
  slot = reinterpret_cast<Function>(::dlsym(handle, name));
  return slot != nullptr;
}

// The soname of Debian's libcurl4 (and every distribution's libcurl since 7.16).
constexpr const char* kSoname = "libcurl.so.4";

void Load() {
  // RTLD_LOCAL: its symbols stay its own. It is never closed: libcurl keeps global state.
  void* handle = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    load_error = Error{ErrorCode::kUnavailable, std::string("cannot load ") + kSoname +
                                                    " (Debian: apt install libcurl4): " +
                                                    (why != nullptr ? why : "unknown error")};
    return;
  }
  CurlLibrary l;
  const char* missing = nullptr;
#define CMAX_CURL_RESOLVE(field, symbol) \
  if (missing == nullptr && !Resolve(handle, #symbol, l.field)) missing = #symbol;
  CMAX_CURL_RESOLVE(global_init, curl_global_init)
  CMAX_CURL_RESOLVE(free, curl_free)
  CMAX_CURL_RESOLVE(easy_init, curl_easy_init)
  CMAX_CURL_RESOLVE(easy_cleanup, curl_easy_cleanup)
  CMAX_CURL_RESOLVE(easy_reset, curl_easy_reset)
  CMAX_CURL_RESOLVE(easy_setopt, curl_easy_setopt)
  CMAX_CURL_RESOLVE(easy_getinfo, curl_easy_getinfo)
  CMAX_CURL_RESOLVE(easy_perform, curl_easy_perform)
  CMAX_CURL_RESOLVE(easy_strerror, curl_easy_strerror)
  CMAX_CURL_RESOLVE(slist_append, curl_slist_append)
  CMAX_CURL_RESOLVE(slist_free_all, curl_slist_free_all)
  CMAX_CURL_RESOLVE(multi_init, curl_multi_init)
  CMAX_CURL_RESOLVE(multi_cleanup, curl_multi_cleanup)
  CMAX_CURL_RESOLVE(multi_setopt, curl_multi_setopt)
  CMAX_CURL_RESOLVE(multi_add_handle, curl_multi_add_handle)
  CMAX_CURL_RESOLVE(multi_remove_handle, curl_multi_remove_handle)
  CMAX_CURL_RESOLVE(multi_socket_action, curl_multi_socket_action)
  CMAX_CURL_RESOLVE(multi_assign, curl_multi_assign)
  CMAX_CURL_RESOLVE(multi_info_read, curl_multi_info_read)
  CMAX_CURL_RESOLVE(url, curl_url)
  CMAX_CURL_RESOLVE(url_cleanup, curl_url_cleanup)
  CMAX_CURL_RESOLVE(url_set, curl_url_set)
  CMAX_CURL_RESOLVE(url_get, curl_url_get)
  CMAX_CURL_RESOLVE(url_strerror, curl_url_strerror)
  CMAX_CURL_RESOLVE(version_info, curl_version_info)
#undef CMAX_CURL_RESOLVE
  if (missing != nullptr) {
    load_error = Error{ErrorCode::kUnavailable, std::string(kSoname) + " has no " + missing +
                                                    " (libcurl 7.85 or later is needed)"};
    ::dlclose(handle);
    return;
  }
  const curl_version_info_data* version = l.version_info(CURLVERSION_NOW);
  if (version == nullptr || version->version_num < kMinCurlVersion) {
    load_error = Error{ErrorCode::kUnavailable,
                       std::string(kSoname) + " is libcurl " +
                           (version != nullptr ? version->version : "of an unknown version") +
                           "; cmax needs 7.85 or later"};
    ::dlclose(handle);
    return;
  }
  if (l.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    load_error = Error{ErrorCode::kUnavailable, "curl_global_init failed"};
    ::dlclose(handle);
    return;
  }
  library = l;
  loaded.store(true, std::memory_order_release);
}

}  // namespace

Result<const CurlLibrary*> LoadCurl() {
  std::call_once(once, Load);
  if (!loaded.load(std::memory_order_acquire)) return tl::unexpected(load_error);
  return &library;
}

const CurlLibrary& Curl() {
  if (!loaded.load(std::memory_order_acquire)) {
    // A caller that skipped LoadCurl(): a bug in cmax, not in the input.
    std::fputs("cmax: internal error: libcurl used before it was loaded\n", stderr);
    std::abort();
  }
  return library;
}

bool CurlLoaded() {
  return loaded.load(std::memory_order_acquire);
}

}  // namespace cmax::sys
