// baton's non-template code, compiled once: the Meson build's library for
// -Dseparate_compilation=true (its dependency defines BATON_SEPARATE_COMPILATION
// in every unit that uses it, and links this one).
#include <baton/src.hpp>
