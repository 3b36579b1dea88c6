// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_SIGNED_CHANNEL_HPP
#define BATON_AWS_SIGNED_CHANNEL_HPP

/** @file
    Layer: wire (aws). The one path every AWS backend's requests take:
    credentials (static, or a provider's cached ones without waiting) →
    SigV4 signature → the HTTP client → on an expired session token, fresh
    credentials and **one re-send** of the refused request → the raw reply,
    which the backend classifies in its service's terms.

    An expired-token answer is an authentication failure: the service
    refused the request before processing it, so re-sending it cannot apply
    it twice. Only a provider can yield fresher credentials; with static
    credentials the answer is handed back as it came.
*/

#include <baton/aws/credentials.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/error.hpp>
#include <baton/core/signer.hpp>
#include <baton/http/client.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace baton::aws {

/// What `signed_channel::send` hands back.
struct signed_reply {
    /// Transport failure, a failed credentials fetch, or a request that could not be signed (the response is then empty).
    error_code ec;
    /// The service's answer, as received.
    http::response res;
    /// What the HTTP client knows of the attempt (whether the request may have reached the service; diagnostics).
    http::request_info info;
    /// True when the first answer was an expired session token and this is the answer to the re-send.
    bool resent = false;
};

/** Tells whether a response says the session token has expired.

    Each service says it in its own format (S3: XML `ExpiredToken`, DynamoDB:
    JSON `ExpiredTokenException`), so the backend supplies the test.
*/
using expired_token_test = bool (*)(http::response const&);

/** Where and as whom an AWS backend sends: a cheap handle, copies share the
    HTTP client and the credentials provider; each copy has its own signer.

    A class template only so that its code, which instantiates the HTTP
    client's request path, is compiled in the units that send, not in every
    unit that includes an AWS backend; `signed_channel` names it.

    Thread safety: as `http::client` and `credentials_provider` (a handle may
    be used from one strand at a time; distinct handles freely).
*/
template <class = void>
class basic_signed_channel {
public:
    /// Signs with the SigV4 signer (its own key cache).
    basic_signed_channel(http::client client, http::endpoint ep, signing_params signing, credentials static_credentials,
                         std::optional<credentials_provider> provider, expired_token_test expired)
        : client_(std::move(client)), st_(std::make_shared<shared>(shared{std::move(ep), std::move(signing),
                                                                           std::move(static_credentials),
                                                                           std::move(provider), expired})),
          signer_(make_signer(sigv4_signer())) {}

    /// Signs this handle's requests with `s` from now on (copies made later inherit it).
    template <request_signer S>
        requires signer_policy<S>
    void use_signer(S s) {
        signer_ = make_signer(std::move(s));
    }

    /// The HTTP client (shared by all copies).
    http::client& client() noexcept { return client_; }
    /// The HTTP client (shared by all copies).
    http::client const& client() const noexcept { return client_; }
    /// Where requests go.
    http::endpoint const& endpoint() const noexcept { return st_->ep; }
    /// The signing scope (region and service).
    signing_params const& signing() const noexcept { return st_->signing; }
    /// True when credentials come from a provider (and an expired token is answered by a re-send).
    bool has_provider() const noexcept { return st_->provider.has_value(); }

    /** Signs and sends `req`; `f(signed_reply)` runs later on the client's executor, never inline
        (an executor associated with `f` is not used).

        `slot` cancels the credentials wait and the request in flight (the
        reply then carries `operation_aborted`). A request the service
        refused with an expired session token is re-sent once with fresh
        credentials from the provider.
    */
    template <class F>
    void send(http::request req, boost::asio::cancellation_slot slot, F&& f) const {
        auto op = std::make_shared<send_op<std::decay_t<F>>>(*this, std::move(req), slot, std::forward<F>(f));
        op->start();
    }

private:
    using signer_fn = std::function<error_code(http::request&, credentials const&, signing_params const&,
                                               std::chrono::system_clock::time_point)>;

    struct shared {
        http::endpoint ep;
        signing_params signing;
        credentials static_credentials;
        std::optional<credentials_provider> provider;
        expired_token_test expired;
    };

    template <class S>
    static std::shared_ptr<signer_fn const> make_signer(S s) {
        return std::make_shared<signer_fn const>(
            [s = std::move(s)](http::request& r, credentials const& c, signing_params const& p,
                               std::chrono::system_clock::time_point now) { return s.sign(r, c, p, now); });
    }

    // One request: at most two sends (the second only after an expired-token answer, with a
    // provider). Not a template on the continuation: every send shares this path, compiled once.
    // As a template per continuation type, each of the backends' dozens of continuations
    // instantiated its own start of a request (async_initiate, the handler's type erasure), its
    // own credentials wait and its own copy of these functions: ~0.36 s of clang -O0 each.
    struct send_core : std::enable_shared_from_this<send_core> {
        send_core(basic_signed_channel const& ch, http::request r, boost::asio::cancellation_slot s)
            : client(ch.client_), st(ch.st_), signer(ch.signer_), req(std::move(r)), slot(s) {}
        virtual ~send_core() = default;
        send_core(send_core const&) = delete;
        send_core& operator=(send_core const&) = delete;

        // Hands the reply to the continuation (send_op).
        virtual void deliver(signed_reply r) = 0;

        http::client client;
        std::shared_ptr<shared> st;
        std::shared_ptr<signer_fn const> signer;
        http::request req;
        std::optional<http::request> kept; // the unsigned request, for a re-send (only with a provider)
        boost::asio::cancellation_slot slot;
        signed_reply reply; // of the send in flight
        bool resending = false;

        void start() {
            if (!st->provider) return sign_and_send(st->static_credentials);
            kept = req;
            if (auto creds = st->provider->usable_now()) return sign_and_send(*creds);
            fetch();
        }

        // The continuation runs on the client's executor (the backend's strand), not the provider's.
        void fetch() {
            auto self = this->shared_from_this();
            st->provider->async_get(boost::asio::bind_executor(
                client.get_executor(),
                boost::asio::bind_cancellation_slot(slot, [self](error_code ec, fetched_credentials fc) {
                    if (ec) {
                        signed_reply r;
                        r.ec = ec;
                        r.info.diag = std::move(fc.diag);
                        r.resent = self->resending;
                        return self->deliver(std::move(r));
                    }
                    self->sign_and_send(*fc.value);
                })));
        }

        void sign_and_send(credentials const& creds) {
            auto now = std::chrono::system_clock::now();
            if (client.has_skew_estimate()) now += client.skew_estimate();
            if (auto ec = (*signer)(req, creds, st->signing, now)) {
                signed_reply r;
                r.ec = errc::invalid_argument;
                r.info.diag.message = "the request could not be signed (" + ec.message() +
                                      "): check the region, the credentials and the key";
                // On the client's executor, as every reply (an executor bound to the continuation
                // is not used, here or on the other paths).
                boost::asio::post(client.get_executor(),
                                  [self = this->shared_from_this(), r = std::move(r)]() mutable {
                                      self->deliver(std::move(r));
                                  });
                return;
            }
            // The client writes `reply.info` while the request runs; this op outlives it (self).
            reply = signed_reply{};
            auto self = this->shared_from_this();
            client.async_request(st->ep, std::move(req), reply.info,
                                 boost::asio::bind_cancellation_slot(slot, [self](error_code ec, http::response res) {
                                     self->reply.ec = ec;
                                     self->reply.res = std::move(res);
                                     self->answered(std::move(self->reply));
                                 }));
        }

        void answered(signed_reply r) {
            r.resent = resending;
            if (r.ec || !st->provider || !st->expired(r.res)) return deliver(std::move(r));
            // Temporary credentials can expire early (revoked session, clock skew): fetch afresh.
            st->provider->invalidate();
            if (resending) return deliver(std::move(r)); // fresh credentials were refused too: say so
            resending = true;
            req = std::move(*kept);
            kept.reset();
            fetch();
        }
    };

    template <class F>
    struct send_op final : send_core {
        send_op(basic_signed_channel const& ch, http::request r, boost::asio::cancellation_slot s, F fn)
            : send_core(ch, std::move(r), s), f(std::move(fn)) {}
        F f;
        void deliver(signed_reply r) override { f(std::move(r)); }
    };

    http::client client_;
    std::shared_ptr<shared> st_; // a provider handle's members are not const
    std::shared_ptr<signer_fn const> signer_;
};

/// The signed-request path of every AWS backend.
using signed_channel = basic_signed_channel<>;

} // namespace baton::aws

#endif
