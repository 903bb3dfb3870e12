#ifndef EVSYNC_CCURL_SHIM_H
#define EVSYNC_CCURL_SHIM_H
#include <curl/curl.h>

/* Swift cannot call C variadic functions, so each curl_easy_setopt and
   curl_easy_getinfo shape we use gets a typed, non-variadic wrapper. */

static inline CURLcode evsync_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode evsync_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode evsync_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode evsync_curl_set_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*evsync_curl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode evsync_curl_set_write_function(CURL *handle, CURLoption option, evsync_curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode evsync_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/* CURLAUTH_BASIC is a cast expression macro, which Swift does not import. */
static inline long evsync_curl_auth_basic(void) {
    return (long)CURLAUTH_BASIC;
}

#endif
