// Part of the baton command-line tool (examples/cli/main.cpp). `baton status` and `baton probe`.
#ifndef BATON_CLI_STATUS_HPP
#define BATON_CLI_STATUS_HPP

#include "stores.hpp"

namespace baton_cli {

// ---- status and probe ------------------------------------------------------

template <class Lease>
int show_status(asio::io_context& ioc, Lease& lease, options const& o, store_context const& store) {
    int code = exit_failure;
    lease.async_inspect([&](baton::error_code ec, std::optional<baton::lease_info> info) {
        if (ec) {
            code = report_store_error(store, "cannot read lease '" + o.key + "'", ec, lease.last_diagnostics(),
                                      exit_failure);
            return;
        }
        code = 0;
        char const* const state = !info ? "free" : info->released ? "released" : "held";
        if (o.json) {
            boost::json::object obj;
            obj["key"] = o.key;
            obj["state"] = state;
            if (info) {
                obj["holder"] = info->owner;
                obj["token"] = info->fencing_token;
                obj["ttl_ms"] = info->ttl.count();
                obj["value"] = info->value;
                obj["version"] = info->version;
            }
            print_json(obj);
            return;
        }
        if (!info) {
            std::printf("key:    %s\nstate:  free (no record: never held)\n", o.key.c_str());
            return;
        }
        std::printf("key:    %s\nstate:  %s\nholder: %s\ntoken:  %llu\nttl:    %s\nvalue:  %s\n", o.key.c_str(), state,
                    info->owner.c_str(), static_cast<unsigned long long>(info->fencing_token),
                    seconds_text(info->ttl).c_str(), info->value.c_str());
    });
    ioc.run();
    return code;
}

// Prints what the probe found: each check as made, then what it means for leases (or one JSON document).
template <class Backend>
int run_probe(asio::io_context& ioc, Backend& backend, options const& o, store_context const& store) {
    int code = exit_failure;
    backend.async_probe([&](baton::error_code ec, baton::capabilities c) {
        if (ec) {
            if (!o.json)
                for (auto const& f : c.findings) std::printf("check: %s\n", f.c_str());
            code = report_store_error(store, "probe failed", ec, c.diag, exit_failure);
            return;
        }
        bool unquoted = false;
        if constexpr (std::is_same_v<Backend, baton::s3_backend>) unquoted = backend.sends_unquoted_etags();
        std::string const refusal = c.diag.message.empty() ? "this store ignores preconditions" : c.diag.message;
        code = c.supports_leases() ? 0 : exit_failure;
        if (o.json) {
            boost::json::object obj;
            obj["store"] = store.url;
            boost::json::array checks;
            for (auto const& f : c.findings) checks.emplace_back(f);
            obj["checks"] = std::move(checks);
            obj["conditional_create"] = c.conditional_create;
            obj["conditional_replace"] = c.conditional_replace;
            obj["conditional_erase"] = c.conditional_erase;
            if constexpr (std::is_same_v<Backend, baton::s3_backend>) obj["unquoted_if_match"] = unquoted;
            obj["leases"] = c.supports_leases() ? "supported" : "refused";
            if (!c.supports_leases()) obj["reason"] = refusal;
            print_json(obj);
            return;
        }
        std::printf("store: %s (%s%s%s%s)\n", store.url.c_str(), store.container.c_str(), store.location.c_str(),
                    store.addressing.empty() ? "" : ", ", store.addressing.c_str());
        for (auto const& f : c.findings) std::printf("check: %s\n", f.c_str());
        auto honoured = [](bool yes) { return yes ? "honoured" : "NOT honoured"; };
        std::printf("conditional create (put if absent): %s\n", honoured(c.conditional_create));
        std::printf("conditional replace (put if matching): %s\n", honoured(c.conditional_replace));
        if (unquoted) std::printf("quirk: If-Match matches only the unquoted ETag here; baton sends it unquoted\n");
        if (c.conditional_erase)
            std::printf("conditional erase (delete if matching): honoured\n");
        else
            std::printf("conditional erase (delete if matching): NOT honoured; leases release by writing a marker "
                        "instead, so they are not affected\n");
        if (c.supports_leases())
            std::printf("leases: supported\n");
        else
            std::printf("leases: REFUSED: %s; two holders could both believe they hold a lease\n", refusal.c_str());
        if constexpr (std::is_same_v<Backend, baton::s3_backend>)
            if (!c.supports_leases())
                std::printf("hint: coordinate through a lock store that has conditional writes (the commit protocol): "
                            "--store '%s?lock=dynamodb://TABLE' (or ?lock=file:///DIR on one host)\n",
                            store.url.c_str());
    });
    ioc.run();
    return code;
}

} // namespace baton_cli

#endif
