#pragma once
// A lock for sections of a few dozen instructions taken on every call (the call table): one
// locked instruction to take it and a plain store to give it back, where a pthread mutex
// costs two locked instructions (~6 ns each here). A waiter spins briefly, then yields: ranks
// oversubscribe their cores, and the holder may be descheduled.
#include <atomic>
#include <thread>

namespace grain::distributed {

class short_lock {
 public:
  void lock() noexcept {
    for (unsigned spins = 0; flag_.exchange(true, std::memory_order_acquire);) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins < 64)
          __builtin_ia32_pause();
        else
          std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept {
    return !flag_.load(std::memory_order_relaxed) &&
           !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace grain::distributed
