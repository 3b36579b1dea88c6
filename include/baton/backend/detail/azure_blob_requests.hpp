// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_AZURE_BLOB_REQUESTS_HPP
#define BATON_BACKEND_DETAIL_AZURE_BLOB_REQUESTS_HPP

// Layer: backends, internal. How `azure_blob_backend` speaks the Blob service: blob names in
// targets, error answers, the state its handles share, its one signed-request path, and the
// declarations of the requests of get, put, erase, list, probe and container creation
// (backend/impl/azure_blob.hpp defines them).

#include <baton/azure/account.hpp>
#include <baton/azure/errors.hpp>
#include <baton/azure/shared_key.hpp>
#include <baton/backend/azure_blob_params.hpp>
#include <baton/backend/detail/conditional_probe.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#ifndef BATON_DOXYGEN
namespace baton::detail {

namespace az_asio = boost::asio;
namespace az_bhttp = boost::beast::http;

using azure_get_handler = az_asio::any_completion_handler<void(error_code, get_result)>;
using azure_put_handler = az_asio::any_completion_handler<void(error_code, put_result)>;
using azure_erase_handler = az_asio::any_completion_handler<void(error_code, erase_result)>;
using azure_list_handler = az_asio::any_completion_handler<void(error_code, list_page)>;
using azure_probe_handler = az_asio::any_completion_handler<void(error_code, capabilities)>;
using azure_container_handler = az_asio::any_completion_handler<void(error_code, diagnostics)>;

// What one request brought back.
struct azure_reply {
    error_code ec;           // transport failure, or a request that could not be signed
    http::response res;      // the service's answer, as received
    http::request_info info; // whether the request may have reached the service; diagnostics
};

// The classified error of an answer that is not a success, with `diag` filled in (status, the
// service's code from x-ms-error-code or the <Error> body, its message, x-ms-request-id); `code`
// is the service's error code.
BATON_DECL error_code azure_response_error(http::response const& res, diagnostics& diag, std::string& code);

BATON_DECL error_code azure_check_key(std::string const& key, std::string const& prefix, diagnostics& diag);

// A write's transport failure: sent and unanswered may have been applied (see s3_write_transport_error).
BATON_DECL error_code azure_write_transport_error(error_code ec, http::request_info const& info);

// State shared by every copy of one azure_blob_backend.
struct azure_blob_state {
    azure_blob_state(az_asio::any_io_executor e, azure_blob_backend_params p)
        : ex(std::move(e)), params(std::move(p)), client(ex, params.http), address(resolve(params)) {}

    static azure::blob_address resolve(azure_blob_backend_params const& p);

    az_asio::any_io_executor ex;
    azure_blob_backend_params params;
    http::client client;
    azure::blob_address address;

    // What the last successful probe found, and the probe in progress.
    std::optional<capabilities> caps;
    std::string create_check, replace_check, erase_check; // the finding that failed each capability
    bool probing = false;
    std::list<azure_probe_handler> probe_waiters; // a list: never move-assigns handlers
    random_names names;                           // probe blobs

    // List Blobs has no "start after" but an opaque marker: each listing that stopped early
    // remembers, under the last name it handed out, the marker that continues it, so that paging
    // with `after` = that name costs one request. Any other `after` lists from the prefix on.
    std::map<std::string, std::string> markers;
    static constexpr std::size_t max_markers = 64;
    void remember_marker(std::string const& after, std::string marker);

    std::string blob_target(std::string const& key) const {
        return address.path_prefix + "/" + params.container + "/" + uri_encode(params.key_prefix + key, true);
    }
    std::string container_target() const { return address.path_prefix + "/" + params.container; }

    http::request make_request(az_bhttp::verb v, std::string target, std::string body = {}) const;

    template <class Handler, class Result>
    void complete(Handler&& h, error_code ec, Result&& r) const {
        // Never inline: the handler runs later, on its associated executor.
        detail::post_completion(ex, std::forward<Handler>(h), ec, std::forward<Result>(r));
    }

    // Whether a conditional operation may go ahead, by the last probe; `capability_missing` names the failed check.
    error_code gate(bool erase, precondition::kind k, diagnostics& diag) const;
};

// The one path of every request: signed (Shared Key, or the SAS appended), then sent. Not a
// template on the continuation, so that the request path is compiled once per program; a class
// template only so that it is compiled in the units that send, not in every unit that includes
// the backend.
template <class = void>
struct basic_azure_send_core : std::enable_shared_from_this<basic_azure_send_core<>> {
    basic_azure_send_core(std::shared_ptr<azure_blob_state> s, http::request r, az_asio::cancellation_slot sl)
        : st(std::move(s)), req(std::move(r)), slot(sl) {}
    virtual ~basic_azure_send_core() = default;
    virtual void deliver(azure_reply r) = 0;

    void start() {
        auto now = std::chrono::system_clock::now();
        if (st->client.has_skew_estimate()) now += st->client.skew_estimate();
        if (auto ec = azure::sign(req, st->params.account, now)) {
            azure_reply r;
            r.ec = ec;
            r.info.diag.message = "the request could not be signed (" + ec.message() + "): check the account key";
            az_asio::post(st->client.get_executor(), [self = this->shared_from_this(), r = std::move(r)]() mutable {
                self->deliver(std::move(r));
            });
            return;
        }
        // The client writes `reply.info` while the request runs; this op outlives it (self).
        auto self = this->shared_from_this();
        st->client.async_request(st->address.origin, std::move(req), reply.info,
                                 az_asio::bind_cancellation_slot(slot, [self](error_code ec, http::response res) {
                                     self->reply.ec = ec;
                                     self->reply.res = std::move(res);
                                     self->deliver(std::move(self->reply));
                                 }));
    }

    std::shared_ptr<azure_blob_state> st;
    http::request req;
    az_asio::cancellation_slot slot;
    azure_reply reply;
};

using azure_send_core = basic_azure_send_core<>;

template <class F>
struct azure_send_op final : azure_send_core {
    azure_send_op(std::shared_ptr<azure_blob_state> s, http::request r, az_asio::cancellation_slot sl, F fn)
        : azure_send_core(std::move(s), std::move(r), sl), f(std::move(fn)) {}
    F f;
    void deliver(azure_reply r) override { f(std::move(r)); }
};

template <class F>
void azure_send(std::shared_ptr<azure_blob_state> st, http::request req, az_asio::cancellation_slot slot, F&& f) {
    using op = azure_send_op<std::decay_t<F>>;
    std::make_shared<op>(std::move(st), std::move(req), slot, std::forward<F>(f))->start();
}

BATON_LAZY void azure_start_probe(std::shared_ptr<azure_blob_state> const& st);

// Runs `f(error_code, capabilities)` once the probe in progress (or a new one) is done.
template <class F>
void azure_after_probe(std::shared_ptr<azure_blob_state> const& st, F&& f) {
    st->probe_waiters.emplace_back(std::forward<F>(f));
    if (!st->probing) azure_start_probe(st);
}

// The requests, one per operation (defined in backend/impl/azure_blob.hpp).
BATON_LAZY void azure_get(std::shared_ptr<azure_blob_state> st, std::string key, azure_get_handler h);
BATON_LAZY void azure_put(std::shared_ptr<azure_blob_state> st, std::string key, std::string body, precondition pc,
                          azure_put_handler h);
BATON_LAZY void azure_erase(std::shared_ptr<azure_blob_state> st, std::string key, precondition pc,
                            azure_erase_handler h);
BATON_LAZY void azure_list(std::shared_ptr<azure_blob_state> st, std::string prefix, std::string after,
                           std::size_t limit, azure_list_handler h);
BATON_LAZY void azure_probe(std::shared_ptr<azure_blob_state> st, azure_probe_handler h);
BATON_LAZY void azure_create_container(std::shared_ptr<azure_blob_state> st, azure_container_handler h);

} // namespace baton::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/azure_blob_requests.ipp>
#endif

#endif
