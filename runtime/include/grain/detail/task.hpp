#pragma once
// A task as the scheduler sees it: a type-erased run function plus identity (GUID, parent,
// name), priority and pool. Task objects live inside pooled blocks together with the shared
// state of their future (see async.hpp), so spawning allocates nothing from the heap.
#include <cxxabi.h>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <typeinfo>

#include "grain/detail/config.hpp"
#include "grain/ext/hooks.hpp"

namespace grain {

enum class priority : std::uint8_t { high = 0, normal = 1, low = 2 };

namespace detail {

struct task_base {
  void (*run_fn)(task_base*) = nullptr;  // runs the callable, publishes the result, releases
  task_info info{};
  std::uint64_t created_ns = 0;  // set for a sample of tasks (staged wait time)
  priority prio = priority::normal;
  std::int16_t pool = -1;  // -1: the spawning worker's pool (or "default")
  // launch::adaptive only: nesting depth (parent's + 1), part of the duration model's key;
  // 0 for tasks launched otherwise. inline_subtree: an adaptive call inlined because it is
  // short, so everything it launches adaptively is shorter still and runs as a plain call.
  // Both fit in padding: the task does not grow.
  std::uint16_t depth = 0;
  bool inline_subtree = false;
  // Set by the scheduler loop when it runs this task as a phase of its own (run_task): only
  // then does the end of its callable end a timed phase (mark_callable_end). Tasks run inline
  // are part of the enclosing phase and must not pay for a clock read. Also in padding.
  bool timed_phase = false;
  void run() { run_fn(this); }
};

static_assert(sizeof(task_base) <= 48, "task_base grew: its flags must fit in padding");

// Scheduler entry points (runtime/src/spawn.cpp; g_instance: scheduler.cpp).
void spawn(task_base* t);      // queue a staged task
void spawn_new(task_base* t);  // assign_ids, then spawn: one look-up of the worker
class state_base;
// If t is still in this worker's queue: run it now. `s`: t's state, when the caller holds a
// reference to it and waits for it (state_base::claim_for_sole_holder).
bool try_run_inline(task_base* t, state_base* s = nullptr);
void run_inline(task_base* t);          // run t now on this stack (sync, adaptive, deferred)
void fork_run(task_base* t);            // run t now; the caller's continuation is stealable
std::uint64_t current_guid() noexcept;  // GUID of the running task, 0 outside tasks
// A new task's guid and parent_guid, with one look-up of the worker (every async does this).
void assign_ids(task_info& info) noexcept;

class scheduler;
extern std::atomic<scheduler*> g_instance;  // the running scheduler, if any
// Inline: every async asks, and an out-of-line call cost as much as what it returns.
inline bool runtime_running() noexcept {
  return g_instance.load(std::memory_order_acquire) != nullptr;
}
[[noreturn]] void throw_no_runtime();

// "main::{lambda()#1}" for lambdas, the demangled type otherwise; computed once per type.
std::string demangle(const char* mangled);
template <class F>
const char* type_name_of() {
  static const std::string name = demangle(typeid(F).name());
  return name.c_str();
}

}  // namespace detail
}  // namespace grain
