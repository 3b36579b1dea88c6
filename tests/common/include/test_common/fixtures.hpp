// Small fixtures the suites share: a scratch directory and an injected environment.
#ifndef BATON_TEST_COMMON_FIXTURES_HPP
#define BATON_TEST_COMMON_FIXTURES_HPP

#include <baton/aws/profile.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace test_common {

/// Whether `s` contains `part`.
inline bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

/// A directory under the system temp dir, made afresh (mkdtemp: never one another test holds),
/// removed with everything in it when the test ends.
struct temp_dir {
    std::filesystem::path path;
    explicit temp_dir(std::string const& prefix = "baton-test") {
        std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (::mkdtemp(tmpl.data()) == nullptr)
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
        path = tmpl;
    }
    temp_dir(temp_dir const&) = delete;
    temp_dir& operator=(temp_dir const&) = delete;
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    /// Writes `text` to `name` (sub-directories created), replacing it; returns the full path.
    std::string write(std::string const& name, std::string const& text) const {
        auto const p = path / name;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
        return p.string();
    }
};

/// An environment the test sets and changes, injected where baton reads AWS_* variables.
/// Lookups may run on several threads while the test does not change it; each is counted.
struct test_env {
    struct read_counts {
        std::mutex mutex;
        std::map<std::string, int, std::less<>> by_name;
    };
    std::shared_ptr<std::map<std::string, std::string, std::less<>>> vars =
        std::make_shared<std::map<std::string, std::string, std::less<>>>();
    std::shared_ptr<read_counts> reads = std::make_shared<read_counts>();

    void set(std::string const& k, std::string const& v) { (*vars)[k] = v; }
    void unset(std::string const& k) { vars->erase(k); }
    /// How often `name` was looked up so far.
    int reads_of(std::string_view name) const {
        std::lock_guard<std::mutex> lock(reads->mutex);
        auto const it = reads->by_name.find(name);
        return it == reads->by_name.end() ? 0 : it->second;
    }
    baton::aws::env_lookup lookup() const {
        return [v = vars, r = reads](std::string_view name) -> std::optional<std::string> {
            {
                std::lock_guard<std::mutex> lock(r->mutex);
                ++r->by_name[std::string(name)];
            }
            auto const it = v->find(name);
            if (it == v->end()) return std::nullopt;
            return it->second;
        };
    }
};

} // namespace test_common

#endif
