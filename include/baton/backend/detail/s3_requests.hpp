// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_S3_REQUESTS_HPP
#define BATON_BACKEND_DETAIL_S3_REQUESTS_HPP

// Layer: backends, internal. How `s3_backend` speaks S3: key encoding and checks,
// error documents, the state its handles share, and the declarations of the requests
// of get, put, copy, erase and list (backend/impl/s3.hpp defines them).

#include <baton/backend/s3_params.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/aws/signed_channel.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/core/error.hpp>
#include <baton/core/signer.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#ifndef BATON_DOXYGEN
namespace baton::detail {

namespace s3_asio = boost::asio;
namespace s3_bhttp = boost::beast::http;

using s3_get_handler = s3_asio::any_completion_handler<void(error_code, get_result)>;
using s3_put_handler = s3_asio::any_completion_handler<void(error_code, put_result)>;
using s3_erase_handler = s3_asio::any_completion_handler<void(error_code, erase_result)>;
using s3_list_handler = s3_asio::any_completion_handler<void(error_code, list_page)>;
using s3_probe_handler = s3_asio::any_completion_handler<void(error_code, capabilities)>;
using s3_bucket_handler = s3_asio::any_completion_handler<void(error_code, diagnostics)>;

BATON_DECL std::string s3_unquote(std::string_view etag);

// The classified error of a response that is not a success, with `diag` filled in.
BATON_DECL error_code s3_response_error(http::response const& res, diagnostics& diag, std::string& code);

// Whether a 2xx response to a write is really an <Error> (S3 may stream one after a 200).
// Returns the error, `unknown_outcome` for a body that cannot be read, or nothing for a plain success.
BATON_DECL error_code s3_error_in_success(http::response const& res, diagnostics& diag);

BATON_DECL error_code s3_check_key(std::string const& key, std::string const& prefix, diagnostics& diag);

// S3 says a session token expired with 400 or 403 and an XML code.
BATON_DECL bool s3_expired_token(http::response const& res);

// A write's transport failure: a request that was sent and got no (complete) answer may have been
// applied. Timeouts keep their name (the lease reads back on timeout); other failures after sending
// become unknown_outcome so that nobody mistakes them for "not applied".
BATON_DECL error_code s3_write_transport_error(error_code ec, http::request_info const& info);

using s3_reply = aws::signed_reply;

// State shared by every copy of one s3_backend.
struct s3_state {
    s3_state(s3_asio::any_io_executor e, s3_backend_params p)
        : ex(std::move(e)), params(std::move(p)), client(ex, params.http), address(resolve(params)),
          ep(address.endpoint), path_style(address.path_style), base(address.path_prefix),
          channel(client, ep, aws::signing_params::for_s3(params.region), params.credentials,
                  params.credentials_provider, &s3_expired_token) {}

    static aws::s3_address resolve(s3_backend_params const& p);

    s3_asio::any_io_executor ex;
    s3_backend_params params;
    http::client client;
    aws::s3_address address;
    http::endpoint ep;
    bool path_style = true;
    std::string base; // "/bucket" (path-style) or "" (virtual-hosted)
    aws::signed_channel channel; // the prototype each handle copies (and may give its own signer)

    // What the last successful probe found, and the probe in progress.
    std::optional<capabilities> caps;
    bool unquoted_etags = false;
    std::string create_check, replace_check, erase_check; // the finding that failed each capability
    bool probing = false;
    std::list<s3_probe_handler> probe_waiters; // a list: never move-assigns handlers
    random_names names; // probe keys

    std::string object_target(std::string const& key) const {
        return base + "/" + uri_encode(params.key_prefix + key, true);
    }
    std::string bucket_target() const { return base.empty() ? std::string("/") : base; }

    std::string if_match_value(std::string const& version) const {
        return unquoted_etags ? s3_unquote(version) : version;
    }

    http::request make_request(s3_bhttp::verb v, std::string target, std::string body = {}) const;

    template <class Handler, class Result>
    void complete(Handler&& h, error_code ec, Result&& r) const {
        // Never inline: the handler runs later, on its associated executor.
        detail::post_completion(ex, std::forward<Handler>(h), ec, std::forward<Result>(r));
    }


    // Whether a conditional operation may go ahead, by the last probe; `capability_missing` names the failed check.
    error_code gate(bool erase, precondition::kind k, diagnostics& diag) const;
};

BATON_LAZY void s3_start_probe(std::shared_ptr<s3_state> const& st, aws::signed_channel const& channel);

// Runs `f(error_code, capabilities)` once the probe in progress (or a new one) is done.
template <class F>
void s3_after_probe(std::shared_ptr<s3_state> const& st, aws::signed_channel const& channel, F&& f) {
    st->probe_waiters.emplace_back(std::forward<F>(f));
    if (!st->probing) s3_start_probe(st, channel);
}

// The requests, one per operation (defined in backend/impl/s3.hpp, after the backend's class).
BATON_LAZY void s3_get(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string key, s3_get_handler h);
BATON_LAZY void s3_put(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string key, std::string body,
                       precondition pc, s3_put_handler h);
BATON_LAZY void s3_copy(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string from, std::string to,
                        s3_put_handler h);
BATON_LAZY void s3_erase(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string key, precondition pc,
                         s3_erase_handler h);
BATON_LAZY void s3_list(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string prefix, std::string after,
                        std::size_t limit, s3_list_handler h);

} // namespace baton::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/s3_requests.ipp>
#endif

#endif
