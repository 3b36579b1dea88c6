// Where the shared test data lives (../shared beside the project root), for suites that read it.
#ifndef BATON_TEST_COMMON_SHARED_DATA_HPP
#define BATON_TEST_COMMON_SHARED_DATA_HPP

#include <cstdlib>
#include <filesystem>
#include <optional>

namespace test_common {

/// The shared/ folder, from BATON_SHARED_DIR (set by meson test), or nothing when it is absent.
inline std::optional<std::filesystem::path> shared_dir() {
    char const* env = std::getenv("BATON_SHARED_DIR");
    if (env == nullptr || *env == '\0') return std::nullopt;
    std::filesystem::path p{env};
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) return std::nullopt;
    return p;
}

} // namespace test_common

#endif
