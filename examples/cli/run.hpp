// Part of the baton command-line tool (examples/cli/main.cpp). `baton run`: a command under a lease.
#ifndef BATON_CLI_RUN_HPP
#define BATON_CLI_RUN_HPP

#include "event_log.hpp"
#include "stores.hpp"

namespace baton_cli {

// ---- run -------------------------------------------------------------------

template <class Lease>
int run_command(asio::io_context& ioc, Lease& lease, options const& o, store_context const& store) {
    int exit_code = exit_failure;
    pid_t child = -1;
    bool child_done = false, lost = false, stopping = false;
    asio::signal_set signals(ioc, SIGINT, SIGTERM, SIGCHLD);
    asio::steady_timer progress(ioc), kill_timer(ioc);
    auto const started = std::chrono::steady_clock::now();

    std::function<void()> release_and_exit = [&] {
        signals.cancel();
        progress.cancel();
        kill_timer.cancel();
        if (lease.state() == baton::lease_state::held || lease.state() == baton::lease_state::lost)
            lease.async_release([&](baton::error_code ec) {
                if (ec && ec != baton::errc::lease_lost && ec != baton::errc::not_held)
                    log_event("release_failed", {{"key", o.key}, {"error", ec.message()}}, "release failed: " + ec.message());
                ioc.stop();
            });
        else
            ioc.stop();
    };

    std::function<void()> on_signal = [&] {
        signals.async_wait([&](baton::error_code ec, int sig) {
            if (ec) return;
            if (sig == SIGCHLD) {
                int status = 0;
                if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
                    child_done = true;
                    exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                    log_event("command_exited", {{"key", o.key}, {"status", exit_code}, {"after_loss", lost}},
                              lost ? "command terminated after the lease was lost" : "");
                    return release_and_exit();
                }
            } else {
                stopping = true;
                if (child > 0 && !child_done) kill(child, sig); // pass it on; exit when the child does
                else {
                    exit_code = 128 + sig;
                    return release_and_exit();
                }
            }
            on_signal();
        });
    };

    std::function<void()> show_progress = [&] {
        progress.expires_after(5s);
        progress.async_wait([&](baton::error_code ec) {
            if (ec || child > 0) return;
            auto const waited = std::chrono::steady_clock::now() - started;
            log_event("waiting", {{"key", o.key}, {"waited_ms", std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()}},
                      "waiting for lease '" + o.key + "' (" + seconds_text(waited) + " so far)");
            show_progress();
        });
    };

    on_signal();
    show_progress();
    baton::acquire_options ao;
    ao.wait = !o.no_wait;
    ao.timeout = o.wait;
    lease.async_acquire(ao, [&](baton::error_code ec, baton::lease_grant g) {
        progress.cancel();
        if (ec) {
            if (stopping) exit_code = 130;
            else if (ec == baton::errc::held_by_other) {
                log_event("not_acquired", {{"key", o.key}, {"reason", "held by someone else"}},
                          "lease '" + o.key + "' is held by someone else");
                exit_code = exit_unavailable;
            } else if (ec == baton::errc::timeout) {
                log_event("not_acquired", {{"key", o.key}, {"reason", "--wait ran out"}},
                          "lease '" + o.key + "' not acquired within " + seconds_text(*o.wait));
                exit_code = exit_unavailable;
            } else {
                exit_code = report_store_error(store, "cannot acquire lease '" + o.key + "'", ec,
                                               lease.last_diagnostics(), exit_unavailable);
            }
            return release_and_exit();
        }
        if (stopping) return release_and_exit();
        std::string const token = std::to_string(g.fencing_token);
        // --log-format json: the observer logs the acquisition with its details.
        if (!json_log) std::fprintf(stderr, "baton: acquired lease '%s' (fencing token %s)\n", o.key.c_str(), token.c_str());
        if (g.created_record && g.fencing_token == 1)
            log_event("tokens_restarted", {{"key", o.key}},
                      "created the lease record; if it existed before and was deleted, tokens restarted at 1 "
                      "(see --wall-clock-tokens)");
        ioc.notify_fork(asio::io_context::fork_prepare);
        pid_t const supervisor = getpid();
        // SIGINT and SIGTERM stay blocked across the fork: one that reached the child before it
        // reset their handlers would run the supervisor's handler there and be lost (the command
        // would then ignore a stop). The child unblocks them once they have their default action.
        sigset_t stop_signals, before;
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
        child = fork();
        if (child == 0) {
            // The command must not outlive its supervisor: nobody would stop it on loss.
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != supervisor) _exit(exit_failure);
            ioc.notify_fork(asio::io_context::fork_child);
            setenv("BATON_FENCING_TOKEN", token.c_str(), 1);
            setenv("BATON_LEASE_KEY", o.key.c_str(), 1);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, nullptr);
            std::vector<char*> args;
            for (auto const& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            execvp(args[0], args.data());
            std::fprintf(stderr, "baton: cannot run '%s': %s\n", args[0], std::strerror(errno));
            _exit(127);
        }
        pthread_sigmask(SIG_SETMASK, &before, nullptr); // what arrived meanwhile is delivered now
        ioc.notify_fork(asio::io_context::fork_parent);
        if (child < 0) {
            std::fprintf(stderr, "baton: fork failed: %s\n", std::strerror(errno));
            exit_code = exit_failure;
            return release_and_exit();
        }
        lease.async_wait_lost([&](baton::error_code ec) {
            if (ec != baton::errc::lease_lost || child_done) return;
            lost = true;
            if (!json_log) std::fprintf(stderr, "baton: lease '%s' lost; terminating the command\n", o.key.c_str());
            kill(child, SIGTERM);
            kill_timer.expires_after(o.grace);
            kill_timer.async_wait([&](baton::error_code e) {
                if (!e && !child_done) kill(child, SIGKILL);
            });
        });
    });
    ioc.run();
    return exit_code;
}

} // namespace baton_cli

#endif
