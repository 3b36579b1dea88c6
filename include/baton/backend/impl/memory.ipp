// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_MEMORY_IPP
#define BATON_BACKEND_IMPL_MEMORY_IPP

// Layer: backends, internal. The compiled part of backend/memory.hpp: the memory store's
// operations on its map.
#include <baton/backend/memory.hpp>

namespace baton {

BATON_DECL memory_backend::request_counts memory_backend::counts() const {
    std::lock_guard lock(bound_->st->mutex);
    return bound_->st->counts;
}

BATON_DECL std::optional<record> memory_backend::peek(std::string_view key) const {
    std::lock_guard lock(bound_->st->mutex);
    auto it = bound_->st->records.find(key);
    if (it == bound_->st->records.end()) return std::nullopt;
    return record{std::string(key), it->second.body, it->second.version};
}

BATON_DECL std::size_t memory_backend::size() const {
    std::lock_guard lock(bound_->st->mutex);
    return bound_->st->records.size();
}

BATON_DECL error_code memory_backend::state::get(std::string const& key, get_result& r) {
    std::lock_guard lock(mutex);
    ++counts.gets;
    if (auto ec = store_limits::check_key(key, r.diag)) return ec;
    auto it = records.find(key);
    if (it != records.end()) r.found = record{key, it->second.body, it->second.version};
    return {};
}

BATON_DECL error_code memory_backend::state::put(std::string const& key, std::string body, precondition const& pc,
                                                 put_result& r, bool counted) {
    std::lock_guard lock(mutex);
    if (counted) ++counts.puts;
    if (auto ec = store_limits::check_key(key, r.diag)) return ec;
    if (body.size() > params.max_body_bytes) {
        r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds the store's limit of " +
                         std::to_string(params.max_body_bytes);
        return errc::invalid_argument;
    }
    auto it = records.find(key);
    if (!holds(it, pc)) {
        if (counted) ++counts.refused;
        if (it != records.end()) r.current = record{key, it->second.body, it->second.version};
        return errc::precondition_failed;
    }
    // A fresh version on every put, even for identical bytes (no ETag ABA).
    std::string version = "m" + std::to_string(next_version++);
    r.version = version;
    if (it == records.end())
        records.emplace(key, stored{std::move(body), std::move(version)});
    else
        it->second = stored{std::move(body), std::move(version)};
    return {};
}

BATON_DECL error_code memory_backend::state::erase(std::string const& key, precondition const& pc, diagnostics& diag,
                                                   bool counted) {
    std::lock_guard lock(mutex);
    if (counted) ++counts.erases;
    if (auto ec = store_limits::check_key(key, diag)) return ec;
    auto it = records.find(key);
    if (!holds(it, pc)) {
        if (counted) ++counts.refused;
        return it == records.end() && pc.which() == precondition::kind::matches
                   ? error_code(errc::not_found)
                   : error_code(errc::precondition_failed);
    }
    if (it != records.end()) records.erase(it);
    return {};
}

BATON_DECL error_code memory_backend::state::list(std::string const& prefix, std::string const& after,
                                                  std::size_t limit, list_page& r) {
    std::lock_guard lock(mutex);
    ++counts.lists;
    if (limit == 0) {
        r.diag.message = "list limit must be at least 1";
        return errc::invalid_argument;
    }
    auto it = after.empty() || after < prefix ? records.lower_bound(prefix) : records.upper_bound(after);
    for (; it != records.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        if (r.entries.size() == limit) {
            r.truncated = true;
            break;
        }
        r.entries.push_back({it->first, it->second.version});
    }
    return {};
}

BATON_DECL capabilities memory_backend::state::probe() {
    {
        std::lock_guard lock(mutex);
        ++counts.probes;
    }
    // The same checks a remote store gets, run on a scratch key (not counted as requests).
    capabilities c;
    std::string const key = "baton-probe/" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
    detail::probe_by_writes(
        key, [&](auto const& k, std::string b, precondition pc, put_result& r) { return put(k, std::move(b), pc, r, false); },
        [&](auto const& k, precondition pc, diagnostics& d) { return erase(k, pc, d, false); }, c);
    return c;
}

BATON_DECL bool memory_backend::state::holds(std::map<std::string, stored, std::less<>>::iterator it,
                                             precondition const& pc) const {
    switch (pc.which()) {
    case precondition::kind::none: return true;
    case precondition::kind::absent: return it == records.end();
    case precondition::kind::matches: return it != records.end() && it->second.version == pc.version();
    }
    return false;
}

} // namespace baton

#endif
