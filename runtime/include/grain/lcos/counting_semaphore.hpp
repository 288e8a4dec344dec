#pragma once
// grain::counting_semaphore / binary_semaphore, like the std ones; acquire suspends the user
// thread. Releases hand permits to waiters in FIFO order.
#include <chrono>
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "grain/detail/waiter.hpp"

namespace grain {

// A negative LeastMaxValue does not compile (std makes it ill-formed); a constraint rather than
// a static_assert, so that the rejection shows in a requires-expression (and can be tested).
template <std::ptrdiff_t LeastMaxValue = std::numeric_limits<std::ptrdiff_t>::max()>
requires(LeastMaxValue >= 0) class counting_semaphore {
 public:
  static constexpr std::ptrdiff_t max() noexcept { return LeastMaxValue; }

  explicit counting_semaphore(std::ptrdiff_t desired) : count_(desired) {
    if (desired < 0 || desired > max())
      throw std::invalid_argument("grain::counting_semaphore: bad initial count");
  }
  counting_semaphore(const counting_semaphore&) = delete;
  counting_semaphore& operator=(const counting_semaphore&) = delete;

  void release(std::ptrdiff_t update = 1) {
    if (update < 0) throw std::invalid_argument("grain::counting_semaphore::release: negative");
    detail::waiter* wake = nullptr;
    detail::waiter** tail = &wake;
    lk_.lock();
    if (update > max() - count_) {
      lk_.unlock();
      throw std::invalid_argument("grain::counting_semaphore::release: above max()");
    }
    // A permit handed to a waiter never passes through count_: no barging.
    while (update > 0 && !q_.empty()) {
      detail::waiter* w = q_.pop();
      w->next = nullptr;
      *tail = w;
      tail = &w->next;
      --update;
    }
    count_ += update;
    lk_.unlock();
    while (wake) {
      detail::waiter* next = wake->next;
      wake->notify();
      wake = next;
    }
  }

  bool try_acquire() noexcept {
    lk_.lock();
    bool ok = count_ > 0;
    if (ok) --count_;
    lk_.unlock();
    return ok;
  }

  void acquire() {
    enqueue e{this};
    lk_.lock();
    if (count_ > 0) {
      --count_;
      lk_.unlock();
      return;
    }
    lk_.unlock();
    detail::park(e);
  }

  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& d) {
    return try_acquire_until(std::chrono::steady_clock::now() + d);
  }
  template <class Clock, class Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& tp) {
    if (try_acquire()) return true;
    enqueue e{this};
    dequeue d{this};
    return detail::park_until(e, d, detail::to_deadline(tp));
  }

 private:
  struct enqueue {
    counting_semaphore* s;
    bool operator()(detail::waiter* w) noexcept {
      s->lk_.lock();
      if (s->count_ > 0) {
        --s->count_;
        s->lk_.unlock();
        return false;
      }
      s->q_.push(w);
      s->lk_.unlock();
      return true;
    }
  };
  struct dequeue {
    counting_semaphore* s;
    bool operator()(detail::waiter* w) noexcept {
      s->lk_.lock();
      bool removed = s->q_.remove(w);
      s->lk_.unlock();
      return removed;
    }
  };
  detail::spinlock lk_;
  std::ptrdiff_t count_;
  detail::waiter_queue q_;
};

using binary_semaphore = counting_semaphore<1>;

}  // namespace grain
