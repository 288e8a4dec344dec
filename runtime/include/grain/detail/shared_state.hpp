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
#include "grain/detail/cpu_relax.hpp"
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

  bool is_ready() const noexcept {
    return (sync_.load(std::memory_order_acquire) & ready_bit) != 0;
  }

  // Register `w`; false if the state is already ready (then w is not registered).
  bool add_waiter(waiter* w) noexcept {
    for (;;) {
      // Acquire: a caller told "ready" reads the value next (a load, not a fence: ThreadSanitizer
      // does not follow fences).
      std::uint64_t v = sync_.load(std::memory_order_acquire);
      if (v & ready_bit) return false;
      if (!(v & locked_bit) &&
          sync_.compare_exchange_weak(v, v | locked_bit, std::memory_order_acquire,
                                      std::memory_order_relaxed))
        break;
      cpu_relax();
    }
    waiters_.push(w);
    unlock();
    return true;
  }
  // True if `w` was still registered (and is now removed).
  bool remove_waiter(waiter* w) noexcept {
    lock();
    bool removed = waiters_.remove(w);
    unlock();
    return removed;
  }

  void add_ref() noexcept { sync_.fetch_add(one_ref, std::memory_order_relaxed); }
  void release() noexcept {
    if (GRAIN_UNLIKELY(sole_holder_waits_)) {
      // The producing task ran inline in the wait of the only other holder (see
      // run_inline_for_sole_holder): nobody else can hold, add or drop a reference.
      sole_holder_waits_ = false;
      const std::uint64_t v = sync_.load(std::memory_order_relaxed);
      if (refs_in(v) != 1) {
        sync_.store(v - one_ref, std::memory_order_relaxed);
        return;
      }
    }
    // A sole owner needs no read-modify-write: only owners add references, so none can appear.
    if (refs_in(sync_.load(std::memory_order_acquire)) == 1 ||
        refs_in(sync_.fetch_sub(one_ref, std::memory_order_acq_rel)) == 1)
      destroy();
  }
  // The reference count of a state nobody else sees yet (creation).
  void init_refs(std::uint32_t n) noexcept {
    sync_.store(std::uint64_t{n} * one_ref, std::memory_order_relaxed);
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
    if (refs_in(sync_.load(std::memory_order_relaxed)) == 2) {
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

  // The same for every R: the error, then ready.
  void set_exception(std::exception_ptr e) {
    error = std::move(e);
    mark_ready();
  }
  void set_exception_and_release(std::exception_ptr e) {
    error = std::move(e);
    mark_ready_and_release();
  }
  [[noreturn]] void rethrow_error() {
    error_read.store(true, std::memory_order_relaxed);
    std::rethrow_exception(error);
  }

 protected:
  void mark_ready() noexcept {
    if (unpublished_) {
      unpublished_ = false;
      sync_.store(sync_.load(std::memory_order_relaxed) | ready_bit, std::memory_order_release);
      return;
    }
    std::uint64_t v = sync_.load(std::memory_order_relaxed);
    while (!(v & (locked_bit | waiters_bit)))
      if (sync_.compare_exchange_weak(v, v | ready_bit, std::memory_order_release,
                                      std::memory_order_relaxed))
        return;
    mark_ready_with_waiters();
  }
  // A producing task that holds a reference: becomes ready and drops that reference in one
  // read-modify-write where mark_ready() + release() took two (the spinlock's exchange and
  // the count's decrement). Not after: the state may be gone once this returns.
  void mark_ready_and_release() noexcept {
    if (GRAIN_LIKELY(!unpublished_)) {
      std::uint64_t v = sync_.load(std::memory_order_relaxed);
      // With waiters (or one registering now) the publication takes the lock; as the last
      // holder it destroys the state: both as before, in two steps.
      while (!(v & (locked_bit | waiters_bit)) && refs_in(v) > 1)
        if (sync_.compare_exchange_weak(v, (v | ready_bit) - one_ref, std::memory_order_release,
                                        std::memory_order_relaxed))
          return;
    }
    mark_ready();
    release();
  }

 private:
  // One word for the lock of the waiter list, readiness, whether anyone waits, and the
  // reference count, so that a task's completion is one read-modify-write. Only the lock's
  // holder changes the three flags (readiness too, once the list is not empty); the count
  // changes under the lock or not, in multiples of one_ref, which leave the flags alone.
  static constexpr std::uint64_t locked_bit = 1, ready_bit = 2, waiters_bit = 4, one_ref = 8;
  static constexpr std::uint64_t refs_in(std::uint64_t v) noexcept { return v / one_ref; }

  void lock() noexcept {
    for (;;) {
      std::uint64_t v = sync_.load(std::memory_order_relaxed);
      if (!(v & locked_bit) &&
          sync_.compare_exchange_weak(v, v | locked_bit, std::memory_order_acquire,
                                      std::memory_order_relaxed))
        return;
      cpu_relax();
    }
  }
  // Releases the lock and says whether the list holds anyone; `ready` also marks the state.
  void unlock(bool ready = false) noexcept {
    const std::uint64_t v = sync_.load(std::memory_order_relaxed);
    std::uint64_t flags = v & (locked_bit | ready_bit | waiters_bit);
    std::uint64_t next = (flags & ~(locked_bit | waiters_bit)) | (ready ? ready_bit : 0) |
                         (waiters_.empty() ? 0 : waiters_bit);
    // Only the count can change meanwhile (by whole references): add the flags' difference.
    sync_.fetch_add(next - flags, std::memory_order_acq_rel);
  }
  GRAIN_NOINLINE void mark_ready_with_waiters() noexcept {
    lock();
    waiter* w = waiters_.take_all();
    unlock(true);
    notify_all(w);
  }
  void destroy() noexcept {
    if (GRAIN_UNLIKELY(static_cast<bool>(error)) && !error_read.load(std::memory_order_relaxed))
      report_unread_exception(error);
    destroy_fn(this);
  }

  std::atomic<std::uint64_t> sync_{one_ref};
  bool unpublished_ = false;
  bool sole_holder_waits_ = false;
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
  template <class... A>
  void set_value_and_release(A&&... a) {
    ::new (static_cast<void*>(&storage_)) R(std::forward<A>(a)...);
    has_value_ = true;
    mark_ready_and_release();
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
  void set_value_and_release(R& r) {
    ptr_ = &r;
    mark_ready_and_release();
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
  void set_value_and_release() { mark_ready_and_release(); }
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

// invoke_into for a task that holds a reference to `s` and drops it when done: `done()` runs
// once f has returned or thrown (the callable's captures go before the result is published),
// then the result is published and the reference dropped in one step
// (mark_ready_and_release). Neither `s` nor the task may be touched afterwards.
template <class R, class F, class Done>
inline void invoke_and_release(shared_state<R>& s, F& f, const task_base* t, Done done) {
  bool finished = false;
  auto finish = [&]() noexcept {
    if (finished) return;  // R's constructor threw after the callable had returned
    finished = true;
    done();
    callable_returned(t);
  };
  try {
    if constexpr (std::is_void_v<R>) {
      f();
      finish();
      s.set_value_and_release();
    } else {
      R r = f();
      finish();
      s.set_value_and_release(static_cast<R&&>(r));
    }
  } catch (...) {
    finish();
    s.set_exception_and_release(std::current_exception());
  }
}

}  // namespace grain::detail
