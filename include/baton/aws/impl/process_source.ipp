// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_PROCESS_SOURCE_IPP
#define BATON_AWS_IMPL_PROCESS_SOURCE_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/process_source.hpp: splitting the
// command, reading its output, cleaning its stderr for messages, and the system calls that start,
// watch and end the child.
#include <baton/aws/detail/process_source.hpp>

#include <boost/json/serialize.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

#if defined(__APPLE__)
#include <crt_externs.h>
#else
// POSIX leaves declaring it to the program; C linkage, as <unistd.h> declares it where it does.
extern "C" char** environ;
#endif

namespace baton::aws::detail {

BATON_DECL boost::system::result<std::vector<std::string>> split_command(std::string_view command,
                                                                         std::string& problem) {
    auto refuse = [&](char const* why) -> boost::system::result<std::vector<std::string>> {
        problem = why;
        return error_code(errc::invalid_argument);
    };
    if (command.find('\0') != std::string_view::npos) return refuse("the command contains a NUL byte");
    auto const lone_backslash = "the command ends in a backslash that escapes nothing";
    auto const unclosed = "the command has a quotation mark that is not closed";
    std::vector<std::string> words;
    std::string word;
    bool in_word = false; // a word has begun: '' and "" make an empty word, as in shlex
    std::size_t const n = command.size();
    for (std::size_t i = 0; i < n; ++i) {
        char const c = command[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (in_word) words.push_back(std::move(word));
            word.clear();
            in_word = false;
            continue;
        }
        in_word = true;
        if (c == '\\') {
            if (i + 1 == n) return refuse(lone_backslash);
            word += command[++i];
        } else if (c == '\'') {
            auto const end = command.find('\'', i + 1);
            if (end == std::string_view::npos) return refuse(unclosed);
            word.append(command.substr(i + 1, end - i - 1));
            i = end;
        } else if (c == '"') {
            for (++i;; ++i) {
                if (i == n) return refuse(unclosed);
                char const d = command[i];
                if (d == '"') break;
                if (d == '\\') {
                    if (i + 1 == n) return refuse(lone_backslash);
                    // shlex's escapedquotes: only the quote and the backslash itself are escaped here.
                    if (command[i + 1] == '"' || command[i + 1] == '\\') ++i;
                }
                word += command[i];
            }
        } else {
            word += c;
        }
    }
    if (in_word) words.push_back(std::move(word));
    if (words.empty()) return refuse("the command is empty");
    return words;
}

BATON_DECL error_code parse_process_output(std::string_view out, credentials& c, std::string& reason) {
    auto bad = [&](std::string why) {
        reason = std::move(why);
        return error_code(errc::invalid_response);
    };
    if (trim_token(out).empty()) return bad("it printed nothing on stdout");
    boost::system::error_code jec;
    boost::json::value const v = boost::json::parse(out, jec);
    // Never the text itself: what it printed is meant to be secret.
    if (jec)
        return bad("what it printed on stdout (" + std::to_string(out.size()) + " bytes) is not JSON (" +
                   jec.message() + ")");
    auto const* obj = v.if_object();
    if (obj == nullptr) return bad("what it printed on stdout is JSON but not an object");
    auto const* version = obj->if_contains("Version");
    if (version == nullptr) return bad("its output has no 'Version'; only Version 1 is supported");
    // Python's `!= 1`, as the CLI checks it: 1 and 1.0 pass, "1" does not.
    bool const one = (version->is_int64() && version->as_int64() == 1) ||
                     (version->is_uint64() && version->as_uint64() == 1) ||
                     (version->is_double() && version->as_double() == 1.0);
    if (!one)
        return bad("its output's 'Version' is '" + printable(boost::json::serialize(*version), 20) +
                   "'; only 1 is supported");
    auto text = [&](char const* name, bool required, std::string& into) -> bool {
        auto const* f = obj->if_contains(name);
        if (f == nullptr || f->is_null()) {
            if (required) reason = std::string("its output has no '") + name + "'";
            return !required;
        }
        if (!f->is_string()) {
            reason = std::string("its output's '") + name + "' is not a string";
            return false;
        }
        into = std::string(f->as_string());
        if (required && into.empty()) {
            reason = std::string("its output's '") + name + "' is empty";
            return false;
        }
        return true;
    };
    credentials got;
    std::string expiration;
    if (!text("AccessKeyId", true, got.access_key_id) || !text("SecretAccessKey", true, got.secret_access_key) ||
        !text("SessionToken", false, got.session_token) || !text("Expiration", false, expiration))
        return errc::invalid_response;
    if (!expiration.empty()) {
        got.expiration = parse_iso8601(expiration);
        if (!got.expiration)
            return bad("its output's 'Expiration' ('" + printable(expiration, 40) + "') is not an ISO 8601 time");
    }
    if (auto p = credentials_problem(got)) return bad("its output's credentials are unusable: " + *p);
    c = std::move(got);
    return {};
}

BATON_DECL std::vector<std::string> process_output_secrets(std::string_view out) {
    std::vector<std::string> found;
    boost::system::error_code jec;
    boost::json::value const v = boost::json::parse(out, jec);
    if (!jec && v.is_object()) {
        // The key id names the identity and may be shown; the other strings (secret key, session
        // token, whatever else a tool adds) are treated as secret.
        for (auto const& kv : v.as_object())
            if (kv.value().is_string() && kv.key() != "AccessKeyId" && kv.key() != "Expiration")
                found.emplace_back(kv.value().as_string());
    } else {
        // Which part of the text is the secret is unknown: every word long enough to be one.
        auto is_sep = [](char ch) {
            auto const u = static_cast<unsigned char>(ch);
            return u <= 0x20 || u == 0x7f || ch == '"' || ch == '\'' || ch == ',' || ch == ':' || ch == ';' ||
                   ch == '=' || ch == '{' || ch == '}' || ch == '[' || ch == ']';
        };
        std::size_t i = 0;
        while (i < out.size()) {
            while (i < out.size() && is_sep(out[i])) ++i;
            std::size_t const start = i;
            while (i < out.size() && !is_sep(out[i])) ++i;
            if (i - start >= 8) found.emplace_back(out.substr(start, i - start));
        }
    }
    std::sort(found.begin(), found.end(), [](std::string const& a, std::string const& b) {
        return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
    found.erase(std::unique(found.begin(), found.end()), found.end());
    return found;
}

BATON_DECL std::vector<std::string> environment_secrets() {
    std::vector<std::string> found;
    for (char const* name : {"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                             "AWS_CONTAINER_AUTHORIZATION_TOKEN"})
        if (char const* v = std::getenv(name); v != nullptr && *v != '\0') found.emplace_back(v);
    return found;
}

namespace process_text {
// The length of the well-formed UTF-8 sequence at `s[i]`, or 0.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
    auto const at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char const b = at(i);
    if (b < 0x80) return 1;
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xbf; // the second byte's range excludes overlong forms and surrogates
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3;
        if (b == 0xe0) lo = 0xa0;
        if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4;
        if (b == 0xf0) lo = 0x90;
        if (b == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (i + len > s.size()) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < len; ++k)
        if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
    return len;
}
} // namespace process_text

BATON_DECL std::string stderr_excerpt(std::string text, std::vector<std::string> const& secrets,
                                      std::size_t max_chars) {
    for (auto const& s : secrets) text = scrub(std::move(text), s);
    std::string clean;
    clean.reserve(text.size());
    bool space = false;
    for (std::size_t i = 0; i < text.size();) {
        auto const b = static_cast<unsigned char>(text[i]);
        if (b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f') {
            space = true;
            ++i;
            continue;
        }
        if (space && !clean.empty()) clean += ' ';
        space = false;
        std::size_t const len = process_text::utf8_sequence(text, i);
        bool const control = len == 1 ? (b < 0x20 || b == 0x7f)
                                      : len == 2 && b == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
        if (len == 0 || control) {
            clean += '?';
            i += len == 0 ? 1 : len;
            continue;
        }
        clean.append(text, i, len);
        i += len;
    }
    // The end is kept: that is where a failing tool says why.
    std::size_t count = 0;
    for (std::size_t j = clean.size(); j-- > 0;) {
        if ((static_cast<unsigned char>(clean[j]) & 0xc0) != 0x80 && ++count == max_chars) {
            if (j > 0) return "..." + clean.substr(j);
            break;
        }
    }
    if (max_chars == 0 && !clean.empty()) return "...";
    return clean;
}

BATON_DECL std::string describe_duration(std::chrono::milliseconds d) {
    if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
    return std::to_string(d.count()) + " ms";
}

namespace process_sys {

inline char** environment() noexcept {
#if defined(__APPLE__)
    return *::_NSGetEnviron();
#else
    return ::environ;
#endif
}

// A pipe whose ends close at exec and are above 2: with this process's own stdout or stderr
// closed, an end could be 1 or 2, and the child's dup2 onto 1 and 2 would clobber it.
inline int cloexec_pipe(int fds[2]) noexcept {
#if defined(__linux__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    if (::pipe2(fds, O_CLOEXEC) != 0) return errno;
#else
    if (::pipe(fds) != 0) return errno;
    ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#endif
    for (int k = 0; k < 2; ++k) {
        if (fds[k] > 2) continue;
        int const moved = ::fcntl(fds[k], F_DUPFD_CLOEXEC, 3);
        int const e = errno;
        ::close(fds[k]);
        fds[k] = moved;
        if (moved < 0) {
            ::close(fds[1 - k]);
            return e;
        }
    }
    return 0;
}

} // namespace process_sys

BATON_DECL int spawn_piped(std::vector<std::string> const& argv, spawned_process& child) {
    if (argv.empty()) return EINVAL;
    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    if (int const e = process_sys::cloexec_pipe(out)) return e;
    if (int const e = process_sys::cloexec_pipe(err)) {
        ::close(out[0]);
        ::close(out[1]);
        return e;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int rc = ::posix_spawn_file_actions_init(&actions);
    if (rc != 0) {
        for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
        return rc;
    }
    rc = ::posix_spawnattr_init(&attr);
    if (rc != 0) {
        ::posix_spawn_file_actions_destroy(&actions);
        for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
        return rc;
    }
    // dup2 clears close-on-exec on 1 and 2; the pipe ends themselves close at exec.
    rc = ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(&actions, err[1], 2);
#if defined(__GLIBC__) && defined(_GNU_SOURCE) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // As Python's subprocess does (close_fds): descriptors the program left inheritable (its
    // sockets, a lease's files) must not stay open in a helper that may run long.
    if (rc == 0) rc = ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    // A program that ignores SIGPIPE or blocks signals (an Asio program often does) must not pass
    // that on: the child starts as the CLI's would (subprocess's restore_signals).
    sigset_t none;
    sigset_t defaults;
    ::sigemptyset(&none);
    ::sigemptyset(&defaults);
    ::sigaddset(&defaults, SIGPIPE);
    ::sigaddset(&defaults, SIGXFSZ);
    if (rc == 0) rc = ::posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0) rc = ::posix_spawnattr_setsigdefault(&attr, &defaults);
    if (rc == 0) rc = ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::pid_t pid = -1;
    if (rc == 0) rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), process_sys::environment());
    ::posix_spawnattr_destroy(&attr);
    ::posix_spawn_file_actions_destroy(&actions);
    // The child holds the write ends now; ours would keep the pipes from ever reaching their end.
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
        ::close(out[0]);
        ::close(err[0]);
        return rc;
    }
    child.pid = pid;
    child.out = out[0];
    child.err = err[0];
    return 0;
}

BATON_DECL std::string describe_spawn_error(int err, std::string_view program) {
    bool const path = program.find('/') != std::string_view::npos;
    switch (err) {
    case ENOENT: return path ? "no such file" : "no program of that name on PATH";
    case EACCES: return "permission denied (is it an executable file, on a path this process may search?)";
    case ENOEXEC: return "not an executable format (does the script start with a #! line?)";
    default: return std::generic_category().message(err);
    }
}

BATON_DECL child_exit reap_child(::pid_t pid) noexcept {
    int status = 0;
    ::pid_t r;
    do {
        r = ::waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return {child_exit::how::running, 0};
    if (r < 0) return {child_exit::how::unknown, 0};
    if (WIFSIGNALED(status)) return {child_exit::how::signaled, WTERMSIG(status)};
    if (WIFEXITED(status)) return {child_exit::how::exited, WEXITSTATUS(status)};
    return {child_exit::how::running, 0}; // stopped or continued: still alive
}

BATON_DECL void kill_child(::pid_t pid) noexcept {
    if (pid > 0) ::kill(pid, SIGKILL);
}

BATON_DECL void kill_and_reap(::pid_t pid) noexcept {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

BATON_DECL void close_fd(int fd) noexcept {
    if (fd >= 0) ::close(fd);
}

} // namespace baton::aws::detail

#endif
