// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_DYNAMODB_HPP
#define BATON_BACKEND_IMPL_DYNAMODB_HPP

// Layer: backends, internal. The multi-request operations of `dynamodb_backend`
// (list: paged Scans; probe; table creation and checks), included at the end of
// <baton/backend/dynamodb.hpp>.

#include <baton/backend/dynamodb.hpp>

namespace baton {

template <class V>
struct basic_dynamodb_backend<V>::list_op : std::enable_shared_from_this<typename basic_dynamodb_backend<V>::list_op> {
    list_op(basic_dynamodb_backend b, list_handler hh, std::string p, std::string a, std::size_t l)
        : self(std::move(b)), h(std::move(hh)), prefix(std::move(p)), after(std::move(a)), limit(l) {}

    basic_dynamodb_backend self;
    list_handler h;
    std::string prefix, after;
    std::size_t limit;
    std::map<std::string, std::string> best; // the smallest `limit` matching keys so far
    bool more = false;
    std::size_t pages = 0;

    void fail(error_code ec, diagnostics diag) {
        list_page page;
        page.diag = std::move(diag);
        self.complete(std::move(h), ec, std::move(page));
    }

    void next(std::optional<std::string> start) {
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        self.call("Scan", detail::dynamodb::scan_request(self.st_->table(), prefix, after, start), slot,
                  [op = this->shared_from_this()](result r) { op->on_page(std::move(r)); });
    }

    void on_page(result r) {
        if (r.ec) return fail(r.ec, std::move(r.diag));
        detail::dynamodb::scan_page page;
        if (auto ec = detail::dynamodb::parse_scan(r.body, self.st_->table(), page, r.diag))
            return fail(ec, std::move(r.diag));
        ++pages;
        for (auto& e : page.entries) {
            if (!e.key.starts_with(prefix) || (!after.empty() && e.key <= after)) continue;
            best.insert_or_assign(std::move(e.key), std::move(e.version));
            if (best.size() > limit) {
                best.erase(std::prev(best.end()));
                more = true;
            }
        }
        if (page.last_key) {
            if (pages >= self.st_->params.max_scan_pages) {
                diagnostics d;
                d.message = "listing table '" + self.st_->params.table + "' needs more than " +
                            std::to_string(pages) +
                            " Scan pages (dynamodb_backend_params::max_scan_pages); async_list scans the "
                            "whole table and suits small tables only";
                return fail(errc::capability_missing, std::move(d));
            }
            return next(std::move(page.last_key));
        }
        list_page out;
        out.entries.reserve(best.size());
        for (auto& [k, v] : best) out.entries.push_back(list_entry{k, v});
        out.truncated = more;
        self.complete(std::move(h), error_code{}, std::move(out));
    }
};

template <class V>
struct basic_dynamodb_backend<V>::probe_op : std::enable_shared_from_this<typename basic_dynamodb_backend<V>::probe_op> {
    probe_op(basic_dynamodb_backend b, probe_handler hh) : self(std::move(b)), h(std::move(hh)) {
        key = "baton-probe/" + self.st_->names.hex128();
    }

    basic_dynamodb_backend self;
    probe_handler h;
    std::string key;
    capabilities caps;
    std::string first, latest;

    template <class Result, class F>
    auto step(F f) {
        return [op = this->shared_from_this(), f = std::move(f)](error_code ec, Result r) mutable {
            f(*op, ec, std::move(r));
        };
    }

    void done(error_code ec, diagnostics diag = {}) {
        caps.diag = std::move(diag);
        if (ec) caps.findings.push_back("probe stopped: " + caps.diag.to_string());
        // Remove the scratch item whatever happened (best effort), then report.
        self.start_erase(erase_handler(step<erase_result>([ec](probe_op& op, error_code, erase_result) {
                             op.self.complete(std::move(op.h), ec, std::move(op.caps));
                         })),
                         key, precondition::none());
    }

    void run() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec) return op.done(ec, std::move(r.diag));
                           op.first = op.latest = r.version;
                           op.create_again();
                       })),
                       key, "probe-1", precondition::absent());
    }

    void create_again() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec && ec != errc::precondition_failed) return op.done(ec, std::move(r.diag));
                           op.caps.conditional_create = ec == errc::precondition_failed;
                           if (!ec) op.latest = r.version;
                           op.caps.findings.push_back(std::string("put if absent on an existing key: ") +
                                                      (op.caps.conditional_create ? "refused (honoured)"
                                                                                  : "accepted (ignored)"));
                           if (ec) {
                               bool const old = op.self.st_->returns_old_item.load(std::memory_order_relaxed);
                               op.caps.findings.push_back(
                                   std::string("a failed condition returns the current item: ") +
                                   (old ? "yes (ReturnValuesOnConditionCheckFailure honoured)"
                                        : "no (the recipes read the record when they need it)"));
                           }
                           op.replace_fresh();
                       })),
                       key, "probe-2", precondition::absent());
    }

    void replace_fresh() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec && ec != errc::precondition_failed) return op.done(ec, std::move(r.diag));
                           if (ec) {
                               op.caps.findings.push_back("put if matching the current version: refused");
                               return op.erase_stale();
                           }
                           op.latest = r.version;
                           op.replace_stale();
                       })),
                       key, "probe-3", precondition::matches(latest));
    }

    void replace_stale() {
        self.start_put(put_handler(step<put_result>([](probe_op& op, error_code ec, put_result r) {
                           if (ec && ec != errc::precondition_failed) return op.done(ec, std::move(r.diag));
                           op.caps.conditional_replace = ec == errc::precondition_failed;
                           op.caps.findings.push_back(std::string("put if matching a stale version: ") +
                                                      (op.caps.conditional_replace ? "refused (honoured)"
                                                                                   : "accepted (ignored)"));
                           op.erase_stale();
                       })),
                       key, "probe-4", precondition::matches(first));
    }

    void erase_stale() {
        self.start_erase(erase_handler(step<erase_result>([](probe_op& op, error_code ec, erase_result r) {
                             if (ec && ec != errc::precondition_failed && ec != errc::not_found)
                                 return op.done(ec, std::move(r.diag));
                             op.caps.conditional_erase = ec == errc::precondition_failed;
                             op.caps.findings.push_back(std::string("erase if matching a stale version: ") +
                                                        (op.caps.conditional_erase ? "refused (honoured)"
                                                                                   : "accepted (ignored)"));
                             op.done(error_code{});
                         })),
                         key, precondition::matches(first));
    }
};

template <class V>
struct basic_dynamodb_backend<V>::table_op : std::enable_shared_from_this<typename basic_dynamodb_backend<V>::table_op> {
    table_op(basic_dynamodb_backend b, table_handler hh, bool c)
        : self(std::move(b)), h(std::move(hh)), create(c), timer(self.ex_),
          deadline(std::chrono::steady_clock::now() + self.st_->params.table_wait_timeout) {}

    basic_dynamodb_backend self;
    table_handler h;
    bool create;
    boost::asio::steady_timer timer;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::milliseconds delay{100};
    dynamodb_table_info info;

    void finish(error_code ec, diagnostics diag = {}) {
        info.diag = std::move(diag);
        self.complete(std::move(h), ec, std::move(info));
    }

    void run() {
        if (!create) return describe();
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        self.call("CreateTable", detail::dynamodb::create_table_request(self.st_->table()), slot,
                  [op = this->shared_from_this()](result r) {
                      if (r.ec && r.diag.service_code != "ResourceInUseException")
                          return op->finish(r.ec, std::move(r.diag));
                      op->info.created = !r.ec;
                      op->describe();
                  });
    }

    void describe() {
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        self.call("DescribeTable", detail::dynamodb::describe_table_request(self.st_->params.table), slot,
                  [op = this->shared_from_this()](result r) { op->on_describe(std::move(r)); });
    }

    void on_describe(result r) {
        if (r.ec) return finish(r.ec, std::move(r.diag));
        detail::dynamodb::table_description d;
        if (auto ec = detail::dynamodb::parse_table_description(r.body, self.st_->table(), d, r.diag))
            return finish(ec, std::move(r.diag));
        info.status = d.status;
        info.key_schema = d.key_schema;
        if (!d.key_schema_matches) {
            diagnostics diag;
            diag.message = "table '" + self.st_->params.table + "' has the key schema [" + d.key_schema +
                           "], but dynamodb_backend needs " + self.st_->expected_schema() +
                           ": use another table, or set partition_key to match a single S HASH key";
            return finish(errc::invalid_argument, std::move(diag));
        }
        if (!create || d.status == "ACTIVE") return finish(error_code{});
        if (std::chrono::steady_clock::now() + delay > deadline) {
            diagnostics diag;
            diag.message = "table '" + self.st_->params.table + "' is still " + d.status + " after " +
                           std::to_string(self.st_->params.table_wait_timeout.count()) +
                           " ms (dynamodb_backend_params::table_wait_timeout)";
            return finish(errc::timeout, std::move(diag));
        }
        timer.expires_after(delay);
        delay = std::min(delay * 2, std::chrono::milliseconds(2000));
        auto slot = boost::asio::get_associated_cancellation_slot(h);
        timer.async_wait(boost::asio::bind_cancellation_slot(
            slot, [op = this->shared_from_this()](error_code ec) {
                if (ec) {
                    diagnostics diag;
                    diag.message = "cancelled while waiting for table '" + op->self.st_->params.table +
                                   "' to become ACTIVE";
                    return op->finish(boost::asio::error::operation_aborted, std::move(diag));
                }
                op->describe();
            }));
    }
};

template <class V>
void basic_dynamodb_backend<V>::start_list(list_handler h, std::string prefix, std::string after, std::size_t limit) const {
    if (limit == 0) {
        list_page out;
        out.diag.message = "list limit must be at least 1";
        return complete(std::move(h), error_code(errc::invalid_argument), std::move(out));
    }
    auto op = std::make_shared<list_op>(*this, std::move(h), std::move(prefix), std::move(after), limit);
    op->next(std::nullopt);
}

template <class V>
void basic_dynamodb_backend<V>::start_probe(probe_handler h) const {
    auto op = std::make_shared<probe_op>(*this, std::move(h));
    op->run();
}

template <class V>
void basic_dynamodb_backend<V>::start_table(table_handler h, bool create) const {
    auto op = std::make_shared<table_op>(*this, std::move(h), create);
    op->run();
}

// The operations' starts are defined here, outside the class, so that a separately compiled unit
// (BATON_SEPARATE_COMPILATION) leaves them to <baton/src.hpp>: see the end of this file.
template <class V>
void basic_dynamodb_backend<V>::start_get(get_handler h, std::string key) const {
    get_result out;
    if (auto ec = check_key(key, out.diag)) return complete(std::move(h), ec, std::move(out));
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    read_item(std::move(key), slot, [self = *this, h = std::move(h)](error_code ec, get_result r) mutable {
        self.answer(std::move(h), ec, std::move(r));
    });
}

template <class V>
void basic_dynamodb_backend<V>::start_put(put_handler h, std::string key, std::string body, precondition pc,
                                          std::optional<fenced_condition> fence) const {
    put_result out;
    if (auto ec = check_key(key, out.diag)) return complete(std::move(h), ec, std::move(out));
    if (body.size() > st_->params.max_body_bytes) {
        out.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds max_body_bytes (" +
                           std::to_string(st_->params.max_body_bytes) + ")";
        return complete(std::move(h), error_code(errc::invalid_argument), std::move(out));
    }
    std::string version = st_->names.hex128();
    std::string req = fence ? detail::dynamodb::fenced_put_item_request(
                                  st_->table(), key, body, version, fence->token,
                                  fence->known_version ? std::optional<std::string_view>(*fence->known_version) : std::nullopt)
                            : detail::dynamodb::put_item_request(st_->table(), key, body, version, pc);
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    bool const conditional = pc.which() != precondition::kind::none;
    call("PutItem", std::move(req), slot,
         [self = *this, h = std::move(h), key = std::move(key), version = std::move(version),
          conditional](result r) mutable {
             put_result out;
             if (!r.ec) {
                 out.version = std::move(version);
                 return self.answer(std::move(h), error_code{}, std::move(out));
             }
             error_code const ec = r.ec;
             if (ec != errc::precondition_failed || !conditional) {
                 out.diag = std::move(r.diag);
                 return self.answer(std::move(h), ec, std::move(out));
             }
             // The current item only when the service returned it (ALL_OLD): a caller that
             // needs it reads it, when it needs it (a contender that lost a race reads at its
             // next poll, not at once, as with S3).
             out.current = self.item_in_failure(key, r.body);
             out.diag = std::move(r.diag);
             self.answer(std::move(h), ec, std::move(out));
         });
}

template <class V>
void basic_dynamodb_backend<V>::start_erase(erase_handler h, std::string key, precondition pc) const {
    erase_result out;
    if (auto ec = check_key(key, out.diag)) return complete(std::move(h), ec, std::move(out));
    std::string req = detail::dynamodb::delete_item_request(st_->table(), key, pc);
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    bool const matches = pc.which() == precondition::kind::matches;
    call("DeleteItem", std::move(req), slot,
         [self = *this, h = std::move(h), key = std::move(key), matches, slot](result r) mutable {
             erase_result out;
             error_code const ec = r.ec;
             if (!ec) return self.answer(std::move(h), ec, std::move(out));
             out.diag = std::move(r.diag);
             if (ec != errc::precondition_failed || !matches)
                 return self.answer(std::move(h), ec, std::move(out));
             // `matches` on a key that is gone is not_found, as in memory_backend.
             self.current_after_failure(std::move(key), r.body, slot,
                                        [self, h = std::move(h), out = std::move(out)](
                                            std::optional<record> cur, bool known) mutable {
                                            error_code e = errc::precondition_failed;
                                            if (known && !cur) e = errc::not_found;
                                            self.answer(std::move(h), e, std::move(out));
                                        });
         });
}

template <class V>
void basic_dynamodb_backend<V>::start_call(call_handler h, std::string op, std::string body) const {
    auto slot = boost::asio::get_associated_cancellation_slot(h);
    call(op, std::move(body), slot, [self = *this, h = std::move(h)](result r) mutable {
        dynamodb_response out;
        out.status = r.status;
        out.body = std::move(r.body);
        out.diag = std::move(r.diag);
        self.answer(std::move(h), r.ec, std::move(out));
    });
}

#ifdef BATON_SEPARATE_COMPILATION
// The store's request code is compiled once, in <baton/src.hpp>. Only the members defined outside
// the class are left out of other units: the compiler may instantiate those defined inside it.
extern template class basic_dynamodb_backend<void>;
#endif

} // namespace baton

#endif
