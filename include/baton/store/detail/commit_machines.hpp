// Copyright (c) 2026 The baton authors. Distributed under the Boost Software License, Version 1.0.
#ifndef BATON_STORE_DETAIL_COMMIT_MACHINES_HPP
#define BATON_STORE_DETAIL_COMMIT_MACHINES_HPP

// Layer: store, internal. The commit protocol's operations (store/commit_protocol.hpp) as
// sans-I/O machines run by machine_op: get, put, erase, list, probe, copy and collect. Each
// addresses its requests explicitly, to the lock store (`records`) or the object store
// (`objects`); replaced and refused objects ride on a step as garbage to delete without waiting.
// What the handles of one store share (the settings, the names drawn, the objects known, the
// lock store's probe) is `commit_knowledge`.

#include <baton/core/detail/config.hpp>
#include <baton/core/error.hpp>
#include <baton/store/commit_protocol_params.hpp>
#include <baton/store/detail/commit_pointer.hpp>
#include <baton/store/detail/machine_step.hpp>
#include <baton/store/record_store.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace baton::detail {

// What the copies of one commit-protocol handle share besides the stores. Locked: copies may
// run on several threads.
class commit_knowledge {
public:
    // `seed` 0: names drawn from kernel randomness.
    BATON_DECL commit_knowledge(commit_protocol_params p, std::uint64_t seed);

    commit_protocol_params const& params() const noexcept { return params_; }
    // True until the lock store was probed and found to honour preconditions (`check_lock_store`).
    BATON_DECL bool needs_probe();
    // Records the probe; the error that refuses writes when the lock store cannot coordinate.
    BATON_DECL error_code probed(capabilities c, diagnostics& d);
    // A fresh nonce for an object name, a tombstone or a probe.
    BATON_DECL std::string nonce();
    // The object each key's pointer named at the version this handle last saw, so that the
    // object a commit replaces can be deleted at once. Bounded: forgetting only leaves garbage.
    BATON_DECL void remember(std::string const& key, std::string version, std::string object);
    BATON_DECL void forget(std::string const& key);
    BATON_DECL std::optional<std::string> object_at(std::string const& key, std::string const& version);
    // Refuses a key the composed store cannot take (too long with the object name around it, not UTF-8).
    BATON_DECL error_code check_key(std::string const& key, diagnostics& d) const;
    BATON_DECL std::size_t max_key_bytes() const noexcept;

private:
    struct known_object {
        std::string version;
        std::string object;
    };
    commit_protocol_params params_;
    std::mutex mutex_;
    std::mt19937_64 rng_;
    std::map<std::string, known_object, std::less<>> known_;
    std::optional<capabilities> lock_caps_;
};

// A pointer as read from the lock store: absent, or decoded with its version.
struct read_pointer {
    std::optional<commit_pointer> pointer;
    std::string version;
    bool live() const { return pointer && !pointer->erased; }
};
// Decodes `r` into `out`; a record that is not a pointer is foreign_record, named in `r.diag`.
BATON_DECL error_code decode_pointer(get_result& r, read_pointer& out);

// Reads the committed record of a key: its pointer, then its object, checked against the
// pointer's size and SHA-256.
class commit_get_machine {
public:
    commit_get_machine(commit_knowledge& k, std::string key) : k_(k), key_(std::move(key)) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_cancel();
    get_result& result() noexcept { return result_; }

private:
    machine_step read_pointer_step();
    machine_step fail(error_code ec, std::string message);

    commit_knowledge& k_;
    std::string key_;
    enum class stage : unsigned char { pointer, object } stage_ = stage::pointer;
    read_pointer seen_;
    unsigned rounds_ = 0;    // objects found missing
    unsigned unchanged_ = 0; // ... under a pointer that had not moved
    get_result result_;
};

// Writes a key if a precondition holds: a fresh object, then a conditional pointer write (the
// commit). With `copy_of`, the object is a copy of that committed object, made by the object store.
class commit_put_machine {
public:
    commit_put_machine(commit_knowledge& k, std::string key, std::string body, precondition pc,
                       std::optional<commit_pointer> copy_of = std::nullopt)
        : k_(k), key_(std::move(key)), body_(std::move(body)), pc_(std::move(pc)), copy_of_(std::move(copy_of)) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_probe(error_code ec, capabilities c);
    BATON_DECL machine_step on_put(error_code ec, put_result r);
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_cancel();
    put_result& result() noexcept { return result_; }
    // The object a copy was made from, when the object store answered that it is gone.
    bool source_gone() const noexcept { return source_gone_; }

private:
    machine_step begin();
    machine_step write_object();
    machine_step finish(error_code ec);

    commit_knowledge& k_;
    std::string key_;
    std::string body_;
    precondition pc_;
    std::optional<commit_pointer> copy_of_;
    enum class stage : unsigned char { start, probing, read_base, write_object, commit, read_after_refusal, done } stage_ = stage::start;
    precondition base_ = precondition::none(); // the state the commit is conditional on
    std::string object_;
    std::string sha256_;
    std::optional<std::string> replaced_; // the object the commit replaces, when known
    unsigned rounds_ = 0;
    bool recreate_ = false; // a second try of `absent` over a tombstone
    bool source_gone_ = false;
    put_result result_;
};

// Erases a key if a precondition holds: a conditional tombstone pointer; then the erased object
// is deleted before completing (an object store that keeps folders, such as s3rver, removes an
// emptied one, and the caller's next write into it must not race that removal).
class commit_erase_machine {
public:
    commit_erase_machine(commit_knowledge& k, std::string key, precondition pc) : k_(k), key_(std::move(key)), pc_(std::move(pc)) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_probe(error_code ec, capabilities c);
    BATON_DECL machine_step on_put(error_code ec, put_result r);
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_erase(error_code ec, erase_result r);
    BATON_DECL machine_step on_cancel();
    erase_result& result() noexcept { return result_; }

private:
    machine_step begin();
    machine_step commit_tombstone(precondition on);
    machine_step erased();

    commit_knowledge& k_;
    std::string key_;
    precondition pc_;
    enum class stage : unsigned char { start, probing, read_base, commit, read_after_refusal, discarding } stage_ = stage::start;
    std::optional<std::string> replaced_;
    std::string tombstone_; // the nonce of the tombstone in flight
    unsigned rounds_ = 0;
    erase_result result_;
};

// Lists the live keys under a prefix: a page of the lock store, then each pointer (tombstones
// and foreign records are left out; a page of tombstones only is listed on).
class commit_list_machine {
public:
    commit_list_machine(std::string prefix, std::string after, std::size_t limit)
        : prefix_(std::move(prefix)), after_(std::move(after)), limit_(limit) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_list(error_code ec, list_page p);
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_cancel();
    list_page& result() noexcept { return page_; }

private:
    machine_step read_next();

    std::string prefix_;
    std::string after_;
    std::size_t limit_;
    std::vector<list_entry> keys_;
    bool truncated_ = false;
    std::size_t next_ = 0;
    list_page page_;
};

// The composition's capabilities: the lock store's, and a round trip of a scratch object.
class commit_probe_machine {
public:
    explicit commit_probe_machine(commit_knowledge& k) : k_(k) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_probe(error_code ec, capabilities c);
    BATON_DECL machine_step on_put(error_code ec, put_result r);
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_erase(error_code ec, erase_result r);
    BATON_DECL machine_step on_cancel();
    capabilities& result() noexcept { return caps_; }

private:
    machine_step object_failed(error_code ec, char const* what, diagnostics d);

    commit_knowledge& k_;
    capabilities caps_;
    std::string scratch_;
    std::string bytes_;
    bool scratch_written_ = false;
};

// Copies the committed record of `from` to `to` if a precondition holds for `to`. When the object
// store copies (`in_store`), the source's pointer names an immutable object that the store copies
// (read again when it went away meanwhile); otherwise the record is read and written again.
class commit_copy_machine {
public:
    commit_copy_machine(commit_knowledge& k, std::string from, std::string to, precondition pc, bool in_store)
        : k_(k), from_(std::move(from)), to_(std::move(to)), pc_(std::move(pc)), in_store_(in_store) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_probe(error_code ec, capabilities c);
    BATON_DECL machine_step on_put(error_code ec, put_result r);
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_cancel();
    put_result& result() noexcept { return result_; }

private:
    machine_step read_source();
    machine_step source_read(error_code ec, get_result r);
    machine_step from_put(machine_step s);

    commit_knowledge& k_;
    std::string from_;
    std::string to_;
    precondition pc_;
    bool in_store_;
    unsigned rounds_ = 0;
    std::optional<commit_get_machine> get_;
    std::optional<commit_put_machine> put_;
    put_result result_;
};

// Deletes the commit objects under a key prefix that no pointer can ever name again.
class commit_collect_machine {
public:
    commit_collect_machine(commit_knowledge& k, std::string prefix) : k_(k), prefix_(std::move(prefix)) {}
    BATON_DECL machine_step start();
    BATON_DECL machine_step on_list(error_code ec, list_page p);
    BATON_DECL machine_step on_get(error_code ec, get_result r);
    BATON_DECL machine_step on_erase(error_code ec, erase_result r);
    BATON_DECL machine_step on_cancel();
    collect_result& result() noexcept { return out_; }

private:
    machine_step list();
    machine_step examine_next();

    commit_knowledge& k_;
    std::string prefix_;
    std::string after_;
    bool truncated_ = false;
    std::vector<list_entry> names_;
    std::size_t next_ = 0;
    std::optional<commit_object_parts> parts_;
    collect_result out_;
};

} // namespace baton::detail

#ifndef BATON_SEPARATE_COMPILATION
#include <baton/store/impl/commit_machines.ipp>
#endif

#endif
