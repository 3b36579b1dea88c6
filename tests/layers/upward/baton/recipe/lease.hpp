// A fixture for the layer check: a recipe must not include a backend's code (the check must fail here).
#include <baton/backend/s3.hpp>
