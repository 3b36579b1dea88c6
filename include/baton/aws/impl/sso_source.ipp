// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_AWS_IMPL_SSO_SOURCE_IPP
#define BATON_AWS_IMPL_SSO_SOURCE_IPP

// Layer: wire (aws), internal. The compiled part of aws/detail/sso_source.hpp: the token cache (its
// name, its fields, writing it back), the CreateToken and GetRoleCredentials documents, and the
// classification of the services' refusals.
#include <baton/aws/detail/sso_source.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace baton::aws::detail {

BATON_DECL std::string sso_cache_file_name(sso_settings const& s) {
    std::string_view const key = s.session_name.empty() ? std::string_view(s.start_url) : s.session_name;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(key.data(), key.size(), md, &len, EVP_sha1(), nullptr) != 1 || len != 20) return {};
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * len + 5);
    for (unsigned int i = 0; i < len; ++i) {
        out += hex[md[i] >> 4];
        out += hex[md[i] & 0xf];
    }
    out += ".json";
    return out;
}

namespace sso_json {
// A string member, or null when it is absent or of another type.
inline boost::json::string const* string_field(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(key);
    return v != nullptr ? v->if_string() : nullptr;
}

// A JSON number that is a whole number (services send integers; an integral double is accepted too).
inline bool whole_number(boost::json::value const& v, std::int64_t& out) {
    if (auto const* i = v.if_int64()) {
        out = *i;
        return true;
    }
    if (auto const* u = v.if_uint64()) {
        if (*u > static_cast<std::uint64_t>(INT64_MAX)) return false;
        out = static_cast<std::int64_t>(*u);
        return true;
    }
    if (auto const* d = v.if_double()) {
        if (!std::isfinite(*d) || std::floor(*d) != *d || std::fabs(*d) > 9.0e15) return false;
        out = static_cast<std::int64_t>(*d);
        return true;
    }
    return false;
}
} // namespace sso_json

BATON_DECL bool parse_sso_token(std::string_view text, sso_cached_token& out, std::string& reason) {
    boost::system::error_code jec;
    boost::json::value v = boost::json::parse(text, jec);
    if (jec) {
        reason = "is not valid JSON (" + jec.message() + ")";
        return false;
    }
    auto* obj = v.if_object();
    if (obj == nullptr) {
        reason = "is not a JSON object";
        return false;
    }
    auto const* token = sso_json::string_field(*obj, "accessToken");
    if (token == nullptr || token->empty()) {
        reason = "has no 'accessToken' string";
        return false;
    }
    auto const* expires = sso_json::string_field(*obj, "expiresAt");
    if (expires == nullptr) {
        reason = "has no 'expiresAt' string";
        return false;
    }
    auto const when = parse_iso8601(*expires);
    if (!when) {
        reason = "has an 'expiresAt' ('" + printable(*expires, 40) + "') that is not an ISO 8601 time";
        return false;
    }
    out.access_token = std::string(*token);
    out.expires_at = *when;
    out.doc = std::move(*obj);
    return true;
}

BATON_DECL bool sso_token_refreshable(boost::json::object const& doc, std::chrono::system_clock::time_point now,
                                      std::string& why_not) {
    for (char const* key : {"refreshToken", "clientId", "clientSecret", "registrationExpiresAt"}) {
        auto const* s = sso_json::string_field(doc, key);
        if (s == nullptr || s->empty()) {
            why_not = std::string("the cached token has no '") + key + "'";
            return false;
        }
    }
    auto const reg = parse_iso8601(*sso_json::string_field(doc, "registrationExpiresAt"));
    if (!reg) {
        why_not = "the cached token's 'registrationExpiresAt' is not an ISO 8601 time";
        return false;
    }
    if (*reg <= now) {
        why_not = "its client registration expired at " + sso_time_text(*reg);
        return false;
    }
    return true;
}

BATON_DECL std::string sso_create_token_body(boost::json::object const& doc) {
    boost::json::object body;
    body["clientId"] = *sso_json::string_field(doc, "clientId");
    body["clientSecret"] = *sso_json::string_field(doc, "clientSecret");
    body["grantType"] = "refresh_token";
    body["refreshToken"] = *sso_json::string_field(doc, "refreshToken");
    return boost::json::serialize(body);
}

BATON_DECL bool apply_sso_create_token(std::string_view body, std::chrono::system_clock::time_point now,
                                       sso_cached_token& tok, std::string& reason) {
    boost::system::error_code jec;
    boost::json::value const v = boost::json::parse(body, jec);
    if (jec) {
        reason = "the answer is not valid JSON (" + jec.message() + ")";
        return false;
    }
    auto const* obj = v.if_object();
    if (obj == nullptr) {
        reason = "the answer is not a JSON object";
        return false;
    }
    auto const* token = sso_json::string_field(*obj, "accessToken");
    if (token == nullptr || token->empty()) {
        reason = "the answer has no 'accessToken' string";
        return false;
    }
    std::int64_t expires_in = 0;
    auto const* ei = obj->if_contains("expiresIn");
    if (ei == nullptr || !sso_json::whole_number(*ei, expires_in)) {
        reason = "the answer has no 'expiresIn' whole number";
        return false;
    }
    // Upper bound: keeps the time arithmetic far from overflow; real tokens last hours.
    if (expires_in <= 0 || expires_in > std::int64_t(366) * 24 * 3600) {
        reason = "the answer's 'expiresIn' (" + std::to_string(expires_in) + ") is not from 1 s to 1 year";
        return false;
    }
    auto const* refresh = obj->if_contains("refreshToken");
    if (refresh != nullptr && !refresh->is_null() && !refresh->is_string()) {
        reason = "the answer's 'refreshToken' is not a string";
        return false;
    }
    auto const expires_at =
        std::chrono::time_point_cast<std::chrono::seconds>(now) + std::chrono::seconds(expires_in);
    tok.access_token = std::string(*token);
    tok.expires_at = expires_at;
    tok.doc["accessToken"] = *token;
    tok.doc["expiresAt"] = sso_time_text(expires_at);
    if (refresh != nullptr && refresh->is_string() && !refresh->get_string().empty())
        tok.doc["refreshToken"] = refresh->get_string();
    return true;
}

BATON_DECL std::string sso_time_text(std::chrono::system_clock::time_point t) {
    namespace chr = std::chrono; // qualified: an includer's global `days` must not change them
    auto const secs = chr::floor<chr::seconds>(t);
    auto const day = chr::floor<chr::days>(secs);
    chr::year_month_day const ymd{day};
    chr::hh_mm_ss<chr::seconds> const hms{secs - day};
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()));
    return buf;
}

BATON_DECL bool replace_file_atomically(std::string const& path, std::string_view text, std::string& problem) {
    auto const os_problem = [&](char const* what, int e) {
        problem = std::string(what) + ": " + std::strerror(e);
        return false;
    };
    std::string tmp = path + ".tmp-XXXXXX";
    // mkostemp creates the file with mode 0600 whatever the umask: the cache holds bearer tokens.
    int const fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) return os_problem("cannot create a temporary file", errno);
    struct guard_t {
        std::string const& name;
        int fd;
        bool keep = false;
        ~guard_t() {
            if (fd >= 0) ::close(fd);
            if (!keep) ::unlink(name.c_str());
        }
    } guard{tmp, fd};
    if (::fchmod(fd, S_IRUSR | S_IWUSR) != 0) return os_problem("chmod", errno);
    std::size_t done = 0;
    while (done < text.size()) {
        auto const n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return os_problem("write", errno);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) return os_problem("fsync", errno);
    guard.fd = -1;
    if (::close(fd) != 0) return os_problem("close", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return os_problem("rename", errno);
    guard.keep = true;
    // The rename itself survives a crash only once the directory is synced; best effort, the
    // new file is complete either way.
    auto const slash = path.rfind('/');
    std::string const dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
    int const dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)::fsync(dfd);
        ::close(dfd);
    }
    return true;
}

BATON_DECL bool write_sso_token(std::string const& path, sso_cached_token const& tok, std::string& problem) {
    return replace_file_atomically(path, boost::json::serialize(tok.doc), problem);
}

BATON_DECL bool parse_sso_role_credentials(std::string_view body, credentials& out, std::string& reason) {
    boost::system::error_code jec;
    boost::json::value const v = boost::json::parse(body, jec);
    if (jec) {
        reason = "the answer is not valid JSON (" + jec.message() + ")";
        return false;
    }
    auto const* obj = v.if_object();
    if (obj == nullptr) {
        reason = "the answer is not a JSON object";
        return false;
    }
    auto const* rcv = obj->if_contains("roleCredentials");
    auto const* rc = rcv != nullptr ? rcv->if_object() : nullptr;
    if (rc == nullptr) {
        reason = "the answer has no 'roleCredentials' object";
        return false;
    }
    for (char const* key : {"accessKeyId", "secretAccessKey", "sessionToken"}) {
        auto const* s = sso_json::string_field(*rc, key);
        if (s == nullptr || s->empty()) {
            reason = std::string("the answer has no 'roleCredentials.") + key + "' string";
            return false;
        }
    }
    std::int64_t ms = 0;
    auto const* ev = rc->if_contains("expiration");
    if (ev == nullptr || !sso_json::whole_number(*ev, ms)) {
        reason = "the answer has no 'roleCredentials.expiration' whole number (epoch milliseconds)";
        return false;
    }
    // 1970 to 2200, as parse_iso8601 accepts: anything else is not a time this service means.
    if (ms <= 0 || ms > std::int64_t(7258118400000)) {
        reason = "the answer's 'roleCredentials.expiration' (" + std::to_string(ms) +
                 ") is not a time in epoch milliseconds";
        return false;
    }
    credentials c;
    c.access_key_id = std::string(*sso_json::string_field(*rc, "accessKeyId"));
    c.secret_access_key = std::string(*sso_json::string_field(*rc, "secretAccessKey"));
    c.session_token = std::string(*sso_json::string_field(*rc, "sessionToken"));
    c.expiration = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::milliseconds(ms)));
    if (auto p = credentials_problem(c)) {
        reason = "the answer's credentials are unusable: " + *p;
        return false;
    }
    out = std::move(c);
    return true;
}

BATON_DECL error_code sso_status_error(unsigned status, std::string_view code) {
    if (code == "TooManyRequestsException" || code == "SlowDownException" || status == 429) return errc::throttled;
    if (code == "UnauthorizedException" || status == 401 || status == 403) return errc::auth_failed;
    if (status >= 500) return errc::service_unavailable;
    if (code == "InvalidRequestException" || code == "ResourceNotFoundException" || status == 400 || status == 404)
        return errc::invalid_argument;
    return errc::invalid_response;
}

BATON_DECL void sso_error_details(http::response const& res, std::vector<std::string> const& secrets, diagnostics& d,
                                  std::string& message) {
    // rest-json: `x-amzn-ErrorType: Code:http://...`; a body's `__type` may read `namespace#Code`.
    auto code_of = [&](std::string_view raw) {
        if (auto colon = raw.find(':'); colon != std::string_view::npos) raw = raw.substr(0, colon);
        if (auto hash = raw.rfind('#'); hash != std::string_view::npos) raw = raw.substr(hash + 1);
        return redacted_excerpt(trim_token(raw), secrets, 80);
    };
    if (auto h = res.find("x-amzn-ErrorType"); h != res.end())
        d.service_code = code_of(std::string_view(h->value().data(), h->value().size()));
    if (auto rid = res.find("x-amzn-RequestId"); rid != res.end() && d.request_id.empty())
        d.request_id = redacted_excerpt(rid->value(), secrets, 80);
    boost::system::error_code jec;
    auto const v = boost::json::parse(res.body(), jec);
    if (jec || !v.is_object()) return;
    auto const& o = v.get_object();
    if (d.service_code.empty()) {
        for (char const* k : {"__type", "code", "Code", "error"})
            if (auto const* s = sso_json::string_field(o, k)) {
                d.service_code = code_of(*s);
                break;
            }
    }
    for (char const* k : {"message", "Message", "error_description"})
        if (auto const* s = sso_json::string_field(o, k)) {
            message = redacted_excerpt(*s, secrets, 300);
            break;
        }
}

BATON_DECL std::string sso_login_command(std::string const& profile_name) {
    std::string cmd = "aws sso login";
    if (profile_name.empty()) return cmd;
    bool const plain = std::all_of(profile_name.begin(), profile_name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_' || c == '.' || c == '@' || c == '+' || c == '=' || c == ',' || c == '/' || c == ':';
    });
    cmd += " --profile ";
    if (plain) return cmd + profile_name;
    std::string quoted = "'";
    for (char c : printable(profile_name, 200)) {
        if (c == '\'') quoted += "'\\''";
        else quoted += c;
    }
    return cmd + quoted + "'";
}

} // namespace baton::aws::detail

#endif
