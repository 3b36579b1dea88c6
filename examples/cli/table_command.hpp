// Part of the baton command-line tool (examples/cli/main.cpp). `baton table work -- CMD`: a command per owned
// shard, its checkpoints read from a pipe and written with the table's fenced checkpoint.
#ifndef BATON_CLI_TABLE_COMMAND_HPP
#define BATON_CLI_TABLE_COMMAND_HPP

#include "event_log.hpp"
#include "stores.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>

#include <sys/syscall.h>

namespace baton_cli {

// The file descriptor a shard's command writes its checkpoints to (BATON_CHECKPOINT_FD).
constexpr int checkpoint_fd = 3;

// The worker's figures for --metrics-file, in the Prometheus text format, rewritten after every event.
struct table_metrics {
    std::string path; // empty: none kept
    std::uint64_t owned = 0, starts = 0, written = 0, refused = 0, in_doubt = 0, lost = 0, handed_over = 0;

    // Written to a temporary name and renamed, so a collector never reads half a file.
    bool write() const {
        if (path.empty()) return true;
        std::string text;
        auto metric = [&](char const* name, char const* type, char const* help, std::string const& samples) {
            text += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
        };
        auto sample = [](char const* name, std::uint64_t v, std::string const& labels = {}) {
            return std::string(name) + labels + " " + std::to_string(v) + "\n";
        };
        metric("baton_table_shards_owned", "gauge", "Shards whose command this worker runs now.",
               sample("baton_table_shards_owned", owned));
        metric("baton_table_command_starts_total", "counter", "Commands started, one per shard and restart.",
               sample("baton_table_command_starts_total", starts));
        metric("baton_table_checkpoints_total", "counter", "Checkpoints the commands wrote, by outcome.",
               sample("baton_table_checkpoints_total", written, "{result=\"written\"}") +
                   sample("baton_table_checkpoints_total", refused, "{result=\"refused\"}") +
                   sample("baton_table_checkpoints_total", in_doubt, "{result=\"in_doubt\"}"));
        metric("baton_table_shards_lost_total", "counter", "Shards lost (taken, or the worker lease lost).",
               sample("baton_table_shards_lost_total", lost));
        metric("baton_table_shards_handed_over_total", "counter", "Shards handed over (asked for, or the worker stopped).",
               sample("baton_table_shards_handed_over_total", handed_over));
        std::string const tmp = path + ".tmp." + std::to_string(::getpid());
        std::FILE* f = std::fopen(tmp.c_str(), "w");
        if (!f) return false;
        bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        ok = (std::fclose(f) == 0) && ok;
        if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
        std::remove(tmp.c_str());
        return false;
    }
    void changed() const {
        if (!write()) print_error("cannot write --metrics-file " + path + ": " + std::strerror(errno));
    }
};

// What both kinds of work (a command per shard, or the demo's numbered records) report of a
// shard: one event each, and the figures of --metrics-file.
template <class Shard>
void report_shard_acquired(Shard const& s, table_metrics& m, std::string const& checkpoint) {
    ++m.owned;
    m.changed();
    log_event("shard_acquired", {{"shard", s.shard()}, {"token", s.token()}, {"checkpoint", checkpoint}}, {});
}

// A checkpoint written (`ec` empty), in doubt (the next one settles it), or refused.
template <class Shard>
void report_checkpoint(Shard const& s, table_metrics& m, std::string const& value, baton::error_code ec) {
    if (!ec || ec == baton::errc::unknown_outcome) {
        ++(ec ? m.in_doubt : m.written);
        m.changed();
        return;
    }
    ++m.refused;
    m.changed();
    log_event("checkpoint_refused",
              {{"shard", s.shard()}, {"token", s.token()}, {"value", value.substr(0, 64)}, {"error", ec.message()}}, {});
}

// The work of a shard ended: lost (with why), or handed over with its last checkpoint.
template <class Shard>
void report_shard_ended(Shard const& s, table_metrics& m, std::string const& checkpoint) {
    --m.owned;
    ++(s.lost() ? m.lost : m.handed_over);
    m.changed();
    if (s.lost())
        log_event("shard_lost",
                  {{"shard", s.shard()}, {"token", s.token()}, {"checkpoint", checkpoint},
                   {"reason", baton::to_string(s.loss_reason())}},
                  "shard " + s.shard() + " (token " + std::to_string(s.token()) + ") lost: " +
                      baton::to_string(s.loss_reason()));
    else
        log_event("handed_over", {{"shard", s.shard()}, {"token", s.token()}, {"checkpoint", checkpoint}}, {});
}

// What every shard's command shares.
struct shard_command {
    std::vector<std::string> argv;
    std::string store_url;
    std::chrono::milliseconds grace{5000};
    // Restarts after the command exits by itself: the first after `first_backoff`, each next
    // one twice as late up to `max_backoff`; a command that ran `max_backoff` or longer starts
    // the doubling again.
    std::chrono::milliseconds first_backoff{1000};
    std::chrono::milliseconds max_backoff{60000};
    std::shared_ptr<table_metrics> metrics = std::make_shared<table_metrics>();
};

// A command started for one shard: its process, a pidfd that becomes readable when it exits,
// and the read end of its checkpoint pipe. -1 where something failed (`error` says what).
struct shard_child {
    pid_t pid = -1;
    int pidfd = -1;
    int checkpoints = -1;
    std::string error;
};

// Forks and runs the command with the shard's variables; the child dies with this process (it
// would run unsupervised: nobody would stop it when the shard is lost).
inline shard_child start_shard_child(asio::io_context& ioc, shard_command const& cmd, std::string const& shard,
                                     std::uint64_t token, std::string const& checkpoint) {
    shard_child c;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        c.error = std::string("pipe: ") + std::strerror(errno);
        return c;
    }
    ioc.notify_fork(asio::io_context::fork_prepare);
    pid_t const supervisor = ::getpid();
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
    pid_t const pid = ::fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != supervisor) _exit(exit_failure);
        ioc.notify_fork(asio::io_context::fork_child);
        // The pipe's write end becomes fd 3 without close-on-exec; dup2 onto itself would keep the flag.
        if (pipe_fds[1] == checkpoint_fd) ::fcntl(checkpoint_fd, F_SETFD, 0);
        else ::dup2(pipe_fds[1], checkpoint_fd);
        setenv("BATON_SHARD", shard.c_str(), 1);
        setenv("BATON_FENCING_TOKEN", std::to_string(token).c_str(), 1);
        setenv("BATON_CHECKPOINT", checkpoint.c_str(), 1);
        setenv("BATON_STORE", cmd.store_url.c_str(), 1);
        setenv("BATON_CHECKPOINT_FD", std::to_string(checkpoint_fd).c_str(), 1);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        std::vector<char*> args;
        for (auto const& a : cmd.argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        std::fprintf(stderr, "baton: cannot run '%s': %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    int const fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    ioc.notify_fork(asio::io_context::fork_parent);
    ::close(pipe_fds[1]);
    if (pid < 0) {
        ::close(pipe_fds[0]);
        c.error = std::string("fork: ") + std::strerror(fork_errno);
        return c;
    }
    c.pid = pid;
    c.checkpoints = pipe_fds[0];
    c.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (c.pidfd < 0) c.error = std::string("pidfd_open: ") + std::strerror(errno);
    return c;
}

// One run of the command for one shard, until it exits and its pipe is drained. Checkpoints are
// written in the order the command wrote them, each awaited before the next line is read.
template <class Shard>
class shard_run : public std::enable_shared_from_this<shard_run<Shard>> {
public:
    shard_run(asio::io_context& ioc, Shard s, shard_command const& cmd, std::string checkpoint)
        : ioc_(ioc), s_(std::move(s)), cmd_(cmd), checkpoint_(std::move(checkpoint)), wake_(ioc), kill_timer_(ioc),
          pipe_(ioc), process_(ioc) {}

    // Runs it; returns the command's exit status (127 when it could not be started).
    asio::awaitable<int> run() {
        auto child = start_shard_child(ioc_, cmd_, s_.shard(), s_.token(), checkpoint_);
        if (child.pid < 0) {
            log_event("command_not_started", {{"shard", s_.shard()}, {"token", s_.token()}, {"error", child.error}},
                      "shard " + s_.shard() + ": cannot start the command: " + child.error);
            co_return 127;
        }
        ++cmd_.metrics->starts;
        cmd_.metrics->changed();
        log_event("command_started", {{"shard", s_.shard()}, {"token", s_.token()}, {"checkpoint", checkpoint_},
                                      {"pid", child.pid}},
                  {});
        pid_ = child.pid;
        pipe_.assign(child.checkpoints);
        if (child.pidfd >= 0) process_.assign(child.pidfd);
        auto self = this->shared_from_this();
        asio::co_spawn(ioc_, read_checkpoints(self), asio::detached);
        watch_exit(self, child.pidfd >= 0);
        s_.async_wait_stop(asio::bind_cancellation_slot(stop_wait_.slot(), [self](baton::error_code ec) {
            if (ec == asio::error::operation_aborted || self->exited_) return;
            // Lost: nothing it does counts any more. Asked to stop: it finishes and checkpoints.
            if (ec == baton::errc::lease_lost)
                self->terminate(std::string("the shard was lost (") + baton::to_string(self->s_.loss_reason()) + ")");
            else
                self->terminate({});
        }));
        while (!(exited_ && drained_)) {
            wake_.expires_at(asio::steady_timer::time_point::max());
            co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        kill_timer_.cancel();
        stop_wait_.emit(asio::cancellation_type::terminal); // a restarted run waits for the stop itself
        co_return status_;
    }

    // The last checkpoint this run wrote (or the one it started from).
    std::string const& checkpoint() const noexcept { return checkpoint_; }
    // True when a checkpoint was refused: the command was stopped.
    bool refused() const noexcept { return refused_; }

private:
    asio::io_context& ioc_;
    Shard s_;
    shard_command const& cmd_;
    std::string checkpoint_;
    asio::steady_timer wake_, kill_timer_;
    asio::posix::stream_descriptor pipe_, process_;
    asio::cancellation_signal stop_wait_;
    pid_t pid_ = -1;
    bool exited_ = false, drained_ = false, terminating_ = false, refused_ = false;
    int status_ = 0;

    void notify() { wake_.cancel(); }

    // SIGTERM, then SIGKILL after the grace period, as `baton run` stops its command.
    // `why` is empty for a graceful stop, which is not logged.
    void terminate(std::string const& why) {
        if (terminating_ || exited_) return;
        terminating_ = true;
        if (!why.empty())
            log_event("command_stopping", {{"shard", s_.shard()}, {"token", s_.token()}, {"reason", why}},
                      "shard " + s_.shard() + ": " + why + "; stopping the command");
        ::kill(pid_, SIGTERM);
        kill_timer_.expires_after(cmd_.grace);
        kill_timer_.async_wait([self = this->shared_from_this()](baton::error_code ec) {
            if (!ec && !self->exited_) ::kill(self->pid_, SIGKILL);
        });
    }

    static void watch_exit(std::shared_ptr<shard_run> self, bool have_pidfd) {
        auto reap = [self] {
            int status = 0;
            if (::waitpid(self->pid_, &status, WNOHANG) != self->pid_) return false;
            self->status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            self->exited_ = true;
            self->kill_timer_.cancel();
            self->notify();
            // A descendant may hold the pipe open after the command exited: stop waiting for it.
            self->kill_timer_.expires_after(std::chrono::seconds(1));
            self->kill_timer_.async_wait([self](baton::error_code ec) {
                if (!ec && !self->drained_) self->pipe_.close();
            });
            return true;
        };
        if (have_pidfd) {
            self->process_.async_wait(asio::posix::stream_descriptor::wait_read, [self, reap](baton::error_code ec) {
                if (!ec) reap();
            });
            return;
        }
        // Without a pidfd (an old kernel): look every 100 ms.
        auto poll = std::make_shared<std::function<void()>>();
        auto timer = std::make_shared<asio::steady_timer>(self->ioc_);
        *poll = [self, reap, poll, timer] {
            if (reap()) return;
            timer->expires_after(std::chrono::milliseconds(100));
            timer->async_wait([poll](baton::error_code ec) {
                if (!ec) (*poll)();
            });
        };
        (*poll)();
    }

    static asio::awaitable<void> read_checkpoints(std::shared_ptr<shard_run> self) {
        asio::streambuf buf(64 * 1024); // a checkpoint is at most 16 KiB; a longer line is refused
        for (;;) {
            auto [ec, n] = co_await asio::async_read_until(self->pipe_, buf, '\n', asio::as_tuple(asio::use_awaitable));
            if (ec && n == 0) {
                if (ec == asio::error::not_found) { // the line does not fit
                    self->refuse("a line on the checkpoint pipe is longer than 64 KiB");
                    buf.consume(buf.size());
                    continue;
                }
                break; // end of file: the command and its descendants closed it
            }
            std::string line(asio::buffers_begin(buf.data()), asio::buffers_begin(buf.data()) + static_cast<std::ptrdiff_t>(n));
            buf.consume(n);
            if (!line.empty() && line.back() == '\n') line.pop_back();
            if (self->refused_ || self->s_.lost()) continue; // it is being stopped: nothing more counts
            if (line.rfind("checkpoint ", 0) != 0) {
                log_event("line_ignored", {{"shard", self->s_.shard()}},
                          "shard " + self->s_.shard() + ": ignoring a line on the checkpoint pipe that is not "
                          "'checkpoint VALUE'");
                continue;
            }
            std::string value = line.substr(11);
            auto [cec] = co_await self->s_.async_checkpoint(value, asio::as_tuple(asio::use_awaitable));
            report_checkpoint(self->s_, *self->cmd_.metrics, value, cec);
            if (!cec || cec == baton::errc::unknown_outcome) {
                // An outcome in doubt is settled by the next checkpoint; the command may go on.
                if (!cec) self->checkpoint_ = std::move(value);
                continue;
            }
            self->refuse("checkpoint '" + value.substr(0, 64) + (value.size() > 64 ? "...'" : "'") +
                         " refused: " + cec.message());
        }
        self->pipe_.close();
        self->drained_ = true;
        self->notify();
    }

    void refuse(std::string const& why) {
        refused_ = true;
        terminate(why);
    }
};

// The work of one shard: the command, started again after it exits by itself (with a backoff),
// until the shard's authority ends. Returning hands the shard over (or lets it go when lost).
template <class Shard>
asio::awaitable<void> run_shard_command(asio::io_context& ioc, Shard s, shard_command const& cmd) {
    // A loss cancels this coroutine: its waits end with operation_aborted instead of throwing, so
    // that the command is still stopped and reaped, and the loss reported, before it returns.
    co_await asio::this_coro::throw_if_cancelled(false);
    std::string checkpoint = s.grant().checkpoint.value_or(std::string());
    auto backoff = cmd.first_backoff;
    asio::steady_timer pause(ioc);
    report_shard_acquired(s, *cmd.metrics, checkpoint);
    while (!s.stop_requested()) {
        auto const started = std::chrono::steady_clock::now();
        auto run = std::make_shared<shard_run<Shard>>(ioc, s, cmd, checkpoint);
        int const status = co_await run->run();
        checkpoint = run->checkpoint();
        if (s.stop_requested()) break;
        if (std::chrono::steady_clock::now() - started >= cmd.max_backoff) backoff = cmd.first_backoff;
        log_event("command_exited",
                  {{"shard", s.shard()}, {"token", s.token()}, {"status", status}, {"stopped", run->refused()},
                   {"restart_in_ms", backoff.count()}},
                  "shard " + s.shard() + ": the command " +
                      (run->refused() ? "was stopped, status " : "exited with status ") + std::to_string(status) +
                      "; starting it again in " + seconds_text(backoff));
        pause.expires_after(backoff);
        // A stop while pausing ends the pause: the shard is handed over at once.
        asio::cancellation_signal pausing;
        s.async_wait_stop(asio::bind_cancellation_slot(pausing.slot(), [&pause](baton::error_code ec) {
            if (ec != asio::error::operation_aborted) pause.cancel();
        }));
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        pausing.emit(asio::cancellation_type::terminal);
        backoff = std::min(backoff * 2, cmd.max_backoff);
    }
    // Returning hands the shard over with the last checkpoint, unless it was lost.
    report_shard_ended(s, *cmd.metrics, checkpoint);
}

} // namespace baton_cli

#endif
