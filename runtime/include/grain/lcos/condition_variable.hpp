#pragma once
// grain::condition_variable (with std::unique_lock<grain::mutex>) and condition_variable_any
// (any BasicLockable). Waiting suspends the user thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "grain/detail/waiter.hpp"
#include "grain/lcos/mutex.hpp"

namespace grain {

using cv_status = std::cv_status;

class condition_variable_any {
 public:
  condition_variable_any() = default;
  condition_variable_any(const condition_variable_any&) = delete;
  condition_variable_any& operator=(const condition_variable_any&) = delete;

  // Nobody waiting costs one load, as with std's: a waiter is counted before it releases the
  // user's lock, and whoever changed the condition under that lock sees the count.
  void notify_one() noexcept {
    if (waiting_.load(std::memory_order_acquire) == 0) return;
    lk_.lock();
    detail::waiter* w = q_.pop();
    if (w) waiting_.fetch_sub(1, std::memory_order_relaxed);
    lk_.unlock();
    if (w) w->notify();
  }
  void notify_all() noexcept {
    if (waiting_.load(std::memory_order_acquire) == 0) return;
    lk_.lock();
    detail::waiter* w = q_.take_all();
    waiting_.store(0, std::memory_order_relaxed);
    lk_.unlock();
    detail::notify_all(w);
  }

  template <class Lock>
  void wait(Lock& lock) {
    enqueue<Lock> e{this, &lock};
    detail::park(e);
    lock.lock();
  }
  template <class Lock, class Pred>
  void wait(Lock& lock, Pred pred) {
    while (!pred()) wait(lock);
  }

  template <class Lock, class Clock, class Duration>
  cv_status wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& tp) {
    enqueue<Lock> e{this, &lock};
    dequeue d{this};
    bool notified = detail::park_until(e, d, detail::to_deadline(tp));
    lock.lock();
    return notified ? cv_status::no_timeout : cv_status::timeout;
  }
  template <class Lock, class Clock, class Duration, class Pred>
  bool wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& tp, Pred pred) {
    while (!pred())
      if (wait_until(lock, tp) == cv_status::timeout) return pred();
    return true;
  }
  template <class Lock, class Rep, class Period>
  cv_status wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& d) {
    return wait_until(lock, std::chrono::steady_clock::now() + d);
  }
  template <class Lock, class Rep, class Period, class Pred>
  bool wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return wait_until(lock, std::chrono::steady_clock::now() + d, std::move(pred));
  }

 private:
  // Queue first, then release the user's lock: a notifier holding that lock cannot miss us.
  // The user's lock is released while our spinlock is still held, so no notifier can resume
  // the waiter (possibly on another worker) before unlock() has finished touching the lock
  // object, which lives on the waiter's stack.
  template <class Lock>
  struct enqueue {
    condition_variable_any* cv;
    Lock* lock;
    bool operator()(detail::waiter* w) noexcept {
      cv->lk_.lock();
      cv->q_.push(w);
      cv->waiting_.fetch_add(1, std::memory_order_release);
      lock->unlock();
      cv->lk_.unlock();
      return true;
    }
  };
  struct dequeue {
    condition_variable_any* cv;
    bool operator()(detail::waiter* w) noexcept {
      cv->lk_.lock();
      bool removed = cv->q_.remove(w);
      if (removed) cv->waiting_.fetch_sub(1, std::memory_order_relaxed);
      cv->lk_.unlock();
      return removed;
    }
  };
  detail::spinlock lk_;
  detail::waiter_queue q_;
  std::atomic<std::size_t> waiting_{0};  // q_'s length, read without lk_ by notifiers
};

class condition_variable : public condition_variable_any {
 public:
  void wait(std::unique_lock<mutex>& lock) { condition_variable_any::wait(lock); }
  template <class Pred>
  void wait(std::unique_lock<mutex>& lock, Pred pred) {
    condition_variable_any::wait(lock, std::move(pred));
  }
  using condition_variable_any::wait_for;
  using condition_variable_any::wait_until;
};

}  // namespace grain

// notify_all_at_thread_exit, which std declares beside condition_variable.
#include "grain/lcos/notify_at_thread_exit.hpp"
