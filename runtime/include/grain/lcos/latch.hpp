#pragma once
// grain::latch: a single-use countdown, like std::latch; waiting suspends the user thread.
#include <cstddef>
#include <limits>
#include <stdexcept>

#include "grain/detail/waiter.hpp"

namespace grain {

class latch {
 public:
  static constexpr std::ptrdiff_t max() noexcept {
    return std::numeric_limits<std::ptrdiff_t>::max();
  }

  // constexpr, as std's: a latch at namespace scope can be constant-initialised (constinit).
  constexpr explicit latch(std::ptrdiff_t expected) : count_(expected) {
    if (expected < 0) throw std::invalid_argument("grain::latch: negative count");
  }
  latch(const latch&) = delete;
  latch& operator=(const latch&) = delete;

  void count_down(std::ptrdiff_t n = 1) {
    lk_.lock();
    if (n < 0 || n > count_) {
      lk_.unlock();
      throw std::invalid_argument("grain::latch::count_down: more than the remaining count");
    }
    count_ -= n;
    detail::waiter* w = count_ == 0 ? q_.take_all() : nullptr;
    lk_.unlock();
    detail::notify_all(w);
  }
  bool try_wait() const noexcept {
    lk_.lock();
    bool done = count_ == 0;
    lk_.unlock();
    return done;
  }
  void wait() const {
    struct enqueue {
      const latch* l;
      bool operator()(detail::waiter* w) noexcept {
        l->lk_.lock();
        if (l->count_ == 0) {
          l->lk_.unlock();
          return false;
        }
        l->q_.push(w);
        l->lk_.unlock();
        return true;
      }
    } e{this};
    if (!try_wait()) detail::park(e);
  }
  void arrive_and_wait(std::ptrdiff_t n = 1) {
    count_down(n);
    wait();
  }

 private:
  mutable detail::spinlock lk_;
  std::ptrdiff_t count_;
  mutable detail::waiter_queue q_;
};

}  // namespace grain
