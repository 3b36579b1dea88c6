// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_PROFILE_HPP
#define BATON_AWS_PROFILE_HPP

/** @file
    Layer: wire (aws). The AWS shared `config` and `credentials` files, profile selection and
    region resolution, as the AWS SDKs and the CLI do them.

    - Files: `AWS_CONFIG_FILE` (default `~/.aws/config`) and
      `AWS_SHARED_CREDENTIALS_FILE` (default `~/.aws/credentials`); `~`
      is `HOME`. A missing file is not an error; an unreadable, oversized,
      binary or malformed one is, with a message naming the file and line.
    - Format: INI. The config file has `[default]` and `[profile name]`
      sections (other sections such as `[sso-session x]` and `[services x]`
      are read and ignored); the credentials file has `[name]`. Whole-line
      comments start with `#` or `;`; in a value, `#` or `;` after white
      space starts a comment. An indented line continues the previous
      value, or, when that value is empty, is a nested setting (`s3 =`
      followed by indented `key = value` lines), which is skipped. Setting
      names are case-insensitive (stored lower-case), profile names are
      not. The same key in both files: the credentials file wins.
    - Profile: `AWS_PROFILE`, then `AWS_DEFAULT_PROFILE`, then `default`.
    - Region: `AWS_REGION`, then `AWS_DEFAULT_REGION`, then the selected
      profile's `region`.

    Everything reads the environment through an `env_lookup`, so callers
    and tests can resolve against any environment without touching the
    process's own.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>

#include <boost/system/result.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace baton::aws {

/** Reads one environment variable: its value, or nothing when it is not set.

    Every resolution function takes one, so that configuration can be
    resolved against a chosen environment (tests, embedding) instead of the
    process's. Must be safe to call from any thread the caller uses.
*/
using env_lookup = std::function<std::optional<std::string>(std::string_view)>;

/// The process environment (`getenv`), the default for every resolution function.
inline env_lookup process_environment() {
    return [](std::string_view name) -> std::optional<std::string> {
        std::string const key(name);
        char const* v = std::getenv(key.c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
    };
}

/// A fixed environment holding exactly `vars`, e.g. for resolving configuration apart from the process's.
inline env_lookup fixed_environment(std::map<std::string, std::string, std::less<>> vars) {
    auto shared = std::make_shared<std::map<std::string, std::string, std::less<>> const>(std::move(vars));
    return [shared](std::string_view name) -> std::optional<std::string> {
        auto const it = shared->find(name);
        if (it == shared->end()) return std::nullopt;
        return it->second;
    };
}

/// One `key = value` of a profile, and where it was read (for messages that point at the line to fix).
struct profile_setting {
    /// The value, trimmed, without a trailing comment; continuation lines are joined with `\n`.
    std::string value;
    /// The file it came from, as named in messages.
    std::string file;
    /// Its line in that file (1-based).
    unsigned line = 0;

    /// `file line N`, for messages.
    std::string where() const { return file + " line " + std::to_string(line); }
};

/// A named profile: its settings by lower-case name, merged from both shared files.
struct profile {
    /// The profile's name (`default`, or `name` of `[profile name]`).
    std::string name;
    /// Settings by lower-case name.
    std::map<std::string, profile_setting, std::less<>> settings;

    /// The setting named `key` (lower-case), or null.
    profile_setting const* find(std::string_view key) const {
        auto const it = settings.find(key);
        return it == settings.end() ? nullptr : &it->second;
    }
    /// The value of `key` when it is set and not empty.
    std::optional<std::string> get(std::string_view key) const {
        auto const* s = find(key);
        if (s == nullptr || s->value.empty()) return std::nullopt;
        return s->value;
    }
};

/// Profiles by name.
using profile_map = std::map<std::string, profile, std::less<>>;

/// Which of the two shared files a text comes from: their section headers differ.
enum class profile_file_kind {
    /// `~/.aws/config`: `[default]` and `[profile name]`.
    config,
    /// `~/.aws/credentials`: `[name]`.
    credentials,
};

/// Bounds on what the shared-file parser accepts, so a wrong or hostile file is refused instead of read.
struct profile_file_limits {
    /// Largest file accepted. Default 1 MiB (real files are a few KiB).
    std::size_t max_bytes = 1024u * 1024u;
    /// Longest line accepted. Default 32 KiB (a session token is a few KiB).
    std::size_t max_line_bytes = 32u * 1024u;
};

namespace detail {

inline bool ini_space(char c) noexcept { return c == ' ' || c == '\t'; }

// A `#` or `;` preceded by white space starts a comment inside a value.
inline std::string_view ini_strip_comment(std::string_view v) noexcept {
    for (std::size_t i = 1; i < v.size(); ++i)
        if ((v[i] == '#' || v[i] == ';') && ini_space(v[i - 1])) return baton::detail::trim(v.substr(0, i));
    if (!v.empty() && (v.front() == '#' || v.front() == ';')) return {};
    return v;
}

// A short, printable rendering of text from a file or the environment, for messages.
inline std::string printable(std::string_view s, std::size_t max = 64) {
    std::string out;
    for (char c : s.substr(0, max)) {
        auto const u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
    if (s.size() > max) out += "...";
    return out;
}

/// What happened when reading a small file.
enum class file_read { ok, missing, failed };

/** Reads a whole small regular file, refusing directories, devices, FIFOs and files over `max_bytes`.

    `problem` receives a short reason (`no such file`, `permission denied`,
    `is 5000000 bytes, more than the 1048576-byte limit`) when the result is not `ok`.
*/
inline file_read read_small_file(std::string const& path, std::size_t max_bytes, std::string& out,
                                 std::string& problem) {
    out.clear();
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int const e = errno;
        if (e == ENOENT || e == ENOTDIR) {
            problem = "no such file";
            return file_read::missing;
        }
        problem = e == EACCES ? std::string("permission denied") : std::string(std::strerror(e));
        return file_read::failed;
    }
    struct closer {
        int fd;
        ~closer() { ::close(fd); }
    } const guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        problem = std::strerror(errno);
        return file_read::failed;
    }
    if (S_ISDIR(st.st_mode)) {
        problem = "is a directory, not a file";
        return file_read::failed;
    }
    if (!S_ISREG(st.st_mode)) {
        problem = "is not a regular file (a device, FIFO or socket)";
        return file_read::failed;
    }
    auto const limit_text = [&] { return "more than the " + std::to_string(max_bytes) + "-byte limit"; };
    if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
        problem = "is " + std::to_string(static_cast<unsigned long long>(st.st_size)) + " bytes, " + limit_text();
        return file_read::failed;
    }
    // The file may grow between fstat and read: read at most one byte past the limit to notice.
    out.resize(static_cast<std::size_t>(st.st_size) + 1);
    std::size_t got = 0;
    for (;;) {
        if (got == out.size()) {
            if (got > max_bytes) {
                problem = "grew past " + limit_text() + " while being read";
                out.clear();
                return file_read::failed;
            }
            out.resize(std::min(out.size() * 2 + 1, max_bytes + 1));
        }
        auto const n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            problem = std::strerror(errno);
            out.clear();
            return file_read::failed;
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    out.resize(got);
    return file_read::ok;
}

} // namespace detail

/** Parses the text of one shared file and merges its profiles into `profiles` (later values win).

    `file` names the file in messages. Sections that are not profiles
    (config-file sections other than `[default]` and `[profile name]`) are
    checked for syntax and skipped.

    @return `errc::invalid_argument` with `diag.message` naming the file,
    the line and the rule broken: a file over `limits.max_bytes`, a line
    over `limits.max_line_bytes`, control characters or NUL bytes (not a
    text file), a section header without `]` or with text after it, an
    empty profile name, a setting before any section, a line that is not
    `name = value`. `profiles` may then hold part of the file.
*/
inline error_code parse_profile_file(std::string_view text, profile_file_kind kind, std::string const& file,
                                     profile_map& profiles, diagnostics& diag, profile_file_limits const& limits = {}) {
    auto fail = [&](unsigned line, std::string const& why) -> error_code {
        diag.message = file + (line != 0 ? " line " + std::to_string(line) : std::string()) + ": " + why;
        return errc::invalid_argument;
    };
    if (text.size() > limits.max_bytes)
        return fail(0, "the file is " + std::to_string(text.size()) + " bytes, more than the " +
                           std::to_string(limits.max_bytes) + "-byte limit for shared AWS files; is it the right file?");
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

    profile* section = nullptr;       // the profile being filled, or null in a skipped section
    bool in_section = false;          // after any header (profile or skipped)
    profile_setting* last = nullptr;  // the setting an indented line would continue
    bool last_is_parent = false;      // `key =` with an empty value: indented lines are nested settings
    bool last_in_skipped = false;     // the last setting belongs to a skipped section
    unsigned lineno = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto const end = text.find('\n', pos);
        std::string_view raw = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
        pos = end == std::string_view::npos ? text.size() : end + 1;
        ++lineno;
        if (raw.size() > limits.max_line_bytes)
            return fail(lineno, "the line is " + std::to_string(raw.size()) + " bytes, more than the " +
                                    std::to_string(limits.max_line_bytes) + "-byte limit");
        for (char c : raw) {
            auto const u = static_cast<unsigned char>(c);
            if ((u < 0x20 && c != '\t' && c != '\r') || u == 0x7f)
                return fail(lineno, "control character " + std::to_string(u) + ": this is not a text file");
        }
        auto const line = baton::detail::trim(raw);
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;

        bool const indented = detail::ini_space(raw.front());
        if (indented && (last != nullptr || last_in_skipped || last_is_parent)) {
            if (last_is_parent) {
                // A nested setting (`s3 =` then `  max_concurrent_requests = 10`): checked, then skipped.
                auto const eq = line.find('=');
                if (eq == std::string_view::npos || baton::detail::trim(line.substr(0, eq)).empty())
                    return fail(lineno, "expected an indented 'name = value' under the setting above");
            } else if (last != nullptr) {
                last->value += '\n';
                last->value += detail::ini_strip_comment(line);
            }
            continue;
        }
        last = nullptr;
        last_is_parent = false;
        last_in_skipped = false;

        if (line.front() == '[') {
            auto const close = line.find(']');
            if (close == std::string_view::npos) return fail(lineno, "a section header without a closing ']'");
            auto const after = baton::detail::trim(line.substr(close + 1));
            if (!after.empty() && after.front() != '#' && after.front() != ';')
                return fail(lineno, "unexpected text after the section header's ']'");
            auto const inner = baton::detail::trim(line.substr(1, close - 1));
            std::string name;
            bool is_profile = true;
            if (kind == profile_file_kind::credentials) {
                name = std::string(inner);
            } else if (inner == "default") {
                name = "default";
            } else if (inner.substr(0, 7) == "profile" && inner.size() > 7 && detail::ini_space(inner[7])) {
                name = std::string(baton::detail::trim(inner.substr(8)));
            } else if (inner == "profile") {
                name.clear();
            } else {
                is_profile = false; // [sso-session x], [services x], or a section the SDKs ignore too
            }
            if (is_profile && name.empty()) return fail(lineno, "a profile section without a name");
            in_section = true;
            if (is_profile) {
                section = &profiles[name];
                section->name = name;
            } else {
                section = nullptr;
            }
            continue;
        }

        if (!in_section) return fail(lineno, "a setting before the first [section] header");
        auto const eq = line.find('=');
        if (eq == std::string_view::npos) return fail(lineno, "expected 'name = value' or a [section] header");
        auto const key_view = baton::detail::trim(line.substr(0, eq));
        if (key_view.empty()) return fail(lineno, "a setting without a name before '='");
        std::string key(key_view);
        for (char& c : key)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        auto const value = detail::ini_strip_comment(baton::detail::trim(line.substr(eq + 1)));
        last_is_parent = value.empty();
        if (section == nullptr) {
            last_in_skipped = true;
            continue;
        }
        auto& s = section->settings[key];
        s = profile_setting{std::string(value), file, lineno};
        last = last_is_parent ? nullptr : &s;
    }
    return {};
}

/// Where the shared files are, and why one has no location (no `HOME`).
struct shared_file_locations {
    /// The config file's path, or empty when it cannot be located.
    std::string config;
    /// The credentials file's path, or empty when it cannot be located.
    std::string credentials;
    /// Why a path is empty (e.g. `HOME is not set`).
    std::string problem;
};

/** Locates the shared files: `AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`, else under `$HOME/.aws/`.

    A leading `~/` in the variables is replaced by `HOME`, as the SDKs do.
*/
inline shared_file_locations locate_shared_files(env_lookup const& env = process_environment()) {
    shared_file_locations out;
    auto const home_value = env("HOME");
    std::optional<std::string> home;
    if (home_value && !home_value->empty()) home = *home_value;
    auto place = [&](char const* var, char const* leaf, std::string& path) {
        auto v = env(var);
        if (v && !v->empty()) {
            if ((*v == "~" || v->rfind("~/", 0) == 0)) {
                if (!home) {
                    out.problem = std::string(var) + " starts with '~' and HOME is not set";
                    return;
                }
                path = *home + v->substr(1);
                return;
            }
            path = *v;
            return;
        }
        if (!home) {
            out.problem = std::string("HOME is not set and ") + var + " is not set";
            return;
        }
        path = *home + (home->back() == '/' ? "" : "/") + ".aws/" + leaf;
    };
    place("AWS_CONFIG_FILE", "config", out.config);
    place("AWS_SHARED_CREDENTIALS_FILE", "credentials", out.credentials);
    return out;
}

/// The profile in use and what chose it.
struct profile_choice {
    /// The profile's name.
    std::string name = "default";
    /// `AWS_PROFILE`, `AWS_DEFAULT_PROFILE`, or empty for the default.
    std::string chosen_by;

    /// True when a variable named the profile: SDKs then skip environment credentials, and a missing profile is an error.
    bool is_explicit() const noexcept { return !chosen_by.empty(); }
    /// `profile 'name'`, with what chose it when a variable did: for messages.
    std::string describe() const {
        return "profile '" + detail::printable(name) + "'" + (chosen_by.empty() ? "" : " (from " + chosen_by + ")");
    }
};

/// Selects the profile: `AWS_PROFILE`, then `AWS_DEFAULT_PROFILE`, then `default` (empty values count as unset).
inline profile_choice choose_profile(env_lookup const& env = process_environment()) {
    for (char const* var : {"AWS_PROFILE", "AWS_DEFAULT_PROFILE"}) {
        auto v = env(var);
        if (v && !v->empty()) return profile_choice{*v, var};
    }
    return profile_choice{};
}

/// What was read from the two shared files.
struct shared_config {
    /// Profiles merged from both files (config first; the credentials file wins for the same key).
    profile_map profiles;
    /// Where the files are (paths may be empty, see `shared_file_locations::problem`).
    shared_file_locations files;
    /// Whether each file was found and read.
    bool config_found = false, credentials_found = false;
    /// Why a file was not read (`no such file`, or the location problem), for messages.
    std::string config_status, credentials_status;

    /// The profile named `name`, or null.
    profile const* find(std::string_view name) const {
        auto const it = profiles.find(name);
        return it == profiles.end() ? nullptr : &it->second;
    }

    /// `<credentials path>: no such file; <config path>: read`-style summary, for messages.
    std::string describe_files() const {
        auto one = [](std::string const& path, bool found, std::string const& status) {
            return (path.empty() ? std::string("(no path)") : path) + ": " + (found ? "read" : status);
        };
        return one(files.credentials, credentials_found, credentials_status) + "; " +
               one(files.config, config_found, config_status);
    }
};

/** Reads both shared files (config first, then credentials, whose values win).

    Missing files (or no `HOME`) are not errors: the status fields say why
    nothing was read.

    @return `errc::invalid_argument` when a file exists but cannot be read
    (permissions, a directory or device, over `limits.max_bytes`) or does
    not parse; `diag.message` names the file (and line) and the problem.
*/
inline error_code load_shared_config(shared_config& out, diagnostics& diag,
                                     env_lookup const& env = process_environment(),
                                     profile_file_limits const& limits = {}) {
    out = shared_config{};
    out.files = locate_shared_files(env);
    auto load = [&](std::string const& path, profile_file_kind kind, bool& found, std::string& status) -> error_code {
        if (path.empty()) {
            status = out.files.problem;
            return {};
        }
        std::string text, problem;
        switch (detail::read_small_file(path, limits.max_bytes, text, problem)) {
        case detail::file_read::missing: status = problem; return {};
        case detail::file_read::failed:
            diag.message = path + ": cannot read the shared AWS " +
                           (kind == profile_file_kind::config ? "config" : "credentials") + " file: " + problem;
            return errc::invalid_argument;
        case detail::file_read::ok: break;
        }
        found = true;
        return parse_profile_file(text, kind, path, out.profiles, diag, limits);
    };
    if (auto ec = load(out.files.config, profile_file_kind::config, out.config_found, out.config_status)) return ec;
    return load(out.files.credentials, profile_file_kind::credentials, out.credentials_found, out.credentials_status);
}

/// A region and where it came from.
struct resolved_region {
    /// The region, e.g. `eu-west-1`.
    std::string name;
    /// `AWS_REGION`, `AWS_DEFAULT_REGION`, or `profile 'x' (<file> line N)`: for messages.
    std::string source;
};

/// True for plausible region names: 1 to 64 of `a-z`, `0-9` and `-` (so a stray value cannot reach a host name).
inline bool is_valid_region_name(std::string_view r) noexcept {
    if (r.empty() || r.size() > 64) return false;
    for (char c : r)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return true;
}

/** Resolves the region from already-read shared files: `AWS_REGION`, `AWS_DEFAULT_REGION`, then `choice`'s `region`.

    @return the region and its source, or `errc::invalid_argument` when a
    value is not a region name or none is set; `diag.message` then says
    which sources were consulted and how to set one.
*/
inline boost::system::result<resolved_region> resolve_region(shared_config const& files, profile_choice const& choice,
                                                             diagnostics& diag,
                                                             env_lookup const& env = process_environment()) {
    auto checked = [&](std::string value, std::string source) -> boost::system::result<resolved_region> {
        if (!is_valid_region_name(value)) {
            diag.message = source + " is '" + detail::printable(value) +
                           "', which is not a region name (lower-case letters, digits and '-', e.g. us-east-1)";
            return error_code(errc::invalid_argument);
        }
        return resolved_region{std::move(value), std::move(source)};
    };
    for (char const* var : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
        auto v = env(var);
        if (v && !v->empty()) return checked(*v, var);
    }
    std::string why;
    if (auto const* p = files.find(choice.name)) {
        if (auto const* r = p->find("region"); r != nullptr && !r->value.empty())
            return checked(r->value, "profile '" + detail::printable(choice.name) + "' (" + r->where() + ")");
        why = choice.describe() + " has no region";
    } else {
        why = choice.describe() + " is not in the shared files (" + files.describe_files() + ")";
    }
    diag.message = "no AWS region: AWS_REGION and AWS_DEFAULT_REGION are not set and " + why +
                   "; set AWS_REGION (e.g. us-east-1) or add 'region = ...' to the profile";
    return error_code(errc::invalid_argument);
}

/** Resolves the region: `AWS_REGION`, then `AWS_DEFAULT_REGION`, then the selected profile's `region`.

    Reads the shared files only when neither variable is set.
    @return as `resolve_region(shared_config const&, ...)`, or the error of
    `load_shared_config` when a shared file is unreadable or malformed.
*/
inline boost::system::result<resolved_region> resolve_region(diagnostics& diag,
                                                             env_lookup const& env = process_environment()) {
    for (char const* var : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
        auto v = env(var);
        if (v && !v->empty()) return resolve_region(shared_config{}, profile_choice{}, diag, env);
    }
    shared_config files;
    if (auto ec = load_shared_config(files, diag, env)) return ec;
    return resolve_region(files, choose_profile(env), diag, env);
}

} // namespace baton::aws

#endif
