// Precompiled once per test executable (meson cpp_pch): the headers every suite
// includes. Parsing <baton/baton.hpp> alone costs ~13 s of CPU per translation
// unit; with this header it is paid once per executable. Each test file still
// includes what it uses, so it also builds without the precompiled header.
#include <baton/baton.hpp>
#include <baton/sim.hpp>

#include <doctest/doctest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
