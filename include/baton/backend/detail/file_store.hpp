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
    unique_fd& operator=(unique_fd&& o) noexcept;
    ~unique_fd() { reset(); }
    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    void reset() noexcept;
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
BATON_DECL std::string sha256_hex(std::string_view s);

BATON_DECL bool name_safe(unsigned char c) noexcept;

// The file name of `key` (see the file comment); empty when the key is invalid or hashing failed.
BATON_DECL std::string record_name(std::string_view key);

BATON_DECL int unhex(char c) noexcept;

// The key a plain record name stands for, only when `name` is exactly its canonical encoding.
BATON_DECL std::optional<std::string> decode_plain(std::string_view name);

BATON_DECL bool is_hashed_name(std::string_view name) noexcept;

BATON_DECL std::uint32_t crc_of(std::string_view head, std::string_view key, std::string_view body);

BATON_DECL std::string hex32(std::uint32_t v);

// The bytes of a record file.
BATON_DECL std::string encode_record(std::string_view version, std::string_view key, std::string_view body);

struct parsed_record {
    std::string version, key, body;
};

// Reads one `<label> <value>\n` line at `pos`; false when it is not there.
BATON_DECL bool take_line(std::string_view data, std::size_t& pos, std::string_view label, std::string_view& value);

BATON_DECL bool parse_size(std::string_view s, std::size_t limit, std::size_t& out);

// Parses and validates a record file; on failure `why` says what is wrong.
BATON_DECL bool parse_record(std::string_view data, std::size_t max_body, parsed_record& out, std::string& why);

BATON_DECL std::string errno_name(int e);

// An operating-system failure: diagnostics name the step and the file; the code says what a caller can do.
BATON_DECL error_code os_error(diagnostics& d, int e, std::string_view step, std::filesystem::path const& path);

BATON_DECL error_code corrupt(diagnostics& d, std::filesystem::path const& path, std::string const& why);

// Reads and validates the record file `name` under `dir`. Absent: `out` stays empty, no error.
BATON_DECL error_code read_record(int dir, std::filesystem::path const& root, std::string const& name, std::size_t max_body,
                              std::optional<parsed_record>& out, diagnostics& d);

// Writes `data` to a new file `name` under `dir`, fsyncing it when `durable`.
BATON_DECL error_code write_new_file(int dir, std::filesystem::path const& root, std::string const& name, std::string_view data,
                                 bool durable, diagnostics& d);

} // namespace baton::detail::file_store
#endif

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/file_store.ipp>
#endif

#endif
