// Stores for testing the commit protocol: one that ignores preconditions (what s3rver and old
// S3-compatible stores do), and one that holds chosen writes back and lets them land later, after
// their sender was told they timed out (a request delayed in the network past its deadline).
#ifndef BATON_TEST_COMMON_COMMIT_STORES_HPP
#define BATON_TEST_COMMON_COMMIT_STORES_HPP

#include <baton/backend/memory.hpp>
#include <baton/store/record_store.hpp>

#include <boost/asio/deferred.hpp>

#include <deque>
#include <memory>
#include <string>

namespace test_common {

/// `Inner` with every precondition dropped: each put and erase is applied unconditionally.
template <class Inner>
class ignores_preconditions {
public:
    using executor_type = typename Inner::executor_type;
    explicit ignores_preconditions(Inner inner) : inner_(std::move(inner)) {}
    executor_type get_executor() const { return inner_.get_executor(); }
    Inner& inner() { return inner_; }

    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& t = {}) { return inner_.async_get(std::move(key), std::forward<Token>(t)); }
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, baton::precondition, Token&& t = {}) {
        return inner_.async_put(std::move(key), std::move(body), baton::precondition::none(), std::forward<Token>(t));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, baton::precondition, Token&& t = {}) {
        return inner_.async_erase(std::move(key), baton::precondition::none(), std::forward<Token>(t));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& t = {}) {
        return inner_.async_list(std::move(prefix), std::move(after), limit, std::forward<Token>(t));
    }
    /// What such a store's probe finds: nothing conditional.
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& t = {}) {
        return baton::detail::async_at_once<baton::capabilities>(inner_.get_executor(), std::forward<Token>(t), [](baton::capabilities& c) {
            c.findings.push_back("put if absent on an existing key: accepted (ignored)");
            return baton::error_code{};
        });
    }

private:
    Inner inner_;
};

/** A memory store whose puts and erases on keys starting with a chosen prefix are held back:
    the sender is told `errc::timeout` at once, and the write reaches the store only when the
    test says so (`land_held`), with the precondition it was sent with. */
class holding_store {
public:
    using executor_type = baton::memory_backend::executor_type;

    explicit holding_store(baton::memory_backend inner) : inner_(std::move(inner)), sh_(std::make_shared<shared>()) {}
    executor_type get_executor() const { return inner_.get_executor(); }
    baton::memory_backend& inner() { return inner_; }

    /// Holds back the next `n` writes whose key starts with `prefix`.
    void hold_next(std::string prefix, int n = 1) {
        sh_->hold_prefix = std::move(prefix);
        sh_->hold_count = n;
        sh_->mode = mode_kind::hold;
    }
    /// The next write whose key starts with `prefix` is applied, then delivered again, and its
    /// sender hears the answer to the second delivery (a proxy or a retrying layer resent it).
    void duplicate_next(std::string prefix) {
        sh_->hold_prefix = std::move(prefix);
        sh_->hold_count = 1;
        sh_->mode = mode_kind::duplicate;
    }
    /// The next write whose key starts with `prefix` is applied, and its sender hears `ec`
    /// (an answer cut short after the store applied it).
    void fail_after_applying_next(std::string prefix, baton::error_code ec) {
        sh_->hold_prefix = std::move(prefix);
        sh_->hold_count = 1;
        sh_->mode = mode_kind::applied_then_error;
        sh_->error = ec;
    }
    /// Writes held back and not landed yet.
    std::size_t held() const { return sh_->held.size(); }
    /// The key of the oldest held write.
    std::string const& held_key() const { return sh_->held.front().key; }
    /// Sends the oldest held write to the store now; `done(error_code)` hears what the store said
    /// (its sender does not: it was told timeout long ago).
    template <class Done>
    void land_held(Done done) {
        auto w = std::move(sh_->held.front());
        sh_->held.pop_front();
        if (w.erase) inner_.async_erase(w.key, w.pc, [done](baton::error_code ec, baton::erase_result) mutable { done(ec); });
        else inner_.async_put(w.key, w.body, w.pc, [done](baton::error_code ec, baton::put_result) mutable { done(ec); });
    }

    template <class Token = boost::asio::deferred_t>
    auto async_get(std::string key, Token&& t = {}) { return inner_.async_get(std::move(key), std::forward<Token>(t)); }
    template <class Token = boost::asio::deferred_t>
    auto async_put(std::string key, std::string body, baton::precondition pc, Token&& t = {}) {
        return boost::asio::async_initiate<Token, void(baton::error_code, baton::put_result)>(
            [this](auto h, std::string key, std::string body, baton::precondition pc) {
                if (!take(key)) return inner_.async_put(std::move(key), std::move(body), std::move(pc), std::move(h));
                if (sh_->mode == mode_kind::duplicate) {
                    inner_.async_put(key, body, pc, [](baton::error_code, baton::put_result) {});
                    return inner_.async_put(std::move(key), std::move(body), std::move(pc), std::move(h));
                }
                if (sh_->mode == mode_kind::applied_then_error) {
                    inner_.async_put(std::move(key), std::move(body), std::move(pc), [](baton::error_code, baton::put_result) {});
                    return baton::detail::post_completion(inner_.get_executor(), std::move(h), sh_->error, baton::put_result{});
                }
                sh_->held.push_back(held_write{false, std::move(key), std::move(body), std::move(pc)});
                baton::put_result r;
                r.diag.message = "held back by the test";
                baton::detail::post_completion(inner_.get_executor(), std::move(h), baton::errc::timeout, std::move(r));
            },
            t, std::move(key), std::move(body), std::move(pc));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_erase(std::string key, baton::precondition pc, Token&& t = {}) {
        return boost::asio::async_initiate<Token, void(baton::error_code, baton::erase_result)>(
            [this](auto h, std::string key, baton::precondition pc) {
                if (!take(key)) return inner_.async_erase(std::move(key), std::move(pc), std::move(h));
                if (sh_->mode != mode_kind::hold) {
                    inner_.async_erase(key, pc, [](baton::error_code, baton::erase_result) {});
                    if (sh_->mode == mode_kind::duplicate) return inner_.async_erase(std::move(key), std::move(pc), std::move(h));
                    return baton::detail::post_completion(inner_.get_executor(), std::move(h), sh_->error, baton::erase_result{});
                }
                sh_->held.push_back(held_write{true, std::move(key), {}, std::move(pc)});
                baton::detail::post_completion(inner_.get_executor(), std::move(h), baton::errc::timeout, baton::erase_result{});
            },
            t, std::move(key), std::move(pc));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_list(std::string prefix, std::string after, std::size_t limit, Token&& t = {}) {
        return inner_.async_list(std::move(prefix), std::move(after), limit, std::forward<Token>(t));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_probe(Token&& t = {}) { return inner_.async_probe(std::forward<Token>(t)); }
    /// A copy inside the store, like S3's CopyObject: no read through the client (counted as a put).
    template <class Token = boost::asio::deferred_t>
    auto async_copy_object(std::string from, std::string to, Token&& t = {}) {
        return boost::asio::async_initiate<Token, void(baton::error_code, baton::put_result)>(
            [this](auto h, std::string from, std::string to) {
                auto cur = inner_.peek(from);
                if (!cur) return baton::detail::post_completion(inner_.get_executor(), std::move(h), baton::errc::not_found, baton::put_result{});
                inner_.async_put(std::move(to), std::move(cur->body), baton::precondition::none(), std::move(h));
            },
            t, std::move(from), std::move(to));
    }

private:
    struct held_write {
        bool erase = false;
        std::string key, body;
        baton::precondition pc = baton::precondition::none();
    };
    enum class mode_kind { hold, duplicate, applied_then_error };
    struct shared {
        std::string hold_prefix;
        int hold_count = 0;
        mode_kind mode = mode_kind::hold;
        baton::error_code error;
        std::deque<held_write> held;
    };
    bool take(std::string const& key) {
        if (sh_->hold_count <= 0 || key.compare(0, sh_->hold_prefix.size(), sh_->hold_prefix) != 0) return false;
        --sh_->hold_count;
        return true;
    }

    baton::memory_backend inner_;
    std::shared_ptr<shared> sh_;
};

} // namespace test_common

#endif
