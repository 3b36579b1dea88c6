// With BATON_SEPARATE_COMPILATION defined for every unit of the program, exactly one unit compiles
// baton's non-template code: this one. Header-only (the default), it is empty.
#ifdef BATON_SEPARATE_COMPILATION
#include <baton/src.hpp>
#endif
