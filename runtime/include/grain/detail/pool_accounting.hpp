#pragma once
// Objects the runtime's pools have handed out and not yet taken back, for tests that check
// that everything went back at teardown (tests/runtime/runtime_fixture.hpp). Counts of what is
// in use, never of what is cached: a free list may legitimately keep blocks after a runtime
// stopped. The counting rides on the pools' own free-list counts, so it costs nothing on the
// spawn path.
#include <cstdint>

namespace grain::detail {

// Pooled task objects and shared states (small_allocator.hpp) in use, in the whole process.
std::int64_t small_blocks_in_use() noexcept;

// Fibers, each with its stack, that hold a suspended user thread: of the running scheduler, or
// (none running) those the last one left behind when it stopped.
std::int64_t fibers_in_use() noexcept;

}  // namespace grain::detail
