// boost_coro.cc: asio_coro.cc's program (the same coroutines, chains and
// crash) built against Boost.Asio 1.74 (libboost1.74-dev) instead of
// Debian's standalone Asio: the Makefile puts boost-asio/ (an asio.hpp
// that includes <boost/asio.hpp> and aliases the namespace) first on the
// include path.  Its expected chains are asio_coro.cc's.  Issue 33.
#include "asio_coro.cc"
