// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_DETAIL_PROCESS_SOURCE_HPP
#define BATON_AWS_DETAIL_PROCESS_SOURCE_HPP

// Layer: wire (aws), internal. The `credential_process` setting of the shared config: a command
// run as the AWS CLI v2 runs it (split like Python's shlex.split, no shell, argv[0] looked up on
// PATH, stdout read as a JSON credentials document), with what the CLI lacks: a time limit (the
// child is killed and reaped), a size limit on both outputs, and messages that show the command's
// stderr without any secret known here and never show stdout.

#include <baton/aws/detail/credential_source.hpp>
#include <baton/aws/provider_options.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/detail/post_completion.hpp>
#include <baton/core/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/result.hpp>

#include <sys/types.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifndef BATON_DOXYGEN
namespace baton::aws::detail {

struct process_settings {
    std::string command;       // the credential_process value, as written
    std::string configured_by; // e.g. `profile 'dev' (/home/me/.aws/config line 4)`
};

// Splits the command into argv as Python's shlex.split(posix=True) does, which is what the AWS CLI
// runs on POSIX: white space separates words, '...' is literal, inside "..." a backslash escapes
// only `"` and `\`, outside quotes it escapes any character, `#` is an ordinary character, and
// nothing is expanded (no `~`, no `$VAR`). An unclosed quote, a backslash at the end, an empty
// command or a NUL byte: errc::invalid_argument and `problem` says which.
BATON_DECL boost::system::result<std::vector<std::string>> split_command(std::string_view command,
                                                                         std::string& problem);

// Reads the command's stdout: `Version` 1, `AccessKeyId` and `SecretAccessKey` required,
// `SessionToken` and `Expiration` optional (no expiration: long-term credentials, never refreshed).
// On failure errc::invalid_response and `reason` names the field; it never holds a value that may
// be secret, and never stdout itself (only its size).
BATON_DECL error_code parse_process_output(std::string_view out, credentials& c, std::string& reason);

// The values a message must not show: the secret strings of the command's stdout (when it is not a
// credentials document, every word long enough to be a secret), longest first.
BATON_DECL std::vector<std::string> process_output_secrets(std::string_view out);

// The secrets of this process's environment, which the child inherits and could print.
BATON_DECL std::vector<std::string> environment_secrets();

// The command's stderr for a message: every secret removed first (so that cutting cannot leave part
// of one), white space runs made one space, control bytes and invalid UTF-8 made `?`, and only the
// last `max_chars` characters kept.
BATON_DECL std::string stderr_excerpt(std::string text, std::vector<std::string> const& secrets,
                                      std::size_t max_chars = 1000);

// `60 s`, or `250 ms` when not whole seconds.
BATON_DECL std::string describe_duration(std::chrono::milliseconds d);

// ---- the child process ------------------------------------------------------------------

struct spawned_process {
    ::pid_t pid = -1;
    int out = -1; // read ends of the child's stdout and stderr
    int err = -1;
};

// Starts argv[0] (looked up on PATH) with the process's environment, stdin inherited, stdout and
// stderr on fresh pipes. Returns 0, or the errno value of the failure (nothing is left open then).
BATON_DECL int spawn_piped(std::vector<std::string> const& argv, spawned_process& child);

// Why posix_spawnp failed, for `could not be started: ...`.
BATON_DECL std::string describe_spawn_error(int err, std::string_view program);

struct child_exit {
    enum class how { running, exited, signaled, unknown };
    how what = how::running;
    int value = 0; // the exit status, or the signal
};

// waitpid(pid, WNOHANG). `unknown`: the child is no longer ours to wait for (SIGCHLD ignored, or
// someone else reaped it); like Python's subprocess, that counts as exit status 0.
BATON_DECL child_exit reap_child(::pid_t pid) noexcept;

BATON_DECL void kill_child(::pid_t pid) noexcept;

// SIGKILL, then a blocking wait: only for an owner that goes away with the child still running.
BATON_DECL void kill_and_reap(::pid_t pid) noexcept;

BATON_DECL void close_fd(int fd) noexcept;

// ---- one run ------------------------------------------------------------------------------

// Runs the command once and calls `done` once, on `ex` (the I/O objects run their handlers
// there). The child is never waited for by blocking: both pipes are read to their end, then it
// is polled with waitpid(pid, WNOHANG), never waitpid(-1), which would steal other children of
// the program (`baton run` waits on its own). The time limit covers all of it.
template <class V = void>
class basic_process_op : public std::enable_shared_from_this<basic_process_op<V>> {
public:
    basic_process_op(asio::any_io_executor ex, provider_options const& opts, std::string label, process_settings s,
                     source_callback done)
        : ex_(ex), timeout_(opts.process_timeout), max_bytes_(opts.max_response_bytes), label_(std::move(label)),
          s_(std::move(s)), done_(std::move(done)), out_(ex), err_(ex), deadline_(ex), poll_(ex) {}

    basic_process_op(basic_process_op const&) = delete;
    basic_process_op& operator=(basic_process_op const&) = delete;

    ~basic_process_op() {
        // Only when the handlers were destroyed unrun (the io_context went away) is the child still
        // ours here; it must not live on unsupervised, nor stay a zombie.
        if (child_.pid > 0 && !reaped_) kill_and_reap(child_.pid);
    }

    void start() {
        std::string problem;
        auto argv = split_command(s_.command, problem);
        if (!argv) return fail_later(errc::no_credentials, "credential_process" + where() + " cannot be run: " + problem);
        program_ = printable(argv->front(), 200);
        if (int const e = spawn_piped(*argv, child_))
            return fail_later(errc::no_credentials,
                              who() + " could not be started: " + describe_spawn_error(e, argv->front()));
        // Read now: the child may print them, and it inherits the environment as it is at its start.
        secrets_ = environment_secrets();
        error_code ec;
        out_.assign(child_.out, ec);
        if (ec) close_fd(child_.out);
        if (!ec) {
            err_.assign(child_.err, ec);
            if (ec) close_fd(child_.err);
        } else {
            close_fd(child_.err);
        }
        if (ec) {
            setup_problem_ = ec.message();
            // Posted: done must not run inside start(), and the child may be reaped at once.
            return asio::post(ex_, [self = this->shared_from_this()] { self->stop(stop_reason::setup_failed); });
        }
        out_open_ = err_open_ = true;
        read(false);
        read(true);
        deadline_.expires_after(timeout_);
        deadline_.async_wait([self = this->shared_from_this()](error_code e) {
            if (!e) self->stop(stop_reason::timeout);
        });
    }

private:
    enum class stop_reason { none, timeout, stdout_too_big, stderr_too_big, setup_failed };

    asio::any_io_executor ex_;
    // Copies, not a reference to the provider's options: a run may outlive its provider.
    std::chrono::milliseconds timeout_;
    std::size_t max_bytes_;
    std::string label_;
    process_settings s_;
    source_callback done_;
    std::string program_;
    std::vector<std::string> secrets_;
    spawned_process child_;
    asio::posix::stream_descriptor out_;
    asio::posix::stream_descriptor err_;
    std::array<char, 4096> out_chunk_{};
    std::array<char, 4096> err_chunk_{};
    std::string out_text_;
    std::string err_text_;
    bool out_open_ = false;
    bool err_open_ = false;
    asio::steady_timer deadline_;
    asio::steady_timer poll_;
    std::chrono::milliseconds poll_wait_{1};
    std::chrono::steady_clock::time_point killed_at_{};
    stop_reason stopped_ = stop_reason::none;
    std::string setup_problem_;
    bool reaping_ = false;
    bool reaped_ = false;
    bool reported_ = false;
    child_exit exit_;

    // Where it was configured; the arguments are never shown, they may hold a secret.
    std::string where() const { return s_.configured_by.empty() ? std::string() : " (" + s_.configured_by + ")"; }
    std::string who() const { return "credential_process '" + program_ + "'" + where(); }

    void fail_later(error_code ec, std::string reason) {
        reported_ = true;
        baton::detail::post_completion(ex_, std::move(done_), failed_outcome(label_, ec, std::move(reason)));
    }

    void read(bool is_err) {
        auto& d = is_err ? err_ : out_;
        auto& chunk = is_err ? err_chunk_ : out_chunk_;
        d.async_read_some(asio::buffer(chunk), [self = this->shared_from_this(), is_err](error_code ec, std::size_t n) {
            self->on_read(is_err, ec, n);
        });
    }

    void on_read(bool is_err, error_code ec, std::size_t n) {
        if (stopped_ != stop_reason::none) return; // stop() closed both pipes; the rest does not matter
        auto& text = is_err ? err_text_ : out_text_;
        text.append((is_err ? err_chunk_ : out_chunk_).data(), n);
        if (text.size() > max_bytes_) return stop(is_err ? stop_reason::stderr_too_big : stop_reason::stdout_too_big);
        if (!ec) return read(is_err);
        // End of file; a read error ends the output just the same.
        error_code ignored;
        (is_err ? err_ : out_).close(ignored);
        (is_err ? err_open_ : out_open_) = false;
        if (!out_open_ && !err_open_ && !reaping_) try_reap();
    }

    void stop(stop_reason why) {
        if (stopped_ != stop_reason::none || reaped_) return;
        stopped_ = why;
        // Not reaped yet, so the pid is still this child's (a zombie keeps it): the signal cannot reach another process.
        kill_child(child_.pid);
        killed_at_ = std::chrono::steady_clock::now();
        error_code ignored;
        out_.close(ignored);
        err_.close(ignored);
        out_open_ = err_open_ = false;
        poll_wait_ = std::chrono::milliseconds(1);
        if (reaping_)
            poll_.cancel(); // its handler polls at once
        else
            try_reap();
    }

    void try_reap() {
        reaping_ = true;
        if (reaped_) return;
        auto const e = reap_child(child_.pid);
        if (e.what != child_exit::how::running) {
            reaped_ = true;
            exit_ = e;
            deadline_.cancel();
            return finish();
        }
        // SIGKILL ends a process at once unless it is stuck in the kernel (a dead NFS server, say):
        // then the answer does not wait for it, and the polling goes on in the background.
        if (stopped_ != stop_reason::none && std::chrono::steady_clock::now() - killed_at_ >= std::chrono::seconds(1))
            finish();
        poll_.expires_after(poll_wait_);
        poll_wait_ = (std::min)(poll_wait_ * 2, std::chrono::milliseconds(100));
        poll_.async_wait([self = this->shared_from_this()](error_code) { self->try_reap(); });
    }

    void finish() {
        if (reported_) return;
        reported_ = true;
        std::move(done_)(outcome());
    }

    source_outcome failed(error_code ec, std::string reason) const {
        return failed_outcome(label_, ec, std::move(reason));
    }

    source_outcome outcome() {
        auto secrets = secrets_;
        for (auto& s : process_output_secrets(out_text_)) secrets.push_back(std::move(s));
        std::stable_sort(secrets.begin(), secrets.end(),
                         [](std::string const& a, std::string const& b) { return a.size() > b.size(); });
        std::string const err = stderr_excerpt(err_text_, secrets);
        std::string const note = err.empty() ? std::string() : "; its stderr: " + err;
        std::string const unreaped = reaped_ ? std::string() : " (it has not exited yet)";
        switch (stopped_) {
        case stop_reason::timeout:
            if (exit_.what == child_exit::how::exited)
                return failed(errc::timeout, who() + " exited " + std::to_string(exit_.value) +
                                                 ", but its stdout or stderr was still open after " +
                                                 describe_duration(timeout_) +
                                                 " (a process it started holds it); stopped reading" + note);
            return failed(errc::timeout, who() + " did not finish within " + describe_duration(timeout_) +
                                             "; killed" + unreaped + note);
        case stop_reason::stdout_too_big:
        case stop_reason::stderr_too_big:
            return failed(errc::invalid_response,
                          who() + " wrote more than " + std::to_string(max_bytes_) + " bytes on " +
                              (stopped_ == stop_reason::stdout_too_big ? "stdout" : "stderr") +
                              " (provider_options::max_response_bytes); killed" + unreaped + note);
        case stop_reason::setup_failed:
            return failed(errc::no_credentials,
                          who() + " could not be started: its output cannot be read (" + setup_problem_ + "); killed");
        case stop_reason::none: break;
        }
        if (exit_.what == child_exit::how::signaled)
            return failed(errc::no_credentials, who() + " was killed by signal " + std::to_string(exit_.value) +
                                                    (err.empty() ? std::string() : ": " + err));
        if (exit_.what == child_exit::how::exited && exit_.value != 0)
            return failed(errc::no_credentials,
                          who() + " exited " + std::to_string(exit_.value) +
                              (err.empty() ? std::string(" and wrote nothing on stderr") : ": " + err));
        credentials c;
        std::string reason;
        if (auto const ec = parse_process_output(out_text_, c, reason)) return failed(ec, who() + ": " + reason + note);
        return found_outcome(label_, std::move(c));
    }
};
using process_op = basic_process_op<>;

// Starts one run on `ex` (the provider's strand): `done` is called exactly once, on `ex`, never inline.
template <class = void>
void start_credential_process(asio::any_io_executor ex, provider_options const& opts, std::string label,
                              process_settings s, source_callback done) {
    std::make_shared<process_op>(std::move(ex), opts, std::move(label), std::move(s), std::move(done))->start();
}

} // namespace baton::aws::detail
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/process_source.ipp>
#endif

#endif
