// http_api.cpp: loading the HTTP libraries (http_api.hpp).
#include "link/http_api.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace mq::link {

namespace {

constexpr const char* kMhdLibrary = "libmicrohttpd.so.12";
constexpr const char* kCurlLibrary = "libcurl.so.4";
// libmicrohttpd's TLS library, loaded with it: for the check of a client's certificate.
constexpr const char* kGnutlsLibrary = "libgnutls.so.30";
}  // namespace

const HttpApi& HttpLibraries() {
  static const HttpApi api = [] {
    HttpApi a;
    // Opens one library; false (and a.status) when it cannot be.
    auto open = [&](const char* name, const char* package) -> void* {
      void* lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* e = ::dlerror();
        a.status = Status::Error(
            fmt::format("cannot load {} (install {}): {}", name, package, e ? e : "dlopen failed"));
      }
      return lib;
    };
    const char* missing = nullptr;
#define MQ_HTTP_BIND(f)                                    \
  a.f = reinterpret_cast<decltype(a.f)>(::dlsym(lib, #f)); \
  if (!a.f && !missing) missing = #f;
    if (void* lib = open(kMhdLibrary, "libmicrohttpd12")) {
      MQ_MHD_FUNCTIONS(MQ_HTTP_BIND)
    }
    if (void* lib = a.status.ok() ? open(kCurlLibrary, "libcurl4") : nullptr) {
      MQ_CURL_FUNCTIONS(MQ_HTTP_BIND)
    }
    if (void* lib = a.status.ok() ? open(kGnutlsLibrary, "libgnutls30") : nullptr) {
      MQ_GNUTLS_FUNCTIONS(MQ_HTTP_BIND)
    }
#undef MQ_HTTP_BIND
    if (a.status.ok() && missing)
      a.status = Status::Error(fmt::format("the HTTP libraries lack {}, which mq's HTTP engines "
                                           "need",
                                           missing));
    if (a.status.ok() && a.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      a.status = Status::Error("libcurl could not be initialised");
    return a;
  }();
  return api;
}

}  // namespace mq::link
