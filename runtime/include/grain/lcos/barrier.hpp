#pragma once
// grain::barrier: a reusable phase barrier like std::barrier, with an optional completion
// function run by the last arriving participant before the others are released.
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <utility>

#include "grain/detail/waiter.hpp"

namespace grain {

struct barrier_no_completion {
  void operator()() noexcept {}
};

template <class Completion = barrier_no_completion>
class barrier {
 public:
  using arrival_token = std::size_t;

  static constexpr std::ptrdiff_t max() noexcept {
    return std::numeric_limits<std::ptrdiff_t>::max();
  }

  explicit barrier(std::ptrdiff_t expected, Completion f = Completion())
      : expected_(expected), remaining_(expected), completion_(std::move(f)) {
    if (expected < 0) throw std::invalid_argument("grain::barrier: negative count");
  }
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;

  arrival_token arrive(std::ptrdiff_t n = 1) { return arrive_impl(n, 0); }
  void wait(arrival_token phase) const {
    struct enqueue {
      const barrier* b;
      arrival_token phase;
      bool operator()(detail::waiter* w) noexcept {
        b->lk_.lock();
        if (b->phase_ != phase) {
          b->lk_.unlock();
          return false;
        }
        b->q_.push(w);
        b->lk_.unlock();
        return true;
      }
    } e{this, phase};
    detail::park(e);
  }
  void arrive_and_wait() { wait(arrive()); }
  void arrive_and_drop() { (void)arrive_impl(1, 1); }

 private:
  arrival_token arrive_impl(std::ptrdiff_t n, std::ptrdiff_t drop) {
    lk_.lock();
    arrival_token phase = phase_;
    expected_ -= drop;
    remaining_ -= n;
    if (remaining_ < 0) {
      lk_.unlock();
      throw std::invalid_argument("grain::barrier: more arrivals than expected");
    }
    if (remaining_ > 0) {
      lk_.unlock();
      return phase;
    }
    lk_.unlock();
    completion_();
    lk_.lock();
    remaining_ = expected_;
    ++phase_;
    detail::waiter* w = q_.take_all();
    lk_.unlock();
    detail::notify_all(w);
    return phase;
  }

  mutable detail::spinlock lk_;
  std::ptrdiff_t expected_;
  std::ptrdiff_t remaining_;
  arrival_token phase_ = 0;
  Completion completion_;
  mutable detail::waiter_queue q_;
};

}  // namespace grain
