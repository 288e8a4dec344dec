#pragma once
// grain::mutex: a lock whose waiters suspend their user thread (or block their OS thread).
// FIFO hand-over: unlock passes ownership to the oldest waiter, so no waiter starves.
// Works with std::lock_guard, std::unique_lock, std::scoped_lock and std::lock.
#include "grain/detail/waiter.hpp"

namespace grain {

class mutex {
 public:
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  void lock() {
    lk_.lock();
    if (!locked_) {
      locked_ = true;
      lk_.unlock();
      return;
    }
    // Still holding lk_: the node is queued and lk_ released only once we are off the CPU,
    // so an unlock in between cannot miss us. On return we own the mutex.
    struct enqueue {
      mutex* m;
      bool operator()(detail::waiter* w) noexcept {
        m->q_.push(w);
        m->lk_.unlock();
        return true;
      }
    } e{this};
    detail::park(e);
  }

  bool try_lock() noexcept {
    lk_.lock();
    bool ok = !locked_;
    locked_ = true;
    lk_.unlock();
    return ok;
  }

  void unlock() noexcept {
    lk_.lock();
    detail::waiter* w = q_.pop();
    if (!w) locked_ = false;
    lk_.unlock();
    if (w) w->notify();  // ownership passes to w
  }

 private:
  detail::spinlock lk_;
  bool locked_ = false;
  detail::waiter_queue q_;
};

}  // namespace grain
