// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_CONDITIONAL_PROBE_HPP
#define BATON_BACKEND_DETAIL_CONDITIONAL_PROBE_HPP

// Layer: backends, internal. The probe every object store's backend runs before its first
// conditional write: what an endpoint really honours (conditional create, replace and erase;
// quoted or bare ETags), found by writing a scratch object. The sequence of checks and what each
// answer means are the same for every store; how a request is made and its answer classified is
// the store's own (its Wire, below), so S3 and Azure Blob share this one pass.
//
// A Wire is a small copyable value with:
//   void put(std::optional<std::string> if_none_match, std::optional<std::string> if_match, F f);
//   void erase(std::optional<std::string> if_match, F f);
//   void read(F f);
//       all on the probe's scratch object, calling f(probe_outcome) once (a read's outcome
//       carries the object's current ETag, or `not_found`);
//   std::optional<std::string> unquoted(std::string const& etag) const;
//       the bare form of an ETag to try when the quoted form is refused, or nothing when the
//       store has one form only;
//   void done(error_code ec, probe_findings findings);
//       the probe's end: remember the findings (on success) and wake whoever waits for them.

#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#ifndef BATON_DOXYGEN
namespace baton::detail {

// One answer to a probe request, classified by the store's wire.
struct probe_outcome {
    error_code ec;          // empty for a success
    bool transport = false; // no answer at all (network, timeout)
    std::string answer;     // for findings, e.g. "HTTP 412 ConditionNotMet"
    std::string etag;       // of a successful write, as returned
    diagnostics diag;
};

// What a probe found, kept by the store to gate later conditional writes.
struct probe_findings {
    capabilities caps;
    bool unquoted_etags = false; // If-Match must carry the bare ETag
    std::string create_check, replace_check, erase_check; // the finding that failed each capability
};

template <class Wire>
struct conditional_probe : std::enable_shared_from_this<conditional_probe<Wire>> {
    Wire wire;
    std::string first; // the ETag of the first write: stale from the third write on
    std::string current;
    bool create_new_ok = false;
    bool exists = false;
    bool erase_refused = false; // this store refuses every conditional erase: the cleanup cannot be one
    probe_findings found;

    // Rounds of reading the scratch object's ETag and erasing it on that ETag, before the
    // cleanup gives up (each round lost to a change made between the read and the erase).
    static constexpr int cleanup_rounds = 3;

    explicit conditional_probe(Wire w) : wire(std::move(w)) {}

    std::string form(std::string const& etag) const {
        if (!found.unquoted_etags) return etag;
        auto bare = wire.unquoted(etag);
        return bare ? *bare : etag;
    }

    // A refusal that means "this precondition is not supported" rather than a broken setup.
    static bool unsupported(error_code ec) {
        return ec == errc::precondition_failed || ec == errc::capability_missing || ec == errc::invalid_argument ||
               ec == errc::not_found;
    }

    void note(std::string line) { found.caps.findings.push_back(std::move(line)); }

    // Ends the probe with an error the probe itself ran into (network, auth, container, ...).
    void fail(probe_outcome const& o, std::string const& during) {
        found.caps.diag = o.diag;
        found.caps.diag.message = during + ": " + (o.diag.message.empty() ? o.ec.message() : o.diag.message);
        note(during + ": failed (" + found.caps.diag.to_string() + ")");
        remove_scratch(o.ec); // the object may exist (or a write in doubt may have made it)
    }

    bool need_etag(probe_outcome const& o, std::string const& during) {
        if (!o.etag.empty()) return true;
        probe_outcome bad = o;
        bad.ec = errc::invalid_response;
        bad.diag.message = "the write's response carried no ETag";
        fail(bad, during);
        return false;
    }

    void start() { create_new(); }

    // 1. If-None-Match: * on a new key must be accepted.
    void create_new() {
        char const* what = "put if absent on a new key";
        wire.put(std::string("*"), std::nullopt, [self = this->shared_from_this(), what](probe_outcome o) {
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->create_new_ok = true;
                self->exists = true;
                self->first = self->current = o.etag;
                self->note(std::string(what) + ": accepted");
                return self->create_existing();
            }
            // Not found on a new key: the bucket or container is missing, which no write can pass.
            if (o.transport || o.ec == errc::not_found || !unsupported(o.ec)) return self->fail(o, what);
            self->found.create_check = std::string(what) + ": refused with " + o.answer + " (not supported)";
            self->note(self->found.create_check);
            self->plain_put();
        });
    }

    // 1b. The store refused conditional creation: make the scratch object unconditionally.
    void plain_put() {
        char const* what = "unconditional put of the scratch key";
        wire.put(std::nullopt, std::nullopt, [self = this->shared_from_this(), what](probe_outcome o) {
            if (o.ec) return self->fail(o, what);
            if (!self->need_etag(o, what)) return;
            self->exists = true;
            self->first = self->current = o.etag;
            self->replace_quoted();
        });
    }

    // 2. If-None-Match: * on an existing key must be refused.
    void create_existing() {
        char const* what = "put if absent on an existing key";
        wire.put(std::string("*"), std::nullopt, [self = this->shared_from_this(), what](probe_outcome o) {
            if (o.ec == errc::precondition_failed) {
                self->found.caps.conditional_create = self->create_new_ok;
                self->note(std::string(what) + ": refused with " + o.answer + " (honoured)");
                return self->replace_quoted();
            }
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->found.create_check = std::string(what) + ": accepted with " + o.answer +
                                           " (ignored: the existing object was overwritten)";
                self->note(self->found.create_check);
                return self->replace_quoted();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->found.create_check = std::string(what) + ": refused with " + o.answer + " (not supported)";
            self->note(self->found.create_check);
            self->replace_quoted();
        });
    }

    // 3. If-Match with the current ETag as returned must be accepted...
    void replace_quoted() {
        char const* what = "put if matching the current ETag";
        wire.put(std::nullopt, current, [self = this->shared_from_this(), what](probe_outcome o) {
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->note(std::string(what) + " (as returned): accepted");
                return self->replace_stale();
            }
            if (o.ec == errc::precondition_failed && self->wire.unquoted(self->current))
                return self->replace_unquoted(o.answer);
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->found.replace_check = std::string(what) + ": refused with " + o.answer + " (not supported)";
            self->note(self->found.replace_check);
            self->erase_stale();
        });
    }

    // 3b. ...or, on stores that compare the bare ETag (RGW), unquoted.
    void replace_unquoted(std::string quoted_answer) {
        char const* what = "put if matching the current ETag";
        wire.put(std::nullopt, *wire.unquoted(current),
                 [self = this->shared_from_this(), what, quoted_answer](probe_outcome o) {
                     if (!o.ec) {
                         if (!self->need_etag(o, what)) return;
                         self->current = o.etag;
                         self->found.unquoted_etags = true;
                         self->note(std::string(what) + ": refused when quoted as returned (" + quoted_answer +
                                    "), accepted unquoted (this store compares bare ETags: If-Match is sent unquoted)");
                         return self->replace_stale();
                     }
                     if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
                     self->found.replace_check = std::string(what) + ": refused both quoted (" + quoted_answer +
                                                 ") and unquoted (" + o.answer + "), so no replace can succeed";
                     self->note(self->found.replace_check);
                     self->erase_stale();
                 });
    }

    // 4. If-Match with a stale ETag must be refused.
    void replace_stale() {
        char const* what = "put if matching a stale ETag";
        if (first == current) {
            found.replace_check = std::string(what) + ": not checked, the store gave two different bodies the same ETag";
            note(found.replace_check);
            return erase_stale();
        }
        wire.put(std::nullopt, form(first), [self = this->shared_from_this(), what](probe_outcome o) {
            if (o.ec == errc::precondition_failed) {
                self->found.caps.conditional_replace = true;
                self->note(std::string(what) + ": refused with " + o.answer + " (honoured)");
                return self->erase_stale();
            }
            if (!o.ec) {
                if (!self->need_etag(o, what)) return;
                self->current = o.etag;
                self->found.replace_check = std::string(what) + ": accepted with " + o.answer + " (ignored)";
                self->note(self->found.replace_check);
                return self->erase_stale();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->found.replace_check = std::string(what) + ": answered " + o.answer + " (unexpected)";
            self->note(self->found.replace_check);
            self->erase_stale();
        });
    }

    // 5. DELETE with If-Match on a stale ETag must be refused.
    void erase_stale() {
        char const* what = "erase if matching a stale ETag";
        if (first == current) {
            found.erase_check = std::string(what) + ": not checked, the store gave two different bodies the same ETag";
            note(found.erase_check);
            return missing();
        }
        wire.erase(form(first), [self = this->shared_from_this(), what](probe_outcome o) {
            if (o.ec == errc::precondition_failed) {
                self->note(std::string(what) + ": refused with " + o.answer + " (honoured)");
                return self->erase_fresh();
            }
            if (!o.ec) {
                self->exists = false;
                self->found.erase_check = std::string(what) + ": accepted with " + o.answer +
                                          " (ignored: the object was deleted)";
                self->note(self->found.erase_check);
                return self->missing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->erase_refused = true;
            self->found.erase_check = std::string(what) + ": refused with " + o.answer + " (not supported)";
            self->note(self->found.erase_check);
            self->missing();
        });
    }

    // 5b. ...and DELETE with If-Match on the current ETag must be accepted.
    void erase_fresh() {
        char const* what = "erase if matching the current ETag";
        wire.erase(form(current), [self = this->shared_from_this(), what](probe_outcome o) {
            if (!o.ec) {
                self->exists = false;
                self->found.caps.conditional_erase = true;
                self->note(std::string(what) + ": accepted");
                return self->missing();
            }
            if (o.transport || !unsupported(o.ec)) return self->fail(o, what);
            self->erase_refused = true;
            self->found.erase_check = std::string(what) + ": refused with " + o.answer +
                                      ", so no conditional erase can succeed";
            self->note(self->found.erase_check);
            self->missing();
        });
    }

    // 6. If-Match on a missing key must be refused (AWS 404, RGW and Azure 412) and must not create it.
    void missing() {
        if (exists || !found.caps.conditional_replace) return cleanup();
        char const* what = "put if matching on a missing key";
        wire.put(std::nullopt, form(first), [self = this->shared_from_this(), what](probe_outcome o) {
            if (o.ec == errc::precondition_failed || o.ec == errc::not_found) {
                self->note(std::string(what) + ": refused with " + o.answer +
                           " (honoured; reported as precondition_failed)");
                return self->cleanup();
            }
            if (!o.ec) {
                self->exists = true;
                self->found.caps.conditional_replace = false;
                self->found.replace_check = std::string(what) + ": accepted with " + o.answer +
                                            " (ignored: the object was created)";
                self->note(self->found.replace_check);
                return self->cleanup();
            }
            if (o.transport) return self->fail(o, what);
            self->note(std::string(what) + ": refused with " + o.answer);
            self->cleanup();
        });
    }

    // 7. Remove the scratch key; its result does not matter.
    void cleanup() {
        if (!exists) return finish({});
        remove_scratch({});
    }

    // The scratch object is erased on the ETag read back, never unconditionally where the
    // store takes a conditional erase: a bucket policy that demands If-Match on deletes (AWS
    // S3's conditional-delete enforcement) then lets baton clean up after itself. Only a store
    // that refuses conditional erases (found by this probe, or by the cleanup's own erase) gets
    // an unconditional one. Then the probe ends with `ec`.
    void remove_scratch(error_code ec) {
        if (erase_refused) return erase_unconditionally(ec);
        remove_round(ec, 1);
    }

    void remove_round(error_code ec, int round) {
        wire.read([self = this->shared_from_this(), ec, round](probe_outcome o) {
            // Gone (or unreadable, or without an ETag to match): nothing to erase safely.
            if (o.ec || o.etag.empty()) return self->finish(ec);
            self->remove_matching(ec, round, std::move(o.etag), false);
        });
    }

    void remove_matching(error_code ec, int round, std::string etag, bool bare) {
        std::string const sent = bare ? *wire.unquoted(etag) : form(etag);
        wire.erase(sent, [self = this->shared_from_this(), ec, round, etag, bare](probe_outcome o) {
            if (!o.ec || o.ec == errc::not_found) return self->finish(ec);
            if (o.ec == errc::precondition_failed) {
                // A failed probe may not have learnt yet that this store compares bare ETags.
                if (!bare && !self->found.unquoted_etags && self->wire.unquoted(etag))
                    return self->remove_matching(ec, round, etag, true);
            } else if (!o.transport && unsupported(o.ec)) {
                return self->erase_unconditionally(ec); // the store takes no If-Match on an erase
            }
            // Changed since the read, or no answer (the erase may have landed): read again.
            if (round < cleanup_rounds) return self->remove_round(ec, round + 1);
            self->finish(ec);
        });
    }

    void erase_unconditionally(error_code ec) {
        wire.erase(std::nullopt, [self = this->shared_from_this(), ec](probe_outcome) { self->finish(ec); });
    }

    void finish(error_code ec) {
        if (!ec && !found.caps.supports_leases()) {
            std::string failed;
            for (auto const* c : {&found.create_check, &found.replace_check})
                if (!c->empty()) failed += (failed.empty() ? "" : "; ") + *c;
            found.caps.diag.message = "leases need conditional create and replace; failed: " + failed;
        }
        wire.done(ec, std::move(found));
    }
};

} // namespace baton::detail
#endif

#endif
