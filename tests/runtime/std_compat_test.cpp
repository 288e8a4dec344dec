// Code written for std::async / std::future / std::mutex compiles and behaves the same after
// std:: is replaced by grain::. The body below is written once and instantiated for both.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "grain/async.hpp"
#include "grain/future.hpp"
#include "grain/lcos/condition_variable.hpp"
#include "grain/lcos/mutex.hpp"
#include "runtime_fixture.hpp"

#define STD_STYLE_PROGRAM(NS)                                                         \
  [] {                                                                                \
    int result = 0;                                                                   \
    NS::future<int> a = NS::async(NS::launch::async, [] { return 20; });              \
    NS::future<int> b = NS::async(                                                    \
        NS::launch::deferred, [](int x) { return x + 1; }, 1);                        \
    NS::future<int> c = NS::async([] { return 1; });                                  \
    result += a.get() + b.get() + c.get();                                            \
    NS::promise<int> p;                                                               \
    NS::shared_future<int> sf = p.get_future().share();                               \
    p.set_value(5);                                                                   \
    result += sf.get() + sf.get();                                                    \
    NS::packaged_task<int(int)> task([](int x) { return x * 2; });                    \
    NS::future<int> tf = task.get_future();                                           \
    task(4);                                                                          \
    result += tf.get();                                                               \
    NS::mutex m;                                                                      \
    NS::condition_variable cv;                                                        \
    bool ready = false;                                                               \
    NS::future<void> waiter = NS::async(NS::launch::async, [&] {                      \
      std::unique_lock<NS::mutex> lock(m);                                            \
      cv.wait(lock, [&] { return ready; });                                           \
    });                                                                               \
    {                                                                                 \
      std::lock_guard<NS::mutex> lock(m);                                             \
      ready = true;                                                                   \
    }                                                                                 \
    cv.notify_all();                                                                  \
    waiter.get();                                                                     \
    NS::future<int> thrower =                                                         \
        NS::async(NS::launch::async, []() -> int { throw std::runtime_error("x"); }); \
    try {                                                                             \
      thrower.get();                                                                  \
    } catch (const std::runtime_error&) {                                             \
      result += 100;                                                                  \
    }                                                                                 \
    NS::future<int> invalid;                                                          \
    try {                                                                             \
      invalid.get();                                                                  \
    } catch (const NS::future_error& e) {                                             \
      if (e.code() == NS::future_errc::no_state) result += 1000;                      \
    }                                                                                 \
    NS::future<int> timed = NS::async(NS::launch::deferred, [] { return 0; });        \
    if (timed.wait_for(std::chrono::milliseconds(0)) == NS::future_status::deferred)  \
      result += 10000;                                                                \
    return result;                                                                    \
  }()

class StdCompatTest : public grain::test::RuntimeTest {};

TEST_F(StdCompatTest, SameProgramSameResult) {
  int with_std = STD_STYLE_PROGRAM(std);
  int with_grain = STD_STYLE_PROGRAM(grain);
  EXPECT_EQ(with_std, 11141);
  EXPECT_EQ(with_grain, with_std);
}
