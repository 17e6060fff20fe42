#include "runtime/docker/libcurl_on_demand.h"

#include <cstdarg>
#include <type_traits>

#include <curl/curl.h>

#include "runtime/base/library_on_demand.h"

namespace sandbox::docker {
namespace {

// The entry points of libcurl.so.4 this program calls.
struct Libcurl {
  std::string error;  // empty once every entry point is bound
  CURLcode (*global_init)(long flags) = nullptr;
  CURL* (*easy_init)() = nullptr;
  void (*easy_cleanup)(CURL* curl) = nullptr;
  CURLcode (*easy_setopt)(CURL* curl, CURLoption option, ...) = nullptr;
  CURLcode (*easy_perform)(CURL* curl) = nullptr;
  CURLcode (*easy_getinfo)(CURL* curl, CURLINFO info, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode code) = nullptr;
  curl_slist* (*slist_append)(curl_slist* list, const char* text) = nullptr;
  void (*slist_free_all)(curl_slist* list) = nullptr;
};

Libcurl Open() {
  Libcurl curl;
  LibraryOnDemand library("libcurl.so.4");
  library.Bind("curl_global_init", curl.global_init);
  library.Bind("curl_easy_init", curl.easy_init);
  library.Bind("curl_easy_cleanup", curl.easy_cleanup);
  library.Bind("curl_easy_setopt", curl.easy_setopt);
  library.Bind("curl_easy_perform", curl.easy_perform);
  library.Bind("curl_easy_getinfo", curl.easy_getinfo);
  library.Bind("curl_easy_strerror", curl.easy_strerror);
  library.Bind("curl_slist_append", curl.slist_append);
  library.Bind("curl_slist_free_all", curl.slist_free_all);
  curl.error = library.error();
  return curl;
}

// Opened once, by the first caller (a function-local static: thread-safe).
const Libcurl& Loaded() {
  static const Libcurl curl = Open();
  return curl;
}

bool Usable() { return Loaded().error.empty(); }

}  // namespace

std::string LibcurlLoadError() { return Loaded().error; }

}  // namespace sandbox::docker

// libcurl's own signatures (curl/curl.h). Without libcurl, curl_easy_init returns null and the
// rest fail with CURLE_FAILED_INIT or do nothing: no handle exists for them to be given.
using sandbox::docker::Loaded;
using sandbox::docker::Usable;

extern "C" {

CURLcode curl_global_init(long flags) {
  return Usable() ? Loaded().global_init(flags) : CURLE_FAILED_INIT;
}

CURL* curl_easy_init() { return Usable() ? Loaded().easy_init() : nullptr; }

void curl_easy_cleanup(CURL* curl) {
  if (curl != nullptr && Usable()) Loaded().easy_cleanup(curl);
}

// The variadic argument is passed on with the type libcurl reads for the option's range
// (CURLOPTTYPE_* in curl/curl.h): a long or a curl_off_t (the same type here), a function
// pointer, or an object or struct curl_blob pointer.
static_assert(std::is_same_v<curl_off_t, long>, "curl_off_t options are read as a long");
// These two keep curl.h's C signatures, whose last named parameter is an enum: clang's -Wvarargs
// says an enum undergoes promotion, but these enums' underlying type is an int-sized integer
// (asserted below), which the x86-64 and arm64 ABIs pass exactly as the promoted int, and libcurl
// itself (C, where an enum is compatible with that type) does the same va_start.
static_assert(sizeof(CURLoption) == sizeof(int) && sizeof(CURLINFO) == sizeof(int),
              "CURLoption and CURLINFO are passed as an int");
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wvarargs"
#endif
CURLcode curl_easy_setopt(CURL* curl, CURLoption option, ...) {
  if (!Usable()) return CURLE_FAILED_INIT;
  va_list arguments;
  va_start(arguments, option);
  CURLcode code;
  // The branches differ only in the type va_arg reads, which the clone check does not see.
  // NOLINTBEGIN(bugprone-branch-clone)
  if (option < CURLOPTTYPE_OBJECTPOINT ||
      (option >= CURLOPTTYPE_OFF_T && option < CURLOPTTYPE_BLOB)) {
    code = Loaded().easy_setopt(curl, option, va_arg(arguments, long));
  } else if (option >= CURLOPTTYPE_FUNCTIONPOINT && option < CURLOPTTYPE_OFF_T) {
    using AnyFunction = void (*)();
    code = Loaded().easy_setopt(curl, option, va_arg(arguments, AnyFunction));
  } else {
    code = Loaded().easy_setopt(curl, option, va_arg(arguments, void*));
  }
  // NOLINTEND(bugprone-branch-clone)
  va_end(arguments);
  return code;
}

CURLcode curl_easy_perform(CURL* curl) {
  return Usable() ? Loaded().easy_perform(curl) : CURLE_FAILED_INIT;
}

// Every CURLINFO_* takes a pointer to where the answer goes.
CURLcode curl_easy_getinfo(CURL* curl, CURLINFO info, ...) {
  if (!Usable()) return CURLE_FAILED_INIT;
  va_list arguments;
  va_start(arguments, info);
  CURLcode code = Loaded().easy_getinfo(curl, info, va_arg(arguments, void*));
  va_end(arguments);
  return code;
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

const char* curl_easy_strerror(CURLcode code) {
  return Usable() ? Loaded().easy_strerror(code) : "libcurl could not be loaded";
}

curl_slist* curl_slist_append(curl_slist* list, const char* text) {
  return Usable() ? Loaded().slist_append(list, text) : nullptr;
}

void curl_slist_free_all(curl_slist* list) {
  if (list != nullptr && Usable()) Loaded().slist_free_all(list);
}

}  // extern "C"
