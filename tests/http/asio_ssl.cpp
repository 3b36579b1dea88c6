// Compiles Asio's SSL support once for baton_http (tests/common/asio.cpp compiles the rest of
// Asio and Beast, without SSL, for every test executable).
#include <boost/asio/ssl/impl/src.hpp>
