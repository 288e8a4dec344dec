// The call table's and the network's lock (distributed/src/short_lock.hpp): mutual exclusion
// under contention from more threads than cores (its waiters yield), and try_lock never
// takes a held lock.
#include "short_lock.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace grain::distributed {
namespace {

TEST(ShortLock, ExcludesUnderContentionFromMoreThreadsThanCores) {
  short_lock lock;
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

TEST(ShortLock, TryLockFailsWhileHeld) {
  short_lock lock;
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
}  // namespace grain::distributed
