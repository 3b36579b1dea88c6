// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_IMPL_COMMIT_MACHINES_IPP
#define BATON_STORE_IMPL_COMMIT_MACHINES_IPP

// Layer: store, internal. The compiled part of store/detail/commit_machines.hpp.
#include <baton/store/detail/commit_machines.hpp>

#include <baton/core/detail/random.hpp>
#include <baton/store/settlement.hpp>

#include <boost/asio/error.hpp>

#include <string_view>
#include <utility>

namespace baton::detail {

namespace commit_steps {
using store_id = machine_step::store_id;

// Errors that mean the request was refused before anything was applied.
BATON_DECL bool sent_nothing(error_code const& ec) {
    return refused_by_setup(ec) || ec == errc::no_credentials;
}

// A pointer read of `key` in the lock store.
BATON_DECL machine_step read_at(store_id where, std::string const& key) { return machine_step::read().at(where, key); }

// The step for a refused commit: the current pointer, from the refusal when the lock store sent
// it (handed to `answer` at once), else read.
template <class Machine>
machine_step read_current(Machine& m, std::string const& key, std::optional<record> current) {
    if (!current) return read_at(store_id::records, key);
    get_result g;
    g.found = std::move(current);
    g.found->key = key;
    return m.on_get(error_code{}, std::move(g));
}

BATON_DECL error_code record_probe(commit_knowledge& k, error_code ec, capabilities& c, diagnostics& d) {
    if (ec) {
        d = std::move(c.diag);
        return ec;
    }
    return k.probed(std::move(c), d);
}
} // namespace commit_steps

// ---- commit_knowledge ------------------------------------------------------------------------

BATON_DECL commit_knowledge::commit_knowledge(commit_protocol_params p, std::uint64_t seed)
    : params_(std::move(p)), rng_(seeded_generator(seed ? std::optional(seed) : std::nullopt)) {}

BATON_DECL bool commit_knowledge::needs_probe() {
    std::lock_guard lock(mutex_);
    return params_.check_lock_store && !(lock_caps_ && lock_caps_->supports_leases());
}

BATON_DECL error_code commit_knowledge::probed(capabilities c, diagnostics& d) {
    std::lock_guard lock(mutex_);
    bool const ok = c.supports_leases();
    if (!ok) {
        d.message = "the lock store ignores preconditions, so it cannot coordinate writes:";
        for (auto const& f : c.findings) d.message += " " + f + ";";
    }
    lock_caps_ = std::move(c);
    return ok ? error_code{} : error_code(errc::capability_missing);
}

BATON_DECL std::string commit_knowledge::nonce() {
    std::lock_guard lock(mutex_);
    return make_nonce(rng_);
}

BATON_DECL void commit_knowledge::remember(std::string const& key, std::string version, std::string object) {
    std::lock_guard lock(mutex_);
    if (known_.size() >= 4096 && !known_.count(key)) known_.erase(known_.begin());
    known_[key] = known_object{std::move(version), std::move(object)};
}

BATON_DECL void commit_knowledge::forget(std::string const& key) {
    std::lock_guard lock(mutex_);
    known_.erase(key);
}

BATON_DECL std::optional<std::string> commit_knowledge::object_at(std::string const& key, std::string const& version) {
    std::lock_guard lock(mutex_);
    auto it = known_.find(key);
    if (it == known_.end() || it->second.version != version) return std::nullopt;
    return it->second.object;
}

BATON_DECL std::size_t commit_knowledge::max_key_bytes() const noexcept {
    return store_limits::max_key_bytes - params_.object_prefix.size() - commit_object_suffix_bytes;
}

BATON_DECL error_code commit_knowledge::check_key(std::string const& key, diagnostics& d) const {
    std::size_t const limit = max_key_bytes();
    if (key.empty() || key.size() > limit) {
        d.message = "key must be 1 to " + std::to_string(limit) + " bytes in a commit-protocol store (it is " +
                    std::to_string(key.size()) + ")";
        return errc::invalid_argument;
    }
    // Refused before anything is written: a pointer naming a key that is not UTF-8 could never
    // be read back as JSON.
    return store_limits::check_key(key, d);
}

BATON_DECL error_code decode_pointer(get_result& r, read_pointer& out) {
    out = read_pointer{};
    if (!r.found) return {};
    commit_pointer p;
    if (auto ec = decode_commit_pointer(r.found->body, p, r.diag)) {
        r.diag.message += " (key " + r.found->key + " in the lock store)";
        return ec;
    }
    out.pointer = std::move(p);
    out.version = std::move(r.found->version);
    return {};
}

// ---- get -------------------------------------------------------------------------------------

BATON_DECL machine_step commit_get_machine::start() { return read_pointer_step(); }

BATON_DECL machine_step commit_get_machine::read_pointer_step() {
    stage_ = stage::pointer;
    return commit_steps::read_at(machine_step::store_id::records, key_);
}

BATON_DECL machine_step commit_get_machine::fail(error_code ec, std::string message) {
    result_ = get_result{};
    result_.diag.message = std::move(message);
    return machine_step::done(ec);
}

BATON_DECL machine_step commit_get_machine::on_get(error_code ec, get_result r) {
    if (ec) {
        result_ = std::move(r);
        return machine_step::done(ec);
    }
    if (stage_ == stage::pointer) {
        std::string const previous = seen_.live() ? seen_.version : std::string();
        if (auto dec = decode_pointer(r, seen_)) {
            result_ = std::move(r);
            return machine_step::done(dec);
        }
        if (!seen_.live()) {
            k_.forget(key_);
            result_ = get_result{};
            return machine_step::done();
        }
        if (rounds_ > 0 && seen_.version == previous && ++unchanged_ >= k_.params().max_read_rounds) {
            // The pointer stayed, its object is gone: lost outside baton (asked again a few
            // times first, as a lagging replica may repeat an old pointer).
            return fail(errc::invalid_response, "the committed object " + seen_.pointer->object + " of key " + key_ +
                                                    " is missing from the object store (deleted outside baton?)");
        }
        k_.remember(key_, seen_.version, seen_.pointer->object);
        stage_ = stage::object;
        return commit_steps::read_at(machine_step::store_id::objects, seen_.pointer->object);
    }
    // stage::object
    if (!r.found) {
        // Replaced and deleted since the pointer was read, or lost: the pointer tells which.
        if (++rounds_ >= 4 * k_.params().max_read_rounds)
            return fail(errc::conflict, "key " + key_ + " kept moving while it was read (" + std::to_string(rounds_) + " rounds)");
        return read_pointer_step();
    }
    auto const& p = *seen_.pointer;
    if (r.found->body.size() != p.size || commit_sha256(r.found->body) != p.sha256)
        return fail(errc::invalid_response, "the committed object " + p.object + " of key " + key_ +
                                                " does not hold the bytes that were committed (size " +
                                                std::to_string(r.found->body.size()) + ", committed " + std::to_string(p.size) +
                                                "): changed outside baton");
    result_ = get_result{};
    result_.found = record{key_, std::move(r.found->body), seen_.version};
    return machine_step::done();
}

BATON_DECL machine_step commit_get_machine::on_cancel() {
    result_ = get_result{};
    return machine_step::done(boost::asio::error::operation_aborted);
}

// ---- put -------------------------------------------------------------------------------------

BATON_DECL machine_step commit_put_machine::start() {
    sha256_ = copy_of_ ? copy_of_->sha256 : commit_sha256(body_);
    if (k_.needs_probe()) {
        stage_ = stage::probing;
        return machine_step::probe();
    }
    return begin();
}

BATON_DECL machine_step commit_put_machine::on_probe(error_code ec, capabilities c) {
    if (auto bad = commit_steps::record_probe(k_, ec, c, result_.diag)) return finish(bad);
    return begin();
}

BATON_DECL machine_step commit_put_machine::begin() {
    if (pc_.which() == precondition::kind::none) {
        stage_ = stage::read_base;
        return commit_steps::read_at(machine_step::store_id::records, key_);
    }
    base_ = pc_;
    if (pc_.which() == precondition::kind::matches) replaced_ = k_.object_at(key_, pc_.version());
    return write_object();
}

BATON_DECL machine_step commit_put_machine::write_object() {
    stage_ = stage::write_object;
    std::optional<std::string_view> v;
    if (base_.which() == precondition::kind::matches) v = base_.version();
    object_ = commit_object_name(k_.params().object_prefix, key_, commit_base_tag(v), k_.nonce());
    if (copy_of_) return machine_step::copy(copy_of_->object).at(machine_step::store_id::objects, object_);
    return machine_step::write(body_, precondition::none()).at(machine_step::store_id::objects, object_);
}

BATON_DECL machine_step commit_put_machine::finish(error_code ec) {
    stage_ = stage::done;
    return machine_step::done(ec);
}

BATON_DECL machine_step commit_put_machine::on_put(error_code ec, put_result r) {
    if (stage_ == stage::write_object) {
        // Not committed, whatever happened: the object is unreferenced (garbage if it landed).
        if (ec) {
            source_gone_ = copy_of_ && ec == errc::not_found;
            result_ = std::move(r);
            return finish(ec);
        }
        stage_ = stage::commit;
        std::uint64_t const size = copy_of_ ? copy_of_->size : body_.size();
        return machine_step::write(encode_commit_pointer(commit_pointer{false, object_, size, sha256_, {}}), base_)
            .at(machine_step::store_id::records, key_);
    }
    // stage::commit
    if (!ec) {
        k_.remember(key_, r.version, object_);
        result_ = put_result{};
        result_.version = std::move(r.version);
        return finish({}).discarding(replaced_.value_or(std::string()));
    }
    if (ec == errc::precondition_failed) {
        // Refused: by another writer's state, or by our own commit that landed before (a
        // duplicate delivery answered)? The current pointer says; the lock store usually
        // returns it with the refusal, else read it.
        stage_ = stage::read_after_refusal;
        return commit_steps::read_current(*this, key_, std::move(r.current));
    }
    result_ = std::move(r);
    // Discard the object only when the commit surely never reached the store; any other error
    // may come after it was applied (a truncated answer, a cancellation after sending).
    if (commit_steps::sent_nothing(ec)) return finish(ec).discarding(std::exchange(object_, {}));
    return finish(ec);
}

BATON_DECL machine_step commit_put_machine::on_get(error_code ec, get_result r) {
    read_pointer seen;
    if (!ec) ec = decode_pointer(r, seen);
    if (ec) {
        result_ = put_result{};
        result_.diag = std::move(r.diag);
        if (stage_ == stage::read_after_refusal) { // refused, yet unsure whether by our own duplicate: keep the object
            result_.diag.message = "the commit was refused and the pointer could not be read back (" + ec.message() +
                                   "): " + result_.diag.message;
            ec = errc::unknown_outcome;
        }
        return finish(ec);
    }
    if (stage_ == stage::read_after_refusal) {
        if (seen.live() && seen.pointer->object == object_) {
            // Refused because our own commit had landed (a duplicate delivery answered): committed.
            k_.remember(key_, seen.version, object_);
            result_ = put_result{};
            result_.version = std::move(seen.version);
            return finish({}).discarding(replaced_.value_or(std::string()));
        }
        if (pc_.which() == precondition::kind::absent && seen.pointer && seen.pointer->erased && !recreate_) {
            // Absent all the same: over a tombstone, commit on the tombstone's version. The first
            // object is deleted once the second is committed or refused: an object store that
            // keeps folders (s3rver) removes an emptied one, racing a write into it.
            recreate_ = true;
            replaced_ = std::exchange(object_, {});
            base_ = precondition::matches(seen.version);
            return write_object();
        }
        // Refused for good: no commit can name this object.
        std::vector<std::string> garbage{std::exchange(object_, {})};
        if (recreate_ && replaced_) garbage.push_back(std::move(*std::exchange(replaced_, std::nullopt)));
        machine_step next;
        if (pc_.which() == precondition::kind::none) {
            if (++rounds_ >= k_.params().max_unconditional_rounds) {
                result_ = put_result{};
                result_.diag.message = "an unconditional put of " + key_ + " lost the race " + std::to_string(rounds_) + " times";
                next = finish(errc::conflict);
            } else {
                base_ = seen.pointer ? precondition::matches(seen.version) : precondition::absent();
                replaced_ = seen.live() ? std::optional<std::string>(seen.pointer->object) : std::nullopt;
                next = write_object();
            }
        } else {
            result_ = put_result{};
            next = finish(errc::precondition_failed);
        }
        for (auto& g : garbage)
            if (!g.empty()) next.discard.push_back(std::move(g));
        return next;
    }
    // stage::read_base (a `none` put): commit on exactly what is there now.
    base_ = seen.pointer ? precondition::matches(seen.version) : precondition::absent();
    replaced_ = seen.live() ? std::optional<std::string>(seen.pointer->object) : std::nullopt;
    return write_object();
}

BATON_DECL machine_step commit_put_machine::on_cancel() {
    // Stopped before a request: no commit of this call is in flight, so an object written for
    // the commit not sent can never be named; a recreate's first object (refused) likewise.
    bool const written = stage_ == stage::commit;
    result_ = put_result{};
    machine_step s = finish(boost::asio::error::operation_aborted);
    if (written) s.discard.push_back(std::exchange(object_, {}));
    if (recreate_ && replaced_) s.discard.push_back(std::move(*std::exchange(replaced_, std::nullopt)));
    return s;
}

// ---- erase -----------------------------------------------------------------------------------

BATON_DECL machine_step commit_erase_machine::start() {
    if (k_.needs_probe()) {
        stage_ = stage::probing;
        return machine_step::probe();
    }
    return begin();
}

BATON_DECL machine_step commit_erase_machine::on_probe(error_code ec, capabilities c) {
    if (auto bad = commit_steps::record_probe(k_, ec, c, result_.diag)) return machine_step::done(bad);
    return begin();
}

BATON_DECL machine_step commit_erase_machine::begin() {
    if (pc_.which() == precondition::kind::matches) {
        replaced_ = k_.object_at(key_, pc_.version());
        return commit_tombstone(pc_);
    }
    stage_ = stage::read_base;
    return commit_steps::read_at(machine_step::store_id::records, key_);
}

BATON_DECL machine_step commit_erase_machine::commit_tombstone(precondition on) {
    stage_ = stage::commit;
    tombstone_ = k_.nonce();
    return machine_step::write(encode_commit_pointer(commit_pointer{true, {}, 0, {}, tombstone_}), std::move(on))
        .at(machine_step::store_id::records, key_);
}

// The tombstone is committed; the erased object, when known, is deleted before completing.
BATON_DECL machine_step commit_erase_machine::erased() {
    k_.forget(key_);
    result_ = erase_result{};
    if (!replaced_) return machine_step::done();
    stage_ = stage::discarding;
    return machine_step::erase(precondition::none()).at(machine_step::store_id::objects, *replaced_);
}

BATON_DECL machine_step commit_erase_machine::on_erase(error_code, erase_result) {
    return machine_step::done(); // the tombstone is committed; the old object is garbage either way
}

BATON_DECL machine_step commit_erase_machine::on_get(error_code ec, get_result r) {
    read_pointer seen;
    if (!ec) ec = decode_pointer(r, seen);
    if (ec) {
        result_ = erase_result{};
        result_.diag = std::move(r.diag);
        if (stage_ == stage::read_after_refusal) ec = errc::unknown_outcome; // our own duplicate, or not?
        return machine_step::done(ec);
    }
    if (stage_ == stage::read_after_refusal) {
        // Refused because our own tombstone had landed (a duplicate delivery answered): erased.
        if (seen.pointer && seen.pointer->erased && seen.pointer->nonce == tombstone_) return erased();
        if (pc_.which() != precondition::kind::none) {
            // `matches` refused: not_found when there is nothing to erase.
            result_ = erase_result{};
            return machine_step::done(seen.live() ? errc::precondition_failed : errc::not_found);
        }
        if (++rounds_ >= k_.params().max_unconditional_rounds) {
            result_ = erase_result{};
            result_.diag.message = "an unconditional erase of " + key_ + " lost the race " + std::to_string(rounds_) + " times";
            return machine_step::done(errc::conflict);
        }
        stage_ = stage::read_base; // decide again on what is there now
    }
    // stage::read_base: `none` erases what is there; `absent` holds only when nothing is.
    result_ = erase_result{};
    if (!seen.live()) return machine_step::done();
    if (pc_.which() == precondition::kind::absent) return machine_step::done(errc::precondition_failed);
    replaced_ = seen.pointer->object;
    return commit_tombstone(precondition::matches(seen.version));
}

BATON_DECL machine_step commit_erase_machine::on_put(error_code ec, put_result r) {
    if (!ec) return erased();
    if (ec == errc::precondition_failed) {
        // Refused by another writer's state, or by our own tombstone landed before (a duplicate
        // delivery answered)? The current pointer says.
        stage_ = stage::read_after_refusal;
        return commit_steps::read_current(*this, key_, std::move(r.current));
    }
    result_ = erase_result{};
    result_.diag = std::move(r.diag);
    return machine_step::done(ec);
}

BATON_DECL machine_step commit_erase_machine::on_cancel() {
    // Stopped before deleting the erased object: the erase is done, and the object is deleted
    // without waiting. Stopped before anything else: nothing of this call is in flight.
    if (stage_ == stage::discarding) return machine_step::done().discarding(std::exchange(replaced_, std::nullopt).value_or(std::string()));
    result_ = erase_result{};
    return machine_step::done(boost::asio::error::operation_aborted);
}

// ---- list ------------------------------------------------------------------------------------

BATON_DECL machine_step commit_list_machine::start() { return machine_step::list(after_, limit_).at(machine_step::store_id::records, prefix_); }

BATON_DECL machine_step commit_list_machine::on_list(error_code ec, list_page p) {
    if (ec) {
        page_ = std::move(p);
        return machine_step::done(ec);
    }
    keys_ = std::move(p.entries);
    truncated_ = p.truncated;
    next_ = 0;
    return read_next();
}

BATON_DECL machine_step commit_list_machine::on_get(error_code ec, get_result r) {
    read_pointer seen;
    if (ec) {
        page_ = list_page{};
        page_.diag = std::move(r.diag);
        return machine_step::done(ec);
    }
    if (decode_pointer(r, seen) == errc::foreign_record) seen = read_pointer{}; // not ours: left out
    if (seen.live()) page_.entries.push_back(list_entry{keys_[next_].key, std::move(seen.version)});
    ++next_;
    return read_next();
}

BATON_DECL machine_step commit_list_machine::read_next() {
    if (next_ < keys_.size()) return commit_steps::read_at(machine_step::store_id::records, keys_[next_].key);
    if (page_.entries.empty() && truncated_ && !keys_.empty()) {
        // Only tombstones in this page: list on, so that a caller always makes progress.
        after_ = keys_.back().key;
        return start();
    }
    page_.truncated = truncated_;
    return machine_step::done();
}

BATON_DECL machine_step commit_list_machine::on_cancel() {
    page_ = list_page{};
    return machine_step::done(boost::asio::error::operation_aborted);
}

// ---- probe -----------------------------------------------------------------------------------

BATON_DECL machine_step commit_probe_machine::start() { return machine_step::probe(); }

BATON_DECL machine_step commit_probe_machine::on_probe(error_code ec, capabilities c) {
    for (auto& f : c.findings) f = "lock store: " + f;
    caps_ = std::move(c);
    if (ec) return machine_step::done(ec);
    // An erase is a conditional pointer write here.
    caps_.conditional_erase = caps_.conditional_replace;
    std::string const n = k_.nonce();
    scratch_ = k_.params().object_prefix + "baton-probe/" + n;
    bytes_ = "baton commit-protocol probe " + n;
    return machine_step::write(bytes_, precondition::none()).at(machine_step::store_id::objects, scratch_);
}

BATON_DECL machine_step commit_probe_machine::on_put(error_code ec, put_result r) {
    if (ec) return object_failed(ec, "write", std::move(r.diag));
    scratch_written_ = true;
    return commit_steps::read_at(machine_step::store_id::objects, scratch_);
}

BATON_DECL machine_step commit_probe_machine::on_get(error_code ec, get_result r) {
    if (ec) return object_failed(ec, "read", std::move(r.diag));
    if (!r.found || r.found->body != bytes_) {
        diagnostics d;
        d.message = "the object store did not return the bytes just written to " + scratch_;
        return object_failed(errc::invalid_response, "read", std::move(d));
    }
    return machine_step::erase(precondition::none()).at(machine_step::store_id::objects, scratch_);
}

BATON_DECL machine_step commit_probe_machine::on_erase(error_code ec, erase_result r) {
    if (ec) return object_failed(ec, "delete", std::move(r.diag));
    caps_.findings.push_back("object store: write, read and delete of a scratch object: ok");
    caps_.findings.push_back(std::string("composed store: conditional create, replace and erase ") +
                             (caps_.supports_leases() ? "enforced by the lock store" : "NOT enforced: the lock store ignores preconditions"));
    return machine_step::done();
}

BATON_DECL machine_step commit_probe_machine::object_failed(error_code ec, char const* what, diagnostics d) {
    caps_.findings.push_back(std::string("object store: ") + what + " of a scratch object: failed (" + d.to_string() + ")");
    caps_.diag = std::move(d);
    return machine_step::done(ec);
}

BATON_DECL machine_step commit_probe_machine::on_cancel() {
    // A scratch object written and not yet deleted is deleted without waiting (collection never
    // takes it: its name is not a commit object's).
    return machine_step::done(boost::asio::error::operation_aborted).discarding(scratch_written_ ? scratch_ : std::string());
}

// ---- copy ------------------------------------------------------------------------------------

BATON_DECL machine_step commit_copy_machine::start() { return read_source(); }

BATON_DECL machine_step commit_copy_machine::read_source() {
    put_.reset();
    if (in_store_) return commit_steps::read_at(machine_step::store_id::records, from_); // the source's pointer names an immutable object
    get_.emplace(k_, from_);
    return get_->start();
}

// The source read: its pointer (in the store) or its record; then the put of `to`.
BATON_DECL machine_step commit_copy_machine::source_read(error_code ec, get_result r) {
    result_ = put_result{};
    result_.diag = std::move(r.diag);
    if (ec) return machine_step::done(ec);
    if (in_store_) {
        read_pointer seen;
        if (auto dec = decode_pointer(r, seen)) {
            result_.diag = std::move(r.diag);
            return machine_step::done(dec);
        }
        if (!seen.live()) {
            result_.diag.message = "nothing to copy: " + from_ + " is absent";
            return machine_step::done(errc::not_found);
        }
        put_.emplace(k_, to_, std::string(), pc_, std::move(seen.pointer));
    } else {
        if (!r.found) {
            result_.diag.message = "nothing to copy: " + from_ + " is absent";
            return machine_step::done(errc::not_found);
        }
        if (r.found->body.size() > k_.params().max_body_bytes) {
            result_.diag.message = "body of " + std::to_string(r.found->body.size()) +
                                   " bytes exceeds the commit store's limit of " + std::to_string(k_.params().max_body_bytes);
            return machine_step::done(errc::invalid_argument);
        }
        put_.emplace(k_, to_, std::move(r.found->body), pc_);
    }
    return from_put(put_->start());
}

// A step of the put: its end is the copy's, unless the source's object went away under the copy
// (replaced and deleted), when the source's pointer is read again.
BATON_DECL machine_step commit_copy_machine::from_put(machine_step s) {
    if (s.what != machine_step::type::done) return s;
    if (s.ec && put_->source_gone() && ++rounds_ < k_.params().max_read_rounds) return read_source();
    result_ = std::move(put_->result());
    return s;
}

BATON_DECL machine_step commit_copy_machine::on_get(error_code ec, get_result r) {
    if (put_) return from_put(put_->on_get(ec, std::move(r)));
    if (get_) {
        auto s = get_->on_get(ec, std::move(r));
        if (s.what != machine_step::type::done) return s;
        return source_read(s.ec, std::move(get_->result()));
    }
    return source_read(ec, std::move(r));
}

BATON_DECL machine_step commit_copy_machine::on_probe(error_code ec, capabilities c) {
    return from_put(put_->on_probe(ec, std::move(c)));
}

BATON_DECL machine_step commit_copy_machine::on_put(error_code ec, put_result r) { return from_put(put_->on_put(ec, std::move(r))); }

BATON_DECL machine_step commit_copy_machine::on_cancel() {
    if (put_) return from_put(put_->on_cancel());
    result_ = put_result{};
    return machine_step::done(boost::asio::error::operation_aborted);
}

// ---- collect ---------------------------------------------------------------------------------

BATON_DECL machine_step commit_collect_machine::start() { return list(); }

BATON_DECL machine_step commit_collect_machine::list() {
    return machine_step::list(after_, 1000).at(machine_step::store_id::objects, k_.params().object_prefix + prefix_);
}

BATON_DECL machine_step commit_collect_machine::on_list(error_code ec, list_page p) {
    if (ec) {
        out_.diag = std::move(p.diag);
        return machine_step::done(ec);
    }
    names_ = std::move(p.entries);
    truncated_ = p.truncated && !names_.empty(); // an empty page cannot be continued
    next_ = 0;
    if (!names_.empty()) after_ = names_.back().key;
    return examine_next();
}

BATON_DECL machine_step commit_collect_machine::examine_next() {
    while (next_ < names_.size()) {
        parts_ = parse_commit_object_name(k_.params().object_prefix, names_[next_].key);
        if (parts_ && !parts_->key.empty()) break;
        ++next_; // not a commit object: none of its business
    }
    if (next_ >= names_.size()) return truncated_ ? list() : machine_step::done();
    ++out_.scanned;
    return commit_steps::read_at(machine_step::store_id::records, parts_->key);
}

BATON_DECL machine_step commit_collect_machine::on_get(error_code ec, get_result r) {
    read_pointer seen;
    if (!ec) ec = decode_pointer(r, seen);
    // Not our key after all (a foreign record, or a name the lock store cannot take): keep it.
    if (ec == errc::foreign_record || ec == errc::invalid_argument) {
        ++out_.kept;
        ++next_;
        return examine_next();
    }
    if (ec) {
        out_.diag = std::move(r.diag);
        return machine_step::done(ec);
    }
    if (!commit_object_unreachable(names_[next_].key, parts_->base_tag, seen.pointer, seen.version)) {
        ++out_.kept;
        ++next_;
        return examine_next();
    }
    return machine_step::erase(precondition::none()).at(machine_step::store_id::objects, names_[next_].key);
}

BATON_DECL machine_step commit_collect_machine::on_erase(error_code ec, erase_result r) {
    if (ec && ec != errc::not_found) {
        out_.diag = std::move(r.diag);
        return machine_step::done(ec);
    }
    ++out_.collected;
    ++next_;
    return examine_next();
}

BATON_DECL machine_step commit_collect_machine::on_cancel() { return machine_step::done(boost::asio::error::operation_aborted); }

} // namespace baton::detail

#endif
