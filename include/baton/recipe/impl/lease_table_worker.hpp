// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_RECIPE_IMPL_LEASE_TABLE_WORKER_HPP
#define BATON_RECIPE_IMPL_LEASE_TABLE_WORKER_HPP

// Layer: recipes, internal. A lease table's administration and worker coroutines: registering
// and retiring shards, the snapshot, and the worker's loop (scan, decide with table_plan, act,
// reap, settle the works that ended, claim, ask, withdraw, hand over, release).

#include <baton/recipe/impl/lease_table.hpp>

namespace baton {

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::register_shards(std::vector<std::string> ids, bool retire) -> awaitable<error_code> {
    for (auto const& id : ids)
        if (auto ec = check_shard_id(id)) co_return ec;
    for (auto const& id : ids) {
        detail::shard_change_fn change =
            [retire, &clk = clock](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
                if (retire) {
                    if (!now) return detail::shard_change::refuse(errc::not_found);
                    if (now->retired) return detail::shard_change::keep();
                    next.retired = true;
                    return detail::shard_change::write();
                }
                if (now && !now->retired) return detail::shard_change::keep();
                next.retired = false;
                // A new record starts at the wall-clock microsecond: if something outside
                // baton deleted an earlier one, its tokens still rise above that one's.
                if (!now) next.token = detail::wall_clock_token_floor(clk);
                return detail::shard_change::write();
            };
        std::optional<detail::shard_seen> const no_record;
        auto [ec, seen, wrote] = co_await change_shard(id, change, no_record);
        if (ec) {
            if (ec == errc::not_found) last_diag.message = "no shard \"" + id + "\" in the table";
            co_return ec;
        }
    }
    co_return error_code{};
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::snapshot() -> awaitable<std::tuple<error_code, table_snapshot>> {
    table_snapshot snap;
    detail::table_view v;
    std::string const wprefix = worker_prefix();
    auto [wec, workers] = co_await list_all(wprefix);
    if (wec) co_return std::tuple{wec, std::move(snap)};
    for (auto const& e : workers) {
        auto [ec, r] = co_await get(e.key);
        if (ec) co_return std::tuple{ec, std::move(snap)};
        if (!r.found) continue;
        detail::lease_body b;
        diagnostics d;
        if (auto dec = detail::decode_lease_body(r.found->body, b, d)) {
            last_diag = d;
            co_return std::tuple{dec, std::move(snap)};
        }
        auto& w = v.workers[e.key.substr(worker_prefix().size())];
        w.decoded = true;
        w.released = b.released;
        w.term = b.token;
        w.ttl = b.ttl;
        w.max_shards = detail::worker_max_shards(b.value);
    }
    std::string const sprefix = shard_prefix();
    auto [sec, shards] = co_await list_all(sprefix);
    if (sec) co_return std::tuple{sec, std::move(snap)};
    for (auto const& e : shards) {
        auto [ec, r] = co_await get(e.key);
        if (ec) co_return std::tuple{ec, std::move(snap)};
        if (!r.found) continue;
        detail::shard_body b;
        diagnostics d;
        if (auto dec = detail::decode_shard_body(r.found->body, b, d)) {
            last_diag = d;
            last_diag.message += " (key " + e.key + ")";
            co_return std::tuple{dec, std::move(snap)};
        }
        v.shards[e.key.substr(shard_prefix().size())] = detail::shard_seen{r.found->version, std::move(b)};
    }
    auto counts = detail::owned_counts(v);
    for (auto const& [name, w] : v.workers)
        snap.workers.push_back(table_worker_info{name, w.term, w.released, w.ttl, counts[name], w.max_shards});
    for (auto const& [id, s] : v.shards) {
        table_shard_info i;
        i.shard = id;
        i.owner = s.body.owner;
        i.term = s.body.term;
        i.token = s.body.token;
        i.checkpoint = s.body.checkpoint;
        i.requested_by = s.body.requested_by;
        // A snapshot is one read: an owner without a record is shown orphaned at once.
        i.state = s.body.retired         ? table_shard_state::retired
                  : s.body.owner.empty() ? table_shard_state::free
                  : v.term_live(s.body.owner, s.body.term) ? table_shard_state::owned
                                                           : table_shard_state::orphaned;
        snap.shards.push_back(std::move(i));
    }
    co_return std::tuple{error_code{}, std::move(snap)};
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::worker_loop() -> awaitable<void> {
    while (!abandoned) {
        if (stopping) {
            // A worker that lost its lease before it could hand over says so: its shards
            // stay claimed until other workers' takeover windows end.
            finish_run(co_await release_all());
            co_return;
        }
        // Hold the worker lease: a new term.
        auto [ec, grant] = co_await acquire();
        if (abandoned) co_return;
        if (ec) {
            if (stopping) continue;
            if (ec == errc::foreign_record || detail::refused_by_setup(ec)) {
                last_diag = lease->last_diagnostics();
                finish_run(ec);
                co_return;
            }
            co_await sleep(std::chrono::nanoseconds(opts.poll_interval));
            continue;
        }
        begin_term(grant.fencing_token);
        auto next_scan = now();
        auto last_act = now();
        while (held && !abandoned && !stopping) {
            if (now() >= next_scan) {
                co_await scan();
                if (!held || abandoned || stopping) break;
                last_act = now();
                co_await act();
                auto const scan_every = std::chrono::nanoseconds(opts.effective_scan_interval());
                next_scan = now() + scan_every - std::chrono::nanoseconds(static_cast<std::int64_t>(
                                                         uniform() * 0.2 * static_cast<double>(scan_every.count())));
            } else if (auto due = next_takeover(last_act); due && *due <= now()) {
                // A worker's takeover window just ended: reap and claim now, not at the next scan.
                last_act = now();
                co_await act();
            }
            if (!held || abandoned || stopping) break;
            co_await settle_ended();
            co_await poll_awaited();
            auto wait = next_scan - now();
            if (auto due = next_takeover(last_act)) wait = std::min(wait, *due - now());
            if (!awaiting.empty()) wait = std::min<std::chrono::nanoseconds>(wait, opts.poll_interval);
            if (wait > std::chrono::nanoseconds(0)) co_await sleep(wait);
        }
        if (abandoned) co_return;
        if (!held) end_term(); // lost: every work was cancelled; a new term claims the shards back
    }
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::scan() -> awaitable<void> {
    std::string const wprefix = worker_prefix();
    auto const sent = now();
    // Renewals change a worker record's version and nothing else: listing the version is
    // enough to see it alive. Its body (term, released) is read when first seen and at
    // every fourth scan (the facts it gives only move forward; a reaper reads it first).
    bool const full = scans++ % 4 == 0;
    // Workers a shard record names under a later term than this view read (as owner or
    // asker): the body this view holds is older than that term. A change of their record
    // that looked like a renewal was not one; read it again, or this view would judge a
    // live worker ended (its asks never granted) until a change happened to meet a full scan.
    std::set<std::string, std::less<>> named_later;
    for (auto const& [id, s] : view.shards)
        for (auto const& [name, t] : {std::pair{&s.body.owner, s.body.term},
                                      std::pair{&s.body.requested_by, s.body.requested_term}}) {
            if (t == 0) continue; // no term is later than none (a free shard, no request): no search
            auto const it = view.workers.find(*name);
            if (it != view.workers.end() && it->second.decoded && it->second.term < t) named_later.insert(*name);
        }
    wants_fn const wants_worker = [&](std::string const& name, list_entry const& e, std::chrono::nanoseconds listed) {
        auto& w = view.workers[name];
        bool const stale = named_later.count(name) != 0;
        if (w.version == e.version && w.decoded && !stale) return false;
        // A version that had lived longer than half a TTL was no renewal of a live
        // worker: a reaper's marker, a release, or a new term. Neither is a change of a
        // record that says released (nobody renews it). Read those at once.
        bool const long_lived = listed - w.observed_since >= std::chrono::nanoseconds(w.ttl) / 2;
        if (w.version != e.version) w.observed_since = listed;
        w.version = e.version;
        return !(w.decoded && !full && !long_lived && !stale && !w.released);
    };
    apply_fn const apply_worker = [&](std::string const& name, record const& r) {
        auto& w = view.workers[name];
        detail::lease_body b;
        diagnostics d;
        if (detail::decode_lease_body(r.body, b, d)) { // foreign: never judged dead
            w.decoded = false;
            return;
        }
        if (r.version != w.version) {
            w.version = r.version;
            w.observed_since = now();
        }
        w.decoded = true;
        w.released = b.released;
        w.term = b.token;
        w.ttl = b.ttl;
        w.instance = b.owner;
        w.value = b.value;
        w.max_shards = detail::worker_max_shards(b.value);
        w.body_version = r.version;
        view.declared_ttl[name] = b.ttl;
    };
    auto [wec, workers_listed, listed] = co_await refresh_view(wprefix, wants_worker, apply_worker);
    if (!wec) keep_listed(view.workers, workers_listed);
    std::string const sprefix = shard_prefix();
    // The listing's names come in the view's order (byte order; Azure's UTF-16 order differs
    // only for characters from U+E000 up): a name's entry is then the one after the previous
    // name's, found without a search of the whole view at every shard of every scan.
    auto previous = view.shards.end();
    wants_fn const wants_shard = [&](std::string const& id, list_entry const& e, std::chrono::nanoseconds) {
        auto it = previous == view.shards.end() ? view.shards.begin() : std::next(previous);
        if (it == view.shards.end() || it->first != id) it = view.shards.find(id);
        if (it != view.shards.end()) previous = it;
        if (it != view.shards.end() && it->second.version == e.version) return false;
        // Another live worker's checkpoints change its shards' versions all the time; they
        // are read at every fourth scan only (a change of hands to us, a request or the end
        // of that worker's term makes us read them at once).
        return !(!full && it != view.shards.end() && !it->second.body.owner.empty() &&
                 it->second.body.owner != opts.worker && it->second.body.requested_by != opts.worker &&
                 view.term_live(it->second.body.owner, it->second.body.term));
    };
    apply_fn const apply_shard = [&](std::string const& id, record const& r) {
        detail::shard_body b;
        diagnostics d;
        if (detail::decode_shard_body(r.body, b, d)) return; // foreign: left alone
        remember_shard(id, detail::shard_seen{r.version, std::move(b)});
    };
    auto [sec, shards_listed, shards_at] = co_await refresh_view(sprefix, wants_shard, apply_shard);
    (void)shards_at;
    if (!sec) {
        keep_listed(view.shards, shards_listed);
        // Owners named by shards without a worker record: only from a listing of the
        // workers that succeeded now (a failed one proves no absence).
        std::set<std::string, std::less<>> named;
        if (!wec)
            for (auto const& [id, s] : view.shards)
                if (!s.body.owner.empty() && !view.workers.count(s.body.owner)) named.insert(s.body.owner);
        std::erase_if(view.missing, [&](auto const& kv) { return !named.count(kv.first); });
        for (auto const& n : named) view.saw_missing(n, sent, listed);
        lose_shards_taken();
    }
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::act() -> awaitable<void> {
    co_await reap();
    if (!held || stopping) co_return;
    auto counts = detail::owned_counts(view);
    // Our shards: start their works, stop those asked for or retired, and hand over again
    // those whose work stopped while the record still names us (a handoff that failed), and
    // those beyond our limit (handoffs that crossed gave us more).
    std::vector<std::string> to_hand_over, beyond_limit;
    for (auto const& [id, s] : view.shards) {
        if (!s.body.owned_by(opts.worker, term)) continue;
        auto it = sessions.find(id);
        if (it == sessions.end()) {
            if (stopped_at(id, s.body.token) || s.body.retired) to_hand_over.push_back(id);
            else if (at_limit()) beyond_limit.push_back(id);
            else start_session(id, s);
            continue;
        }
        auto& sess = *it->second;
        if (s.body.retired) sess.request_stop(ex);
        else if (!sess.stop_requested && detail::grant_request(view, counts, opts.worker, s.body, false)) {
            --counts[opts.worker];
            sess.request_stop(ex);
        }
    }
    for (auto const& id : to_hand_over) {
        if (!acting(term)) co_return;
        mark_stopped(id, view.shards[id].body.token);
        co_await hand_over(id, counts, false); // to its requester, or unowned
    }
    for (auto const& id : beyond_limit) {
        if (!acting(term)) co_return;
        mark_stopped(id, view.shards[id].body.token);
        co_await hand_over(id, counts, true); // to whoever has room, or unowned
    }
    auto plan = detail::plan_balance(view, opts.worker, term, opts.max_moves_per_cycle, awaiting.size(), rng);
    for (auto const& id : plan.claim) {
        if (!acting(term)) co_return;
        co_await claim(id);
    }
    for (auto const& [id, owner] : plan.request) {
        if (!acting(term)) co_return;
        co_await ask(id, owner);
    }
    co_await settle_ended();
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::reap() -> awaitable<void> {
    for (auto& [name, w] : view.workers) {
        if (name == opts.worker || !w.decoded || w.released) continue;
        auto const window_w = detail::lease_machine::takeover_window(w.ttl, opts.max_clock_rate_skew);
        if (now() - w.observed_since < window_w) continue;
        if (w.body_version != w.version) {
            // The marker keeps the record's token: it must come from this very version.
            std::string const key = worker_prefix() + name;
            auto [gec, r] = co_await get(key);
            detail::lease_body b;
            diagnostics d;
            if (gec || !r.found || detail::decode_lease_body(r.found->body, b, d)) continue;
            w.released = b.released;
            w.term = b.token;
            w.ttl = b.ttl;
            view.declared_ttl[name] = b.ttl;
            w.instance = b.owner;
            w.value = b.value;
            w.max_shards = detail::worker_max_shards(b.value);
            w.body_version = r.found->version;
            if (r.found->version != w.version) {
                w.version = r.found->version;
                w.observed_since = now();
                continue;
            }
            if (w.released) continue;
        }
        std::string nonce = make_nonce(rng);
        std::string body = detail::encode_lease_body(w.instance, w.value, nonce, w.term, true, w.ttl);
        std::string const key = worker_prefix() + name;
        write_spec marker{std::move(body), precondition::matches(w.version)};
        auto [ec, r] = co_await run_machine(key, std::move(marker));
        if (!ec) {
            w.version = r.version;
            w.body_version = r.version;
            w.released = true;
            w.observed_since = now();
        } else {
            w.version.clear(); // read it again at the next scan, whatever happened
        }
    }
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::settle_ended() -> awaitable<void> {
    std::vector<std::string> done;
    for (auto it = sessions.begin(); it != sessions.end();) {
        auto const& s = *it->second;
        // A work is over once it returned and its last checkpoint is answered.
        if (s.checkpointing || !(s.ended || s.lost)) {
            ++it;
            continue;
        }
        mark_stopped(it->first, s.grant.token);
        if (!s.lost) done.push_back(it->first);
        it = sessions.erase(it);
    }
    if (done.empty()) co_return;
    auto counts = detail::owned_counts(view);
    for (auto const& id : done) {
        if (!held || abandoned) co_return;
        co_await hand_over(id, counts, stopping); // when it fails, the next scan sends it again
    }
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::claim(std::string const& id) -> awaitable<void> {
    auto it = view.shards.find(id);
    if (it == view.shards.end()) co_return;
    std::string const me = opts.worker;
    std::uint64_t const t = term;
    auto const ttl = static_cast<std::uint64_t>(opts.ttl.count());
    // The owner and term the view judged: a record read during the claim that names another
    // is refused and left to the next scan, which counts absences of that owner only from
    // then on (one seen before says nothing of a term it began since).
    std::string const judged_owner = it->second.body.owner;
    std::uint64_t const judged_term = it->second.body.term;
    detail::table_view const& v = view;
    detail::shard_change_fn change = [&v, me, t, ttl, judged_owner, judged_term](
                                         std::optional<detail::shard_body> const& now, detail::shard_body& next) {
            if (!now) return detail::shard_change::refuse(errc::not_found);
            if (now->owned_by(me, t)) return detail::shard_change::keep(); // ours (an earlier attempt landed)
            if (!now->owner.empty() && (now->owner != judged_owner || now->term != judged_term))
                return detail::shard_change::refuse(errc::precondition_failed);
            if (!v.claimable(*now)) return detail::shard_change::refuse(errc::precondition_failed);
            next.owner = me;
            next.term = t;
            next.owner_ttl_ms = ttl;
            next.token = now->token + 1;
            next.clear_request();
            return detail::shard_change::write();
        };
    std::optional<detail::shard_seen> const known = it->second;
    auto [ec, seen, wrote] = co_await change_shard(id, change, known);
    (void)wrote;
    if (!ec && seen && held && t == term) start_session(id, *seen);
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::ask(std::string const& id, std::string const& owner) -> awaitable<void> {
    auto it = view.shards.find(id);
    if (it == view.shards.end()) co_return;
    std::string const me = opts.worker;
    std::uint64_t const t = term;
    detail::table_view const& v = view;
    // What we will have once every shard asked for so far is ours: the owner grants only
    // while it has at least two more.
    std::uint64_t const count = detail::owned_counts(view)[me] + awaiting.size();
    detail::shard_change_fn change =
        [&v, me, t, owner, count](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
            if (!now || now->retired || now->owner != owner || !v.term_live(now->owner, now->term))
                return detail::shard_change::refuse(errc::precondition_failed);
            if (now->requested_by == me && now->requested_term == t) return detail::shard_change::keep();
            if (!now->requested_by.empty() && v.term_live(now->requested_by, now->requested_term))
                return detail::shard_change::refuse(errc::precondition_failed);
            next.requested_by = me;
            next.requested_term = t;
            next.requested_count = count;
            return detail::shard_change::write();
        };
    std::optional<detail::shard_seen> const known = it->second;
    auto [ec, seen, wrote] = co_await change_shard(id, change, known);
    (void)wrote;
    if (!ec) awaiting[id] = now() + 2 * std::chrono::nanoseconds(opts.effective_scan_interval());
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::withdraw(std::string const& id) -> awaitable<void> {
    auto it = view.shards.find(id);
    if (it == view.shards.end()) co_return;
    std::string const me = opts.worker;
    std::uint64_t const t = term;
    detail::shard_change_fn change = [me, t](std::optional<detail::shard_body> const& now, detail::shard_body& next) {
        if (!now || now->requested_by != me || now->requested_term != t) return detail::shard_change::keep();
        next.clear_request();
        return detail::shard_change::write();
    };
    std::optional<detail::shard_seen> const known = it->second;
    auto [ec, seen, wrote] = co_await change_shard(id, change, known);
    (void)ec;
    (void)seen;
    (void)wrote;
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::poll_awaited() -> awaitable<void> {
    if (awaiting.empty()) co_return;
    std::vector<std::string> ids;
    for (auto const& [id, until] : awaiting) ids.push_back(id);
    for (auto const& id : ids) {
        if (!held || abandoned || stopping) co_return;
        std::string const key = shard_prefix() + id;
        auto [ec, r] = co_await get(key);
        if (ec) continue;
        if (!r.found) {
            awaiting.erase(id);
            continue;
        }
        detail::shard_body b;
        diagnostics d;
        if (detail::decode_shard_body(r.found->body, b, d)) {
            awaiting.erase(id);
            continue;
        }
        detail::shard_seen s{r.found->version, std::move(b)};
        remember_shard(id, s);
        if (s.body.owned_by(opts.worker, term)) {
            start_session(id, s);
            awaiting.erase(id);
        } else if (s.body.requested_by != opts.worker || s.body.requested_term != term) {
            awaiting.erase(id);
        } else if (now() >= awaiting[id]) {
            awaiting.erase(id);
            co_await withdraw(id);
        }
    }
}

template <record_store Backend, clock_policy Clock, retry_policy RetryPolicy, signer_policy Signer, class Observer>
auto basic_lease_table<Backend, Clock, RetryPolicy, Signer, Observer>::impl::release_all() -> awaitable<error_code> {
    for (auto& [id, s] : sessions) s->request_stop(ex);
    for (;;) {
        if (!held) break;
        co_await settle_ended();
        // Shards still ours without a work (never started, or a handoff that failed).
        auto counts = detail::owned_counts(view);
        std::vector<std::string> left;
        for (auto const& [id, s] : view.shards)
            if (s.body.owned_by(opts.worker, term) && !sessions.count(id)) left.push_back(id);
        for (auto const& id : left) {
            mark_stopped(id, view.shards[id].body.token);
            co_await hand_over(id, counts, true);
        }
        if (sessions.empty() && left.empty()) break;
        co_await sleep(std::chrono::nanoseconds(opts.poll_interval));
    }
    error_code ec = term == 0 ? error_code{} : error_code(errc::lease_lost);
    if (lease && held) {
        held = false;
        std::tie(ec) = co_await lease->async_release(tuple_awaitable);
        if (ec == errc::not_held) ec = errc::lease_lost; // its deadline passed while it handed over
    }
    end_term();
    co_return ec;
}

} // namespace baton

#endif
