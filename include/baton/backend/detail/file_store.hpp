// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_DETAIL_FILE_STORE_HPP
#define BATON_BACKEND_DETAIL_FILE_STORE_HPP

// Layer: backends, internal. What `file_backend` keeps on disk and how it touches
// it: record file names (plain or hashed keys), the record format with its
// checksum, and the POSIX pieces (owned descriptors, errno names, reading a
// record, writing a new file durably).

#include <baton/core/detail/config.hpp>
#include <baton/core/detail/random.hpp>
#include <baton/core/detail/text.hpp>
#include <baton/core/error.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/crc.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#if __has_include(<sys/random.h>)
#include <sys/random.h>
#endif

#ifndef BATON_DOXYGEN
namespace baton::detail::file_store {

// One open file descriptor, closed on scope exit.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~unique_fd() { reset(); }
    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    void reset() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int release() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_ = -1;
};

inline constexpr std::string_view magic = "baton-file-record 1\n";
inline constexpr std::string_view plain_prefix = "r.";
inline constexpr std::string_view hashed_prefix = "h.";
inline constexpr std::string_view lock_prefix = ".lock.";
inline constexpr std::string_view temp_prefix = ".tmp.";
// Longest percent-encoded key kept readable; longer keys are hashed (NAME_MAX is 255 and ".lock." is added).
inline constexpr std::size_t max_plain_name = 200;
// Bound on the header's size: a file is at most this plus the key plus the body.
inline constexpr std::size_t max_header_bytes = 256;
inline constexpr std::size_t max_body_limit = std::size_t(1) << 30;

// SHA-256 of `s` as 64 hex digits; empty if libcrypto fails.
inline std::string sha256_hex(std::string_view s) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr) != 1 || len != 32) return {};
    return to_hex(md, len);
}

inline bool name_safe(unsigned char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

// The file name of `key` (see the file comment); empty when the key is invalid or hashing failed.
inline std::string record_name(std::string_view key) {
    if (key.empty() || key.size() > store_limits::max_key_bytes) return {};
    std::string out(plain_prefix);
    for (unsigned char c : key) {
        if (name_safe(c)) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back("0123456789ABCDEF"[c >> 4]);
            out.push_back("0123456789ABCDEF"[c & 15]);
        }
        if (out.size() > plain_prefix.size() + max_plain_name) {
            std::string h = sha256_hex(key);
            return h.empty() ? std::string() : std::string(hashed_prefix) + h;
        }
    }
    return out;
}

inline int unhex(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The key a plain record name stands for, only when `name` is exactly its canonical encoding.
inline std::optional<std::string> decode_plain(std::string_view name) {
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

inline bool is_hashed_name(std::string_view name) noexcept {
    if (name.size() != hashed_prefix.size() + 64 || name.substr(0, hashed_prefix.size()) != hashed_prefix) return false;
    return std::all_of(name.begin() + 2, name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

inline std::uint32_t crc_of(std::string_view head, std::string_view key, std::string_view body) {
    boost::crc_32_type crc;
    crc.process_bytes(head.data(), head.size());
    crc.process_bytes(key.data(), key.size());
    crc.process_bytes(body.data(), body.size());
    return crc.checksum();
}

inline std::string hex32(std::uint32_t v) {
    std::string s(8, '0');
    for (int i = 7; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = hex_digit(v);
    return s;
}

// The bytes of a record file.
inline std::string encode_record(std::string_view version, std::string_view key, std::string_view body) {
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

struct parsed_record {
    std::string version, key, body;
};

// Reads one `<label> <value>\n` line at `pos`; false when it is not there.
inline bool take_line(std::string_view data, std::size_t& pos, std::string_view label, std::string_view& value) {
    if (data.substr(pos, label.size()) != label || data.substr(pos + label.size(), 1) != " ") return false;
    std::size_t const start = pos + label.size() + 1;
    std::size_t const end = data.find('\n', start);
    if (end == std::string_view::npos || end - start > 64) return false;
    value = data.substr(start, end - start);
    pos = end + 1;
    return true;
}

inline bool parse_size(std::string_view s, std::size_t limit, std::size_t& out) {
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

// Parses and validates a record file; on failure `why` says what is wrong.
inline bool parse_record(std::string_view data, std::size_t max_body, parsed_record& out, std::string& why) {
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

inline std::string errno_name(int e) {
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

// An operating-system failure: diagnostics name the step and the file; the code says what a caller can do.
inline error_code os_error(diagnostics& d, int e, std::string_view step, std::filesystem::path const& path) {
    d.service_code = errno_name(e);
    d.message = std::string(step) + " " + path.string() + ": " + std::generic_category().message(e);
    switch (e) {
    case EACCES:
    case EPERM:
    case EROFS: return errc::auth_failed; // the local form of a refused credential: retrying will not help
    default: return errc::service_unavailable; // transient or unknown: nothing was changed, retrying may help
    }
}

inline error_code corrupt(diagnostics& d, std::filesystem::path const& path, std::string const& why) {
    d.service_code = "CorruptRecord";
    d.message = "record file " + path.string() + ": " + why;
    return errc::invalid_response;
}

// Reads and validates the record file `name` under `dir`. Absent: `out` stays empty, no error.
inline error_code read_record(int dir, std::filesystem::path const& root, std::string const& name, std::size_t max_body,
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

// Writes `data` to a new file `name` under `dir`, fsyncing it when `durable`.
inline error_code write_new_file(int dir, std::filesystem::path const& root, std::string const& name, std::string_view data,
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
#endif

#endif
