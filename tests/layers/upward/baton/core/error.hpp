// A fixture for the layer check: core must not include a recipe (the check must fail here).
#include <baton/recipe/lease.hpp>
