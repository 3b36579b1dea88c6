// Part of the baton command-line tool (examples/cli/main.cpp). `baton table`: a lease-table worker and its administration.
#ifndef BATON_CLI_TABLE_HPP
#define BATON_CLI_TABLE_HPP

#include "stores.hpp"
#include "table_command.hpp"

namespace baton_cli {

// ---- table -----------------------------------------------------------------

// One line per worker event, appended with one write(2) (lines stay whole across processes).
struct table_event_log {
    int fd = -1;
    // `at`: when the event was decided (a record is logged with the time its budget was checked,
    // so that a process stopped between the check and the write is judged by the check).
    void write(std::string const& worker, std::string const& shard, std::uint64_t token, char const* what, std::uint64_t n,
               std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now()) const {
        if (fd < 0) return;
        auto const ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch());
        std::string line = std::to_string(ns.count()) + " " + worker + " " + shard + " " + std::to_string(token) + " " + what +
                           " " + std::to_string(n) + "\n";
        [[maybe_unused]] auto written = ::write(fd, line.data(), line.size());
    }
};

template <class Table>
int run_table(asio::io_context& ioc, Table& table, options const& o, store_context const& store) {
    int code = exit_failure;
    if (o.table_action == "register" || o.table_action == "retire") {
        bool const retire = o.table_action == "retire";
        auto done = [&](baton::error_code ec) {
            if (ec) {
                code = report_store_error(store, std::string("cannot ") + (retire ? "retire" : "register") + " shards", ec,
                                          table.last_diagnostics(), exit_failure);
                return;
            }
            code = 0;
            std::printf("%s %zu shard%s\n", retire ? "retired" : "registered", o.shards.size(), o.shards.size() == 1 ? "" : "s");
        };
        if (retire) table.async_retire(o.shards, done);
        else table.async_register(o.shards, done);
        ioc.run();
        return code;
    }
    if (o.table_action == "status") {
        table.async_snapshot([&](baton::error_code ec, baton::table_snapshot snap) {
            if (ec) {
                code = report_store_error(store, "cannot read the table", ec, table.last_diagnostics(), exit_failure);
                return;
            }
            code = 0;
            if (o.json) {
                boost::json::array shards, workers;
                for (auto const& s : snap.shards) {
                    boost::json::object j;
                    j["shard"] = s.shard;
                    j["owner"] = s.owner.empty() ? boost::json::value(nullptr) : boost::json::value(s.owner);
                    j["term"] = s.term;
                    j["token"] = s.token;
                    j["checkpoint"] = s.checkpoint ? boost::json::value(*s.checkpoint) : boost::json::value(nullptr);
                    j["state"] = baton::to_string(s.state);
                    j["requested_by"] = s.requested_by.empty() ? boost::json::value(nullptr) : boost::json::value(s.requested_by);
                    shards.push_back(std::move(j));
                }
                for (auto const& w : snap.workers) {
                    boost::json::object j;
                    j["name"] = w.name;
                    j["term"] = w.term;
                    j["released"] = w.released;
                    j["shards"] = w.shards;
                    j["max_shards"] = w.max_shards == 0 ? boost::json::value(nullptr) : boost::json::value(w.max_shards);
                    workers.push_back(std::move(j));
                }
                boost::json::object doc;
                doc["shards"] = std::move(shards);
                doc["workers"] = std::move(workers);
                print_json(doc);
                return;
            }
            std::printf("%-24s %-20s %8s %-10s %s\n", "SHARD", "OWNER", "TOKEN", "STATE", "CHECKPOINT");
            for (auto const& s : snap.shards)
                std::printf("%-24s %-20s %8llu %-10s %s\n", s.shard.c_str(), s.owner.empty() ? "-" : s.owner.c_str(),
                            static_cast<unsigned long long>(s.token), baton::to_string(s.state),
                            s.checkpoint ? s.checkpoint->c_str() : "-");
            std::printf("\n%-24s %-20s %8s %8s %s\n", "WORKER", "TERM", "SHARDS", "LIMIT", "STATE");
            for (auto const& w : snap.workers)
                std::printf("%-24s %-20llu %8zu %8s %s\n", w.name.c_str(), static_cast<unsigned long long>(w.term), w.shards,
                            w.max_shards == 0 ? "-" : std::to_string(w.max_shards).c_str(), w.released ? "ended" : "live");
        });
        ioc.run();
        return code;
    }
    // work: numbered records of each shard, a checkpoint after each.
    table_event_log log;
    if (!o.log_path.empty()) {
        log.fd = ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log.fd < 0) die(exit_usage, "--log " + o.log_path + ": " + std::strerror(errno));
    }
    std::string const worker = table.options().worker;
    auto const records = o.records;
    auto const step = std::chrono::nanoseconds(o.step);
    auto metrics = std::make_shared<table_metrics>();
    metrics->path = o.metrics_file;
    // A path that cannot be written is a usage error, found before any shard is claimed.
    if (!metrics->write()) die(exit_usage, "--metrics-file " + o.metrics_file + ": " + std::strerror(errno));
    auto work = [log, worker, records, step, metrics](typename Table::shard_type s) -> asio::awaitable<void> {
        // A loss cancels this coroutine: its waits end with operation_aborted instead of
        // throwing, so that the loss is logged and reported before it returns.
        co_await asio::this_coro::throw_if_cancelled(false);
        std::string checkpoint = s.grant().checkpoint.value_or(std::string());
        std::uint64_t n = 0;
        std::from_chars(checkpoint.data(), checkpoint.data() + checkpoint.size(), n);
        log.write(worker, s.shard(), s.token(), "start", n);
        report_shard_acquired(s, *metrics, checkpoint);
        asio::steady_timer t(co_await asio::this_coro::executor);
        while (!s.stop_requested() && (records == 0 || n < records)) {
            bool const budget = s.remaining() > step; // start a record only with the time to finish it
            t.expires_after(budget ? step : step / 4);
            auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            if (ec || s.stop_requested()) break;
            auto const decided = std::chrono::steady_clock::now();
            if (!budget || s.remaining() <= std::chrono::nanoseconds(0)) continue;
            ++n;
            log.write(worker, s.shard(), s.token(), "record", n, decided);
            std::string value = std::to_string(n);
            auto [cec] = co_await s.async_checkpoint(value, asio::as_tuple(asio::use_awaitable));
            report_checkpoint(s, *metrics, value, cec);
            if (cec) {
                log.write(worker, s.shard(), s.token(), "refused", n);
                break;
            }
            checkpoint = std::move(value);
        }
        // Done with the records: keep the shard (returning would give it up) until asked to stop.
        if (!s.stop_requested()) co_await s.async_wait_stop(asio::as_tuple(asio::use_awaitable));
        log.write(worker, s.shard(), s.token(), "end", n);
        report_shard_ended(s, *metrics, checkpoint);
    };
    asio::signal_set signals(ioc, SIGTERM, SIGINT);
    signals.async_wait([&](baton::error_code ec, int) {
        if (!ec) table.request_stop();
    });
    auto on_end = [&](baton::error_code ec) {
        signals.cancel();
        if (ec) {
            code = report_store_error(store, "worker stopped", ec, table.last_diagnostics(), exit_failure);
            return;
        }
        code = 0;
    };
    shard_command cmd;
    cmd.argv = o.argv;
    cmd.store_url = o.store;
    cmd.grace = o.grace;
    cmd.metrics = metrics;
    if (cmd.argv.empty()) table.async_run(work, on_end);
    else
        table.async_run([&ioc, &cmd](typename Table::shard_type s) { return run_shard_command(ioc, std::move(s), cmd); },
                        on_end);
    ioc.run();
    if (log.fd >= 0) ::close(log.fd);
    return code;
}

} // namespace baton_cli

#endif
