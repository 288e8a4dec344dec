#pragma once
// The shared state behind future/promise: readiness, value or exception, the waiters, and a
// reference count (future, shared_future copies, the producing task, continuations).
#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

#include "grain/detail/config.hpp"
#include "grain/detail/small_allocator.hpp"
#include "grain/detail/task.hpp"
#include "grain/detail/waiter.hpp"

namespace grain::detail {

// A state is destroyed holding an exception nobody read (future_support.cpp): say so once,
// count every one (std::future loses it silently).
void report_unread_exception(const std::exception_ptr& e) noexcept;
std::uint64_t unread_exceptions() noexcept;

class state_base {
 public:
  state_base() = default;
  state_base(const state_base&) = delete;
  state_base& operator=(const state_base&) = delete;

  bool is_ready() const noexcept { return ready_.load(std::memory_order_acquire); }

  // Register `w`; false if the state is already ready (then w is not registered).
  bool add_waiter(waiter* w) noexcept {
    lock_.lock();
    if (ready_.load(std::memory_order_relaxed)) {
      lock_.unlock();
      return false;
    }
    waiters_.push(w);
    lock_.unlock();
    return true;
  }
  // True if `w` was still registered (and is now removed).
  bool remove_waiter(waiter* w) noexcept {
    lock_.lock();
    bool removed = waiters_.remove(w);
    lock_.unlock();
    return removed;
  }

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (GRAIN_UNLIKELY(sole_holder_waits_)) {
      // The producing task ran inline in the wait of the only other holder (see
      // run_inline_for_sole_holder): nobody else can hold, add or drop a reference.
      sole_holder_waits_ = false;
      const std::uint32_t r = refs_.load(std::memory_order_relaxed);
      if (r != 1) {
        refs_.store(r - 1, std::memory_order_relaxed);
        return;
      }
    }
    // A sole owner needs no read-modify-write: only owners add references, so none can appear.
    if (refs_.load(std::memory_order_acquire) == 1 ||
        refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (GRAIN_UNLIKELY(static_cast<bool>(error)) && !error_read.load(std::memory_order_relaxed))
        report_unread_exception(error);
      destroy_fn(this);
    }
  }
  // The state is not visible to anyone else yet (launch::adaptive runs the task inline before
  // its future exists): becoming ready needs neither the lock nor waking waiters.
  void set_unpublished() noexcept { unpublished_ = true; }
  // Called by a waiter about to run the producing task inline, on its own stack: if the task
  // and the waiter's future are the only references, no one else can register a waiter or
  // take a reference while the task runs (only holders do either, and the one holder is
  // blocked in this wait), so publishing the value and the task's release need no lock and no
  // read-modify-write. Saves two locked instructions per inline join (fib: every task).
  void claim_for_sole_holder() noexcept {
    if (refs_.load(std::memory_order_relaxed) == 2) {
      unpublished_ = true;
      sole_holder_waits_ = true;
    }
  }

  // Block (suspend the user thread / the OS thread) until ready. Runs a deferred function or
  // the still-queued producing task inline when it can. `private_ref`: the caller holds its
  // reference where no other thread can reach it (future::get took it out of the future), so
  // a reference count of 2 means the task and this caller only (claim_for_sole_holder). Not
  // for wait() through a future or shared_future object: two threads may wait on one.
  void wait(bool private_ref = false);
  // False on timeout.
  bool wait_until(std::uint64_t deadline_ns);

  std::exception_ptr error;
  std::atomic<bool> error_read{false};  // get(), has_exception() or the like has seen it
  void (*destroy_fn)(state_base*) noexcept = nullptr;
  void (*deferred_fn)(state_base*) = nullptr;  // launch::deferred: runs on first wait
  task_base* producer = nullptr;               // the queued task computing this value, if any
  std::atomic<bool> claimed{false};            // deferred: started; promise: satisfied
  std::atomic<std::uint32_t> refs_{1};

  // The same for every R: the error, then ready.
  void set_exception(std::exception_ptr e) {
    error = std::move(e);
    mark_ready();
  }
  [[noreturn]] void rethrow_error() {
    error_read.store(true, std::memory_order_relaxed);
    std::rethrow_exception(error);
  }

 protected:
  void mark_ready() noexcept {
    if (unpublished_) {
      unpublished_ = false;
      ready_.store(true, std::memory_order_release);
      return;
    }
    lock_.lock();
    ready_.store(true, std::memory_order_release);
    waiter* w = waiters_.take_all();
    lock_.unlock();
    notify_all(w);
  }

 private:
  std::atomic<bool> ready_{false};
  bool unpublished_ = false;
  bool sole_holder_waits_ = false;
  spinlock lock_;
  waiter_queue waiters_;
};

template <class R>
class shared_state : public state_base {
 public:
  ~shared_state() {
    if (has_value_) value_ptr()->~R();
  }
  template <class... A>
  void set_value(A&&... a) {
    ::new (static_cast<void*>(&storage_)) R(std::forward<A>(a)...);
    has_value_ = true;
    mark_ready();
  }
  R& value() {
    if (error) rethrow_error();
    return *value_ptr();
  }

 private:
  R* value_ptr() noexcept { return std::launder(reinterpret_cast<R*>(&storage_)); }
  alignas(R) unsigned char storage_[sizeof(R)];
  bool has_value_ = false;
};

template <class R>
class shared_state<R&> : public state_base {
 public:
  void set_value(R& r) {
    ptr_ = &r;
    mark_ready();
  }
  R& value() {
    if (error) rethrow_error();
    return *ptr_;
  }

 private:
  R* ptr_ = nullptr;
};

template <>
class shared_state<void> : public state_base {
 public:
  void set_value() { mark_ready(); }
  void value() {
    if (error) rethrow_error();
  }
};

// A heap/pool-allocated standalone state (promise, make_ready_future, when_all, ...).
template <class R>
struct plain_state final : shared_state<R> {
  static plain_state* create() {
    void* mem = allocate_for<plain_state>();
    auto* s = ::new (mem) plain_state();
    s->destroy_fn = [](state_base* b) noexcept {
      auto* self = static_cast<plain_state*>(b);
      self->~plain_state();
      deallocate_for<plain_state>(self);
    };
    return s;
  }
};

// The callable of a task the loop runs as a phase of its own has returned (phase_timing.hpp):
// the phase's execution time ends here, before the result is published. Publishing may wake a
// waiter (a futex for an OS thread blocked in get()), which is the runtime's overhead, not the
// task's: t_d is the task's own time (docs/counters.md).
void mark_callable_end() noexcept;
inline void callable_returned(const task_base* t) noexcept {
  if (t->timed_phase) mark_callable_end();
}

// Invoke f() and publish its result (or exception) into `s`. A task passes itself (`t`): its
// callable's end may end a timed phase.
template <class R, class F>
inline void invoke_into(shared_state<R>& s, F& f, const task_base* t = nullptr) {
  try {
    if constexpr (std::is_void_v<R>) {
      f();
      if (t) callable_returned(t);
      s.set_value();
    } else {
      if (!t) {
        s.set_value(f());
        return;
      }
      R r = f();
      callable_returned(t);
      s.set_value(static_cast<R&&>(r));
    }
  } catch (...) {
    if (t) callable_returned(t);
    s.set_exception(std::current_exception());
  }
}

}  // namespace grain::detail
