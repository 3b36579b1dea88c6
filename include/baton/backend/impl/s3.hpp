// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_S3_HPP
#define BATON_BACKEND_IMPL_S3_HPP

// Layer: backends, internal. The requests of `s3_backend` (get, put, copy, erase, list: each
// through the one signed-request path, aws::signed_channel), included at the end of
// <baton/backend/s3.hpp>.

#include <baton/backend/detail/s3_requests.hpp>

#ifndef BATON_DOXYGEN
namespace baton::detail {

// ---- get -------------------------------------------------------------------------------------------
BATON_LAZY_DEF void s3_get(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string key, s3_get_handler h) {
    get_result r;
    if (auto ec = s3_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    auto req = st->make_request(s3_bhttp::verb::get, st->object_target(key));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    channel.send(std::move(req), slot,
                   [st, key = std::move(key), h = std::move(h)](s3_reply rep) mutable {
                       get_result r;
                       if (rep.ec) {
                           r.diag = std::move(rep.info.diag);
                           return st->complete(std::move(h), rep.ec, std::move(r));
                       }
                       auto const status = rep.res.result_int();
                       if (status >= 200 && status < 300) {
                           auto const it = rep.res.find(s3_bhttp::field::etag);
                           if (it == rep.res.end() || it->value().empty()) {
                               r.diag.http_status = status;
                               r.diag.message = "the GET response carried no ETag, so the record has no version";
                               return st->complete(std::move(h), error_code(errc::invalid_response), std::move(r));
                           }
                           r.found = record{key, std::move(rep.res.body()), std::string(it->value())};
                           return st->complete(std::move(h), error_code{}, std::move(r));
                       }
                       std::string code;
                       auto ec = s3_response_error(rep.res, r.diag, code);
                       if (status == 404 && code == "NoSuchKey") {
                           r.diag.clear();
                           return st->complete(std::move(h), error_code{}, std::move(r));
                       }
                       st->complete(std::move(h), ec, std::move(r));
                   });
}

// ---- put -------------------------------------------------------------------------------------------
BATON_LAZY void s3_send_put(std::shared_ptr<s3_state> st, aws::signed_channel const& channel, std::string key,
                        std::string body, precondition pc, s3_put_handler h) {
    auto req = st->make_request(s3_bhttp::verb::put, st->object_target(key), std::move(body));
    req.set(s3_bhttp::field::content_type, "application/octet-stream");
    if (pc.which() == precondition::kind::absent) req.set(s3_bhttp::field::if_none_match, "*");
    if (pc.which() == precondition::kind::matches) req.set(s3_bhttp::field::if_match, st->if_match_value(pc.version()));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    channel.send(std::move(req), slot, [st, pc = std::move(pc), h = std::move(h)](s3_reply rep) mutable {
        put_result r;
        if (rep.ec) {
            r.diag = std::move(rep.info.diag);
            return st->complete(std::move(h), s3_write_transport_error(rep.ec, rep.info), std::move(r));
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            if (auto ec = s3_error_in_success(rep.res, r.diag)) return st->complete(std::move(h), ec, std::move(r));
            auto const it = rep.res.find(s3_bhttp::field::etag);
            if (it == rep.res.end() || it->value().empty()) {
                r.diag.http_status = status;
                r.diag.message = "the PUT succeeded but its response carried no ETag; read the record back for its version";
                return st->complete(std::move(h), error_code(errc::unknown_outcome), std::move(r));
            }
            r.version = std::string(it->value());
            return st->complete(std::move(h), error_code{}, std::move(r));
        }
        std::string code;
        auto ec = s3_response_error(rep.res, r.diag, code);
        // `matches` on a missing key: AWS 404 NoSuchKey, RGW 412. Both: the version named is not current.
        if (pc.which() == precondition::kind::matches && status == 404 && code != "NoSuchBucket")
            ec = errc::precondition_failed;
        st->complete(std::move(h), ec, std::move(r));
    });
}

BATON_LAZY_DEF void s3_put(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string key, std::string body,
                   precondition pc, s3_put_handler h) {
    put_result r;
    if (auto ec = s3_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (body.size() > st->params.max_body_bytes) {
        r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds s3_backend_params::max_body_bytes (" +
                         std::to_string(st->params.max_body_bytes) + ")";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    if (pc.which() == precondition::kind::matches && pc.version().empty()) {
        r.diag.message = "a 'matches' precondition needs a version (an ETag)";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    bool const conditional = pc.which() != precondition::kind::none;
    if (!conditional || st->caps || st->params.preconditions == s3_precondition_check::trust) {
        if (auto ec = st->gate(false, pc.which(), r.diag)) return st->complete(std::move(h), ec, std::move(r));
        return s3_send_put(std::move(st), channel, std::move(key), std::move(body), std::move(pc), std::move(h));
    }
    s3_after_probe(st, channel,
                   [st, channel, key = std::move(key), body = std::move(body), pc = std::move(pc),
                    h = std::move(h)](error_code ec, capabilities caps) mutable {
                       put_result r;
                       if (ec) {
                           r.diag = std::move(caps.diag);
                           r.diag.message = "probing the store before a conditional write failed: " + r.diag.message;
                           return st->complete(std::move(h), ec, std::move(r));
                       }
                       if (auto gec = st->gate(false, pc.which(), r.diag))
                           return st->complete(std::move(h), gec, std::move(r));
                       s3_send_put(std::move(st), channel, std::move(key), std::move(body), std::move(pc), std::move(h));
                   });
}

// ---- copy (CopyObject, unconditional) ---------------------------------------------------------------
BATON_LAZY_DEF void s3_copy(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string from, std::string to,
                    s3_put_handler h) {
    put_result r;
    if (auto ec = s3_check_key(from, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (auto ec = s3_check_key(to, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    auto req = st->make_request(s3_bhttp::verb::put, st->object_target(to));
    // The source as bucket/key, URL-encoded (the bucket is named even when virtual-hosted).
    req.set("x-amz-copy-source", "/" + st->params.bucket + "/" + uri_encode(st->params.key_prefix + from, true));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    channel.send(std::move(req), slot, [st, h = std::move(h)](s3_reply rep) mutable {
        put_result r;
        if (rep.ec) {
            r.diag = std::move(rep.info.diag);
            return st->complete(std::move(h), s3_write_transport_error(rep.ec, rep.info), std::move(r));
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            // A copy can fail after its 200 was sent: the error is then in the body.
            if (auto ec = s3_error_in_success(rep.res, r.diag)) return st->complete(std::move(h), ec, std::move(r));
            std::string const& body = rep.res.body();
            auto const open = body.find("<ETag>"), close = body.find("</ETag>");
            if (open != std::string::npos && close != std::string::npos && close > open) {
                std::string etag = body.substr(open + 6, close - open - 6);
                for (std::string_view quot : {"&quot;", "&#34;"})
                    for (auto at = etag.find(quot); at != std::string::npos; at = etag.find(quot, at + 1))
                        etag.replace(at, quot.size(), "\"");
                r.version = std::move(etag);
            }
            return st->complete(std::move(h), error_code{}, std::move(r));
        }
        std::string code;
        auto ec = s3_response_error(rep.res, r.diag, code);
        st->complete(std::move(h), ec, std::move(r)); // a missing source: not_found (NoSuchKey)
    });
}

// ---- erase -----------------------------------------------------------------------------------------
BATON_LAZY void s3_send_erase(std::shared_ptr<s3_state> st, aws::signed_channel const& channel, std::string key,
                          precondition pc, s3_erase_handler h) {
    auto req = st->make_request(s3_bhttp::verb::delete_, st->object_target(key));
    if (pc.which() == precondition::kind::matches) req.set(s3_bhttp::field::if_match, st->if_match_value(pc.version()));
    auto slot = s3_asio::get_associated_cancellation_slot(h);
    channel.send(std::move(req), slot, [st, pc = std::move(pc), h = std::move(h)](s3_reply rep) mutable {
        erase_result r;
        if (rep.ec) {
            r.diag = std::move(rep.info.diag);
            return st->complete(std::move(h), s3_write_transport_error(rep.ec, rep.info), std::move(r));
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            auto ec = s3_error_in_success(rep.res, r.diag);
            return st->complete(std::move(h), ec, std::move(r));
        }
        std::string code;
        auto ec = s3_response_error(rep.res, r.diag, code);
        if (pc.which() == precondition::kind::matches && status == 404 && code != "NoSuchBucket")
            ec = errc::precondition_failed;
        st->complete(std::move(h), ec, std::move(r));
    });
}

BATON_LAZY_DEF void s3_erase(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string key, precondition pc,
                     s3_erase_handler h) {
    erase_result r;
    if (auto ec = s3_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (pc.which() == precondition::kind::absent) {
        r.diag.message = "S3 has no conditional delete for 'absent' (If-None-Match is not accepted on DELETE)";
        return st->complete(std::move(h), error_code(errc::capability_missing), std::move(r));
    }
    if (pc.which() == precondition::kind::matches && pc.version().empty()) {
        r.diag.message = "a 'matches' precondition needs a version (an ETag)";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    bool const conditional = pc.which() != precondition::kind::none;
    if (!conditional || st->caps || st->params.preconditions == s3_precondition_check::trust) {
        if (auto ec = st->gate(true, pc.which(), r.diag)) return st->complete(std::move(h), ec, std::move(r));
        return s3_send_erase(std::move(st), channel, std::move(key), std::move(pc), std::move(h));
    }
    s3_after_probe(st, channel,
                   [st, channel, key = std::move(key), pc = std::move(pc), h = std::move(h)](error_code ec,
                                                                                         capabilities caps) mutable {
                       erase_result r;
                       if (ec) {
                           r.diag = std::move(caps.diag);
                           r.diag.message = "probing the store before a conditional erase failed: " + r.diag.message;
                           return st->complete(std::move(h), ec, std::move(r));
                       }
                       if (auto gec = st->gate(true, pc.which(), r.diag))
                           return st->complete(std::move(h), gec, std::move(r));
                       s3_send_erase(std::move(st), channel, std::move(key), std::move(pc), std::move(h));
                   });
}

// ---- list ------------------------------------------------------------------------------------------
template <class V = void>
struct basic_s3_list_op : std::enable_shared_from_this<basic_s3_list_op<V>> {
    static constexpr std::size_t max_requests = 32; // pages followed per call before handing back what there is

    std::shared_ptr<s3_state> st;
    aws::signed_channel channel;
    std::string full_prefix, start_after, last_key;
    std::size_t limit = 0;
    std::size_t requests = 0;
    std::string token;
    list_page page;
    s3_list_handler h;

    basic_s3_list_op(std::shared_ptr<s3_state> s, aws::signed_channel sg, s3_list_handler handler)
        : st(std::move(s)), channel(std::move(sg)), h(std::move(handler)) {}

    void finish(error_code ec) {
        if (ec) page.entries.clear();
        st->complete(std::move(h), ec, std::move(page));
    }
    error_code invalid(std::string why) {
        page.diag.message = "invalid ListObjectsV2 response: " + std::move(why);
        return errc::invalid_response;
    }

    void next() {
        std::string q = "list-type=2&prefix=" + uri_encode(full_prefix, false);
        if (!token.empty()) q += "&continuation-token=" + uri_encode(token, false);
        else if (!start_after.empty()) q += "&start-after=" + uri_encode(start_after, false);
        auto const want = std::min<std::size_t>(limit - page.entries.size(), 1000);
        q += "&max-keys=" + std::to_string(want) + "&encoding-type=url";
        ++requests;
        auto req = st->make_request(s3_bhttp::verb::get, st->bucket_target() + "?" + q);
        auto slot = s3_asio::get_associated_cancellation_slot(h);
        channel.send(std::move(req), slot,
                       [self = this->shared_from_this()](s3_reply rep) { self->on_reply(std::move(rep)); });
    }

    void on_reply(s3_reply rep) {
        if (rep.ec) {
            page.diag = std::move(rep.info.diag);
            return finish(rep.ec);
        }
        auto const status = rep.res.result_int();
        if (status < 200 || status >= 300) {
            std::string code;
            auto ec = s3_response_error(rep.res, page.diag, code);
            return finish(ec);
        }
        s3_xml::s3_listing l;
        diagnostics pd;
        if (s3_xml::parse_list_objects_v2(rep.res.body(), l, pd)) {
            // A 200 may carry an <Error> document instead.
            std::string code;
            s3_xml::s3_error e;
            diagnostics ed;
            if (!s3_xml::parse_s3_error(rep.res.body(), e, ed)) {
                auto ec = s3_response_error(rep.res, page.diag, code);
                return finish(ec ? ec : error_code(errc::invalid_response));
            }
            page.diag = std::move(pd);
            page.diag.http_status = status;
            return finish(errc::invalid_response);
        }
        // Stores that ignore encoding-type=url (s3rver) say so by omitting <EncodingType>; their keys
        // are then literal text, which the parser has already decoded from XML.
        auto const& kp = st->params.key_prefix;
        std::size_t taken = 0;
        for (auto& o : l.contents) {
            if (o.key.compare(0, full_prefix.size(), full_prefix) != 0 || o.key.size() <= kp.size())
                return finish(invalid("a key outside the requested prefix was returned"));
            if ((!last_key.empty() && o.key <= last_key) || (!start_after.empty() && o.key <= start_after))
                return finish(invalid("keys are not in ascending order after the start"));
            last_key = o.key;
            if (page.entries.size() == limit) {
                page.truncated = true; // the store sent more than max-keys
                return finish({});
            }
            page.entries.push_back({o.key.substr(kp.size()), std::move(o.etag)});
            ++taken;
        }
        if (!l.is_truncated) {
            page.truncated = false;
            return finish({});
        }
        if (page.entries.size() >= limit) {
            page.truncated = true;
            return finish({});
        }
        if (requests >= max_requests) {
            if (page.entries.empty()) {
                page.diag.http_status = status;
                return finish(invalid("the store kept answering truncated pages without keys"));
            }
            page.truncated = true;
            return finish({});
        }
        if (l.next_continuation_token == token && taken == 0)
            return finish(invalid("the continuation token did not advance"));
        token = std::move(l.next_continuation_token);
        next();
    }
};
using s3_list_op = basic_s3_list_op<>;

BATON_LAZY_DEF void s3_list(std::shared_ptr<s3_state> st, aws::signed_channel channel, std::string prefix, std::string after,
                    std::size_t limit, s3_list_handler h) {
    list_page r;
    if (limit == 0) {
        r.diag.message = "list limit must be at least 1";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    if (st->params.key_prefix.size() + std::max(prefix.size(), after.size()) > store_limits::max_key_bytes) {
        r.diag.message = "key_prefix with the list prefix or start key exceeds S3's limit of " +
                         std::to_string(store_limits::max_key_bytes) + " bytes";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    auto op = std::make_shared<s3_list_op>(st, std::move(channel), std::move(h));
    op->full_prefix = st->params.key_prefix + prefix;
    if (!after.empty()) op->start_after = st->params.key_prefix + after;
    op->limit = limit;
    op->next();
}

} // namespace baton::detail
#endif

#endif
