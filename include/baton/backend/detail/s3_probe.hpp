// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_S3_PROBE_HPP
#define BATON_BACKEND_DETAIL_S3_PROBE_HPP

// Layer: backends, internal. The probe of `s3_backend`: what an endpoint really
// honours (conditional create, replace and erase; quoted or bare ETags), found by
// writing scratch keys before the first conditional write; and bucket creation.

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
// One pass over a scratch key; see "Capability gating" in the file comment.
template <class V = void>
struct basic_s3_probe_op : std::enable_shared_from_this<basic_s3_probe_op<V>> {
    std::shared_ptr<s3_state> st;
    aws::signed_channel channel;
    std::string key;   // without key_prefix
    std::string first; // the ETag of the first write: stale from the third write on
    std::string current;
    bool unquoted = false;
    bool create_new_ok = false;
    bool exists = false;
    unsigned writes = 0;
    std::string create_check, replace_check, erase_check;
    capabilities caps;

    basic_s3_probe_op(std::shared_ptr<s3_state> s, aws::signed_channel sg) : st(std::move(s)), channel(std::move(sg)) {
        key = st->params.probe_prefix + st->names.hex128();
    }

    std::string form(std::string const& etag) const { return unquoted ? s3_unquote(etag) : etag; }

    // What a refused check looked like, for findings.
    static std::string answer(s3_reply const& rep, std::string const& code) {
        std::string s = "HTTP " + std::to_string(rep.res.result_int());
        if (!code.empty()) s += " " + code;
        return s;
    }

    // A refusal that means "this precondition is not supported" rather than a broken setup.
    static bool unsupported(error_code ec) {
        return ec == errc::precondition_failed || ec == errc::capability_missing || ec == errc::invalid_argument ||
               ec == errc::not_found;
    }

    template <class F>
    void put(std::optional<std::string> if_none_match, std::optional<std::string> if_match, F&& f) {
        auto req = st->make_request(s3_bhttp::verb::put, st->object_target(key),
                                    "baton probe write " + std::to_string(++writes) + " " + st->names.hex128());
        req.set(s3_bhttp::field::content_type, "application/octet-stream");
        if (if_none_match) req.set(s3_bhttp::field::if_none_match, *if_none_match);
        if (if_match) req.set(s3_bhttp::field::if_match, *if_match);
        channel.send(std::move(req), {}, std::forward<F>(f));
    }

    template <class F>
    void erase(std::optional<std::string> if_match, F&& f) {
        auto req = st->make_request(s3_bhttp::verb::delete_, st->object_target(key));
        if (if_match) req.set(s3_bhttp::field::if_match, *if_match);
        channel.send(std::move(req), {}, std::forward<F>(f));
    }

    // Classifies a reply: empty ec and the ETag for a 2xx; the error otherwise (`transport` for no response).
    struct outcome {
        error_code ec;
        bool transport = false;
        std::string code;
        std::string etag;
        diagnostics diag;
    };
    static outcome classify(s3_reply& rep) {
        outcome o;
        if (rep.ec) {
            o.ec = rep.ec;
            o.transport = true;
            o.diag = std::move(rep.info.diag);
            return o;
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            if (auto ec = s3_error_in_success(rep.res, o.diag)) {
                o.ec = ec;
                o.code = o.diag.service_code;
                return o;
            }
            if (auto it = rep.res.find(s3_bhttp::field::etag); it != rep.res.end()) o.etag = std::string(it->value());
            return o;
        }
        o.ec = s3_response_error(rep.res, o.diag, o.code);
        return o;
    }

    void note(std::string line) { caps.findings.push_back(std::move(line)); }

    // Ends the probe with an error the probe itself ran into (network, auth, bucket, ...).
    void fail(outcome const& o, std::string const& during) {
        caps.diag = o.diag;
        caps.diag.message = during + ": " + (o.diag.message.empty() ? o.ec.message() : o.diag.message);
        note(during + ": failed (" + caps.diag.to_string() + ")");
        auto self = this->shared_from_this();
        error_code const ec = o.ec;
        erase(std::nullopt, [self, ec](s3_reply) { self->finish(ec); }); // best-effort cleanup
    }

    bool need_etag(outcome const& o, std::string const& during) {
        if (!o.etag.empty()) return true;
        outcome bad = o;
        bad.ec = errc::invalid_response;
        bad.diag.message = "the PUT response carried no ETag";
        fail(bad, during);
        return false;
    }

    void start() { create_new(); }

    // 1. If-None-Match: * on a new key must be accepted.
    void create_new() {
        char const* what = "put if absent on a new key";
        put(std::string("*"), std::nullopt, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->create_new_ok = true;
                self->exists = true;
                self->first = self->current = o.etag;
                self->note(std::string(what) + ": accepted");
                return self->create_existing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->create_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->create_check);
            self->plain_put();
        });
    }

    // 1b. The store refused conditional creation: make the scratch object unconditionally.
    void plain_put() {
        char const* what = "unconditional put of the scratch key";
        put(std::nullopt, std::nullopt, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec) return self->fail(o, what);
            if (!self->need_etag(o, what)) return;
            self->exists = true;
            self->first = self->current = o.etag;
            self->replace_quoted();
        });
    }

    // 2. If-None-Match: * on an existing key must be refused with 412.
    void create_existing() {
        char const* what = "put if absent on an existing key";
        put(std::string("*"), std::nullopt, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed) {
                self->caps.conditional_create = self->create_new_ok;
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) + " (honoured)");
                return self->replace_quoted();
            }
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->create_check = std::string(what) + ": accepted with " + answer(rep, {}) +
                                     " (ignored: the existing object was overwritten)";
                self->note(self->create_check);
                return self->replace_quoted();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->create_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->create_check);
            self->replace_quoted();
        });
    }

    // 3. If-Match with the current ETag as returned (quoted) must be accepted...
    void replace_quoted() {
        char const* what = "put if matching the current ETag";
        put(std::nullopt, current, [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->note(std::string(what) + " (quoted, as returned): accepted");
                return self->replace_stale();
            }
            if (o.ec == errc::precondition_failed) return self->replace_unquoted(answer(rep, o.code));
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->replace_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->replace_check);
            self->erase_stale();
        });
    }

    // 3b. ...or, on stores that compare the bare ETag (RGW), unquoted.
    void replace_unquoted(std::string quoted_answer) {
        char const* what = "put if matching the current ETag";
        put(std::nullopt, s3_unquote(current),
            [self = this->shared_from_this(), what, quoted_answer](s3_reply rep) {
                auto o = classify(rep);
                if (!o.ec) {
                    if (!self->need_etag(o, what)) return;
                    self->current = o.etag;
                    self->unquoted = true;
                    self->note(std::string(what) + ": refused when quoted as returned (" + quoted_answer +
                               "), accepted unquoted (this store compares bare ETags: If-Match is sent unquoted)");
                    return self->replace_stale();
                }
                if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
                self->replace_check = std::string(what) + ": refused both quoted (" + quoted_answer +
                                      ") and unquoted (" + answer(rep, o.code) + "), so no replace can succeed";
                self->note(self->replace_check);
                self->erase_stale();
            });
    }

    // 4. If-Match with a stale ETag must be refused with 412.
    void replace_stale() {
        char const* what = "put if matching a stale ETag";
        if (first == current) {
            replace_check = std::string(what) + ": not checked, the store gave two different bodies the same ETag";
            note(replace_check);
            return erase_stale();
        }
        put(std::nullopt, form(first), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed) {
                self->caps.conditional_replace = true;
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) + " (honoured)");
                return self->erase_stale();
            }
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->replace_check = std::string(what) + ": accepted with " + answer(rep, {}) + " (ignored)";
                self->note(self->replace_check);
                return self->erase_stale();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->replace_check = std::string(what) + ": answered " + answer(rep, o.code) + " (unexpected)";
            self->note(self->replace_check);
            self->erase_stale();
        });
    }

    // 5. DELETE with If-Match on a stale ETag must be refused with 412.
    void erase_stale() {
        char const* what = "erase if matching a stale ETag";
        if (first == current) {
            erase_check = std::string(what) + ": not checked, the store gave two different bodies the same ETag";
            note(erase_check);
            return missing();
        }
        erase(form(first), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed) {
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) + " (honoured)");
                return self->erase_fresh();
            }
            if (!o.ec) {
                self->exists = false;
                self->erase_check = std::string(what) + ": accepted with " + answer(rep, {}) +
                                    " (ignored: the object was deleted)";
                self->note(self->erase_check);
                return self->missing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->erase_check = std::string(what) + ": refused with " + answer(rep, o.code) + " (not supported)";
            self->note(self->erase_check);
            self->missing();
        });
    }

    // 5b. ...and DELETE with If-Match on the current ETag must be accepted.
    void erase_fresh() {
        char const* what = "erase if matching the current ETag";
        erase(form(current), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (!o.ec) {
                self->exists = false;
                self->caps.conditional_erase = true;
                self->note(std::string(what) + ": accepted");
                return self->missing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->erase_check = std::string(what) + ": refused with " + answer(rep, o.code) +
                                ", so no conditional erase can succeed";
            self->note(self->erase_check);
            self->missing();
        });
    }

    // 6. If-Match on a missing key must be refused (AWS 404, RGW 412) and must not create the key.
    void missing() {
        if (exists || !caps.conditional_replace) return cleanup();
        char const* what = "put if matching on a missing key";
        put(std::nullopt, form(first), [self = this->shared_from_this(), what](s3_reply rep) {
            auto o = classify(rep);
            if (o.ec == errc::precondition_failed || o.ec == errc::not_found) {
                self->note(std::string(what) + ": refused with " + answer(rep, o.code) +
                           " (honoured; reported as precondition_failed)");
                return self->cleanup();
            }
            if (!o.ec) {
                self->exists = true;
                self->caps.conditional_replace = false;
                self->replace_check = std::string(what) + ": accepted with " + answer(rep, {}) +
                                      " (ignored: the object was created)";
                self->note(self->replace_check);
                return self->cleanup();
            }
            if (o.transport) return self->fail(o, what);
            self->note(std::string(what) + ": refused with " + answer(rep, o.code));
            self->cleanup();
        });
    }

    // 7. Remove the scratch key (unconditionally; its result does not matter).
    void cleanup() {
        if (!exists) return finish({});
        erase(std::nullopt, [self = this->shared_from_this()](s3_reply) { self->finish({}); });
    }

    void finish(error_code ec) {
        if (!ec) {
            if (!caps.supports_leases()) {
                std::string failed;
                for (auto const* c : {&create_check, &replace_check})
                    if (!c->empty()) failed += (failed.empty() ? "" : "; ") + *c;
                caps.diag.message = "leases need conditional create and replace; failed: " + failed;
            }
            st->caps = caps;
            st->unquoted_etags = unquoted;
            st->create_check = create_check;
            st->replace_check = replace_check;
            st->erase_check = erase_check;
        }
        st->probing = false;
        auto waiters = std::move(st->probe_waiters);
        st->probe_waiters.clear();
        for (auto& w : waiters) std::move(w)(ec, caps);
    }
};
using s3_probe_op = basic_s3_probe_op<>;

BATON_LAZY_DEF void s3_start_probe(std::shared_ptr<s3_state> const& st, aws::signed_channel const& channel) {
    st->probing = true;
    std::make_shared<s3_probe_op>(st, channel)->start();
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
