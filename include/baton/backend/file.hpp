// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_FILE_HPP
#define BATON_BACKEND_FILE_HPP

/** @file
    Layer: backends. `file_backend`: a local directory as a record store, safe across the
    processes of one host (the `baton` CLI's embedded store, `file:///dir`).

    @par On disk
    One file per key, directly under the root directory:
    - `r.<percent-encoded key>` when the encoding is at most 200 bytes
      (bytes outside `[A-Za-z0-9._-]` become `%XX`, upper-case hex), so that
      `ls` shows readable keys and no key can name a path outside the root;
    - `h.<sha256 of the key, hex>` otherwise (file names are limited to 255 bytes);
    - `.lock.<record file name>`: a key's lock file, present while the key
      has a record or an operation on it is running (or after a crash);
    - `.tmp.<random>`: a record being written; a crash can leave one behind,
      and every operation ignores it (remove stale ones at leisure).
    Every other name in the directory is ignored.

    A record file is a small text header and then the key and the body:
    @code
    baton-file-record 1
    version f<32 hex digits: 128 random bits, fresh on every put>
    key-bytes <decimal>
    body-bytes <decimal>
    crc32 <8 hex digits over the three lines above, the key and the body>

    <key bytes><body bytes>
    @endcode
    The version is stored in the file, never derived from mtime or size, so
    two puts of identical bytes always have different versions (no ABA).

    @par Atomicity
    A put writes a complete temporary file in the root directory and
    fsyncs it; only then does the record change, in one step:
    `renameat2(RENAME_NOREPLACE)` (or `link()` where the file system lacks it)
    for `absent`, `rename()` over the old file for `matches` and `none`.
    Readers open whatever file the name points to, which is always complete
    (no torn reads), and never lock. After the rename the directory is
    fsynced, so a put reported successful survives a crash.

    Preconditions are checked under the key's lock file (`flock(LOCK_EX)`),
    held only for the check and the rename (or unlink) — never while the
    temporary file is written — so a conditional replace or erase in one
    process cannot interleave with another's. Every writer takes the lock,
    `absent` included (its create-if-absent is atomic on its own as well). A
    lock file is unlinked by whoever holds it when the key ends up without a
    record; a waiter re-checks after locking that its lock file is still the
    one the name points to, and starts over if not. A process that dies
    holding a lock releases it (the kernel closes its descriptors); one that
    is frozen holding it makes others give up after `lock_timeout` with
    `errc::timeout`, nothing written.

    @par Hostile input
    Empty keys, keys over 1024 bytes, bodies over `max_body_bytes` and list
    limits of zero fail with `errc::invalid_argument`. Files that are not
    regular files, symbolic links, files larger than the limits allow,
    truncated or corrupted files (wrong header, sizes, checksum, or a key
    that does not belong to the file name) fail with
    `errc::invalid_response`, with diagnostics naming the file; an
    unconditional put or erase replaces or removes such a file.

    @par Blocking
    File operations are local and short, so each operation runs in its
    initiating function and **blocks the calling thread for the duration of
    a local file operation** (a few fsyncs; at most `lock_timeout` waiting
    for a key's lock). Completion still never happens inline: it is posted
    to the handler's executor, as with every backend.

    POSIX (Linux first): needs `flock`, `fsync` on directories and
    `openat`/`renameat`. Not for network file systems, where `flock` and
    rename atomicity are not guaranteed across hosts.
*/

#include <baton/backend/detail/file_store.hpp>
#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/store/detail/local_probe.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/async_result.hpp>
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

namespace baton {

/** Settings of a `file_backend`. Data only; `file_backend`'s constructor checks them. */
struct file_backend_params {
    /// The directory that holds the records (made absolute at construction). Required.
    std::filesystem::path root;
    /// Puts with larger bodies fail with `errc::invalid_argument`; stored files whose body is larger fail reads with `errc::invalid_response`. At most 1 GiB.
    std::size_t max_body_bytes = 1024 * 1024;
    /// Create `root` (and its parents) on the first put when missing. False: a missing root is `errc::not_found`, like a missing bucket.
    bool create_root = true;
    /// fsync temporary files before renaming and the directory after: puts and erases survive a crash. False only for throwaway stores.
    bool durable = true;
    /// How long a writer waits for a key's lock (held by another writer for a check and a rename) before failing with `errc::timeout`. At most 1 hour.
    std::chrono::milliseconds lock_timeout{1000};
};

/** The record store in a local directory, shared safely by the processes of one host.

    See the file comment for the layout on disk, the atomicity and locking
    argument, the handling of hostile files, and the blocking behaviour.

    @par Thread safety
    Copies share counters and settings; all operations may be called from
    any thread, and from any number of processes on the same directory.
*/
class file_backend {
public:
    /// Completions run here unless the handler has an executor of its own.
    using executor_type = boost::asio::any_io_executor;

    /// Requests served by this process (all copies of this handle), by kind.
    using request_counts = detail::local_request_counts;

    /** A store in `p.root`; nothing is touched on disk until the first operation.

        @throws config_error when `p.root` is empty, `p.max_body_bytes` exceeds 1 GiB or `p.lock_timeout` is negative.
    */
    file_backend(executor_type ex, file_backend_params p) : ex_(std::move(ex)), state_(std::make_shared<state>(checked(std::move(p)))) {}

    /// The default completion executor.
    executor_type get_executor() const noexcept { return ex_; }

    /// Another handle on the same store (same directory, settings and counters) whose completions run on `ex`.
    file_backend rebind(executor_type ex) const { return file_backend(std::move(ex), state_); }

    /// The directory holding the records (absolute).
    std::filesystem::path const& root() const noexcept { return state_->params.root; }

    /// The settings in force.
    file_backend_params const& params() const noexcept { return state_->params; }

    /** The name of the file under `root()` that stores `key` (for tools and
        tests that look at the directory). Empty when `key` is empty or over 1024 bytes.
    */
    static std::string file_name(std::string_view key) { return detail::file_store::record_name(key); }

    /** Reads `key`. Completion: `void(error_code, get_result)`; absent is not an error.

        Errors: `errc::invalid_argument` (bad key), `errc::invalid_response`
        (the file is corrupt, truncated, too large or not a regular file),
        `errc::not_found` (root missing and `create_root` false), OS failures
        (`errc::service_unavailable`, `errc::auth_failed` for permissions).
        Blocks the calling thread for one file read; never completes inline.
        Not cancellable (it is over before the initiating function returns).
    */
    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& token = {}) {
        return detail::async_at_once<get_result>(ex_, std::forward<Token>(token), [st = state_, key = std::move(key)](get_result& r) {
            return st->get(key, r);
        });
    }

    /** Writes `key` if `pc` holds, with a fresh version. Completion: `void(error_code, put_result)`.

        Errors: `errc::precondition_failed` (with `current` when a record
        exists), `errc::invalid_argument` (bad key, body over
        `max_body_bytes`), `errc::invalid_response` (a conditional put on a
        corrupt file), `errc::timeout` (the key's lock stayed taken for
        `lock_timeout`; nothing written), OS failures before the record
        changed (`errc::service_unavailable`, `errc::auth_failed`), and
        `errc::unknown_outcome` when the record changed but the directory
        fsync failed (read back to settle it). Blocks the calling thread for
        a write, fsyncs and a rename; never completes inline. Not cancellable.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, precondition pc, Token&& token = {}) {
        return detail::async_at_once<put_result>(ex_, std::forward<Token>(token), [st = state_, key = std::move(key), body = std::move(body), pc = std::move(pc)](put_result& r) {
            return st->put(key, body, pc, r);
        });
    }

    /** Deletes `key` if `pc` holds. Completion: `void(error_code, erase_result)`.

        `matches` on a missing key fails with `errc::not_found`, `absent` on
        an existing one with `errc::precondition_failed`; `none` and `absent`
        on a missing key succeed. Other errors as `async_put`. Blocks the
        calling thread; never completes inline. Not cancellable.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, precondition pc, Token&& token = {}) {
        return detail::async_at_once<erase_result>(ex_, std::forward<Token>(token), [st = state_, key = std::move(key), pc = std::move(pc)](erase_result& r) {
            return st->erase(key, pc, r.diag);
        });
    }

    /** Lists keys starting with `prefix`, strictly after `after`, at most
        `limit`, in byte order. Completion: `void(error_code, list_page)`.

        Scans the directory and reads each listed record for its version.
        `truncated` is true when more keys followed at the time of the scan.
        A corrupt record in range fails the listing with
        `errc::invalid_response` naming the file. Blocks the calling thread;
        never completes inline. Not cancellable.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& token = {}) {
        return detail::async_at_once<list_page>(ex_, std::forward<Token>(token), [st = state_, prefix = std::move(prefix), after = std::move(after), limit](list_page& r) {
            return st->list(prefix, after, limit, r);
        });
    }

    /** Checks, on a scratch key, that the directory honours create-if-absent,
        conditional replace and conditional erase, then removes the scratch key.
        Completion: `void(error_code, capabilities)`; an error (with
        `capabilities::diag`) when the directory cannot be written at all.
    */
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& token = {}) {
        return detail::async_at_once<capabilities>(ex_, std::forward<Token>(token), [st = state_](capabilities& c) {
            return st->probe(c);
        });
    }

    /// Requests served so far by this process through this store's handles.
    request_counts counts() const;

private:
    using unique_fd = detail::file_store::unique_fd;
    using parsed_record = detail::file_store::parsed_record;

    static file_backend_params checked(file_backend_params p);

    // A key's lock file, held with flock(LOCK_EX) while this object lives.
    struct key_lock {
        unique_fd fd;
        std::string name;
    };

    struct state {
        explicit state(file_backend_params p) : params(std::move(p)) {}

        file_backend_params const params;
        std::atomic<std::uint64_t> gets{0}, puts{0}, erases{0}, lists{0}, probes{0}, refused{0};

        std::filesystem::path path_of(std::string const& name) const { return params.root / name; }

        error_code name_of(std::string const& key, std::string& name, diagnostics& d) const;

        // Opens the root directory. `missing` is set (and no error returned) when it does not exist
        // and may be created; `create` makes it first.
        error_code open_root(unique_fd& dir, bool create, bool& missing, diagnostics& d) const;

        error_code read(int dir, std::string const& name, std::string const& key, std::optional<parsed_record>& out,
                        diagnostics& d) const;

        // Takes the key's lock: open (creating) the lock file, flock it, and make
        // sure it is still the file its name points to (an eraser may have unlinked it).
        error_code lock(int dir, std::string const& record, key_lock& held, diagnostics& d) const;

        error_code lock_timed_out(std::string const& name, diagnostics& d) const;

        // Unlinks the lock file while holding it, when the key has no record (nothing left to protect).
        void drop_lock_if_unused(int dir, std::string const& record, key_lock const& held) const;

        error_code sync_dir(int dir, diagnostics& d) const;

        error_code get(std::string const& key, get_result& r);

        error_code put(std::string const& key, std::string const& body, precondition const& pc, put_result& r,
                       bool counted = true);

        // Links `temp` as `name` only if `name` does not exist; removes `temp` either way.
        error_code create_exclusive(int dir, std::string const& temp, std::string const& name, put_result& r);

        // Only a writer that ignores the lock can get here (the check under the lock saw no file).
        error_code refused_existing(put_result& r);

        error_code erase(std::string const& key, precondition const& pc, diagnostics& d, bool counted = true);

        error_code list(std::string const& prefix, std::string const& after, std::size_t limit, list_page& r);

        error_code probe(capabilities& c);
    };

    file_backend(executor_type ex, std::shared_ptr<state> st) : ex_(std::move(ex)), state_(std::move(st)) {}

    executor_type ex_;
    std::shared_ptr<state> state_;
};

} // namespace baton

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/backend/impl/file.ipp>
#endif

#endif
