// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_CREDENTIAL_SOURCE_IPP
#define BATON_AWS_IMPL_CREDENTIAL_SOURCE_IPP
// Layer: wire (aws), internal. The compiled part of aws/detail/credential_source.hpp: reading and checking credentials from each source.
#include <baton/aws/detail/credential_source.hpp>

namespace baton::aws::detail {

BATON_DECL source_outcome found_outcome(std::string label, credentials c) {
    source_outcome o;
    o.what = source_outcome::kind::found;
    o.creds = std::make_shared<credentials const>(std::move(c));
    o.label = std::move(label);
    return o;
}

BATON_DECL source_outcome absent_outcome(std::string label, std::string reason) {
    source_outcome o;
    o.what = source_outcome::kind::absent;
    o.label = std::move(label);
    o.reason = std::move(reason);
    return o;
}

BATON_DECL source_outcome failed_outcome(std::string label, error_code ec, std::string reason, diagnostics d) {
    source_outcome o;
    o.what = source_outcome::kind::failed;
    o.ec = ec;
    o.label = std::move(label);
    o.reason = std::move(reason);
    o.diag = std::move(d);
    return o;
}

BATON_DECL std::optional<std::string> credentials_problem(credentials const& c) {
    auto bad_chars = [](std::string const& s) {
        return std::any_of(s.begin(), s.end(), [](char ch) {
            auto const u = static_cast<unsigned char>(ch);
            return u <= 0x20 || u == 0x7f;
        });
    };
    if (c.access_key_id.empty()) return "the access key id is empty";
    if (c.secret_access_key.empty()) return "the secret access key is empty";
    if (bad_chars(c.access_key_id)) return "the access key id contains white space or control characters";
    if (bad_chars(c.secret_access_key))
        return "the secret access key contains white space or control characters (is a line indented by mistake?)";
    if (bad_chars(c.session_token))
        return "the session token contains white space or control characters (is a line indented by mistake?)";
    return std::nullopt;
}

BATON_DECL bool env_true(env_lookup const& env, char const* name) {
    auto v = env(name);
    if (!v) return false;
    std::string s = *v;
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s == "true";
}

BATON_DECL std::optional<std::string> env_value(env_lookup const& env, char const* name) {
    auto v = env(name);
    if (!v || v->empty()) return std::nullopt;
    return v;
}

BATON_DECL std::string scrub(std::string text, std::string_view secret) {
    if (secret.size() < 4) return text;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
        text.replace(at, secret.size(), "***");
    // A service may echo part of a long secret, cut to a limit of its own: any run of 16 or more of its
    // characters goes too (16 random characters never occur in a message by chance).
    constexpr std::size_t piece = 16;
    for (std::size_t i = 0; i + piece <= secret.size(); ++i) {
        auto const fragment = secret.substr(i, piece);
        for (auto at = text.find(fragment); at != std::string::npos; at = text.find(fragment, at + 3)) {
            std::size_t begin = at, from = i, end = at + piece, to = i + piece;
            while (begin > 0 && from > 0 && text[begin - 1] == secret[from - 1]) --begin, --from;
            while (end < text.size() && to < secret.size() && text[end] == secret[to]) ++end, ++to;
            text.replace(begin, end - begin, "***");
            at = begin;
        }
    }
    return text;
}

BATON_DECL std::string redacted_excerpt(std::string_view text, std::vector<std::string> const& secrets,
                                        std::size_t max) {
    std::string out(text);
    for (auto const& s : secrets) out = scrub(std::move(out), s);
    return printable(out, max);
}

BATON_DECL bool header_safe(std::string_view v) {
    return !v.empty() && std::none_of(v.begin(), v.end(), [](char ch) {
        auto const u = static_cast<unsigned char>(ch);
        return (u < 0x20 && ch != '\t') || u == 0x7f;
    });
}

BATON_DECL std::string_view trim_token(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    return s;
}

BATON_DECL boost::system::result<url_target> split_url(std::string_view url, std::string& problem) {
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed) {
        problem = "not a valid URL (" + parsed.error().message() + ")";
        return error_code(errc::invalid_argument);
    }
    auto const& u = *parsed;
    if (!u.has_authority()) {
        problem = "it has no host";
        return error_code(errc::invalid_argument);
    }
    std::string origin(u.scheme());
    origin += "://";
    origin += u.encoded_authority();
    diagnostics d;
    auto ep = http::parse_endpoint(origin, d);
    if (!ep) {
        problem = d.message;
        return ep.error();
    }
    if (u.has_fragment()) {
        problem = "it must not have a fragment";
        return error_code(errc::invalid_argument);
    }
    url_target out{*ep, std::string(u.encoded_path())};
    if (out.target.empty() || out.target.front() != '/') out.target.insert(out.target.begin(), '/');
    if (u.has_query()) {
        out.target += '?';
        out.target += u.encoded_query();
    }
    return out;
}

BATON_DECL std::string join_target(std::string const& base, std::string_view path) {
    std::string out = base;
    auto const q = out.find('?');
    if (q != std::string::npos) out.resize(q);
    while (!out.empty() && out.back() == '/') out.pop_back();
    out += path;
    return out;
}

BATON_DECL std::string describe_transport_failure(std::string const& what, http::request_info const& info,
                                              error_code ec) {
    return what + ": " + (info.diag.message.empty() ? ec.message() : info.diag.message);
}

BATON_DECL error_code parse_json_credentials(std::string_view body, credentials& out, std::string& reason,
                                         diagnostics& diag) {
    boost::system::error_code jec;
    boost::json::value const v = boost::json::parse(body, jec);
    if (jec) {
        reason = "the response is not valid JSON (" + jec.message() + ")";
        return errc::invalid_response;
    }
    auto const* obj = v.if_object();
    if (obj == nullptr) {
        reason = "the response is not a JSON object";
        return errc::invalid_response;
    }
    auto field = [&](char const* name) -> std::optional<std::string> {
        auto const* f = obj->if_contains(name);
        if (f == nullptr || !f->is_string()) return std::nullopt;
        return std::string(f->as_string());
    };
    if (auto const* code = obj->if_contains("Code")) {
        if (!code->is_string()) {
            reason = "the response's 'Code' is not a string";
            return errc::invalid_response;
        }
        if (code->as_string() != "Success") {
            diag.service_code = printable(std::string_view(code->as_string()));
            auto const msg = field("Message");
            reason = "the endpoint answered with Code '" + diag.service_code + "'" +
                     (msg ? ": " + printable(*msg, 200) : std::string());
            return errc::auth_failed;
        }
    }
    for (char const* name : {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}) {
        auto const value = field(name);
        if (!value || value->empty()) {
            reason = std::string("the response has no '") + name + "' string";
            return errc::invalid_response;
        }
    }
    out.access_key_id = *field("AccessKeyId");
    out.secret_access_key = *field("SecretAccessKey");
    out.session_token = *field("Token");
    auto const expiration = *field("Expiration");
    out.expiration = parse_iso8601(expiration);
    if (!out.expiration) {
        reason = "the response's 'Expiration' ('" + printable(expiration, 40) + "') is not an ISO 8601 time";
        return errc::invalid_response;
    }
    if (auto p = credentials_problem(out)) {
        reason = "the response's credentials are unusable: " + *p;
        return errc::invalid_response;
    }
    return {};
}

BATON_DECL error_code status_error(unsigned status) {
    if (status == 401 || status == 403) return errc::auth_failed;
    if (status == 429) return errc::throttled;
    if (status >= 500) return errc::service_unavailable;
    return errc::invalid_response;
}

} // namespace baton::aws::detail

namespace baton::aws::detail {

BATON_DECL source_outcome environment_source::read() const {
    if (skip_) {
        auto const choice = choose_profile(env_);
        if (choice.is_explicit()) return absent_outcome(name(), "skipped: " + choice.chosen_by + " is set");
    }
    auto const id = env_value(env_, "AWS_ACCESS_KEY_ID");
    auto const secret = env_value(env_, "AWS_SECRET_ACCESS_KEY");
    if (!id)
        return absent_outcome(name(), secret ? "AWS_ACCESS_KEY_ID not set, though AWS_SECRET_ACCESS_KEY is"
                                             : "AWS_ACCESS_KEY_ID not set");
    if (!secret)
        return failed_outcome(name(), errc::no_credentials,
                              "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both, or neither");
    credentials c;
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    if (auto t = env_value(env_, "AWS_SESSION_TOKEN"))
        c.session_token = *t;
    else if (auto legacy = env_value(env_, "AWS_SECURITY_TOKEN"))
        c.session_token = *legacy;
    if (auto e = env_value(env_, "AWS_CREDENTIAL_EXPIRATION")) {
        c.expiration = parse_iso8601(*e);
        if (!c.expiration)
            return failed_outcome(name(), errc::no_credentials,
                                  "AWS_CREDENTIAL_EXPIRATION ('" + printable(*e, 40) +
                                      "') is not an ISO 8601 time such as 2026-01-31T12:00:00Z");
    }
    if (auto p = credentials_problem(c)) return failed_outcome(name(), errc::no_credentials, "unusable: " + *p);
    return found_outcome(name(), std::move(c));
}

} // namespace baton::aws::detail

#endif
