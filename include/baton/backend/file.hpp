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
    request_counts counts() const {
        request_counts c;
        c.gets = state_->gets.load();
        c.puts = state_->puts.load();
        c.erases = state_->erases.load();
        c.lists = state_->lists.load();
        c.probes = state_->probes.load();
        c.refused = state_->refused.load();
        return c;
    }

private:
    using unique_fd = detail::file_store::unique_fd;
    using parsed_record = detail::file_store::parsed_record;

    static file_backend_params checked(file_backend_params p) {
        if (p.root.empty()) throw config_error("file_backend_params: root must name a directory");
        if (p.max_body_bytes > detail::file_store::max_body_limit)
            throw config_error("file_backend_params: max_body_bytes must be at most 1 GiB");
        if (p.lock_timeout.count() < 0 || p.lock_timeout > std::chrono::hours(1))
            throw config_error("file_backend_params: lock_timeout must be from 0 to 1 hour");
        std::error_code ec;
        auto abs = std::filesystem::absolute(p.root, ec);
        if (!ec) p.root = abs;
        return p;
    }

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

        error_code name_of(std::string const& key, std::string& name, diagnostics& d) const {
            if (auto ec = store_limits::check_key(key, d)) return ec;
            name = detail::file_store::record_name(key);
            if (name.empty()) {
                d.message = "cannot hash a long key into a file name (libcrypto SHA-256 failed)";
                return errc::service_unavailable;
            }
            return {};
        }

        // Opens the root directory. `missing` is set (and no error returned) when it does not exist
        // and may be created; `create` makes it first.
        error_code open_root(unique_fd& dir, bool create, bool& missing, diagnostics& d) const {
            missing = false;
            dir = unique_fd(::open(params.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            if (dir) return {};
            int e = errno;
            if (e == ENOENT && params.create_root && create) {
                std::error_code fec;
                std::filesystem::create_directories(params.root, fec);
                dir = unique_fd(::open(params.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
                if (dir) return {};
                e = fec ? fec.value() : errno;
            }
            if (e == ENOENT && params.create_root) {
                missing = true;
                return {};
            }
            if (e == ENOENT || e == ENOTDIR) {
                d.service_code = detail::file_store::errno_name(e);
                d.message = "store directory " + params.root.string() + " does not exist" +
                            (e == ENOTDIR ? " (not a directory)" : "");
                return errc::not_found;
            }
            return detail::file_store::os_error(d, e, "open directory", params.root);
        }

        error_code read(int dir, std::string const& name, std::string const& key, std::optional<parsed_record>& out,
                        diagnostics& d) const {
            if (auto ec = detail::file_store::read_record(dir, params.root, name, params.max_body_bytes, out, d)) return ec;
            if (out && out->key != key) {
                out.reset();
                return detail::file_store::corrupt(d, path_of(name), "holds another key than its name says");
            }
            return {};
        }

        // Takes the key's lock: open (creating) the lock file, flock it, and make
        // sure it is still the file its name points to (an eraser may have unlinked it).
        error_code lock(int dir, std::string const& record, key_lock& held, diagnostics& d) const {
            using clock = std::chrono::steady_clock;
            std::string const name = std::string(detail::file_store::lock_prefix) + record;
            auto const deadline = clock::now() + params.lock_timeout;
            auto backoff = std::chrono::microseconds(50);
            for (;;) {
                // Read-only is enough for flock, so writers of other users can share a group-writable directory.
                unique_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666));
                if (!fd) return detail::file_store::os_error(d, errno, "open lock file", path_of(name));
                for (;;) {
                    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) break;
                    int const e = errno;
                    if (e == EINTR) continue;
                    if (e != EWOULDBLOCK) return detail::file_store::os_error(d, e, "flock", path_of(name));
                    if (clock::now() >= deadline) return lock_timed_out(name, d);
                    std::this_thread::sleep_for(backoff);
                    backoff = std::min(backoff * 2, std::chrono::microseconds(5000));
                }
                struct stat mine {}, linked {};
                if (::fstat(fd.get(), &mine) != 0) return detail::file_store::os_error(d, errno, "fstat", path_of(name));
                if (::fstatat(dir, name.c_str(), &linked, AT_SYMLINK_NOFOLLOW) == 0 && mine.st_dev == linked.st_dev &&
                    mine.st_ino == linked.st_ino) {
                    held.fd = std::move(fd);
                    held.name = name;
                    return {};
                }
                // Unlinked (or replaced) while we waited: lock whatever the name points to now.
                if (clock::now() >= deadline) return lock_timed_out(name, d);
            }
        }

        error_code lock_timed_out(std::string const& name, diagnostics& d) const {
            d.service_code = "LockTimeout";
            d.message = "lock file " + path_of(name).string() + " stayed locked by another writer for " +
                        std::to_string(params.lock_timeout.count()) + " ms; nothing was written";
            return errc::timeout;
        }

        // Unlinks the lock file while holding it, when the key has no record (nothing left to protect).
        void drop_lock_if_unused(int dir, std::string const& record, key_lock const& held) const {
            struct stat st {};
            if (::fstatat(dir, record.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
                ::unlinkat(dir, held.name.c_str(), 0);
        }

        error_code sync_dir(int dir, diagnostics& d) const {
            if (!params.durable || ::fsync(dir) == 0) return {};
            int const e = errno;
            detail::file_store::os_error(d, e, "fsync directory", params.root);
            d.message += " (the change is visible but may not survive a crash)";
            return errc::unknown_outcome;
        }

        error_code get(std::string const& key, get_result& r) {
            ++gets;
            std::string name;
            if (auto ec = name_of(key, name, r.diag)) return ec;
            unique_fd dir;
            bool missing = false;
            if (auto ec = open_root(dir, false, missing, r.diag)) return ec;
            if (missing) return {};
            std::optional<parsed_record> cur;
            if (auto ec = read(dir.get(), name, key, cur, r.diag)) return ec;
            if (cur) r.found = record{key, std::move(cur->body), std::move(cur->version)};
            return {};
        }

        error_code put(std::string const& key, std::string const& body, precondition const& pc, put_result& r,
                       bool counted = true) {
            if (counted) ++puts;
            std::string name;
            if (auto ec = name_of(key, name, r.diag)) return ec;
            if (body.size() > params.max_body_bytes) {
                r.diag.message = "body of " + std::to_string(body.size()) + " bytes exceeds the store's limit of " +
                                 std::to_string(params.max_body_bytes);
                return errc::invalid_argument;
            }
            unique_fd dir;
            bool missing = false;
            if (auto ec = open_root(dir, true, missing, r.diag)) return ec;
            if (missing) return detail::file_store::os_error(r.diag, ENOENT, "open directory", params.root);

            // 1. The new file, complete and on disk, under a temporary name (no lock held).
            std::string const version = "f" + detail::kernel_random_hex(16);
            std::string const temp = std::string(detail::file_store::temp_prefix) + detail::kernel_random_hex(16);
            struct temp_guard {
                int dir;
                std::string const& name;
                bool armed = true;
                ~temp_guard() {
                    if (armed) ::unlinkat(dir, name.c_str(), 0);
                }
            } guard{dir.get(), temp};
            if (auto ec = detail::file_store::write_new_file(dir.get(), params.root, temp,
                                                             detail::file_store::encode_record(version, key, body),
                                                             params.durable, r.diag))
                return ec;

            // 2. Check and switch under the key's lock.
            key_lock held;
            if (auto ec = lock(dir.get(), name, held, r.diag)) return ec;
            if (pc.which() != precondition::kind::none) {
                std::optional<parsed_record> cur;
                if (auto ec = read(dir.get(), name, key, cur, r.diag)) return ec;
                bool const holds = pc.which() == precondition::kind::absent ? !cur : (cur && cur->version == pc.version());
                if (!holds) {
                    if (counted) ++refused;
                    if (cur) r.current = record{key, std::move(cur->body), std::move(cur->version)};
                    else drop_lock_if_unused(dir.get(), name, held);
                    return errc::precondition_failed;
                }
            }
            if (pc.which() == precondition::kind::absent) {
                if (auto ec = create_exclusive(dir.get(), temp, name, r)) return ec;
            } else if (::renameat(dir.get(), temp.c_str(), dir.get(), name.c_str()) != 0) {
                return detail::file_store::os_error(r.diag, errno, "rename into", path_of(name));
            }
            guard.armed = false;
            held = key_lock{};
            // 3. Make the new name durable (after unlocking: the check and switch are done).
            if (auto ec = sync_dir(dir.get(), r.diag)) return ec;
            r.version = version;
            return {};
        }

        // Links `temp` as `name` only if `name` does not exist; removes `temp` either way.
        error_code create_exclusive(int dir, std::string const& temp, std::string const& name, put_result& r) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
            if (::renameat2(dir, temp.c_str(), dir, name.c_str(), RENAME_NOREPLACE) == 0) return {};
            int const e = errno;
            if (e == EEXIST) return refused_existing(r);
            if (e != EINVAL && e != ENOSYS && e != EOPNOTSUPP)
                return detail::file_store::os_error(r.diag, e, "rename (no replace) into", path_of(name));
#endif
            // The file system has no RENAME_NOREPLACE: link() never replaces either.
            if (::linkat(dir, temp.c_str(), dir, name.c_str(), 0) != 0) {
                int const e2 = errno;
                if (e2 == EEXIST) return refused_existing(r);
                return detail::file_store::os_error(r.diag, e2, "link into", path_of(name));
            }
            ::unlinkat(dir, temp.c_str(), 0);
            return {};
        }

        // Only a writer that ignores the lock can get here (the check under the lock saw no file).
        error_code refused_existing(put_result& r) {
            ++refused;
            r.diag.message = "the key was created concurrently by a writer that does not take the key's lock";
            return errc::precondition_failed;
        }

        error_code erase(std::string const& key, precondition const& pc, diagnostics& d, bool counted = true) {
            if (counted) ++erases;
            std::string name;
            if (auto ec = name_of(key, name, d)) return ec;
            unique_fd dir;
            bool missing = false;
            if (auto ec = open_root(dir, false, missing, d)) return ec;
            if (missing) {
                if (pc.which() != precondition::kind::matches) return {};
                if (counted) ++refused;
                return errc::not_found;
            }
            key_lock held;
            if (auto ec = lock(dir.get(), name, held, d)) return ec;
            error_code result;
            if (pc.which() == precondition::kind::none) {
                if (::unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT)
                    return detail::file_store::os_error(d, errno, "unlink", path_of(name));
            } else {
                std::optional<parsed_record> cur;
                if (auto ec = read(dir.get(), name, key, cur, d)) return ec;
                if (pc.which() == precondition::kind::matches && !cur) {
                    result = errc::not_found;
                } else if (cur && (pc.which() == precondition::kind::absent || cur->version != pc.version())) {
                    result = errc::precondition_failed;
                } else if (cur && ::unlinkat(dir.get(), name.c_str(), 0) != 0) {
                    return detail::file_store::os_error(d, errno, "unlink", path_of(name));
                }
                if (result && counted) ++refused;
            }
            drop_lock_if_unused(dir.get(), name, held);
            held = key_lock{};
            if (result) return result;
            return sync_dir(dir.get(), d);
        }

        error_code list(std::string const& prefix, std::string const& after, std::size_t limit, list_page& r) {
            ++lists;
            if (limit == 0) {
                r.diag.message = "list limit must be at least 1";
                return errc::invalid_argument;
            }
            unique_fd dir;
            bool missing = false;
            if (auto ec = open_root(dir, false, missing, r.diag)) return ec;
            if (missing) return {};

            // Scan: names to keys (hashed names carry their key inside the file).
            struct candidate {
                std::string key, name;
                std::optional<parsed_record> rec; // already read (hashed names)
            };
            std::vector<candidate> found;
            {
                int const scan_fd = ::dup(dir.get());
                if (scan_fd < 0) return detail::file_store::os_error(r.diag, errno, "dup", params.root);
                DIR* dp = ::fdopendir(scan_fd);
                if (dp == nullptr) {
                    int const e = errno;
                    ::close(scan_fd);
                    return detail::file_store::os_error(r.diag, e, "opendir", params.root);
                }
                std::unique_ptr<DIR, int (*)(DIR*)> scan(dp, &::closedir);
                for (;;) {
                    errno = 0;
                    dirent* ent = ::readdir(dp);
                    if (ent == nullptr) {
                        if (errno != 0) return detail::file_store::os_error(r.diag, errno, "readdir", params.root);
                        break;
                    }
                    std::string_view const n = ent->d_name;
                    if (auto key = detail::file_store::decode_plain(n)) {
                        if (key->starts_with(prefix) && *key > after) found.push_back({std::move(*key), std::string(n), {}});
                    } else if (detail::file_store::is_hashed_name(n)) {
                        std::string name(n);
                        std::optional<parsed_record> rec;
                        if (auto ec = detail::file_store::read_record(dir.get(), params.root, name, params.max_body_bytes,
                                                                      rec, r.diag))
                            return ec;
                        if (!rec) continue; // erased since the scan saw it
                        if (detail::file_store::record_name(rec->key) != name)
                            return detail::file_store::corrupt(r.diag, path_of(name), "holds another key than its name says");
                        if (rec->key.starts_with(prefix) && rec->key > after) {
                            std::string key = rec->key;
                            found.push_back({std::move(key), std::move(name), std::move(rec)});
                        }
                    }
                }
            }
            std::sort(found.begin(), found.end(), [](candidate const& a, candidate const& b) { return a.key < b.key; });

            // Versions, in key order, until the page is full.
            for (std::size_t i = 0; i < found.size(); ++i) {
                if (r.entries.size() == limit) {
                    r.truncated = true;
                    break;
                }
                auto& c = found[i];
                if (!c.rec) {
                    if (auto ec = read(dir.get(), c.name, c.key, c.rec, r.diag)) return ec;
                    if (!c.rec) continue; // erased since the scan saw it
                }
                r.entries.push_back({std::move(c.key), std::move(c.rec->version)});
            }
            return {};
        }

        error_code probe(capabilities& c) {
            ++probes;
            // The same checks a remote store gets, on a scratch key (not counted as requests).
            std::string const key = "baton-probe/" + detail::kernel_random_hex(8);
            if (auto ec = detail::probe_by_writes(
                    key, [&](auto const& k, std::string b, precondition pc, put_result& r) { return put(k, std::move(b), pc, r, false); },
                    [&](auto const& k, precondition pc, diagnostics& d) { return erase(k, pc, d, false); }, c))
                return ec;
            c.findings.push_back("directory " + params.root.string() + ": atomic rename, per-key flock" +
                                 (params.durable ? ", fsync on" : ", fsync off (not crash-safe)"));
            return {};
        }
    };

    file_backend(executor_type ex, std::shared_ptr<state> st) : ex_(std::move(ex)), state_(std::move(st)) {}

    executor_type ex_;
    std::shared_ptr<state> state_;
};

} // namespace baton

#endif
