#pragma once
// grain::mutex: a lock whose waiters suspend their user thread (or block their OS thread).
// Works with std::lock_guard, std::unique_lock, std::scoped_lock and std::lock.
//
// The protocol (runtime/src/mutex.cpp; docs/design/locks.md) is that of a futex-based mutex
// with Go's starvation mode: an unlock frees the lock and wakes one waiter, which competes for
// it again with everyone else (a running task that asks takes it at once: the lock is never
// handed to a task that still has to be resumed while runnable ones wait); a locker spins
// briefly before it suspends; a waiter passed over for more than a millisecond switches the
// lock to FIFO hand-over until the queue is served, so no waiter starves.
#include <atomic>
#include <cstdint>

#include "grain/detail/waiter.hpp"

namespace grain {

class mutex {
 public:
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() {
    std::uint32_t s = 0;
    if (!state_.compare_exchange_weak(s, locked, std::memory_order_acquire,
                                      std::memory_order_relaxed))
      lock_slow();
  }

  bool try_lock() noexcept {
    std::uint32_t s = state_.load(std::memory_order_relaxed);
    while (!(s & locked))
      if (state_.compare_exchange_weak(s, s | locked, std::memory_order_acquire,
                                       std::memory_order_relaxed))
        return true;
    return false;
  }

  void unlock() noexcept {
    std::uint32_t s = locked;
    if (!state_.compare_exchange_strong(s, 0, std::memory_order_release, std::memory_order_relaxed))
      unlock_slow();
  }

  // The bits of state_ (mutex.cpp).
  static constexpr std::uint32_t locked = 1;    // owned
  static constexpr std::uint32_t waiters = 2;   // q_ is not empty
  static constexpr std::uint32_t woken = 4;     // a waiter was woken and will try again
  static constexpr std::uint32_t starving = 8;  // unlock hands the lock to q_'s head

 private:
  struct enqueue;
  void lock_slow();
  void unlock_slow() noexcept;

  std::atomic<std::uint32_t> state_{0};
  std::atomic<detail::waiter*> handoff_{nullptr};  // the waiter an unlock handed the lock to
  detail::spinlock lk_;                            // guards q_
  detail::waiter_queue q_;
};

}  // namespace grain
