// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_TABLE_HPP
#define BATON_RECIPE_IMPL_LEASE_TABLE_HPP

// Layer: recipes, internal. The state of a lease table participant, shared with its running
// coroutines: the store's reads and writes on the one machine driver, administration, the
// worker's terms and sessions, and checkpoints. The worker's scan, decisions and handoffs are
// in lease_table_worker.hpp.

#include <baton/recipe/lease_table.hpp>

namespace baton {

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
struct basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl : std::enable_shared_from_this<impl> {
    using session = detail::table_session<basic_lease_table>;
    using timer_clock = typename Clock::timer_clock;
    using timer = boost::asio::basic_waitable_timer<timer_clock, boost::asio::wait_traits<timer_clock>, executor_type>;
    using lease_type = basic_lease<Backend, Clock, RetryPolicy, Signer, boost::asio::any_io_executor, Observer>;
    template <class T>
    using awaitable = boost::asio::awaitable<T>;
    static constexpr auto tuple_awaitable = boost::asio::as_tuple(boost::asio::use_awaitable);

    impl(executor_type e, Backend b, lease_table_options o, RetryPolicy r, Signer s, Clock c, Observer obs)
        : ex(std::move(e)), backend(std::move(b)), opts(std::move(o)), retry(std::move(r)), signer(std::move(s)),
          clock(std::move(c)), observer(std::move(obs)), rng(detail::seed_or_random(opts.random_seed)), wake(ex) {
        detail::adopt_signer(backend, signer);
        view.own_ttl = opts.ttl;
        view.skew = opts.max_clock_rate_skew;
        view.own_max_shards = opts.max_shards;
    }

    executor_type ex;
    Backend backend;
    lease_table_options opts;
    RetryPolicy retry;
    Signer signer;
    Clock clock;
    [[no_unique_address]] Observer observer; // the worker lease's, handed to it when it is made
    std::mt19937_64 rng;
    timer wake;
    bool poked = false;
    std::unique_ptr<lease_type> lease;
    std::uint64_t term = 0;
    bool held = false;
    bool running = false;
    bool stopping = false;
    bool abandoned = false;
    detail::pending_op<void(error_code)> run_pending;
    work_type work;
    detail::table_view view;
    std::map<std::string, std::shared_ptr<session>, std::less<>> sessions; // this term's works
    std::map<std::string, std::chrono::nanoseconds, std::less<>> awaiting;   // shards asked for: until when
    // Shards whose work this term stopped (ended, lost, or stopped for a handoff), with the
    // token of that work. A stop is never undone: a work starts again in this term only for a
    // record with a higher token (a later change of hands to us), never from a read or a view
    // that may predate our own handoff, which may still land.
    std::map<std::string, std::uint64_t, std::less<>> stopped;
    std::uint64_t scans = 0;

    std::chrono::nanoseconds now() const { return clock.now().time_since_epoch(); }
    std::string worker_prefix() const { return opts.table + "workers/"; }
    std::string shard_prefix() const { return opts.table + "shards/"; }
    std::chrono::nanoseconds lease_remaining(std::uint64_t t) const {
        if (!lease || !held || t != term) return std::chrono::nanoseconds(0);
        return lease->remaining();
    }
    bool acting(std::uint64_t t) const { return lease_remaining(t) > std::chrono::nanoseconds(0) && !abandoned; }

    void poke() {
        poked = true;
        wake.cancel();
    }

    // ---- waiting ------------------------------------------------------------------------
    awaitable<void> sleep(std::chrono::nanoseconds d) {
        if (poked) {
            poked = false;
            co_return;
        }
        wake.expires_at(clock.timer_expiry(d));
        co_await wake.async_wait(tuple_awaitable);
        poked = false;
    }

    double uniform() { return detail::uniform01(rng); }

    // The machines the table runs, each on the one driver (machine_op) and awaited as a tuple.
    // A retried read stops between attempts once this worker is abandoned; a shard change is
    // never stopped half-way, so abandoning the worker leaves none of its writes in doubt.
    template <class Spec>
    auto run_machine(std::string const& key, Spec spec) {
        return boost::asio::async_compose<decltype(tuple_awaitable) const&, void(error_code, typename Spec::result_type)>(
            detail::machine_op<impl, Spec>(this->shared_from_this(), key, std::move(spec)), tuple_awaitable, ex);
    }
    struct read_spec {
        using machine = detail::retried_get<RetryPolicy, std::mt19937_64>;
        using result_type = get_result;
        static std::unique_ptr<machine> make(impl& t, std::string const&) { return std::make_unique<machine>(t.retry, t.rng); }
        static bool stop_at_wait(impl& t) { return t.abandoned; }
        static result_type finish(impl&, std::string const&, machine& m, error_code) { return std::move(m.result()); }
    };
    struct listing {
        std::vector<list_entry> entries;
        diagnostics diag;
    };
    struct list_spec {
        using machine = detail::paged_list<RetryPolicy, std::mt19937_64>;
        using result_type = listing;
        static std::unique_ptr<machine> make(impl& t, std::string const&) { return std::make_unique<machine>(t.retry, t.rng); }
        static bool stop_at_wait(impl& t) { return t.abandoned; }
        static result_type finish(impl&, std::string const&, machine& m, error_code) {
            return listing{std::move(m.entries()), m.diag()};
        }
    };
    struct change_outcome {
        std::optional<detail::shard_seen> seen;
        bool wrote = false;
        diagnostics diag;
    };
    struct change_spec {
        using machine = detail::shard_write_machine<RetryPolicy, std::mt19937_64>;
        using result_type = change_outcome;
        detail::shard_change_fn change;
        std::optional<detail::shard_seen> known;
        std::unique_ptr<machine> make(impl& t, std::string const&) {
            return std::make_unique<machine>(std::move(change), std::move(known), t.retry, t.rng);
        }
        static result_type finish(impl&, std::string const&, machine& m, error_code ec) {
            change_outcome o{m.last_seen(), m.wrote(), {}};
            if (ec) o.diag = m.diag();
            return o;
        }
    };

    // One write, answered as the store answered (the reaper's released markers).
    struct write_spec {
        using machine = detail::one_write;
        using result_type = put_result;
        std::string body;
        precondition pc;
        std::unique_ptr<machine> make(impl&, std::string const&) { return std::make_unique<machine>(std::move(body), std::move(pc)); }
        static result_type finish(impl&, std::string const&, machine& m, error_code) { return std::move(m.result()); }
    };

    awaitable<std::tuple<error_code, get_result>> get(std::string const& key) {
        co_return co_await run_machine(key, read_spec{});
    }

    // Reads `keys`, up to 16 at a time (a scan of a thousand changed shards must not take a
    // thousand round trips end to end); `out[i]` is empty when key i could not be read.
    awaitable<void> get_many(std::vector<std::string> const& keys, std::vector<std::optional<get_result>>& out) {
        namespace ex_ = boost::asio::experimental;
        out.assign(keys.size(), std::nullopt);
        std::size_t next = 0;
        std::size_t const lanes = std::min<std::size_t>(16, keys.size());
        if (lanes == 0) co_return;
        using op_type = decltype(boost::asio::co_spawn(ex, read_lane(this->shared_from_this(), keys, out, next),
                                                       boost::asio::deferred));
        std::vector<op_type> ops;
        for (std::size_t i = 0; i < lanes; ++i)
            ops.push_back(boost::asio::co_spawn(ex, read_lane(this->shared_from_this(), keys, out, next), boost::asio::deferred));
        co_await ex_::make_parallel_group(std::move(ops)).async_wait(ex_::wait_for_all(), boost::asio::use_awaitable);
    }

    static awaitable<void> read_lane(std::shared_ptr<impl> self, std::vector<std::string> const& keys,
                                     std::vector<std::optional<get_result>>& out, std::size_t& next) {
        while (next < keys.size() && !self->abandoned) {
            std::size_t const i = next++;
            auto [ec, r] = co_await self->get(keys[i]);
            if (!ec) out[i] = std::move(r);
        }
    }

    awaitable<std::tuple<error_code, std::vector<list_entry>>> list_all(std::string const& prefix) {
        auto [ec, l] = co_await run_machine(prefix, list_spec{});
        if (ec) last_diag = std::move(l.diag);
        co_return std::tuple{ec, std::move(l.entries)};
    }

    // A listing of `prefix` brought into the view: the keys `wants(name, entry, listed)` picks
    // (`listed`: when the listing came back) are read 16 at a time, and each record found is
    // handed to `apply(name, record)`. Returns the listing's error, the names it showed,
    // ascending (a failed listing proves no absence), and when it came back.
    // (Type-erased: one coroutine for both halves of a scan, compiled once per table type.)
    using wants_fn = std::function<bool(std::string const&, list_entry const&, std::chrono::nanoseconds)>;
    using apply_fn = std::function<void(std::string const&, record const&)>;
    awaitable<std::tuple<error_code, std::vector<std::string>, std::chrono::nanoseconds>> refresh_view(
        std::string const& prefix, wants_fn const& wants, apply_fn const& apply) {
        std::vector<std::string> present;
        auto [ec, entries] = co_await list_all(prefix);
        auto const listed = now();
        if (ec) co_return std::tuple{ec, std::move(present), listed};
        present.reserve(entries.size());
        std::vector<std::string> keys, names;
        for (auto const& e : entries) {
            present.push_back(e.key.substr(prefix.size()));
            if (!wants(present.back(), e, listed)) continue;
            keys.push_back(e.key);
            names.push_back(present.back());
        }
        // A vector, not a set: a scan lists every shard, and building a tree of all their names
        // at every scan of every worker was a good part of the scan's CPU. Listings come in
        // byte order, except Azure's (UTF-16 order): sorted for `keep_listed`'s merge.
        if (!std::is_sorted(present.begin(), present.end())) std::sort(present.begin(), present.end());
        std::vector<std::optional<get_result>> got;
        co_await get_many(keys, got);
        for (std::size_t i = 0; i < keys.size(); ++i)
            if (got[i] && got[i]->found) apply(names[i], *got[i]->found); // not read: judged from what was known
        co_return std::tuple{error_code{}, std::move(present), listed};
    }

    // Erases from `m` (a map by name) each entry whose name `present` (ascending) lacks: one
    // walk of both, as both are in the same order.
    template <class Map>
    static void keep_listed(Map& m, std::vector<std::string> const& present) {
        auto p = present.begin();
        for (auto it = m.begin(); it != m.end();) {
            while (p != present.end() && *p < it->first) ++p;
            if (p != present.end() && *p == it->first) ++it;
            else it = m.erase(it);
        }
    }

    // One settled change of one shard record (shard_record.hpp): the outcome, and the record
    // as the change left it (when known).
    // Coroutine parameters are references to the caller's named objects, never temporaries
    // (GCC 12 destroys some temporaries of a co_await expression twice).
    awaitable<std::tuple<error_code, std::optional<detail::shard_seen>, bool>> change_shard(
        std::string const& id, detail::shard_change_fn& change, std::optional<detail::shard_seen> const& known) {
        std::string const key = shard_prefix() + id;
        change_spec spec{change, known}; // named: GCC 12 destroys some temporaries of a co_await expression twice
        auto [ec, o] = co_await run_machine(key, std::move(spec));
        if (ec) last_diag = std::move(o.diag);
        if (o.seen) remember_shard(id, *o.seen);
        co_return std::tuple{ec, std::move(o.seen), o.wrote};
    }

    diagnostics last_diag;

    // ---- administration -----------------------------------------------------------------
    error_code check_shard_id(std::string const& id) {
        if (id.empty() || !detail::is_utf8(id) ||
            std::any_of(id.begin(), id.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
            last_diag.message = "shard ids must be non-empty UTF-8 without control characters";
            return errc::invalid_argument;
        }
        return store_limits::check_key(shard_prefix() + id, last_diag);
    }

    awaitable<error_code> register_shards(std::vector<std::string> ids, bool retire);

    awaitable<std::tuple<error_code, table_snapshot>> snapshot();

    // ---- the worker -------------------------------------------------------------------
    template <class Handler>
    void start_run(Handler&& h, work_type w) {
        if (opts.worker.empty() || !w) {
            last_diag.message = "a worker needs lease_table_options::worker and a work function";
            return detail::post_completion(ex, std::forward<Handler>(h), error_code(errc::invalid_argument));
        }
        if (running) return detail::post_completion(ex, std::forward<Handler>(h), error_code(errc::operation_in_progress));
        running = true;
        stopping = false;
        work = std::move(w);
        run_pending.start(std::forward<Handler>(h), ex, this->weak_from_this(), [](impl& self) { self.request_stop(); });
        if (!lease) lease = std::make_unique<lease_type>(ex, backend, opts.worker_lease(), retry, signer, clock, observer);
        boost::asio::co_spawn(ex, run_worker(this->shared_from_this()), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    }

    void request_stop() {
        if (!running || stopping) return;
        stopping = true;
        poke();
    }

    void abandon() {
        abandoned = true;
        for (auto& [id, s] : sessions) s->lose(ex, shard_loss::table_destroyed);
        sessions.clear();
        if (running) run_pending.complete(ex, boost::asio::error::operation_aborted);
        running = false;
        wake.cancel();
        lease.reset();
    }

    void finish_run(error_code ec) {
        running = false;
        run_pending.complete(ex, ec);
    }

    static awaitable<void> run_worker(std::shared_ptr<impl> self) { co_await self->worker_loop(); }

    // Member coroutines hold only `this`: every one that is spawned runs under one of these,
    // which keeps the state alive until it ends (the table object may be gone before).
    template <class T>
    static awaitable<T> keep_alive(std::shared_ptr<impl> self, awaitable<T> a) {
        (void)self;
        co_return co_await std::move(a);
    }

    awaitable<void> worker_loop();

    // The earliest end of a takeover window after `after` among the workers that look alive.
    std::optional<std::chrono::nanoseconds> next_takeover(std::chrono::nanoseconds after) const {
        std::optional<std::chrono::nanoseconds> due;
        for (auto const& [name, w] : view.workers) {
            if (name == opts.worker || !w.decoded || w.released) continue;
            auto const t = w.observed_since + detail::lease_machine::takeover_window(w.ttl, opts.max_clock_rate_skew);
            if (t > after && (!due || t < *due)) due = t;
        }
        return due;
    }

    awaitable<std::tuple<error_code, lease_grant>> acquire() {
        auto [ec, g] = co_await lease->async_acquire(tuple_awaitable);
        co_return std::tuple{ec, g};
    }

    void begin_term(std::uint64_t t) {
        term = t;
        held = true;
        sessions.clear();
        awaiting.clear();
        stopped.clear();
        std::weak_ptr<impl> weak = this->shared_from_this();
        lease->async_wait_lost([weak, t](error_code) {
            auto self = weak.lock();
            if (!self || self->term != t || !self->held) return;
            self->held = false;
            // The lease machine knows why the term ended: its renew deadline, or its record.
            auto const why = self->lease && detail::lease_access::last_loss(*self->lease) ==
                                                 detail::lease_machine::loss_cause::deadline
                                 ? shard_loss::renew_deadline
                                 : shard_loss::worker_lease_lost;
            for (auto& [id, s] : self->sessions) s->lose(self->ex, why);
            self->poke();
        });
    }

    // Ends the works of a term whose lease is gone (each was told at the loss already).
    void end_term() {
        for (auto& [id, s] : sessions) s->lose(ex, shard_loss::worker_lease_lost);
        sessions.clear();
        awaiting.clear();
        stopped.clear();
    }

    // Lists both prefixes; reads the records whose version changed.
    awaitable<void> scan();

    // Works whose shard this view no longer shows as theirs (gone from a listing that
    // succeeded, or read under another owner or token): their authority ended, and another
    // worker may act on the shard. Only the record can say so; a failed listing says nothing.
    void lose_shards_taken() {
        for (auto& [id, sess] : sessions) {
            if (sess->lost || sess->ended) continue;
            auto it = view.shards.find(id);
            if (it == view.shards.end()) sess->lose(ex, shard_loss::shard_record_missing);
            else if (!it->second.body.owned_by(opts.worker, term) || it->second.body.token != sess->grant.token)
                sess->lose(ex, shard_loss::shard_taken);
        }
    }

    // Reaps dead workers, starts and stops works, claims, asks, grants.
    awaitable<void> act();

    // Marks dead the workers whose record stayed unchanged for the takeover window.
    awaitable<void> reap();

    // Notes that this term stops `id` at `token`: a stop only ever rises.
    void mark_stopped(std::string const& id, std::uint64_t token) {
        auto& at = stopped[id];
        at = std::max(at, token);
    }

    // True when this term stopped a work of `id` at a token of at least `token`.
    bool stopped_at(std::string const& id, std::uint64_t token) const {
        auto it = stopped.find(id);
        return it != stopped.end() && token <= it->second;
    }

    // Keeps a shard record read or written, unless the view already holds a later one (a
    // higher token; reads may be stale).
    void remember_shard(std::string const& id, detail::shard_seen s) {
        auto it = view.shards.find(id);
        if (it != view.shards.end() && s.body.token < it->second.body.token) return;
        view.saw_named(s.body, it == view.shards.end() ? nullptr : &it->second, now());
        view.shards[id] = std::move(s);
    }

    // As many works run as the limit allows (handoffs that crossed can give this worker more).
    bool at_limit() const { return opts.max_shards != 0 && sessions.size() >= opts.max_shards; }

    void start_session(std::string const& id, detail::shard_seen const& s) {
        if (!acting(term) || !work || sessions.count(id) || !s.body.owned_by(opts.worker, term) || s.body.retired ||
            stopped_at(id, s.body.token) || at_limit())
            return;
        auto sess = std::make_shared<session>();
        sess->table = this->weak_from_this();
        sess->grant = shard_grant{id, s.body.token, s.body.checkpoint};
        sess->term = term;
        sessions[id] = sess;
        awaiting.erase(id);
        std::weak_ptr<impl> weak = this->shared_from_this();
        // The session keeps its own copy of the work function: a lambda coroutine's captures
        // live in the closure, which must outlive the coroutine (the frame holds the session).
        sess->work = work;
        boost::asio::co_spawn(ex, sess->work(shard_type(sess)), work_done{weak, sess});
    }

    // The completion of a shard's work. An exception from the work ends its shard like a
    // return (the cancellation at a loss arrives as one). It names the session's cancellation
    // slot itself rather than through bind_cancellation_slot: a handler without an executor of
    // its own has co_spawn pass a cancellation on at once, where one with an executor has it
    // dispatched to the work's executor, and (Asio of Boost 1.81) that dispatched emit could
    // run after the work's completion had freed what it points to.
    struct work_done {
        std::weak_ptr<impl> table;
        std::shared_ptr<session> sess;
        using cancellation_slot_type = boost::asio::cancellation_slot;
        cancellation_slot_type get_cancellation_slot() const noexcept { return sess->cancel.slot(); }
        void operator()(std::exception_ptr) {
            sess->ended = true;
            if (auto self = table.lock()) self->poke();
        }
    };

    // Works that ended: their shards are handed over (or left free) by a write; a stop is
    // never undone, so that no handoff of ours can land under a resumed work.
    awaitable<void> settle_ended();

    // Writes the shard over to its requester (or, when stopping, to the least loaded live
    // worker), or leaves it free: only while the record still names this term.
    awaitable<void> hand_over(std::string const& id, std::map<std::string, std::size_t, std::less<>>& counts,
                              bool to_anyone) {
        auto known = view.shards.count(id) ? std::optional(view.shards[id]) : std::nullopt;
        std::string const me = opts.worker;
        std::uint64_t const t = term;
        detail::table_view const& v = view;
        // The record read here may hold a later claim of ours than the view knew (a claim whose
        // answer was lost, read back now): the stop covers the token handed over, so that no
        // work starts for it afterwards from a view that predates this handoff.
        auto mark = [this, &id](std::uint64_t token) { mark_stopped(id, token); };
        detail::shard_change_fn change =
            [&v, &counts, me, t, to_anyone, mark](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                if (!now || !now->owned_by(me, t)) return detail::shard_change::keep(); // not ours any more
                mark(now->token);
                std::optional<std::pair<std::string, std::uint64_t>> to;
                // A token that can rise no more: the shard is left free, never handed on with 0.
                if (!now->retired && now->token != detail::max_shard_token) {
                    if (!now->requested_by.empty() && v.term_live(now->requested_by, now->requested_term))
                        to = std::pair{now->requested_by, now->requested_term};
                    else if (to_anyone) {
                        auto tentative = counts; // counted once, when the handoff is written
                        to = detail::handoff_target(v, tentative, me, *now);
                    }
                }
                next.clear_request();
                if (to) {
                    next.owner = to->first;
                    next.term = to->second;
                    next.token = now->token + 1;
                    // The TTL its record declares (read with the term the handoff names).
                    auto const w = v.workers.find(to->first);
                    next.owner_ttl_ms = w == v.workers.end() ? 0 : static_cast<std::uint64_t>(w->second.ttl.count());
                } else {
                    next.owner.clear();
                    next.term = 0;
                    next.owner_ttl_ms = 0;
                }
                return detail::shard_change::write();
            };
        auto [ec, seen, wrote] = co_await change_shard(id, change, known);
        // When it failed, the record still names this term and the shard stays stopped: the
        // next scan sends the handoff again.
        if (!ec && wrote && seen && !seen->body.owner.empty()) ++counts[seen->body.owner];
    }

    awaitable<void> claim(std::string const& id);

    awaitable<void> ask(std::string const& id, std::string const& owner);

    // Takes back a request not granted in time: a stale count must not move a shard later.
    awaitable<void> withdraw(std::string const& id);

    // Reads each shard asked for, to start its work as soon as it is handed over.
    awaitable<void> poll_awaited();

    // Stopping: every work is asked to stop; each shard is handed over as its work ends;
    // then the lease is released.
    // Success when nothing of this worker is left claimed: its shards handed over and its
    // lease released, or it never held a term; `errc::lease_lost` when the lease was lost
    // first; else why the release failed.
    awaitable<error_code> release_all();

    // ---- checkpoints ----------------------------------------------------------------------
    void start_checkpoint(std::shared_ptr<session> s, std::string value,
                          boost::asio::any_completion_handler<void(error_code)> h) {
        auto complete = [this](auto handler, error_code ec) {
            detail::post_completion(ex, std::move(handler), ec);
        };
        if (!detail::is_utf8(value) || value.size() > detail::max_checkpoint_bytes) {
            last_diag.message = "a checkpoint must be UTF-8 text of at most 16 KiB";
            return complete(std::move(h), errc::invalid_argument);
        }
        if (s->checkpointing) return complete(std::move(h), errc::operation_in_progress);
        // Checked when the write is sent: a worker past its deadline sends nothing.
        if (s->lost || !acting(s->term)) return complete(std::move(h), errc::lease_lost);
        s->checkpointing = true;
        boost::asio::co_spawn(ex, keep_alive(this->shared_from_this(), checkpoint(s, std::move(value))),
                              [h = std::move(h), s](std::exception_ptr e, error_code ec) mutable {
                                  s->checkpointing = false;
                                  if (e) std::rethrow_exception(e);
                                  if (auto t = s->table.lock()) detail::post_completion(t->ex, std::move(h), ec);
                              });
    }

    awaitable<error_code> checkpoint(std::shared_ptr<session> s, std::string value) {
        std::string const me = opts.worker;
        std::uint64_t const t = s->term;
        auto it = view.shards.find(s->grant.shard);
        std::optional<detail::shard_seen> known;
        if (it != view.shards.end() && it->second.body.owned_by(me, t)) known = it->second;
        detail::shard_change_fn change =
            [me, t, token = s->grant.token, value](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                // The same owner, term and token: this work's own tenure of the shard.
                if (!now || !now->owned_by(me, t) || now->token != token) return detail::shard_change::refuse(errc::lease_lost);
                next.checkpoint = value;
                return detail::shard_change::write();
            };
        auto [ec, seen, wrote] = co_await change_shard(s->grant.shard, change, known);
        (void)wrote;
        if (ec == errc::lease_lost) {
            last_diag.message = "the shard is no longer this worker's (" +
                                (seen ? "owner now \"" + seen->body.owner + "\", token " + std::to_string(seen->body.token)
                                      : std::string("record missing")) +
                                ")";
            s->lose(ex, seen ? shard_loss::shard_taken : shard_loss::shard_record_missing);
        } else if (!ec && seen && seen->body.retired) {
            s->request_stop(ex); // retired: stop at this checkpoint, not only at the next scan
            poke();
        } else if (!ec && seen && !seen->body.requested_by.empty()) {
            poke(); // asked for: the loop decides at once whether to grant it
        }
        co_return ec;
    }
};

} // namespace baton

#include <baton/recipe/impl/lease_table_worker.hpp>

#endif
