// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_AZURE_BLOB_HPP
#define BATON_BACKEND_IMPL_AZURE_BLOB_HPP

// Layer: backends, internal. The requests of `azure_blob_backend` (get, put, erase, list, probe,
// container creation; each through the one request path, azure_send), included at the end of
// <baton/backend/azure_blob.hpp>.

#include <baton/azure/detail/list_blobs.hpp>
#include <baton/backend/detail/azure_blob_requests.hpp>

#ifndef BATON_DOXYGEN
namespace baton::detail {

// What an error answer means for one blob: a missing container and a native Azure lease are
// named, since neither is a refusal of the write the caller asked for.
BATON_LAZY void azure_explain(azure_blob_state const& st, std::string const& code, std::string const& key,
                              diagnostics& diag) {
    if (code == "ContainerNotFound")
        diag.message = "container '" + st.params.container + "' does not exist in account '" + st.params.account.name +
                       "' (create it first, e.g. az storage container create --name " + st.params.container + ")";
    else if (code == "LeaseIdMissing" || code == "LeaseIdMismatchWithBlobOperation" || code == "LeaseLost")
        diag.message = "blob '" + st.params.key_prefix + key + "' holds an Azure blob lease (" + code +
                       "); baton does not use native leases: break that lease, or use another key";
}

// ---- get -------------------------------------------------------------------------------------------
BATON_LAZY_DEF void azure_get(std::shared_ptr<azure_blob_state> st, std::string key, azure_get_handler h) {
    get_result r;
    if (auto ec = azure_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    auto req = st->make_request(az_bhttp::verb::get, st->blob_target(key));
    auto slot = az_asio::get_associated_cancellation_slot(h);
    azure_send(st, std::move(req), slot, [st, key = std::move(key), h = std::move(h)](azure_reply rep) mutable {
        get_result r;
        if (rep.ec) {
            r.diag = std::move(rep.info.diag);
            return st->complete(std::move(h), rep.ec, std::move(r));
        }
        auto const status = rep.res.result_int();
        if (status >= 200 && status < 300) {
            auto const it = rep.res.find(az_bhttp::field::etag);
            if (it == rep.res.end() || it->value().empty()) {
                r.diag.http_status = status;
                r.diag.message = "the Get Blob answer carried no ETag, so the record has no version";
                return st->complete(std::move(h), error_code(errc::invalid_response), std::move(r));
            }
            r.found = record{key, std::move(rep.res.body()), std::string(it->value())};
            return st->complete(std::move(h), error_code{}, std::move(r));
        }
        std::string code;
        auto ec = azure_response_error(rep.res, r.diag, code);
        if (status == 404 && code == "BlobNotFound") {
            r.diag.clear();
            return st->complete(std::move(h), error_code{}, std::move(r));
        }
        azure_explain(*st, code, key, r.diag);
        st->complete(std::move(h), ec, std::move(r));
    });
}

// ---- put -------------------------------------------------------------------------------------------
BATON_LAZY void azure_send_put(std::shared_ptr<azure_blob_state> st, std::string key, std::string body, precondition pc,
                               azure_put_handler h) {
    auto req = st->make_request(az_bhttp::verb::put, st->blob_target(key), std::move(body));
    req.set("x-ms-blob-type", "BlockBlob");
    req.set(az_bhttp::field::content_type, "application/octet-stream");
    if (pc.which() == precondition::kind::absent) req.set(az_bhttp::field::if_none_match, "*");
    if (pc.which() == precondition::kind::matches) req.set(az_bhttp::field::if_match, pc.version());
    auto slot = az_asio::get_associated_cancellation_slot(h);
    azure_send(st, std::move(req), slot,
               [st, key = std::move(key), pc = std::move(pc), h = std::move(h)](azure_reply rep) mutable {
                   put_result r;
                   if (rep.ec) {
                       r.diag = std::move(rep.info.diag);
                       return st->complete(std::move(h), azure_write_transport_error(rep.ec, rep.info), std::move(r));
                   }
                   auto const status = rep.res.result_int();
                   if (status >= 200 && status < 300) {
                       auto const it = rep.res.find(az_bhttp::field::etag);
                       if (it == rep.res.end() || it->value().empty()) {
                           r.diag.http_status = status;
                           r.diag.message = "the Put Blob succeeded but its answer carried no ETag; read the record "
                                            "back for its version";
                           return st->complete(std::move(h), error_code(errc::unknown_outcome), std::move(r));
                       }
                       r.version = std::string(it->value());
                       return st->complete(std::move(h), error_code{}, std::move(r));
                   }
                   std::string code;
                   auto ec = azure_response_error(rep.res, r.diag, code);
                   // `matches` on a missing blob: the version named is not current, whatever was said.
                   if (pc.which() == precondition::kind::matches && status == 404 && code == "BlobNotFound")
                       ec = errc::precondition_failed;
                   azure_explain(*st, code, key, r.diag);
                   st->complete(std::move(h), ec, std::move(r));
               });
}

BATON_LAZY_DEF void azure_put(std::shared_ptr<azure_blob_state> st, std::string key, std::string body, precondition pc,
                              azure_put_handler h) {
    put_result r;
    if (auto ec = azure_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (body.size() > st->params.max_body_bytes) {
        r.diag.message = "body of " + std::to_string(body.size()) +
                         " bytes exceeds azure_blob_backend_params::max_body_bytes (" +
                         std::to_string(st->params.max_body_bytes) + ")";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    if (pc.which() == precondition::kind::matches && pc.version().empty()) {
        r.diag.message = "a 'matches' precondition needs a version (an ETag)";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    bool const conditional = pc.which() != precondition::kind::none;
    if (!conditional || st->caps || st->params.preconditions == azure_precondition_check::trust) {
        if (auto ec = st->gate(false, pc.which(), r.diag)) return st->complete(std::move(h), ec, std::move(r));
        return azure_send_put(std::move(st), std::move(key), std::move(body), std::move(pc), std::move(h));
    }
    azure_after_probe(st, [st, key = std::move(key), body = std::move(body), pc = std::move(pc),
                           h = std::move(h)](error_code ec, capabilities caps) mutable {
        put_result r;
        if (ec) {
            r.diag = std::move(caps.diag);
            r.diag.message = "probing the store before a conditional write failed: " + r.diag.message;
            return st->complete(std::move(h), ec, std::move(r));
        }
        if (auto gec = st->gate(false, pc.which(), r.diag)) return st->complete(std::move(h), gec, std::move(r));
        azure_send_put(std::move(st), std::move(key), std::move(body), std::move(pc), std::move(h));
    });
}

// ---- erase -----------------------------------------------------------------------------------------
BATON_LAZY void azure_send_erase(std::shared_ptr<azure_blob_state> st, std::string key, precondition pc,
                                 azure_erase_handler h) {
    auto req = st->make_request(az_bhttp::verb::delete_, st->blob_target(key));
    if (pc.which() == precondition::kind::matches) req.set(az_bhttp::field::if_match, pc.version());
    auto slot = az_asio::get_associated_cancellation_slot(h);
    azure_send(st, std::move(req), slot,
               [st, key = std::move(key), pc = std::move(pc), h = std::move(h)](azure_reply rep) mutable {
                   erase_result r;
                   if (rep.ec) {
                       r.diag = std::move(rep.info.diag);
                       return st->complete(std::move(h), azure_write_transport_error(rep.ec, rep.info), std::move(r));
                   }
                   auto const status = rep.res.result_int();
                   if (status >= 200 && status < 300) return st->complete(std::move(h), error_code{}, std::move(r));
                   std::string code;
                   auto ec = azure_response_error(rep.res, r.diag, code);
                   if (status == 404 && code == "BlobNotFound") {
                       // Unconditionally: nothing to delete is done (as on S3). Conditionally: the
                       // version named is not current.
                       if (pc.which() == precondition::kind::none) {
                           r.diag.clear();
                           return st->complete(std::move(h), error_code{}, std::move(r));
                       }
                       ec = errc::precondition_failed;
                   }
                   azure_explain(*st, code, key, r.diag);
                   st->complete(std::move(h), ec, std::move(r));
               });
}

BATON_LAZY_DEF void azure_erase(std::shared_ptr<azure_blob_state> st, std::string key, precondition pc,
                                azure_erase_handler h) {
    erase_result r;
    if (auto ec = azure_check_key(key, st->params.key_prefix, r.diag)) return st->complete(std::move(h), ec, std::move(r));
    if (pc.which() == precondition::kind::absent) {
        r.diag.message = "Azure Blob has no conditional delete for 'absent'";
        return st->complete(std::move(h), error_code(errc::capability_missing), std::move(r));
    }
    if (pc.which() == precondition::kind::matches && pc.version().empty()) {
        r.diag.message = "a 'matches' precondition needs a version (an ETag)";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    bool const conditional = pc.which() != precondition::kind::none;
    if (!conditional || st->caps || st->params.preconditions == azure_precondition_check::trust) {
        if (auto ec = st->gate(true, pc.which(), r.diag)) return st->complete(std::move(h), ec, std::move(r));
        return azure_send_erase(std::move(st), std::move(key), std::move(pc), std::move(h));
    }
    azure_after_probe(st, [st, key = std::move(key), pc = std::move(pc), h = std::move(h)](error_code ec,
                                                                                            capabilities caps) mutable {
        erase_result r;
        if (ec) {
            r.diag = std::move(caps.diag);
            r.diag.message = "probing the store before a conditional erase failed: " + r.diag.message;
            return st->complete(std::move(h), ec, std::move(r));
        }
        if (auto gec = st->gate(true, pc.which(), r.diag)) return st->complete(std::move(h), gec, std::move(r));
        azure_send_erase(std::move(st), std::move(key), std::move(pc), std::move(h));
    });
}

// ---- list ------------------------------------------------------------------------------------------
template <class V = void>
struct basic_azure_list_op : std::enable_shared_from_this<basic_azure_list_op<V>> {
    // Pages followed per call before handing back what there is. A listing without a remembered
    // marker skips the names up to `after` from the prefix on: 5,000 a page.
    static constexpr std::size_t max_requests = 32;
    static constexpr std::size_t max_page = 5000;

    std::shared_ptr<azure_blob_state> st;
    std::string full_prefix, start_after;
    std::string previous; // the last name the store listed
    std::string last_key; // the last name handed out
    std::size_t limit = 0;
    std::size_t requests = 0;
    std::string marker;
    list_page page;
    azure_list_handler h;

    basic_azure_list_op(std::shared_ptr<azure_blob_state> s, azure_list_handler handler)
        : st(std::move(s)), h(std::move(handler)) {}

    static std::string marker_key(std::string const& prefix, std::string const& after) { return prefix + '\n' + after; }

    void finish(error_code ec) {
        if (ec) page.entries.clear();
        st->complete(std::move(h), ec, std::move(page));
    }
    error_code invalid(std::string why) {
        page.diag.message = "invalid List Blobs answer: " + std::move(why);
        return errc::invalid_response;
    }

    void start() {
        if (!start_after.empty())
            if (auto it = st->markers.find(marker_key(full_prefix, start_after)); it != st->markers.end())
                marker = it->second;
        next();
    }

    void next() {
        // Without a marker for `after`, whole pages: most of the first ones are skipped.
        bool const skipping = !start_after.empty() && last_key.empty() && !st->markers.count(marker_key(full_prefix, start_after));
        auto const want = skipping ? max_page : std::min(limit - page.entries.size(), max_page);
        // An empty parameter is left out: Shared Key signers disagree on how to sign one.
        std::string q = "?restype=container&comp=list";
        if (!full_prefix.empty()) q += "&prefix=" + uri_encode(full_prefix, false);
        q += "&maxresults=" + std::to_string(want);
        if (!marker.empty()) q += "&marker=" + uri_encode(marker, false);
        ++requests;
        auto req = st->make_request(az_bhttp::verb::get, st->container_target() + q);
        auto slot = az_asio::get_associated_cancellation_slot(h);
        azure_send(st, std::move(req), slot, [self = this->shared_from_this()](azure_reply rep) {
            self->on_reply(std::move(rep));
        });
    }

    void on_reply(azure_reply rep) {
        if (rep.ec) {
            page.diag = std::move(rep.info.diag);
            return finish(rep.ec);
        }
        auto const status = rep.res.result_int();
        if (status < 200 || status >= 300) {
            std::string code;
            auto ec = azure_response_error(rep.res, page.diag, code);
            azure_explain(*st, code, {}, page.diag);
            return finish(ec);
        }
        azure::detail::blob_listing l;
        diagnostics pd;
        if (azure::detail::parse_list_blobs(rep.res.body(), l, pd)) {
            page.diag = std::move(pd);
            page.diag.http_status = status;
            return finish(errc::invalid_response);
        }
        auto const& kp = st->params.key_prefix;
        std::size_t seen = 0;
        for (auto& b : l.entries) {
            ++seen;
            if (b.name.compare(0, full_prefix.size(), full_prefix) != 0 || b.name.size() <= kp.size())
                return finish(invalid("a name outside the requested prefix was returned"));
            // The service's order: UTF-16 code units, which is byte order but for U+E000..U+FFFF.
            if (!previous.empty() && !azure::detail::blob_name_less(previous, b.name))
                return finish(invalid("names are not in ascending order"));
            previous = b.name;
            if (!start_after.empty() && !azure::detail::blob_name_less(start_after, b.name)) continue; // before the start
            last_key = b.name;
            if (page.entries.size() == limit) {
                page.truncated = true; // the store sent more than maxresults
                return finish({});
            }
            page.entries.push_back({b.name.substr(kp.size()), std::move(b.etag)});
        }
        if (l.next_marker.empty()) {
            page.truncated = false;
            return finish({});
        }
        if (page.entries.size() >= limit) {
            // The page ended where this listing does: the marker continues after its last name.
            if (seen == l.entries.size())
                st->remember_marker(marker_key(full_prefix, last_key), l.next_marker);
            page.truncated = true;
            return finish({});
        }
        // Skipping to the start goes on until it is reached (each page must advance the marker).
        if (requests >= max_requests && !page.entries.empty()) {
            st->remember_marker(marker_key(full_prefix, last_key), l.next_marker);
            page.truncated = true;
            return finish({});
        }
        if (l.next_marker == marker) return finish(invalid("the marker did not advance"));
        marker = std::move(l.next_marker);
        next();
    }
};
using azure_list_op = basic_azure_list_op<>;

BATON_LAZY_DEF void azure_list(std::shared_ptr<azure_blob_state> st, std::string prefix, std::string after,
                               std::size_t limit, azure_list_handler h) {
    list_page r;
    if (limit == 0) {
        r.diag.message = "list limit must be at least 1";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    if (st->params.key_prefix.size() + std::max(prefix.size(), after.size()) > store_limits::max_key_bytes) {
        r.diag.message = "key_prefix with the list prefix or start key exceeds the limit of " +
                         std::to_string(store_limits::max_key_bytes) + " bytes";
        return st->complete(std::move(h), error_code(errc::invalid_argument), std::move(r));
    }
    auto op = std::make_shared<azure_list_op>(st, std::move(h));
    op->full_prefix = st->params.key_prefix + prefix;
    if (!after.empty()) op->start_after = st->params.key_prefix + after;
    op->limit = limit;
    op->start();
}

// ---- probe -----------------------------------------------------------------------------------------
// How the probe (backend/detail/conditional_probe.hpp) speaks the Blob service, on one scratch blob.
struct azure_probe_wire {
    std::shared_ptr<azure_blob_state> st;
    std::string key; // without key_prefix
    std::shared_ptr<unsigned> writes = std::make_shared<unsigned>(0);

    // A missing container or a native lease is named, as for the caller's own requests.
    static probe_outcome classify(azure_blob_state const& st, std::string const& key, azure_reply& rep) {
        probe_outcome o;
        if (rep.ec) {
            o.ec = rep.ec;
            o.transport = true;
            o.diag = std::move(rep.info.diag);
            return o;
        }
        auto const status = rep.res.result_int();
        o.answer = "HTTP " + std::to_string(status);
        if (status >= 200 && status < 300) {
            if (auto it = rep.res.find(az_bhttp::field::etag); it != rep.res.end()) o.etag = std::string(it->value());
            return o;
        }
        std::string code;
        o.ec = azure_response_error(rep.res, o.diag, code);
        azure_explain(st, code, key, o.diag);
        if (!code.empty()) o.answer += " " + code;
        return o;
    }

    template <class F>
    void put(std::optional<std::string> if_none_match, std::optional<std::string> if_match, F&& f) const {
        auto req = st->make_request(az_bhttp::verb::put, st->blob_target(key),
                                    "baton probe write " + std::to_string(++*writes) + " " + st->names.hex128());
        req.set("x-ms-blob-type", "BlockBlob");
        req.set(az_bhttp::field::content_type, "application/octet-stream");
        if (if_none_match) req.set(az_bhttp::field::if_none_match, *if_none_match);
        if (if_match) req.set(az_bhttp::field::if_match, *if_match);
        azure_send(st, std::move(req), {}, [st = st, key = key, f = std::forward<F>(f)](azure_reply rep) mutable {
            f(classify(*st, key, rep));
        });
    }

    template <class F>
    void erase(std::optional<std::string> if_match, F&& f) const {
        auto req = st->make_request(az_bhttp::verb::delete_, st->blob_target(key));
        if (if_match) req.set(az_bhttp::field::if_match, *if_match);
        azure_send(st, std::move(req), {}, [st = st, key = key, f = std::forward<F>(f)](azure_reply rep) mutable {
            f(classify(*st, key, rep));
        });
    }

    template <class F>
    void read(F&& f) const {
        auto req = st->make_request(az_bhttp::verb::get, st->blob_target(key));
        azure_send(st, std::move(req), {}, [st = st, key = key, f = std::forward<F>(f)](azure_reply rep) mutable {
            f(classify(*st, key, rep));
        });
    }

    // Azure compares ETags as sent back: there is no other form to try.
    std::optional<std::string> unquoted(std::string const&) const { return std::nullopt; }

    void done(error_code ec, probe_findings found) const {
        if (!ec) {
            st->caps = found.caps;
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

BATON_LAZY_DEF void azure_start_probe(std::shared_ptr<azure_blob_state> const& st) {
    st->probing = true;
    azure_probe_wire wire{st, st->params.probe_prefix + st->names.hex128()};
    std::make_shared<conditional_probe<azure_probe_wire>>(std::move(wire))->start();
}

BATON_LAZY_DEF void azure_probe(std::shared_ptr<azure_blob_state> st, azure_probe_handler h) {
    azure_after_probe(st, [st, h = std::move(h)](error_code ec, capabilities caps) mutable {
        st->complete(std::move(h), ec, std::move(caps));
    });
}

// ---- container -------------------------------------------------------------------------------------
BATON_LAZY_DEF void azure_create_container(std::shared_ptr<azure_blob_state> st, azure_container_handler h) {
    auto req = st->make_request(az_bhttp::verb::put, st->container_target() + "?restype=container");
    auto slot = az_asio::get_associated_cancellation_slot(h);
    azure_send(st, std::move(req), slot, [st, h = std::move(h)](azure_reply rep) mutable {
        diagnostics d;
        if (rep.ec) {
            d = std::move(rep.info.diag);
            return st->complete(std::move(h), rep.ec, std::move(d));
        }
        auto const status = rep.res.result_int();
        error_code ec;
        if (status < 200 || status >= 300) {
            std::string code;
            ec = azure_response_error(rep.res, d, code);
            if (code == "ContainerAlreadyExists") ec = errc::precondition_failed;
        }
        st->complete(std::move(h), ec, std::move(d));
    });
}

} // namespace baton::detail
#endif

#endif
