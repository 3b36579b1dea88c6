// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_S3_PROBE_HPP
#define BATON_BACKEND_DETAIL_S3_PROBE_HPP

// Layer: backends, internal. The probe of `s3_backend`: what an endpoint really
// honours (conditional create, replace and erase; quoted or bare ETags), found by
// writing scratch keys before the first conditional write; and bucket creation.

#include <baton/backend/detail/conditional_probe.hpp>
#include <baton/backend/detail/s3_requests.hpp>
#include <baton/aws/credentials.hpp>
#include <baton/aws/endpoint.hpp>
#include <baton/aws/errors.hpp>
#include <baton/aws/detail/xml.hpp>
#include <baton/aws/signed_channel.hpp>
#include <baton/aws/sigv4.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/core/signer.hpp>
#include <baton/http/client.hpp>
#include <baton/store/record_store.hpp>

#ifndef BATON_DOXYGEN
namespace baton::detail {

// ---- probe -----------------------------------------------------------------------------------------
// How the probe (backend/detail/conditional_probe.hpp) speaks S3, on one scratch key; see
// "Capability gating" in the file comment.
struct s3_probe_wire {
    std::shared_ptr<s3_state> st;
    aws::signed_channel channel;
    std::string key; // without key_prefix
    std::shared_ptr<unsigned> writes = std::make_shared<unsigned>(0);

    // Classifies a reply: empty ec and the ETag for a 2xx; the error otherwise (`transport` for no response).
    static probe_outcome classify(s3_reply& rep) {
        probe_outcome o;
        if (rep.ec) {
            o.ec = rep.ec;
            o.transport = true;
            o.diag = std::move(rep.info.diag);
            return o;
        }
        auto const status = rep.res.result_int();
        o.answer = "HTTP " + std::to_string(status);
        std::string code;
        if (status >= 200 && status < 300) {
            if (auto ec = s3_error_in_success(rep.res, o.diag)) {
                o.ec = ec;
                code = o.diag.service_code;
            } else if (auto it = rep.res.find(s3_bhttp::field::etag); it != rep.res.end()) {
                o.etag = std::string(it->value());
            }
        } else {
            o.ec = s3_response_error(rep.res, o.diag, code);
        }
        if (!code.empty()) o.answer += " " + code;
        return o;
    }

    template <class F>
    void put(std::optional<std::string> if_none_match, std::optional<std::string> if_match, F&& f) const {
        auto req = st->make_request(s3_bhttp::verb::put, st->object_target(key),
                                    "baton probe write " + std::to_string(++*writes) + " " + st->names.hex128());
        req.set(s3_bhttp::field::content_type, "application/octet-stream");
        if (if_none_match) req.set(s3_bhttp::field::if_none_match, *if_none_match);
        if (if_match) req.set(s3_bhttp::field::if_match, *if_match);
        channel.send(std::move(req), {}, [f = std::forward<F>(f)](s3_reply rep) mutable { f(classify(rep)); });
    }

    template <class F>
    void erase(std::optional<std::string> if_match, F&& f) const {
        auto req = st->make_request(s3_bhttp::verb::delete_, st->object_target(key));
        if (if_match) req.set(s3_bhttp::field::if_match, *if_match);
        channel.send(std::move(req), {}, [f = std::forward<F>(f)](s3_reply rep) mutable { f(classify(rep)); });
    }

    // The scratch object's ETag (a GET: its body is the probe's own text, never an error document).
    template <class F>
    void read(F&& f) const {
        auto req = st->make_request(s3_bhttp::verb::get, st->object_target(key));
        channel.send(std::move(req), {}, [f = std::forward<F>(f)](s3_reply rep) mutable {
            auto const status = rep.ec ? 0 : rep.res.result_int();
            if (status < 200 || status >= 300) return f(classify(rep));
            probe_outcome o;
            o.answer = "HTTP " + std::to_string(status);
            if (auto it = rep.res.find(s3_bhttp::field::etag); it != rep.res.end()) o.etag = std::string(it->value());
            f(std::move(o));
        });
    }

    std::optional<std::string> unquoted(std::string const& etag) const { return s3_unquote(etag); }

    void done(error_code ec, probe_findings found) const {
        if (!ec) {
            st->caps = found.caps;
            st->unquoted_etags = found.unquoted_etags;
            st->create_check = std::move(found.create_check);
            st->replace_check = std::move(found.replace_check);
            st->erase_check = std::move(found.erase_check);
        }
        st->probing = false;
        auto waiters = std::move(st->probe_waiters);
        st->probe_waiters.clear();
        for (auto& w : waiters) std::move(w)(ec, found.caps);
    }
};

BATON_LAZY_DEF void s3_start_probe(std::shared_ptr<s3_state> const& st, aws::signed_channel const& channel) {
    st->probing = true;
    s3_probe_wire wire{st, channel, st->params.probe_prefix + st->names.hex128()};
    std::make_shared<conditional_probe<s3_probe_wire>>(std::move(wire))->start();
}

BATON_LAZY void s3_probe(std::shared_ptr<s3_state> st, aws::signed_channel channel, s3_probe_handler h) {
    s3_after_probe(st, channel, [st, h = std::move(h)](error_code ec, capabilities caps) mutable {
        st->complete(std::move(h), ec, std::move(caps));
    });
}

// ---- bucket ----------------------------------------------------------------------------------------
BATON_LAZY void s3_create_bucket(std::shared_ptr<s3_state> st, aws::signed_channel channel, s3_bucket_handler h) {
    std::string body;
    if (st->params.region != "us-east-1")
        body = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>" +
               st->params.region + "</LocationConstraint></CreateBucketConfiguration>";
    auto req = st->make_request(s3_bhttp::verb::put, st->bucket_target(), std::move(body));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    channel.send(std::move(req), slot, [st, h = std::move(h)](s3_reply rep) mutable {
        diagnostics d;
        if (rep.ec) {
            d = std::move(rep.info.diag);
            return st->complete(std::move(h), rep.ec, std::move(d));
        }
        auto const status = rep.res.result_int();
        error_code ec;
        if (status >= 200 && status < 300) {
            ec = s3_error_in_success(rep.res, d);
        } else {
            std::string code;
            ec = s3_response_error(rep.res, d, code);
        }
        st->complete(std::move(h), ec, std::move(d));
    });
}

} // namespace baton::detail
#endif

#endif
