// libcurl, loaded when a command first needs it (dlopen of libcurl.so.4) instead of at start:
// with its dependency tail (TLS, Kerberos, LDAP, SSH, RTMP) it was most of the dynamic loading
// every one-shot command paid, and of the idle agent's memory, though only the HTTP commands use
// it.
#pragma once

#include <curl/curl.h>

#include "core/result.hpp"

namespace cmax::sys {

// The libcurl functions cmax calls, resolved from the loaded library. The types are libcurl's
// own (its headers); nothing is linked against it.
struct CurlLibrary {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_free) free = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&::curl_multi_setopt) multi_setopt = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_socket_action) multi_socket_action = nullptr;
  decltype(&::curl_multi_assign) multi_assign = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_url) url = nullptr;
  decltype(&::curl_url_cleanup) url_cleanup = nullptr;
  decltype(&::curl_url_set) url_set = nullptr;
  decltype(&::curl_url_get) url_get = nullptr;
  decltype(&::curl_url_strerror) url_strerror = nullptr;
  decltype(&::curl_version_info) version_info = nullptr;
};

// The oldest libcurl cmax works with: CURLOPT_PROTOCOLS_STR (which keeps requests to http and
// https) came in 7.85.0.
inline constexpr unsigned kMinCurlVersion = 0x075500;

// Loads libcurl once (thread-safe; curl_global_init included) and returns its functions, or
// why it could not be loaded (the library missing, or too old to have a function cmax calls).
Result<const CurlLibrary*> LoadCurl();

// The loaded library. Only after LoadCurl() succeeded: the HTTP clients call LoadCurl() when
// they are created or first send, and use this afterwards.
const CurlLibrary& Curl();

// Whether libcurl has been loaded into this process (for the start-up tests and benchmarks).
bool CurlLoaded();

}  // namespace cmax::sys
