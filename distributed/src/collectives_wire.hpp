#pragma once
// What the collectives engine's files share (collectives_engine.cpp, collectives_delivery.cpp):
// the header every rank's block starts with, and small helpers.
#include <atomic>
#include <cstdint>
#include <exception>
#include <string>

#include "grain/distributed/collectives.hpp"

namespace grain::distributed::engine_detail {

// Every rank's block starts with this; the payload follows.
struct wire_header {
  std::uint64_t type_id = 0;
  std::uint64_t generation = 0;
  std::uint32_t kind = 0, size = 0, count = 0, rank = 0, error = 0, reserved = 0;
  char message[88] = {};
};
static_assert(sizeof(wire_header) == 128);

inline std::string ms_text(std::uint64_t ns) {
  return std::to_string(ns / 1'000'000) + " ms";
}

// The engine's counts change only under its lock, and the counters and progress only read
// them: a load and a store, not a locked read-modify-write (five per generation).
template <class T, class D>
inline void add_locked(std::atomic<T>& a, D d) noexcept {
  a.store(a.load(std::memory_order_relaxed) + static_cast<T>(d), std::memory_order_relaxed);
}

inline std::exception_ptr failure(const std::string& what) {
  return std::make_exception_ptr(collective_error(what));
}

}  // namespace grain::distributed::engine_detail
