#pragma once
// grain::task_group: run any number of tasks, then wait for all of them (the shape of TBB's
// and HPX's task_group). Where a future per task would cost a shared state, a reference count
// and a read-modify-write to publish each result, a group's task writes its result where the
// caller said and counts itself done: a task the waiting owner runs itself (the usual case in
// a spawn-all-then-join program) costs a pooled block, a deque push and a pop, and no other
// locked instruction (docs/design/hot-path.md, "task_group").
//
//   grain::task_group g;
//   for (int i = 0; i < 10; ++i) g.run([&r, i] { r[i] = work(i); });
//   g.wait();  // runs the group's tasks still in this worker's queue, waits for the others
//
// Rules:
// - The owner is the task (or non-worker thread) that constructed the group. Only the owner
//   may wait(); a wait from elsewhere throws std::logic_error. The owner and the group's own
//   tasks may call run() at any time; another thread's run() must return before the owner's
//   wait() begins.
// - wait() rethrows the first exception a task threw; every task still runs to the end. Later
//   exceptions are counted as unread (/threads/count/unread-exceptions).
// - The destructor waits for tasks still running (an exception nobody waited for is reported
//   as unread): a group never leaves a task behind that refers to the caller's frame.
// - The group can be reused after wait().
#include <atomic>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>

#include "grain/async.hpp"
#include "grain/detail/small_allocator.hpp"
#include "grain/detail/task.hpp"
#include "grain/detail/waiter.hpp"

namespace grain {

namespace detail {

class task_group_core;
struct worker;

// Every task of every group has the same run function (run_entry): the owner's wait
// recognises its own group's tasks among the siblings it pops by it.
struct group_task_base : task_base {
  task_group_core* group = nullptr;
  // Runs the callable (when `run`), destroys it and frees the block; stores an exception the
  // callable threw in the group.
  void (*invoke)(group_task_base*, bool run) noexcept = nullptr;
  bool by_owner = false;  // run inline by the owner's wait: counted done without an atomic
  static void run_entry(task_base* t);
};

class task_group_core {
 public:
  task_group_core() noexcept;
  ~task_group_core() = default;
  task_group_core(const task_group_core&) = delete;
  task_group_core& operator=(const task_group_core&) = delete;

  void spawn(group_task_base* t);  // counts t in, then queues it
  void wait();
  void wait_in_destructor() noexcept;
  void store_error(std::exception_ptr e) noexcept;

  // Owner only: every task run so far has finished. Acquire: what they wrote is visible once
  // they are seen counted out.
  bool done() const noexcept {
    return spawned_local_ - done_local_ + count_in(shared_.load(std::memory_order_acquire)) == 0;
  }
  // Owner only: nothing left to wait for or to rethrow (the destructor's fast path).
  bool settled() const noexcept { return done() && !has_error_.load(std::memory_order_relaxed); }

 private:
  friend struct group_task_base;
  void wait_for_all(bool check_owner);
  void finish_remote() noexcept;
  bool register_waiter(waiter* n) noexcept;
  // Runs the group's (and the owner's other) tasks at the bottom of the owner's queue.
  void help(worker* w);

  static constexpr std::uint64_t asleep_bit = 1, one_task = 2;
  static constexpr std::int64_t count_in(std::uint64_t word) noexcept {
    return static_cast<std::int64_t>(word) >> 1;  // arithmetic: the count may be negative
  }

  // Tasks the owner spawned and tasks it ran inline are counted in plain fields, which only
  // the owner's user thread touches; every other spawn and every other finish moves the
  // shared word. All done: spawned_local_ - done_local_ + remote count == 0.
  std::uint64_t owner_guid_;  // 0: no owner task (a non-worker thread): everything is shared
  std::int64_t spawned_local_ = 0;
  std::int64_t done_local_ = 0;
  // The remote count (tasks counted in by others, minus tasks that finished elsewhere) in
  // bits 1..63. While the owner sleeps, bit 0 is set and bits 1..63 count the tasks left.
  alignas(64) std::atomic<std::uint64_t> shared_{0};
  waiter* sleeper_ = nullptr;  // written by the owner before it sets bit 0
  spinlock error_lock_;
  std::exception_ptr error_;
  std::atomic<bool> has_error_{false};
};

template <class F>
struct group_task final : group_task_base {
  F fn;
  group_task(F&& f, task_group_core* g) : fn(std::move(f)) {
    group = g;
    run_fn = &group_task_base::run_entry;
    invoke = &invoke_fn;
  }
  static void invoke_fn(group_task_base* b, bool run) noexcept {
    auto* self = static_cast<group_task*>(b);
    if (GRAIN_LIKELY(run)) {
      try {
        self->fn();
      } catch (...) {
        self->group->store_error(std::current_exception());
      }
      callable_returned(self);
    }
    self->~group_task();
    deallocate_for<group_task>(self);
  }
};

}  // namespace detail

class task_group {
 public:
  task_group() = default;
  ~task_group() {
    if (!core_.settled()) core_.wait_in_destructor();
  }
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  // Start f() as a task of this group. Throws when no runtime is running.
  template <class F>
  requires std::is_invocable_v < std::decay_t<F>
  & > void run(F&& f) { run(executor{}, std::forward<F>(f)); }
  // The same on a pool or at a priority (the owner's wait runs only tasks of its own pool at
  // normal priority inline; the others it waits for).
  template <class F>
  requires std::is_invocable_v < std::decay_t<F>
  & > void run(const executor& ex, F&& f) {
    using task_t = detail::group_task<std::decay_t<F>>;
    if (!detail::runtime_running()) detail::throw_no_runtime();
    auto* t =
        ::new (detail::allocate_for<task_t>()) task_t(std::decay_t<F>(std::forward<F>(f)), &core_);
    t->info.name = detail::task_name<std::decay_t<F>>::of(t->fn);
    t->prio = ex.prio;
    t->pool = ex.pool;
    core_.spawn(t);
  }

  // Wait until every task run so far has finished; rethrow the first exception one threw.
  void wait() { core_.wait(); }

 private:
  detail::task_group_core core_;
};

}  // namespace grain
