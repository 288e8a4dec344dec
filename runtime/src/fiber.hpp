#pragma once
// A user-level thread context: a Boost.Context fcontext on a pooled stack. Every fiber runs
// the worker loop; a task runs as a plain call on whatever fiber picked it up and only keeps
// that fiber when it suspends. So a task that never blocks costs no context switch at all, and
// a stack goes back to the pool as soon as its task no longer needs it.
#include <boost/context/detail/fcontext.hpp>

#include <cstdint>

#include "grain/detail/task.hpp"
#include "stack_pool.hpp"

namespace grain::detail {

namespace bctx = boost::context::detail;

struct fiber;

// What the fiber we switch to does first, on its own stack, once `from` is fully saved.
// This is what makes suspension race-free: `from` becomes visible to other workers only here.
struct switch_record {
  fiber* from = nullptr;
  fiber* to = nullptr;
  void (*action)(void* arg, fiber* from) = nullptr;
  void* arg = nullptr;
};

struct fiber {
  bctx::fcontext_t ctx = nullptr;
  stack stk;                   // empty for a worker's OS-thread context
  task_base* task = nullptr;   // innermost task on this fiber while it is suspended
  std::uint64_t ready_ns = 0;  // when it was made ready (pending wait time)
  fiber* next = nullptr;       // free lists
  std::int16_t pool = 0;
  priority prio = priority::normal;
  bool timed_out = false;  // park_until: woken by the timer
  void* tsan_fiber = nullptr;
  const void* asan_bottom = nullptr;
  std::size_t asan_size = 0;
};

// Make a fiber on `stk` whose first activation calls entry(record) and never returns.
void fiber_init(fiber& f, const stack& stk, void (*entry)(bctx::transfer_t));
// Prepare the fiber object describing the calling OS thread's own context.
void fiber_init_thread(fiber& f);
void fiber_destroy(fiber& f);

// Switch from the running fiber `from` to `to`; `rec.action` runs on `to` first. Returns when
// someone switches back to `from`.
void fiber_switch(fiber* from, fiber* to, switch_record& rec);
// On the side that was switched to: store the context of the fiber that left, run its action.
void fiber_arrived(bctx::transfer_t t);

}  // namespace grain::detail
