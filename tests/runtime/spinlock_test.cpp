// The runtime's spinlock (grain/detail/waiter.hpp; also the distributed part's network and
// call-table lock): mutual exclusion under contention from more threads than cores (its
// waiters yield), and try_lock never takes a held lock.
#include "grain/detail/waiter.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace grain::detail {
namespace {

TEST(Spinlock, ExcludesUnderContentionFromMoreThreadsThanCores) {
  spinlock lock;
  long plain = 0;  // no atomic: only the lock keeps the adds whole
  constexpr int threads = 8, adds = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < adds; ++i) {
        std::lock_guard g(lock);
        ++plain;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(plain, long{threads} * adds);
}

TEST(Spinlock, TryLockFailsWhileHeld) {
  spinlock lock;
  ASSERT_TRUE(lock.try_lock());
  bool other = true;
  std::thread([&] { other = lock.try_lock(); }).join();
  EXPECT_FALSE(other);
  lock.unlock();
  std::thread([&] {
    other = lock.try_lock();
    if (other) lock.unlock();
  }).join();
  EXPECT_TRUE(other);
}

}  // namespace
}  // namespace grain::detail
