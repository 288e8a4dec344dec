#pragma once
// The address ranges of every user-thread stack that exists (guard regions included), for the
// SIGSEGV handler (stack_guard.cpp): a fault inside any of them is a stack overflow, also when
// a frame larger than its own stack's guard jumped into the guard of another stack.
//
// Written by the stack pools under a lock when they map and unmap; read by a signal handler,
// which can take no lock and allocate nothing: entries live in blocks that are never freed and
// are read with atomic loads.
#include <cstddef>

namespace grain::detail::stack_ranges {

struct entry;

// [lo, lo + bytes): a stack's reservation, its guard region and its usable bytes (or a whole
// slab of them). The entry is what remove() takes, before the range is unmapped.
entry* add(const void* lo, std::size_t bytes);
void remove(entry* e) noexcept;

// Async-signal-safe.
bool contains(const void* addr) noexcept;

}  // namespace grain::detail::stack_ranges
