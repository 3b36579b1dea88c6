// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_COMMIT_PROTOCOL_HPP
#define BATON_STORE_COMMIT_PROTOCOL_HPP

/** @file
    Layer: store. `basic_commit_protocol`: a record store with real conditional writes, made of
    an object store that has none (s3rver, older MinIO, Ceph before conditional PUT, appliances)
    and a lock store that has them (DynamoDB, the file or memory store).

    Every recipe (leases, election, fenced, kv) runs on it unchanged: it models `record_store`.

    @par How it works
    The lock store holds, per key, a small **pointer** record; the object store holds the bytes
    in **immutable objects** under fresh names. A pointer is JSON naming its object, with the
    object's size and SHA-256; an erased key has a tombstone pointer instead.
    - `put(key, body, pc)`:
      1. writes the bytes to a fresh object, `<object_prefix><key>.baton-<base>-<nonce>`,
         without a precondition (the name is new, so nothing else can be there);
      2. **commits**: one conditional write of the pointer in the lock store, conditional on
         exactly the state `pc` names. That write is the commit point: the version of the
         composed record is the pointer's version.
    - `get(key)` reads the pointer, then its object; checks the object's size and SHA-256.
    - `erase(key, pc)` commits a tombstone pointer. Pointers are never deleted.
    - A replaced or erased key's old object is deleted after the commit, when this handle
      knows its name. Any other leftover is found by `async_collect`.

    @par Safety, with no timing assumption
    No acknowledged conditional write is ever overwritten or lost because another writer's
    request was delayed and landed late:
    - A late object PUT can only write an object name that its own writer chose, fresh. The
      bytes are the same as those the writer sent first (retries resend them), and no pointer
      names that object unless that writer's own commit landed.
    - A late commit is a conditional write of the lock store, decided atomically when it lands.
      So conditional writes of the composed store are exactly as linearizable as the lock
      store's; the history of a key is the chain of pointer versions. (As for every record
      store, a verdict that writes nothing, such as an erase of an absent key or a refusal, is
      decided from a read, and is as fresh as the lock store's reads.)
    - A refusal is checked against the current pointer before anything is deleted: when it
      names this writer's own object (a duplicate delivery of a commit that had landed was
      answered), the put succeeded. Any error that may come after the commit was applied (a
      timeout, a cut answer, a cancellation) keeps the object.
    - A writer frozen at any step, or crashed at any step, leaves the key either committed or
      not, never half:
      - before its commit lands, nothing points to its object;
      - after, the object is complete, because it was written first.
      A late delete of an old object cannot hurt either: names are never reused, and an object
      is deleted only when no pointer can ever name it again (see below).
    - Reads verify size and SHA-256. An object changed or deleted behind baton's back is
      reported as `errc::invalid_response`, never returned.

    This is where arrow-rs's `DynamoCommit` goes wrong. There, the lock in DynamoDB guards a
    PUT to the real path under a timeout. A timeout does not stop a request already sent, so a
    delayed PUT lands after the lock was taken over and overwrites the next writer's commit. The
    simulation suite runs that design next to this one and shows the difference.

    @par Garbage, without TTL
    An object becomes garbage when it is replaced or erased, or when its writer crashed or lost
    the race before committing. The handle deletes the replaced objects it knows. `async_collect`
    deletes every other object that is provably unreachable:
    - the object's name records the state its commit was conditional on (absent, or the hash of
      one pointer version);
    - once the key's pointer exists and is at another version, that commit can never land,
      because pointers are never deleted and a lock store never repeats a version.
    No grace period is needed and no clock is read. Two conditions: the lock store's reads are
    linearizable (DynamoDB's consistent GetItem, the file and memory stores; a lagging replica
    could show a pointer from before the commit that names the object), and one object prefix
    in one bucket is used with one lock store only (another table's pointers say nothing about
    these objects). Lifecycle rules on the object store must not expire committed objects,
    because nothing can tell them from garbage by age.

    @par What a plain reader sees
    A program that reads the object store directly, bypassing baton, sees:
    - no object at `<key>` itself;
    - under `<object_prefix><key>.baton-...`, immutable objects: the committed one, plus garbage
      not collected yet.
    Only the pointer in the lock store says which object is committed.

    @par Costs
    - `put` with `absent` or `matches`: two requests, one object PUT and one commit, plus a
      delete of the replaced object after completion when it is known.
    - `put` or `erase` with `none`: a pointer read first, because every commit is made
      conditional so that garbage stays provable.
    - `get`: two reads.
    - `list`: one listing of the lock store, and a pointer read per listed key (tombstones are
      skipped).
    - Re-creating an erased key costs one more object PUT, because its first commit finds the
      tombstone.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/core/error.hpp>
#include <baton/store/detail/commit_pointer.hpp>
#include <baton/store/record_store.hpp>
#include <baton/store/settlement.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace baton {

/// Settings of a `basic_commit_protocol`.
struct commit_protocol_params {
    /// Where the immutable objects live in the object store, in front of the key. Keep it out of
    /// the prefixes that plain readers list; it may be empty.
    std::string object_prefix = "_baton/";
    /// Puts with larger bodies fail with `errc::invalid_argument`.
    std::size_t max_body_bytes = 64 * 1024 * 1024;
    /// How many times a `none` precondition is retried when another writer wins the race between
    /// the pointer read and the commit, before reporting `errc::conflict`.
    unsigned max_unconditional_rounds = 8;
    /// How many object reads `get` retries when the pointer moved on meanwhile.
    unsigned max_read_rounds = 8;
    /// Probe the lock store before the first write of this handle and refuse to write
    /// (`errc::capability_missing`, naming the failed checks) when it ignores preconditions.
    bool check_lock_store = true;

    /// @throws config_error naming the broken rule.
    void validate() const;
};

/// What `async_collect` did.
struct collect_result {
    /// Commit objects listed.
    std::uint64_t scanned = 0;
    /// Deleted: provably unreachable.
    std::uint64_t collected = 0;
    /// Kept: committed, or their commit may still land.
    std::uint64_t kept = 0;
    /// What the service said, on failure.
    diagnostics diag;
};

/** A record store made of an object store without preconditions and a lock store with them.
    See the file comment for the protocol and its safety argument.

    @tparam ObjectStore a `record_store`; only unconditional put, get, erase and list are used.
    @tparam LockStore a `record_store` that honours preconditions (its probe says so).

    @par Thread safety
    Like the stores: copies share state; operations may be called from any thread.
*/
template <record_store ObjectStore, record_store LockStore>
class basic_commit_protocol {
    // The operations, declared before the functions that name them in their return types: a
    // declared return type lets a concept check of this store (record_store) compile none of them.
    struct get_op;
    struct put_op;
    struct erase_op;
    struct list_op;
    struct probe_op;
    struct copy_op;
    struct collect_op;

    // Starts a composed operation for the handler that async_initiate hands over. async_compose
    // itself deduces its return type (Asio in C++20), which would compile the operation for the
    // return type alone; async_initiate declares it.
    template <class Sig>
    struct compose_initiation {
        template <class Handler, class Op, class Executor>
        void operator()(Handler&& h, Op&& op, Executor const& ex) const {
            boost::asio::async_compose<std::decay_t<Handler>, Sig>(std::forward<Op>(op), h, ex);
        }
    };

public:
    /// Completions run here unless the handler has an executor of its own (the lock store's).
    using executor_type = typename LockStore::executor_type;

    /** Composes `objects` and `locks`. `seed` makes the object names' nonces reproducible
        (simulations); 0 draws them from kernel randomness. Handles of one process given the
        same seed still draw different names, but two processes given one seed draw the same
        ones: never give a seed to handles of different processes that share stores.
        @throws config_error when `p` breaks a rule.
    */
    basic_commit_protocol(ObjectStore objects, LockStore locks, commit_protocol_params p = {}, std::uint64_t seed = 0)
        : st_(std::make_shared<state>(std::move(objects), std::move(locks), std::move(p), seed)) {
        st_->params.validate();
    }

    /// The default completion executor: the lock store's.
    executor_type get_executor() const noexcept { return st_->locks.get_executor(); }
    /// The object store.
    ObjectStore& object_store() noexcept { return st_->objects; }
    /// The lock store.
    LockStore& lock_store() noexcept { return st_->locks; }
    /// The settings.
    commit_protocol_params const& params() const noexcept { return st_->params; }

    /// True when the object store copies objects itself (`async_copy_object`, S3 CopyObject):
    /// `async_copy` then moves no bytes through this process.
    static constexpr bool copies_in_store = requires(ObjectStore& o, std::string s,
                                                     detail::archetype_handler<void(error_code, put_result)> h) {
        o.async_copy_object(s, s, std::move(h));
    };

    /// The longest key this store takes: the object store's limit less the prefix and the object suffix.
    std::size_t max_key_bytes() const noexcept {
        return store_limits::max_key_bytes - st_->params.object_prefix.size() - detail::commit_object_suffix_bytes;
    }

    /// Reads the committed record of `key`. Completion: `void(error_code, get_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, get_result)>(compose_initiation<void(error_code, get_result)>{}, token, std::declval<get_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(compose_initiation<void(error_code, get_result)>{}, token, get_op{st_, std::move(key)}, get_executor());
    }

    /// Writes `key` if `pc` holds; the version is the pointer's. Completion: `void(error_code, put_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, std::declval<put_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, put_op{st_, std::move(key), std::move(body), std::move(pc)}, get_executor());
    }

    /// Erases `key` if `pc` holds (a tombstone pointer). Completion: `void(error_code, erase_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, erase_result)>(compose_initiation<void(error_code, erase_result)>{}, token, std::declval<erase_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(compose_initiation<void(error_code, erase_result)>{}, token, erase_op{st_, std::move(key), std::move(pc)}, get_executor());
    }

    /// Lists the live keys with `prefix` strictly after `after`. Completion: `void(error_code, list_page)`.
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, list_page)>(compose_initiation<void(error_code, list_page)>{}, token, std::declval<list_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(compose_initiation<void(error_code, list_page)>{}, token, list_op{st_, std::move(prefix), std::move(after), limit}, get_executor());
    }

    /** What the composition honours: the lock store's conditional writes (an erase is a
        conditional pointer write here), and an object round trip. Completion: `void(error_code, capabilities)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, capabilities)>(compose_initiation<void(error_code, capabilities)>{}, token, std::declval<probe_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(compose_initiation<void(error_code, capabilities)>{}, token, probe_op{st_}, get_executor());
    }

    /** Copies the committed record of `from` to `to` if `pc` holds for `to` (copy-if-absent with
        `precondition::absent()`). `to` gets an object of its own: copied by the object store when it
        can (`async_copy_object`, S3 CopyObject: the bytes do not pass through this process), else
        read and written again. `errc::not_found` when `from` is absent. Completion: `void(error_code, put_result)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_copy(std::string from, std::string to, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, std::declval<copy_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, copy_op{st_, std::move(from), std::move(to), std::move(pc)}, get_executor());
    }

    /** Deletes the commit objects under `prefix` (a key prefix) that no pointer can ever name
        again (see the file comment); keeps the rest. Safe to run at any time, from any process,
        next to any writer, given the two conditions of the file comment (linearizable reads of
        the lock store; one lock store per object prefix). Completion: `void(error_code, collect_result)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_collect(std::string prefix, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, collect_result)>(compose_initiation<void(error_code, collect_result)>{}, token, std::declval<collect_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, collect_result)>(compose_initiation<void(error_code, collect_result)>{}, token, collect_op{st_, std::move(prefix)}, get_executor());
    }

private:
    struct known_object {
        std::string version;
        std::string object;
    };

    struct state {
        state(ObjectStore o, LockStore l, commit_protocol_params p, std::uint64_t seed)
            : objects(std::move(o)), locks(std::move(l)), params(std::move(p)),
              rng(detail::seeded_generator(seed ? std::optional(seed) : std::nullopt)) {}

        ObjectStore objects;
        LockStore locks;
        commit_protocol_params params;
        std::mutex mutex;
        std::mt19937_64 rng;
        // The object each key's pointer named at the version this handle last saw, so that the
        // object a commit replaces can be deleted at once. Bounded: forgetting only leaves garbage.
        std::map<std::string, known_object, std::less<>> known;
        // The lock store's capabilities, once probed (`check_lock_store`).
        std::optional<capabilities> lock_caps;

        bool needs_probe() {
            std::lock_guard lock(mutex);
            return params.check_lock_store && !(lock_caps && lock_caps->supports_leases());
        }
        // Records the probe; the error that refuses writes when the lock store cannot coordinate.
        error_code probed(capabilities c, diagnostics& d) {
            std::lock_guard lock(mutex);
            bool const ok = c.supports_leases();
            if (!ok) {
                d.message = "the lock store ignores preconditions, so it cannot coordinate writes:";
                for (auto const& f : c.findings) d.message += " " + f + ";";
            }
            lock_caps = std::move(c);
            return ok ? error_code{} : error_code(errc::capability_missing);
        }

        std::string nonce() {
            std::lock_guard lock(mutex);
            return make_nonce(rng);
        }
        void remember(std::string const& key, std::string version, std::string object) {
            std::lock_guard lock(mutex);
            if (known.size() >= 4096 && !known.count(key)) known.erase(known.begin());
            known[key] = known_object{std::move(version), std::move(object)};
        }
        void forget(std::string const& key) {
            std::lock_guard lock(mutex);
            known.erase(key);
        }
        std::optional<std::string> object_at(std::string const& key, std::string const& version) {
            std::lock_guard lock(mutex);
            auto it = known.find(key);
            if (it == known.end() || it->second.version != version) return std::nullopt;
            return it->second.object;
        }
        // Deletes an object nobody can reach, without waiting for the answer (it is garbage either way).
        void discard(std::string object) {
            objects.async_erase(std::move(object), precondition::none(), [](error_code, erase_result) {});
        }
        error_code check_key(std::string const& key, diagnostics& d) const {
            std::size_t const limit =
                store_limits::max_key_bytes - params.object_prefix.size() - detail::commit_object_suffix_bytes;
            if (key.empty() || key.size() > limit) {
                d.message = "key must be 1 to " + std::to_string(limit) + " bytes in a commit-protocol store (it is " +
                            std::to_string(key.size()) + ")";
                return errc::invalid_argument;
            }
            // Refused before anything is written: a pointer naming a key that is not UTF-8 could
            // never be read back as JSON.
            return store_limits::check_key(key, d);
        }
    };

    // A pointer read: absent, or decoded with its version.
    struct read_pointer {
        std::optional<detail::commit_pointer> pointer;
        std::string version;
        bool live() const { return pointer && !pointer->erased; }
    };
    static error_code decode(get_result& r, read_pointer& out) {
        out = read_pointer{};
        if (!r.found) return {};
        detail::commit_pointer p;
        if (auto ec = detail::decode_commit_pointer(r.found->body, p, r.diag)) {
            r.diag.message += " (key " + r.found->key + " in the lock store)";
            return ec;
        }
        out.pointer = std::move(p);
        out.version = std::move(r.found->version);
        return {};
    }

    // The first write of a handle probes the lock store (`check_lock_store`), then begins.
    template <class Op, class Self>
    static void probe_then_begin(Op& op, Self& self) {
        if (!op.st->needs_probe()) return op.begin(self);
        auto& locks = op.st->locks;
        locks.async_probe(std::move(self));
    }
    template <class Result, class Op, class Self>
    static void probed_then_begin(Op& op, Self& self, error_code ec, capabilities c) {
        Result r;
        if (!ec) ec = op.st->probed(std::move(c), r.diag);
        else r.diag = std::move(c.diag);
        if (ec) return self.complete(ec, std::move(r));
        op.begin(self);
    }
    // After a refused commit: the current pointer, from the refusal when the lock store sent it, else read.
    template <class Op, class Self>
    static void read_current(Op& op, Self& self, std::optional<record> current) {
        if (current) {
            get_result g;
            g.found = std::move(current);
            g.found->key = op.key;
            return op(self, error_code{}, std::move(g));
        }
        std::string k = op.key;
        auto& locks = op.st->locks;
        locks.async_get(std::move(k), std::move(self));
    }

    // Errors that mean the request was refused before anything was applied.
    static bool sent_nothing(error_code const& ec) {
        return ec == errc::invalid_argument || ec == errc::auth_failed || ec == errc::no_credentials ||
               ec == errc::capability_missing || ec == errc::not_found;
    }

    // Completes `self` later (never inline) with `ec` and `r`, through the operation's own handler.
    template <class Self, class Result>
    static void fail_later(state& st, Self& self, error_code ec, Result r) {
        detail::post_completion(st.locks.get_executor(), std::move(self), ec, std::move(r));
    }

    struct get_op {
        std::shared_ptr<state> st;
        std::string key{};
        enum { start, pointer, object, failed } step = start;
        read_pointer seen{};
        unsigned rounds = 0;    // objects found missing
        unsigned unchanged = 0; // ... under a pointer that had not moved

        template <class Self>
        void operator()(Self& self) {
            get_result r;
            if (auto ec = st->check_key(key, r.diag)) {
                step = failed;
                return fail_later(*st, self, ec, std::move(r));
            }
            read(self);
        }
        template <class Self>
        void read(Self& self) {
            step = pointer;
            std::string k = key;
            auto& locks = st->locks;
            locks.async_get(std::move(k), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            if (step == failed || ec) return self.complete(ec, std::move(r));
            if (step == pointer) {
                std::string const previous = seen.live() ? seen.version : std::string();
                if (auto dec = decode(r, seen)) return self.complete(dec, std::move(r));
                if (!seen.live()) {
                    st->forget(key);
                    return self.complete(error_code{}, get_result{});
                }
                if (rounds > 0 && seen.version == previous && ++unchanged >= st->params.max_read_rounds) {
                    // The pointer stayed, its object is gone: lost outside baton (asked again a few
                    // times first, as a lagging replica may repeat an old pointer).
                    get_result bad;
                    bad.diag.message = "the committed object " + seen.pointer->object + " of key " + key +
                                       " is missing from the object store (deleted outside baton?)";
                    return self.complete(errc::invalid_response, std::move(bad));
                }
                st->remember(key, seen.version, seen.pointer->object);
                step = object;
                std::string o = seen.pointer->object;
                auto& objects = st->objects;
                return objects.async_get(std::move(o), std::move(self));
            }
            // step == object
            if (!r.found) {
                // Replaced and deleted since the pointer was read, or lost: the pointer tells which.
                if (++rounds >= 4 * st->params.max_read_rounds) {
                    get_result bad;
                    bad.diag.message = "key " + key + " kept moving while it was read (" + std::to_string(rounds) + " rounds)";
                    return self.complete(errc::conflict, std::move(bad));
                }
                return read(self);
            }
            auto const& p = *seen.pointer;
            if (r.found->body.size() != p.size || detail::commit_sha256(r.found->body) != p.sha256) {
                get_result bad;
                bad.diag.message = "the committed object " + p.object + " of key " + key +
                                   " does not hold the bytes that were committed (size " + std::to_string(r.found->body.size()) +
                                   ", committed " + std::to_string(p.size) + "): changed outside baton";
                return self.complete(errc::invalid_response, std::move(bad));
            }
            get_result out;
            out.found = record{key, std::move(r.found->body), seen.version};
            self.complete(error_code{}, std::move(out));
        }
    };

    struct put_op {
        std::shared_ptr<state> st;
        std::string key{};
        std::string body{};
        precondition pc;
        enum { start, read_base, write_object, commit, read_after_refusal, failed } step = start;
        precondition base = precondition::none(); // the state the commit is conditional on
        std::string object{};
        std::string sha256{};
        std::optional<std::string> replaced{};     // the object the commit replaces, when known
        unsigned rounds = 0;
        bool recreate = false; // a second try of `absent` over a tombstone
        // A server-side copy: the bytes of this committed object (size and SHA-256 from its pointer).
        std::optional<detail::commit_pointer> copy_of{};

        template <class Self>
        void operator()(Self& self) {
            put_result r;
            error_code ec = st->check_key(key, r.diag);
            if (copy_of) {
                if (ec) {
                    step = failed;
                    return fail_later(*st, self, ec, std::move(r));
                }
                sha256 = copy_of->sha256;
                return probe_then_begin(*this, self);
            }
            if (!ec && body.size() > st->params.max_body_bytes) {
                r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds the commit store's limit of " +
                                 std::to_string(st->params.max_body_bytes);
                ec = errc::invalid_argument;
            }
            if (ec) {
                step = failed;
                return fail_later(*st, self, ec, std::move(r));
            }
            sha256 = detail::commit_sha256(body);
            probe_then_begin(*this, self);
        }
        template <class Self>
        void operator()(Self& self, error_code ec, capabilities c) {
            probed_then_begin<put_result>(*this, self, ec, std::move(c));
        }
        template <class Self>
        void begin(Self& self) {
            if (pc.which() == precondition::kind::none) return read(self);
            base = pc;
            if (pc.which() == precondition::kind::matches) replaced = st->object_at(key, pc.version());
            write(self);
        }
        template <class Self>
        void read(Self& self) {
            step = read_base;
            std::string k = key;
            auto& locks = st->locks;
            locks.async_get(std::move(k), std::move(self));
        }
        template <class Self>
        void write(Self& self) {
            step = write_object;
            std::optional<std::string_view> v;
            if (base.which() == precondition::kind::matches) v = base.version();
            object = detail::commit_object_name(st->params.object_prefix, key, detail::commit_base_tag(v), st->nonce());
            std::string o = object;
            auto& objects = st->objects;
            if constexpr (copies_in_store) {
                if (copy_of) return objects.async_copy_object(std::string(copy_of->object), std::move(o), std::move(self));
            }
            std::string b = body;
            objects.async_put(std::move(o), std::move(b), precondition::none(), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            read_pointer seen;
            if (!ec) ec = decode(r, seen);
            if (ec) {
                put_result out;
                out.diag = std::move(r.diag);
                if (step == read_after_refusal) { // refused, yet unsure whether by our own duplicate: keep the object
                    out.diag.message = "the commit was refused and the pointer could not be read back (" + ec.message() +
                                       "): " + out.diag.message;
                    ec = errc::unknown_outcome;
                }
                return self.complete(ec, std::move(out));
            }
            if (step == read_after_refusal) {
                if (seen.live() && seen.pointer->object == object) {
                    // Refused because our own commit had landed (a duplicate delivery answered): committed.
                    st->remember(key, seen.version, object);
                    if (replaced) st->discard(std::move(*replaced));
                    put_result out;
                    out.version = std::move(seen.version);
                    return self.complete(error_code{}, std::move(out));
                }
                if (pc.which() == precondition::kind::absent && seen.pointer && seen.pointer->erased && !recreate) {
                    // Absent all the same: over a tombstone, commit on the tombstone's version. The
                    // first object is deleted once the second is written: an object store that keeps
                    // folders (s3rver) removes an emptied one, racing a write into it.
                    recreate = true;
                    replaced = std::exchange(object, {});
                    base = precondition::matches(seen.version);
                    return write(self);
                }
                st->discard(std::exchange(object, {})); // refused for good: no commit can name it
                if (recreate && replaced) st->discard(std::move(*replaced));
                if (pc.which() == precondition::kind::none) {
                    if (++rounds >= st->params.max_unconditional_rounds) {
                        put_result out;
                        out.diag.message = "an unconditional put of " + key + " lost the race " + std::to_string(rounds) + " times";
                        return self.complete(errc::conflict, std::move(out));
                    }
                    base = seen.pointer ? precondition::matches(seen.version) : precondition::absent();
                    replaced = seen.live() ? std::optional<std::string>(seen.pointer->object) : std::nullopt;
                    return write(self);
                }
                return self.complete(errc::precondition_failed, put_result{});
            }
            // step == read_base (a `none` put): commit on exactly what is there now.
            if (!seen.pointer) base = precondition::absent();
            else base = precondition::matches(seen.version);
            replaced = seen.live() ? std::optional<std::string>(seen.pointer->object) : std::nullopt;
            write(self);
        }
        template <class Self>
        void operator()(Self& self, error_code ec, put_result r) {
            if (step == failed) return self.complete(ec, std::move(r));
            if (step == write_object) {
                // Not committed, whatever happened: the object is unreferenced (garbage if it landed).
                if (ec) return self.complete(ec, std::move(r));
                step = commit;
                std::string k = key;
                std::uint64_t const size = copy_of ? copy_of->size : body.size();
                std::string p = detail::encode_commit_pointer(detail::commit_pointer{false, object, size, sha256, {}});
                auto& locks = st->locks;
                return locks.async_put(std::move(k), std::move(p), base, std::move(self));
            }
            // step == commit
            if (!ec) {
                st->remember(key, r.version, object);
                if (replaced) st->discard(std::move(*replaced));
                put_result out;
                out.version = std::move(r.version);
                return self.complete(error_code{}, std::move(out));
            }
            if (ec == errc::precondition_failed) {
                // Refused: by another writer's state, or by our own commit that landed before (a
                // duplicate delivery answered)? The current pointer says; the lock store usually
                // returns it with the refusal, else read it.
                step = read_after_refusal;
                return read_current(*this, self, std::move(r.current));
            }
            // Discard the object only when the commit surely never reached the store; any other
            // error may come after it was applied (a truncated answer, a cancellation after sending).
            if (sent_nothing(ec)) st->discard(std::exchange(object, {}));
            self.complete(ec, std::move(r));
        }
    };

    struct erase_op {
        std::shared_ptr<state> st;
        std::string key{};
        precondition pc;
        enum { start, read_base, commit, read_after_refusal, discarding, failed } step = start;
        std::optional<std::string> replaced{};
        std::string tombstone{}; // the nonce of the tombstone in flight
        unsigned rounds = 0;

        template <class Self>
        void operator()(Self& self) {
            erase_result r;
            if (auto ec = st->check_key(key, r.diag)) {
                step = failed;
                return fail_later(*st, self, ec, std::move(r));
            }
            probe_then_begin(*this, self);
        }
        template <class Self>
        void operator()(Self& self, error_code ec, capabilities c) {
            probed_then_begin<erase_result>(*this, self, ec, std::move(c));
        }
        template <class Self>
        void begin(Self& self) {
            if (pc.which() == precondition::kind::matches) {
                replaced = st->object_at(key, pc.version());
                return commit_tombstone(self, pc);
            }
            read(self);
        }
        template <class Self>
        void read(Self& self) {
            step = read_base;
            std::string k = key;
            auto& locks = st->locks;
            locks.async_get(std::move(k), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, erase_result r) {
            if (step == discarding) return self.complete(error_code{}, erase_result{}); // garbage either way
            self.complete(ec, std::move(r)); // step == failed
        }
        // The tombstone is committed. The erased object is deleted before completing: the key's
        // folder may empty, and an object store that keeps folders (s3rver) must not see the
        // caller's next write into it race that removal.
        template <class Self>
        void erased(Self& self) {
            st->forget(key);
            if (!replaced) return self.complete(error_code{}, erase_result{});
            step = discarding;
            std::string o = std::move(*replaced);
            auto& objects = st->objects;
            objects.async_erase(std::move(o), precondition::none(), std::move(self));
        }
        template <class Self>
        void commit_tombstone(Self& self, precondition on) {
            step = commit;
            std::string k = key;
            tombstone = st->nonce();
            std::string p = detail::encode_commit_pointer(detail::commit_pointer{true, {}, 0, {}, tombstone});
            auto& locks = st->locks;
            locks.async_put(std::move(k), std::move(p), std::move(on), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            read_pointer seen;
            if (!ec) ec = decode(r, seen);
            if (ec) {
                erase_result out;
                out.diag = std::move(r.diag);
                if (step == read_after_refusal) ec = errc::unknown_outcome; // our own duplicate, or not?
                return self.complete(ec, std::move(out));
            }
            if (step == read_after_refusal) {
                if (seen.pointer && seen.pointer->erased && seen.pointer->nonce == tombstone) {
                    // Refused because our own tombstone had landed (a duplicate delivery answered): erased.
                    return erased(self);
                }
                if (pc.which() == precondition::kind::none) {
                    if (++rounds >= st->params.max_unconditional_rounds) {
                        erase_result out;
                        out.diag.message = "an unconditional erase of " + key + " lost the race " + std::to_string(rounds) + " times";
                        return self.complete(errc::conflict, std::move(out));
                    }
                    step = read_base; // decide again on what is there now
                } else {
                    // `matches` refused: not_found when there is nothing to erase
                    return self.complete(seen.live() ? errc::precondition_failed : errc::not_found, erase_result{});
                }
            }
            // step == read_base: `none` erases what is there; `absent` holds only when nothing is.
            if (!seen.live()) return self.complete(error_code{}, erase_result{});
            if (pc.which() == precondition::kind::absent) return self.complete(errc::precondition_failed, erase_result{});
            replaced = seen.pointer->object;
            commit_tombstone(self, precondition::matches(seen.version));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, put_result r) {
            erase_result out;
            out.diag = std::move(r.diag);
            if (step == failed) return self.complete(ec, std::move(out));
            if (!ec) return erased(self);
            if (ec == errc::precondition_failed) {
                // Refused by another writer's state, or by our own tombstone landed before (a
                // duplicate delivery answered)? The current pointer says.
                step = read_after_refusal;
                return read_current(*this, self, std::move(r.current));
            }
            self.complete(ec, std::move(out));
        }
    };

    struct list_op {
        std::shared_ptr<state> st;
        std::string prefix{};
        std::string after{};
        std::size_t limit;
        std::vector<list_entry> keys{};
        bool truncated = false;
        std::size_t next = 0;
        list_page page{};

        template <class Self>
        void operator()(Self& self) {
            std::string p = prefix, a = after;
            auto& locks = st->locks;
            locks.async_list(std::move(p), std::move(a), limit, std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, list_page r) {
            if (ec) return self.complete(ec, std::move(r));
            keys = std::move(r.entries);
            truncated = r.truncated;
            next = 0;
            read_next(self);
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            read_pointer seen;
            if (!ec && decode(r, seen) == errc::foreign_record) seen = read_pointer{}; // not ours: left out
            if (ec) {
                list_page bad;
                bad.diag = std::move(r.diag);
                return self.complete(ec, std::move(bad));
            }
            if (seen.live()) page.entries.push_back(list_entry{keys[next].key, std::move(seen.version)});
            ++next;
            read_next(self);
        }
        template <class Self>
        void read_next(Self& self) {
            if (next < keys.size()) {
                std::string k = keys[next].key;
                auto& locks = st->locks;
                return locks.async_get(std::move(k), std::move(self));
            }
            if (page.entries.empty() && truncated && !keys.empty()) {
                // Only tombstones in this page: list on, so that a caller always makes progress.
                std::string p = prefix, a = keys.back().key;
                after = a;
                auto& locks = st->locks;
                return locks.async_list(std::move(p), std::move(a), limit, std::move(self));
            }
            page.truncated = truncated;
            self.complete(error_code{}, std::move(page));
        }
    };

    struct probe_op {
        std::shared_ptr<state> st;
        enum { start, locks_probed, object_written, object_read, object_erased } step = start;
        capabilities caps{};
        std::string scratch{};
        std::string bytes{};

        template <class Self>
        void operator()(Self& self) {
            auto& locks = st->locks;
            step = locks_probed;
            locks.async_probe(std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, capabilities c) {
            for (auto& f : c.findings) f = "lock store: " + f;
            caps = std::move(c);
            if (ec) return self.complete(ec, std::move(caps));
            // An erase is a conditional pointer write here.
            caps.conditional_erase = caps.conditional_replace;
            std::string const n = st->nonce();
            scratch = st->params.object_prefix + "baton-probe/" + n;
            bytes = "baton commit-protocol probe " + n;
            step = object_written;
            std::string s = scratch, b = bytes;
            auto& objects = st->objects;
            objects.async_put(std::move(s), std::move(b), precondition::none(), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, put_result r) {
            if (ec) return object_failed(self, ec, "write", std::move(r.diag));
            step = object_read;
            std::string s = scratch;
            auto& objects = st->objects;
            objects.async_get(std::move(s), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            if (ec) return object_failed(self, ec, "read", std::move(r.diag));
            if (!r.found || r.found->body != bytes) {
                diagnostics d;
                d.message = "the object store did not return the bytes just written to " + scratch;
                return object_failed(self, errc::invalid_response, "read", std::move(d));
            }
            step = object_erased;
            std::string s = scratch;
            auto& objects = st->objects;
            objects.async_erase(std::move(s), precondition::none(), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, erase_result r) {
            if (ec) return object_failed(self, ec, "delete", std::move(r.diag));
            caps.findings.push_back("object store: write, read and delete of a scratch object: ok");
            caps.findings.push_back(std::string("composed store: conditional create, replace and erase ") +
                                    (caps.supports_leases() ? "enforced by the lock store" : "NOT enforced: the lock store ignores preconditions"));
            self.complete(error_code{}, std::move(caps));
        }
        template <class Self>
        void object_failed(Self& self, error_code ec, char const* what, diagnostics d) {
            caps.findings.push_back(std::string("object store: ") + what + " of a scratch object: failed (" + d.to_string() + ")");
            caps.diag = std::move(d);
            self.complete(ec, std::move(caps));
        }
    };

    struct copy_op {
        std::shared_ptr<state> st;
        std::string from{};
        std::string to{};
        precondition pc;
        unsigned rounds = 0;

        template <class Self>
        void operator()(Self& self) {
            if constexpr (copies_in_store) {
                // The source's pointer names an immutable object: the store copies it.
                std::string f = from;
                auto& locks = st->locks;
                locks.async_get(std::move(f), std::move(self));
            } else {
                basic_commit_protocol store(st);
                std::string f = from;
                store.async_get(std::move(f), std::move(self));
            }
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            put_result out;
            out.diag = std::move(r.diag);
            if (ec) return self.complete(ec, std::move(out));
            if constexpr (copies_in_store) {
                read_pointer seen;
                if (auto dec = decode(r, seen)) {
                    out.diag = std::move(r.diag);
                    return self.complete(dec, std::move(out));
                }
                if (!seen.live()) {
                    out.diag.message = "nothing to copy: " + from + " is absent";
                    return self.complete(errc::not_found, std::move(out));
                }
                put_op op{st, to, {}, pc};
                op.copy_of = std::move(seen.pointer);
                return boost::asio::async_compose<Self, void(error_code, put_result)>(std::move(op), self,
                                                                                      st->locks.get_executor());
            } else {
                if (!r.found) {
                    out.diag.message = "nothing to copy: " + from + " is absent";
                    return self.complete(errc::not_found, std::move(out));
                }
                basic_commit_protocol store(st);
                store.async_put(std::move(to), std::move(r.found->body), std::move(pc), std::move(self));
            }
        }
        template <class Self>
        void operator()(Self& self, error_code ec, put_result r) {
            // The source's object went away under the copy (replaced and deleted): read its pointer again.
            if constexpr (copies_in_store) {
                if (ec == errc::not_found && ++rounds < st->params.max_read_rounds) {
                    std::string f = from;
                    auto& locks = st->locks;
                    return locks.async_get(std::move(f), std::move(self));
                }
            }
            self.complete(ec, std::move(r));
        }
    };

    struct collect_op {
        std::shared_ptr<state> st;
        std::string prefix{};
        enum { listing, pointer, erasing } step = listing;
        std::string after{};
        bool truncated = false;
        std::vector<list_entry> names{};
        std::size_t next = 0;
        std::optional<detail::commit_object_parts> parts{};
        collect_result out{};

        template <class Self>
        void operator()(Self& self) {
            list(self);
        }
        template <class Self>
        void list(Self& self) {
            step = listing;
            std::string p = st->params.object_prefix + prefix, a = after;
            auto& objects = st->objects;
            objects.async_list(std::move(p), std::move(a), 1000, std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, list_page r) {
            if (ec) {
                out.diag = std::move(r.diag);
                return self.complete(ec, std::move(out));
            }
            names = std::move(r.entries);
            truncated = r.truncated && !names.empty(); // an empty page cannot be continued
            next = 0;
            if (!names.empty()) after = names.back().key;
            examine_next(self);
        }
        template <class Self>
        void examine_next(Self& self) {
            while (next < names.size()) {
                parts = detail::parse_commit_object_name(st->params.object_prefix, names[next].key);
                if (parts && !parts->key.empty()) break;
                ++next; // not a commit object: none of its business
            }
            if (next >= names.size()) {
                if (truncated) return list(self);
                return self.complete(error_code{}, std::move(out));
            }
            ++out.scanned;
            step = pointer;
            std::string k = parts->key;
            auto& locks = st->locks;
            locks.async_get(std::move(k), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, get_result r) {
            read_pointer seen;
            if (!ec) ec = decode(r, seen);
            // Not our key after all (a foreign record, or a name the lock store cannot take): keep it.
            if (ec == errc::foreign_record || ec == errc::invalid_argument) {
                ++out.kept;
                ++next;
                return examine_next(self);
            }
            if (ec) {
                out.diag = std::move(r.diag);
                return self.complete(ec, std::move(out));
            }
            if (!detail::commit_object_unreachable(names[next].key, parts->base_tag, seen.pointer, seen.version)) {
                ++out.kept;
                ++next;
                return examine_next(self);
            }
            step = erasing;
            std::string n = names[next].key;
            auto& objects = st->objects;
            objects.async_erase(std::move(n), precondition::none(), std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, erase_result r) {
            if (ec && ec != errc::not_found) {
                out.diag = std::move(r.diag);
                return self.complete(ec, std::move(out));
            }
            ++out.collected;
            ++next;
            examine_next(self);
        }
    };

    explicit basic_commit_protocol(std::shared_ptr<state> st) : st_(std::move(st)) {}

    std::shared_ptr<state> st_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/commit_protocol.ipp>
#endif

#endif
