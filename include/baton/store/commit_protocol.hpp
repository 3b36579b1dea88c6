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

#include <baton/core/error.hpp>
#include <baton/store/commit_protocol_params.hpp>
#include <baton/store/detail/commit_machines.hpp>
#include <baton/store/detail/machine_op.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace baton {

/** A record store made of an object store without preconditions and a lock store with them.
    See the file comment for the protocol and its safety argument.

    @tparam ObjectStore a `record_store`; only unconditional put, get, erase and list are used.
    @tparam LockStore a `record_store` that honours preconditions (its probe says so).

    @par Thread safety
    Like the stores: copies share state; operations may be called from any thread.

    @par Per-Operation Cancellation
    Terminal, for every operation: the request in flight is cancelled as the stores cancel it,
    and the operation stops before its next request with `operation_aborted`. A put or erase
    stopped before its commit was sent committed nothing (its object is deleted); an erase whose
    tombstone landed completes as done; a commit whose answer the cancellation cut off is
    reported as the lock store reports it, and its object is kept.
*/
template <record_store ObjectStore, record_store LockStore>
class basic_commit_protocol {
    struct state;
    struct get_spec;
    struct put_spec;
    struct erase_spec;
    struct list_spec;
    struct probe_spec;
    struct copy_spec;
    struct collect_spec;
    // The operations: each a machine (store/detail/commit_machines.hpp) on the one driver, named
    // before the functions that name them in their return types, so that a concept check of
    // this store (record_store) compiles none of them.
    using get_op = detail::machine_op<state, get_spec>;
    using put_op = detail::machine_op<state, put_spec>;
    using erase_op = detail::machine_op<state, erase_spec>;
    using list_op = detail::machine_op<state, list_spec>;
    using probe_op = detail::machine_op<state, probe_spec>;
    using copy_op = detail::machine_op<state, copy_spec>;
    using collect_op = detail::machine_op<state, collect_spec>;

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
        st_->knowledge.params().validate();
    }

    /// The default completion executor: the lock store's.
    executor_type get_executor() const noexcept { return st_->backend.get_executor(); }
    /// The object store.
    ObjectStore& object_store() noexcept { return st_->objects; }
    /// The lock store.
    LockStore& lock_store() noexcept { return st_->backend; }
    /// The settings.
    commit_protocol_params const& params() const noexcept { return st_->knowledge.params(); }

    /// True when the object store copies objects itself (`async_copy_object`, S3 CopyObject):
    /// `async_copy` then moves no bytes through this process.
    static constexpr bool copies_in_store = requires(ObjectStore& o, std::string s,
                                                     detail::archetype_handler<void(error_code, put_result)> h) {
        o.async_copy_object(s, s, std::move(h));
    };

    /// The longest key this store takes: the object store's limit less the prefix and the object suffix.
    std::size_t max_key_bytes() const noexcept {
        return st_->knowledge.max_key_bytes();
    }

    /// Reads the committed record of `key`. Completion: `void(error_code, get_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, get_result)>(compose_initiation<void(error_code, get_result)>{}, token, std::declval<get_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, get_result)>(compose_initiation<void(error_code, get_result)>{}, token, get_op(st_, std::move(key), get_spec{}), get_executor());
    }

    /// Writes `key` if `pc` holds; the version is the pointer's. Completion: `void(error_code, put_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, std::declval<put_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, put_op(st_, std::move(key), put_spec{{}, std::move(body), std::move(pc)}), get_executor());
    }

    /// Erases `key` if `pc` holds (a tombstone pointer). Completion: `void(error_code, erase_result)`.
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, erase_result)>(compose_initiation<void(error_code, erase_result)>{}, token, std::declval<erase_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, erase_result)>(compose_initiation<void(error_code, erase_result)>{}, token, erase_op(st_, std::move(key), erase_spec{{}, std::move(pc)}), get_executor());
    }

    /// Lists the live keys with `prefix` strictly after `after`. Completion: `void(error_code, list_page)`.
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, list_page)>(compose_initiation<void(error_code, list_page)>{}, token, std::declval<list_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, list_page)>(compose_initiation<void(error_code, list_page)>{}, token, list_op(st_, std::move(prefix), list_spec{{}, std::move(after), limit}), get_executor());
    }

    /** What the composition honours: the lock store's conditional writes (an erase is a
        conditional pointer write here), and an object round trip. Completion: `void(error_code, capabilities)`.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {})
        -> decltype(boost::asio::async_initiate<Token, void(error_code, capabilities)>(compose_initiation<void(error_code, capabilities)>{}, token, std::declval<probe_op>(),
                                                        std::declval<executor_type>())) {
        return boost::asio::async_initiate<Token, void(error_code, capabilities)>(compose_initiation<void(error_code, capabilities)>{}, token, probe_op(st_, std::string(), probe_spec{}), get_executor());
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
        return boost::asio::async_initiate<Token, void(error_code, put_result)>(compose_initiation<void(error_code, put_result)>{}, token, copy_op(st_, std::move(to), copy_spec{{}, std::move(from), std::move(pc)}), get_executor());
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
        return boost::asio::async_initiate<Token, void(error_code, collect_result)>(compose_initiation<void(error_code, collect_result)>{}, token, collect_op(st_, std::move(prefix), collect_spec{}), get_executor());
    }

private:
    // What the copies of a handle share: the two stores (the lock store is the record store of
    // the machines' driver) and the knowledge the machines keep between calls.
    struct state {
        state(ObjectStore o, LockStore l, commit_protocol_params p, std::uint64_t seed)
            : objects(std::move(o)), backend(std::move(l)), knowledge(std::move(p), seed) {}
        ObjectStore objects;
        LockStore backend; // the lock store
        detail::commit_knowledge knowledge;
    };

    template <class Machine, class Result>
    struct spec_of {
        using machine = Machine;
        using result_type = Result;
        // A store's own cancellation reaches the caller as it is: this is a record store too, whose
        // callers settle a write that may have landed (the recipes count operation_aborted so).
        static constexpr bool passes_store_aborts = true;
        static result_type finish(state&, std::string const&, machine& m, error_code) { return std::move(m.result()); }
    };
    struct get_spec : spec_of<detail::commit_get_machine, get_result> {
        static error_code check(state& s, std::string const& key, get_result& r) { return s.knowledge.check_key(key, r.diag); }
        static std::unique_ptr<detail::commit_get_machine> make(state& s, std::string const& key) {
            return std::make_unique<detail::commit_get_machine>(s.knowledge, key);
        }
    };
    struct put_spec : spec_of<detail::commit_put_machine, put_result> {
        std::string body;
        precondition pc;
        error_code check(state& s, std::string const& key, put_result& r) const {
            if (auto ec = s.knowledge.check_key(key, r.diag)) return ec;
            if (body.size() <= s.knowledge.params().max_body_bytes) return {};
            r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds the commit store's limit of " +
                             std::to_string(s.knowledge.params().max_body_bytes);
            return errc::invalid_argument;
        }
        std::unique_ptr<detail::commit_put_machine> make(state& s, std::string const& key) {
            return std::make_unique<detail::commit_put_machine>(s.knowledge, key, std::move(body), std::move(pc));
        }
    };
    struct erase_spec : spec_of<detail::commit_erase_machine, erase_result> {
        precondition pc;
        static error_code check(state& s, std::string const& key, erase_result& r) { return s.knowledge.check_key(key, r.diag); }
        std::unique_ptr<detail::commit_erase_machine> make(state& s, std::string const& key) {
            return std::make_unique<detail::commit_erase_machine>(s.knowledge, key, std::move(pc));
        }
    };
    struct list_spec : spec_of<detail::commit_list_machine, list_page> {
        std::string after;
        std::size_t limit;
        std::unique_ptr<detail::commit_list_machine> make(state&, std::string const& prefix) {
            return std::make_unique<detail::commit_list_machine>(prefix, std::move(after), limit);
        }
    };
    struct probe_spec : spec_of<detail::commit_probe_machine, capabilities> {
        static std::unique_ptr<detail::commit_probe_machine> make(state& s, std::string const&) {
            return std::make_unique<detail::commit_probe_machine>(s.knowledge);
        }
    };
    struct copy_spec : spec_of<detail::commit_copy_machine, put_result> {
        std::string from;
        precondition pc;
        error_code check(state& s, std::string const& to, put_result& r) const {
            if (auto ec = s.knowledge.check_key(from, r.diag)) return ec;
            return s.knowledge.check_key(to, r.diag);
        }
        std::unique_ptr<detail::commit_copy_machine> make(state& s, std::string const& to) {
            return std::make_unique<detail::commit_copy_machine>(s.knowledge, std::move(from), to, std::move(pc), copies_in_store);
        }
    };
    struct collect_spec : spec_of<detail::commit_collect_machine, collect_result> {
        static std::unique_ptr<detail::commit_collect_machine> make(state& s, std::string const& prefix) {
            return std::make_unique<detail::commit_collect_machine>(s.knowledge, prefix);
        }
    };

    std::shared_ptr<state> st_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/commit_protocol.ipp>
#endif

#endif
