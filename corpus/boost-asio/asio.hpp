// boost-asio/asio.hpp: Boost.Asio (libboost1.74-dev) under standalone
// Asio's header name and namespace, so that boost_coro.cc builds
// asio_coro.cc's program against Boost.Asio unchanged (issue 33).
#pragma once
#include <utility> // Boost 1.74's awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
namespace asio = boost::asio;
