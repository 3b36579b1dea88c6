// baton's non-template code, compiled once: the separate-compilation build
// (-Dseparate_compilation=true) defines BATON_SEPARATE_COMPILATION in every
// translation unit of its test executable and links this one.
#include <baton/src.hpp>
