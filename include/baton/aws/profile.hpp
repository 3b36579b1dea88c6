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
      sections, and `[sso-session name]` and `[services name]` sections
      that profiles refer to (other sections are checked and ignored); the
      credentials file has `[name]`. Whole-line comments start with `#` or
      `;`; in a value, `#` or `;` after white space starts a comment. An
      indented line continues the previous value, or, when that value is
      empty, is a nested setting (`s3 =` followed by indented
      `key = value` lines), kept as `s3.key`. Setting names are
      case-insensitive (stored lower-case), section names are not. The
      same key in both files: the credentials file wins.
    - Profile: `AWS_PROFILE`, then `AWS_DEFAULT_PROFILE`, then `default`.
    - Region: `AWS_REGION`, then `AWS_DEFAULT_REGION`, then the selected
      profile's `region`.

    Everything reads the environment through an `env_lookup`, so callers
    and tests can resolve against any environment without touching the
    process's own.
*/

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/environment.hpp>
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
#include <vector>

namespace baton::aws {

/// The environment reader of every resolution function here (see `baton::env_lookup`).
using env_lookup = baton::env_lookup;
using baton::fixed_environment;
using baton::process_environment;

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
    profile_setting const* find(std::string_view key) const;
    /// The value of `key` when it is set and not empty.
    std::optional<std::string> get(std::string_view key) const;
};

/// Profiles by name.
using profile_map = std::map<std::string, profile, std::less<>>;

/// Every kept section of the shared files: profiles, and the config file's `[sso-session NAME]` and `[services NAME]`.
struct shared_sections {
    /// `[default]`, `[profile NAME]` (config file) and `[NAME]` (credentials file).
    profile_map profiles;
    /// `[sso-session NAME]`: IAM Identity Center settings that profiles name with `sso_session`.
    profile_map sso_sessions;
    /// `[services NAME]`: per-service settings (`s3 =` then an indented `endpoint_url = ...`) that profiles name with `services`.
    profile_map services;
};

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
BATON_DECL std::string_view ini_strip_comment(std::string_view v) noexcept;

// A short, printable rendering of text from a file or the environment, for messages.
BATON_DECL std::string printable(std::string_view s, std::size_t max = 64);

/// What happened when reading a small file.
enum class file_read { ok, missing, failed };

/** Reads a whole small regular file, refusing directories, devices, FIFOs and files over `max_bytes`.

    `problem` receives a short reason (`no such file`, `permission denied`,
    `is 5000000 bytes, more than the 1048576-byte limit`) when the result is not `ok`.
*/
BATON_DECL file_read read_small_file(std::string const& path, std::size_t max_bytes, std::string& out,
                                 std::string& problem);

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
BATON_DECL error_code parse_profile_file(std::string_view text, profile_file_kind kind, std::string const& file,
                                     profile_map& profiles, diagnostics& diag, profile_file_limits const& limits = {});

/** As `parse_profile_file`, keeping the config file's `[sso-session NAME]` and `[services NAME]` sections too.

    Sections of one name are merged (later values win), as profiles are.
*/
BATON_DECL error_code parse_shared_file(std::string_view text, profile_file_kind kind, std::string const& file,
                                    shared_sections& out, diagnostics& diag, profile_file_limits const& limits = {});

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
BATON_DECL shared_file_locations locate_shared_files(env_lookup const& env = process_environment());

/// The profile in use and what chose it.
struct profile_choice {
    /// The profile's name.
    std::string name = "default";
    /// `AWS_PROFILE`, `AWS_DEFAULT_PROFILE`, or empty for the default.
    std::string chosen_by;

    /// True when a variable named the profile: SDKs then skip environment credentials, and a missing profile is an error.
    bool is_explicit() const noexcept { return !chosen_by.empty(); }
    /// <tt>profile 'name'</tt>, with what chose it when a variable did: for messages.
    std::string describe() const {
        return "profile '" + detail::printable(name) + "'" + (chosen_by.empty() ? "" : " (from " + chosen_by + ")");
    }
};

/// Selects the profile: `AWS_PROFILE`, then `AWS_DEFAULT_PROFILE`, then `default` (empty values count as unset).
BATON_DECL profile_choice choose_profile(env_lookup const& env = process_environment());

/// What was read from the two shared files.
struct shared_config {
    /// Profiles merged from both files (config first; the credentials file wins for the same key).
    profile_map profiles;
    /// The config file's `[sso-session NAME]` sections.
    profile_map sso_sessions;
    /// The config file's `[services NAME]` sections.
    profile_map services;
    /// Where the files are (paths may be empty, see `shared_file_locations::problem`).
    shared_file_locations files;
    /// Whether the config file was found and read.
    bool config_found = false, credentials_found = false;
    /// @var credentials_found
    /// Whether the credentials file was found and read.

    /// Why the config file was not read (`no such file`, or the location problem), for messages.
    std::string config_status, credentials_status;
    /// @var credentials_status
    /// Why the credentials file was not read (`no such file`, or the location problem), for messages.

    /// The profile named `name`, or null.
    profile const* find(std::string_view name) const;

    /// `<credentials path>: no such file; <config path>: read`-style summary, for messages.
    std::string describe_files() const;
};

/** Reads both shared files (config first, then credentials, whose values win).

    Missing files (or no `HOME`) are not errors: the status fields say why
    nothing was read.

    @return `errc::invalid_argument` when a file exists but cannot be read
    (permissions, a directory or device, over `limits.max_bytes`) or does
    not parse; `diag.message` names the file (and line) and the problem.
*/
BATON_DECL error_code load_shared_config(shared_config& out, diagnostics& diag,
                                     env_lookup const& env = process_environment(),
                                     profile_file_limits const& limits = {});

/// A region and where it came from.
struct resolved_region {
    /// The region, e.g. `eu-west-1`.
    std::string name;
    /// `AWS_REGION`, `AWS_DEFAULT_REGION`, or the profile and the line that set the region
    /// (<tt>profile 'prod' (/home/me/.aws/config line 3)</tt>): for messages.
    std::string source;
};

/// True for plausible region names: 1 to 64 of `a-z`, `0-9` and `-` (so a stray value cannot reach a host name).
BATON_DECL bool is_valid_region_name(std::string_view r) noexcept;

/** Resolves the region from already-read shared files: `AWS_REGION`, `AWS_DEFAULT_REGION`, then `choice`'s `region`.

    @return the region and its source, or `errc::invalid_argument` when a
    value is not a region name or none is set; `diag.message` then says
    which sources were consulted and how to set one.
*/
BATON_DECL boost::system::result<resolved_region> resolve_region(shared_config const& files, profile_choice const& choice,
                                                             diagnostics& diag,
                                                             env_lookup const& env = process_environment());

/** Resolves the region: `AWS_REGION`, then `AWS_DEFAULT_REGION`, then the selected profile's `region`.

    Reads the shared files only when neither variable is set.
    @return as `resolve_region(shared_config const&, ...)`, or the error of
    `load_shared_config` when a shared file is unreadable or malformed.
*/
BATON_DECL boost::system::result<resolved_region> resolve_region(diagnostics& diag,
                                                             env_lookup const& env = process_environment());

} // namespace baton::aws

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/aws/impl/profile.ipp>
#endif

#endif
