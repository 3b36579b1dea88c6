// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_FILE_STORE_IPP
#define BATON_BACKEND_IMPL_FILE_STORE_IPP
// Layer: backends, internal. The compiled part of backend/detail/file_store.hpp: POSIX files, locks and the on-disk record format.
#include <baton/backend/detail/file_store.hpp>
#include <baton/core/detail/text.hpp>

namespace baton::detail::file_store {

BATON_DECL std::string sha256_hex(std::string_view s) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr) != 1 || len != 32) return {};
    return to_hex(md, len);
}

BATON_DECL bool name_safe(unsigned char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

BATON_DECL std::string record_name(std::string_view key) {
    if (key.empty() || key.size() > store_limits::max_key_bytes) return {};
    std::string out(plain_prefix);
    for (unsigned char c : key) {
        if (name_safe(c)) {
            out.push_back(static_cast<char>(c));
        } else {
            append_percent_encoded(out, c);
        }
        if (out.size() > plain_prefix.size() + max_plain_name) {
            std::string h = sha256_hex(key);
            return h.empty() ? std::string() : std::string(hashed_prefix) + h;
        }
    }
    return out;
}

BATON_DECL int unhex(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

BATON_DECL std::optional<std::string> decode_plain(std::string_view name) {
    if (name.substr(0, plain_prefix.size()) != plain_prefix) return std::nullopt;
    std::string key;
    for (std::size_t i = plain_prefix.size(); i < name.size(); ++i) {
        char c = name[i];
        if (c != '%') {
            key.push_back(c);
            continue;
        }
        if (i + 2 >= name.size()) return std::nullopt;
        int hi = unhex(name[i + 1]), lo = unhex(name[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        key.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
    }
    if (record_name(key) != name) return std::nullopt; // not canonical: some other program's file
    return key;
}

BATON_DECL bool is_hashed_name(std::string_view name) noexcept {
    if (name.size() != hashed_prefix.size() + 64 || name.substr(0, hashed_prefix.size()) != hashed_prefix) return false;
    return std::all_of(name.begin() + 2, name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

BATON_DECL std::uint32_t crc_of(std::string_view head, std::string_view key, std::string_view body) {
    boost::crc_32_type crc;
    crc.process_bytes(head.data(), head.size());
    crc.process_bytes(key.data(), key.size());
    crc.process_bytes(body.data(), body.size());
    return crc.checksum();
}

BATON_DECL std::string hex32(std::uint32_t v) {
    std::string s(8, '0');
    for (int i = 7; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = hex_digit(v);
    return s;
}

BATON_DECL std::string encode_record(std::string_view version, std::string_view key, std::string_view body) {
    std::string head(magic);
    head += "version ";
    head += version;
    head += "\nkey-bytes " + std::to_string(key.size()) + "\nbody-bytes " + std::to_string(body.size()) + "\n";
    std::string out = head;
    out += "crc32 " + hex32(crc_of(head, key, body)) + "\n\n";
    out.reserve(out.size() + key.size() + body.size());
    out += key;
    out += body;
    return out;
}

BATON_DECL bool take_line(std::string_view data, std::size_t& pos, std::string_view label, std::string_view& value) {
    if (data.substr(pos, label.size()) != label || data.substr(pos + label.size(), 1) != " ") return false;
    std::size_t const start = pos + label.size() + 1;
    std::size_t const end = data.find('\n', start);
    if (end == std::string_view::npos || end - start > 64) return false;
    value = data.substr(start, end - start);
    pos = end + 1;
    return true;
}

BATON_DECL bool parse_size(std::string_view s, std::size_t limit, std::size_t& out) {
    if (s.empty() || s.size() > 12 || (s.size() > 1 && s[0] == '0')) return false;
    std::size_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<std::size_t>(c - '0');
    }
    if (v > limit) return false;
    out = v;
    return true;
}

BATON_DECL bool parse_record(std::string_view data, std::size_t max_body, parsed_record& out, std::string& why) {
    if (data.substr(0, magic.size()) != magic) {
        why = data.empty() ? "empty file" : "not a baton record (bad format tag)";
        return false;
    }
    std::size_t pos = magic.size();
    std::string_view version, key_bytes, body_bytes, crc;
    if (!take_line(data, pos, "version", version) || version.empty() ||
        !std::all_of(version.begin(), version.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); })) {
        why = "missing or malformed version line";
        return false;
    }
    std::size_t nkey = 0, nbody = 0;
    if (!take_line(data, pos, "key-bytes", key_bytes) ||
        !parse_size(key_bytes, store_limits::max_key_bytes, nkey) || nkey == 0) {
        why = "missing or malformed key-bytes line (keys are 1 to 1024 bytes)";
        return false;
    }
    if (!take_line(data, pos, "body-bytes", body_bytes) || !parse_size(body_bytes, max_body_limit, nbody)) {
        why = "missing or malformed body-bytes line";
        return false;
    }
    if (nbody > max_body) {
        why = "body of " + std::to_string(nbody) + " bytes exceeds this store's limit of " + std::to_string(max_body);
        return false;
    }
    std::size_t const head_end = pos;
    if (!take_line(data, pos, "crc32", crc) || crc.size() != 8 || data.substr(pos, 1) != "\n") {
        why = "missing or malformed crc32 line";
        return false;
    }
    ++pos;
    if (data.size() - pos != nkey + nbody) {
        why = (data.size() - pos < nkey + nbody ? "truncated: " : "trailing bytes: ") + std::to_string(data.size() - pos) +
              " bytes follow the header, " + std::to_string(nkey + nbody) + " expected";
        return false;
    }
    std::string_view const key = data.substr(pos, nkey), body = data.substr(pos + nkey, nbody);
    if (hex32(crc_of(data.substr(0, head_end), key, body)) != crc) {
        why = "checksum mismatch (corrupted)";
        return false;
    }
    out.version = std::string(version);
    out.key = std::string(key);
    out.body = std::string(body);
    return true;
}

BATON_DECL std::string errno_name(int e) {
    switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EIO: return "EIO";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    case EEXIST: return "EEXIST";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    default: return "errno " + std::to_string(e);
    }
}

BATON_DECL error_code os_error(diagnostics& d, int e, std::string_view step, std::filesystem::path const& path) {
    d.service_code = errno_name(e);
    d.message = std::string(step) + " " + path.string() + ": " + std::generic_category().message(e);
    switch (e) {
    case EACCES:
    case EPERM:
    case EROFS: return errc::auth_failed; // the local form of a refused credential: retrying will not help
    default: return errc::service_unavailable; // transient or unknown: nothing was changed, retrying may help
    }
}

BATON_DECL error_code corrupt(diagnostics& d, std::filesystem::path const& path, std::string const& why) {
    d.service_code = "CorruptRecord";
    d.message = "record file " + path.string() + ": " + why;
    return errc::invalid_response;
}

BATON_DECL error_code read_record(int dir, std::filesystem::path const& root, std::string const& name, std::size_t max_body,
                              std::optional<parsed_record>& out, diagnostics& d) {
    out.reset();
    auto const path = root / name;
    // O_NONBLOCK: a FIFO planted under a record's name must not block the open.
    unique_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) {
        int const e = errno;
        if (e == ENOENT) return {};
        if (e == ELOOP) return corrupt(d, path, "is a symbolic link");
        return os_error(d, e, "open", path);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return os_error(d, errno, "fstat", path);
    if (!S_ISREG(st.st_mode)) return corrupt(d, path, "not a regular file");
    std::size_t const limit = max_header_bytes + store_limits::max_key_bytes + max_body;
    if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > limit)
        return corrupt(d, path, "file of " + std::to_string(st.st_size) + " bytes exceeds the largest record this store reads (" +
                                    std::to_string(limit) + " bytes)");
    std::string data(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < data.size()) {
        auto n = ::read(fd.get(), data.data() + got, data.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return os_error(d, errno, "read", path);
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    data.resize(got);
    parsed_record r;
    std::string why;
    if (!parse_record(data, max_body, r, why)) return corrupt(d, path, why);
    out = std::move(r);
    return {};
}

BATON_DECL error_code write_new_file(int dir, std::filesystem::path const& root, std::string const& name, std::string_view data,
                                 bool durable, diagnostics& d) {
    auto const path = root / name;
    unique_fd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666));
    if (!fd) return os_error(d, errno, "create", path);
    std::size_t done = 0;
    while (done < data.size()) {
        auto n = ::write(fd.get(), data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return os_error(d, errno, "write", path);
        }
        done += static_cast<std::size_t>(n);
    }
    if (durable && ::fsync(fd.get()) != 0) return os_error(d, errno, "fsync", path);
    if (::close(fd.release()) != 0) return os_error(d, errno, "close", path);
    return {};
}

} // namespace baton::detail::file_store

namespace baton::detail::file_store {

BATON_DECL unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
    if (this != &o) {
        reset();
        fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
}

BATON_DECL void unique_fd::reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

} // namespace baton::detail::file_store

#endif
