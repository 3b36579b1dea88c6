// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_BACKEND_IMPL_FILE_IPP
#define BATON_BACKEND_IMPL_FILE_IPP

// Layer: backends, internal. The compiled part of backend/file.hpp: the file store's operations
// on the directory (locks, renames, scans).
#include <baton/backend/file.hpp>

namespace baton {

BATON_DECL file_backend::request_counts file_backend::counts() const {
    request_counts c;
    c.gets = state_->gets.load();
    c.puts = state_->puts.load();
    c.erases = state_->erases.load();
    c.lists = state_->lists.load();
    c.probes = state_->probes.load();
    c.refused = state_->refused.load();
    return c;
}

BATON_DECL file_backend_params file_backend::checked(file_backend_params p) {
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

BATON_DECL error_code file_backend::state::name_of(std::string const& key, std::string& name, diagnostics& d) const {
    if (auto ec = store_limits::check_key(key, d)) return ec;
    name = detail::file_store::record_name(key);
    if (name.empty()) {
        d.message = "cannot hash a long key into a file name (libcrypto SHA-256 failed)";
        return errc::service_unavailable;
    }
    return {};
}

BATON_DECL error_code file_backend::state::open_root(unique_fd& dir, bool create, bool& missing, diagnostics& d) const {
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

BATON_DECL error_code file_backend::state::read(int dir, std::string const& name, std::string const& key,
                                                std::optional<parsed_record>& out,
                                                diagnostics& d) const {
    if (auto ec = detail::file_store::read_record(dir, params.root, name, params.max_body_bytes, out, d)) return ec;
    if (out && out->key != key) {
        out.reset();
        return detail::file_store::corrupt(d, path_of(name), "holds another key than its name says");
    }
    return {};
}

BATON_DECL error_code file_backend::state::lock(int dir, std::string const& record, key_lock& held,
                                                diagnostics& d) const {
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

BATON_DECL error_code file_backend::state::lock_timed_out(std::string const& name, diagnostics& d) const {
    d.service_code = "LockTimeout";
    d.message = "lock file " + path_of(name).string() + " stayed locked by another writer for " +
                std::to_string(params.lock_timeout.count()) + " ms; nothing was written";
    return errc::timeout;
}

BATON_DECL void file_backend::state::drop_lock_if_unused(int dir, std::string const& record,
                                                         key_lock const& held) const {
    struct stat st {};
    if (::fstatat(dir, record.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
        ::unlinkat(dir, held.name.c_str(), 0);
}

BATON_DECL error_code file_backend::state::sync_dir(int dir, diagnostics& d) const {
    if (!params.durable || ::fsync(dir) == 0) return {};
    int const e = errno;
    detail::file_store::os_error(d, e, "fsync directory", params.root);
    d.message += " (the change is visible but may not survive a crash)";
    return errc::unknown_outcome;
}

BATON_DECL error_code file_backend::state::get(std::string const& key, get_result& r) {
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

BATON_DECL error_code file_backend::state::put(std::string const& key, std::string const& body, precondition const& pc,
                                               put_result& r,
                                               bool counted) {
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

BATON_DECL error_code file_backend::state::create_exclusive(int dir, std::string const& temp, std::string const& name,
                                                            put_result& r) {
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

BATON_DECL error_code file_backend::state::refused_existing(put_result& r) {
    ++refused;
    r.diag.message = "the key was created concurrently by a writer that does not take the key's lock";
    return errc::precondition_failed;
}

BATON_DECL error_code file_backend::state::erase(std::string const& key, precondition const& pc, diagnostics& d,
                                                 bool counted) {
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

BATON_DECL error_code file_backend::state::list(std::string const& prefix, std::string const& after, std::size_t limit,
                                                list_page& r) {
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

BATON_DECL error_code file_backend::state::probe(capabilities& c) {
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

} // namespace baton

#endif
