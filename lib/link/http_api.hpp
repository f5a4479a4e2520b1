// http_api.hpp: libmicrohttpd, libcurl and GnuTLS, loaded with dlopen when an HTTP engine
// starts (mq-admin serve --http, mq-admin forward of an HTTP link), not linked: with GnuTLS and
// OpenSSL behind them they would cost every other mq-admin subcommand start-up time (as
// rabbitmq-c would: lib/bridge/amqp_link.cpp). The headers come from libmicrohttpd-dev and
// libcurl4-openssl-dev; the ABIs are libmicrohttpd.so.12's and libcurl.so.4's. Every function
// used is in these lists.
#pragma once

#define CURL_DISABLE_TYPECHECK  // curl_easy_setopt is called through a pointer
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "base/status.hpp"

namespace mq::link {

#define MQ_MHD_FUNCTIONS(X)          \
  X(MHD_start_daemon)                \
  X(MHD_stop_daemon)                 \
  X(MHD_get_daemon_info)             \
  X(MHD_get_timeout)                 \
  X(MHD_run)                         \
  X(MHD_create_response_from_buffer) \
  X(MHD_add_response_header)         \
  X(MHD_queue_response)              \
  X(MHD_destroy_response)            \
  X(MHD_lookup_connection_value)     \
  X(MHD_suspend_connection)          \
  X(MHD_resume_connection)           \
  X(MHD_get_connection_info)
#define MQ_CURL_FUNCTIONS(X)  \
  X(curl_global_init)         \
  X(curl_multi_init)          \
  X(curl_multi_setopt)        \
  X(curl_multi_cleanup)       \
  X(curl_multi_add_handle)    \
  X(curl_multi_remove_handle) \
  X(curl_multi_perform)       \
  X(curl_multi_poll)          \
  X(curl_multi_socket_action) \
  X(curl_multi_info_read)     \
  X(curl_easy_init)           \
  X(curl_easy_cleanup)        \
  X(curl_easy_setopt)         \
  X(curl_easy_getinfo)        \
  X(curl_easy_strerror)       \
  X(curl_slist_append)        \
  X(curl_slist_free_all)

#define MQ_GNUTLS_FUNCTIONS(X) X(gnutls_certificate_verify_peers2) X(gnutls_record_send)

struct HttpApi {
#define MQ_HTTP_MEMBER(f) decltype(&::f) f = nullptr;
  MQ_MHD_FUNCTIONS(MQ_HTTP_MEMBER)
  MQ_CURL_FUNCTIONS(MQ_HTTP_MEMBER)
  MQ_GNUTLS_FUNCTIONS(MQ_HTTP_MEMBER)
#undef MQ_HTTP_MEMBER
  Status status;  // why it could not be loaded
};

// The libraries, loaded (and libcurl initialised) on the first call; `status` says why not.
const HttpApi& HttpLibraries();
inline const HttpApi& Api() { return HttpLibraries(); }

}  // namespace mq::link
