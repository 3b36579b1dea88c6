// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_PROFILE_IPP
#define BATON_AWS_IMPL_PROFILE_IPP
// Layer: wire (aws), internal. The compiled part of aws/profile.hpp: the shared config and
// credentials files (INI), and the choice of profile.
#include <baton/aws/profile.hpp>


namespace baton::aws {
namespace detail {

BATON_DECL std::string_view ini_strip_comment(std::string_view v) noexcept {
    for (std::size_t i = 1; i < v.size(); ++i)
        if ((v[i] == '#' || v[i] == ';') && ini_space(v[i - 1])) return baton::detail::trim(v.substr(0, i));
    if (!v.empty() && (v.front() == '#' || v.front() == ';')) return {};
    return v;
}

BATON_DECL std::string printable(std::string_view s, std::size_t max) {
    std::string out;
    for (char c : s.substr(0, max)) {
        auto const u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
    if (s.size() > max) out += "...";
    return out;
}

BATON_DECL file_read read_small_file(std::string const& path, std::size_t max_bytes, std::string& out,
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
} // namespace baton::aws

namespace baton::aws {

BATON_DECL error_code parse_profile_file(std::string_view text, profile_file_kind kind, std::string const& file,
                                     profile_map& profiles, diagnostics& diag, profile_file_limits const& limits) {
    shared_sections sections;
    sections.profiles = std::move(profiles);
    auto ec = parse_shared_file(text, kind, file, sections, diag, limits);
    profiles = std::move(sections.profiles);
    return ec;
}

BATON_DECL error_code parse_shared_file(std::string_view text, profile_file_kind kind, std::string const& file,
                                    shared_sections& out, diagnostics& diag, profile_file_limits const& limits) {
    auto fail = [&](unsigned line, std::string const& why) -> error_code {
        diag.message = file + (line != 0 ? " line " + std::to_string(line) : std::string()) + ": " + why;
        return errc::invalid_argument;
    };
    if (text.size() > limits.max_bytes)
        return fail(0, "the file is " + std::to_string(text.size()) + " bytes, more than the " +
                           std::to_string(limits.max_bytes) + "-byte limit for shared AWS files; is it the right file?");
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

    profile* section = nullptr;       // the section being filled, or null in a skipped section
    bool in_section = false;          // after any header (kept or skipped)
    profile_setting* last = nullptr;  // the setting an indented line would continue
    bool last_is_parent = false;      // `key =` with an empty value: indented lines are nested settings
    std::string parent;               // that key: nested settings are stored as `parent.name`
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
                // A nested setting (`s3 =` then `  addressing_style = path`), kept as `s3.addressing_style`.
                auto const eq = line.find('=');
                auto const nested = eq == std::string_view::npos ? std::string_view() : baton::detail::trim(line.substr(0, eq));
                if (nested.empty()) return fail(lineno, "expected an indented 'name = value' under the setting above");
                if (section != nullptr) {
                    std::string key = parent + "." + std::string(nested);
                    for (char& c : key)
                        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
                    section->settings[key] = profile_setting{
                        std::string(detail::ini_strip_comment(baton::detail::trim(line.substr(eq + 1)))), file, lineno};
                }
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
            profile_map* into = &out.profiles;
            // `[word name]`, split as the CLI splits it (shlex): `[profile "a b"]` names `a b`; more than
            // one name, or an unclosed quote, and the CLI ignores the section.
            std::vector<std::string> words;
            bool splits = true;
            {
                std::string w;
                bool in_word = false;
                for (std::size_t i = 0; i < inner.size() && splits; ++i) {
                    char const c = inner[i];
                    if (detail::ini_space(c)) {
                        if (in_word) words.push_back(std::move(w)), w.clear(), in_word = false;
                    } else if (c == '\'' || c == '"') {
                        auto const close = inner.find(c, i + 1);
                        if (close == std::string_view::npos) splits = false;
                        else w += inner.substr(i + 1, close - i - 1), i = close, in_word = true;
                    } else {
                        w += c, in_word = true;
                    }
                }
                if (in_word) words.push_back(std::move(w));
            }
            bool ignored = false;
            auto named = [&](std::string_view word) {
                if (words.empty() || words[0] != word) return false;
                if (!splits || words.size() > 2) ignored = true;
                else if (words.size() == 2) name = words[1];
                return true; // with no name: refused below for a profile, ignored for the others
            };
            if (kind == profile_file_kind::credentials) {
                name = std::string(inner);
            } else if (inner == "default") {
                name = "default";
            } else if (named("profile")) {
            } else if (named("sso-session")) {
                into = &out.sso_sessions;
            } else if (named("services")) {
                into = &out.services;
            } else {
                into = nullptr; // a section the SDKs ignore too
            }
            // The SDKs ignore a section they cannot split into a word and a name; a nameless
            // profile is refused, as before, since it was surely meant to be one.
            if (ignored) into = nullptr;
            if (into != nullptr && into != &out.profiles && name.empty()) into = nullptr;
            if (into == &out.profiles && name.empty()) return fail(lineno, "a profile section without a name");
            in_section = true;
            if (into != nullptr) {
                section = &(*into)[name];
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
        parent = key;
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

BATON_DECL shared_file_locations locate_shared_files(env_lookup const& env) {
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

BATON_DECL profile_choice choose_profile(env_lookup const& env) {
    for (char const* var : {"AWS_PROFILE", "AWS_DEFAULT_PROFILE"}) {
        auto v = env(var);
        if (v && !v->empty()) return profile_choice{*v, var};
    }
    return profile_choice{};
}

BATON_DECL error_code load_shared_config(shared_config& out, diagnostics& diag,
                                     env_lookup const& env,
                                     profile_file_limits const& limits) {
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
        shared_sections sections{std::move(out.profiles), std::move(out.sso_sessions), std::move(out.services)};
        auto ec = parse_shared_file(text, kind, path, sections, diag, limits);
        out.profiles = std::move(sections.profiles);
        out.sso_sessions = std::move(sections.sso_sessions);
        out.services = std::move(sections.services);
        return ec;
    };
    if (auto ec = load(out.files.config, profile_file_kind::config, out.config_found, out.config_status)) return ec;
    return load(out.files.credentials, profile_file_kind::credentials, out.credentials_found, out.credentials_status);
}

BATON_DECL bool is_valid_region_name(std::string_view r) noexcept {
    if (r.empty() || r.size() > 64) return false;
    for (char c : r)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return true;
}

BATON_DECL boost::system::result<resolved_region> resolve_region(shared_config const& files, profile_choice const& choice,
                                                             diagnostics& diag,
                                                             env_lookup const& env) {
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

BATON_DECL boost::system::result<resolved_region> resolve_region(diagnostics& diag,
                                                             env_lookup const& env) {
    for (char const* var : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
        auto v = env(var);
        if (v && !v->empty()) return resolve_region(shared_config{}, profile_choice{}, diag, env);
    }
    shared_config files;
    if (auto ec = load_shared_config(files, diag, env)) return ec;
    return resolve_region(files, choose_profile(env), diag, env);
}

} // namespace baton::aws

namespace baton::aws {

BATON_DECL profile_setting const* profile::find(std::string_view key) const {
    auto const it = settings.find(key);
    return it == settings.end() ? nullptr : &it->second;
}

BATON_DECL std::optional<std::string> profile::get(std::string_view key) const {
    auto const* s = find(key);
    if (s == nullptr || s->value.empty()) return std::nullopt;
    return s->value;
}

BATON_DECL profile const* shared_config::find(std::string_view name) const {
    auto const it = profiles.find(name);
    return it == profiles.end() ? nullptr : &it->second;
}

BATON_DECL std::string shared_config::describe_files() const {
    auto one = [](std::string const& path, bool found, std::string const& status) {
        return (path.empty() ? std::string("(no path)") : path) + ": " + (found ? "read" : status);
    };
    return one(files.credentials, credentials_found, credentials_status) + "; " +
           one(files.config, config_found, config_status);
}

} // namespace baton::aws

#endif
