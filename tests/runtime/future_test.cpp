#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grain/async.hpp"
#include "grain/dataflow.hpp"
#include "grain/future.hpp"
#include "grain/this_task.hpp"
#include "grain/when_all.hpp"
#include "runtime_fixture.hpp"

using namespace std::chrono_literals;

namespace {

long fib(int n) {
  if (n < 2) return n;
  grain::future<long> a = grain::async(fib, n - 1);
  long b = fib(n - 2);
  return a.get() + b;
}

}  // namespace

class FutureTest : public grain::test::WorkersTest {};
INSTANTIATE_TEST_SUITE_P(Workers, FutureTest, grain::test::worker_counts(),
                         grain::test::worker_count_name);

TEST_P(FutureTest, AsyncReturnsValue) {
  auto f = grain::async([] { return 42; });
  EXPECT_TRUE(f.valid());
  EXPECT_EQ(f.get(), 42);
  EXPECT_FALSE(f.valid());
}

TEST_P(FutureTest, AsyncWithArgumentsCopiesThem) {
  std::string s = "abc";
  auto f = grain::async([](std::string x, int n) { return x + std::to_string(n); }, s, 7);
  s = "changed";
  EXPECT_EQ(f.get(), "abc7");
}

TEST_P(FutureTest, VoidAndReferenceResults) {
  int x = 0;
  grain::async([&] { x = 5; }).get();
  EXPECT_EQ(x, 5);
  int& r = grain::async([&]() -> int& { return x; }).get();
  EXPECT_EQ(&r, &x);
}

TEST_P(FutureTest, FibComputesAndRunsTasks) {
  EXPECT_EQ(grain::async([] { return fib(20); }).get(), 6765);
  EXPECT_EQ(fib(15), 610);  // from the main (non-worker) thread
}

TEST_P(FutureTest, ExceptionTravelsThroughFuture) {
  auto f = grain::async([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  auto g = grain::async(
      [] { return grain::async([]() -> int { throw std::out_of_range("inner"); }).get(); });
  EXPECT_THROW(g.get(), std::out_of_range);
}

TEST_P(FutureTest, LaunchPolicies) {
  std::atomic<int> runs{0};
  auto d = grain::async(grain::launch::deferred, [&] { return ++runs; });
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(d.wait_for(0ms), grain::future_status::deferred);
  EXPECT_EQ(d.get(), 1);

  auto s = grain::async(grain::launch::sync, [] { return grain::this_task::worker_index(); });
  EXPECT_TRUE(s.is_ready());
  EXPECT_EQ(s.get(), -1);  // ran inline on the calling (main) thread

  auto a = grain::async(grain::launch::async, [] { return grain::this_task::worker_index(); });
  EXPECT_GE(a.get(), 0);

  auto both = grain::async(grain::launch::async | grain::launch::deferred, [] { return 3; });
  EXPECT_EQ(both.get(), 3);

  // The child runs before the parent continues, unless another worker steals the parent.
  auto forked = grain::async([one_worker = GetParam() == 1] {
    auto child = grain::async(grain::launch::fork, [] { return 11; });
    if (one_worker) {
      EXPECT_TRUE(child.is_ready());
    }
    return child.get();
  });
  EXPECT_EQ(forked.get(), 11);
}

TEST_P(FutureTest, WaitForTimesOutThenSucceeds) {
  grain::promise<int> p;
  auto f = p.get_future();
  EXPECT_EQ(f.wait_for(10ms), grain::future_status::timeout);
  auto inner = grain::async([&] { return f.wait_for(5ms) == grain::future_status::timeout; });
  EXPECT_TRUE(inner.get());
  p.set_value(1);
  EXPECT_EQ(f.wait_for(1s), grain::future_status::ready);
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() + 1s), grain::future_status::ready);
  EXPECT_EQ(f.get(), 1);
}

TEST_P(FutureTest, FutureErrors) {
  grain::future<int> empty;
  EXPECT_FALSE(empty.valid());
  try {
    empty.get();
    FAIL();
  } catch (const grain::future_error& e) {
    EXPECT_EQ(e.code(), grain::future_errc::no_state);
  }
  grain::promise<int> p;
  auto f = p.get_future();
  try {
    (void)p.get_future();
    FAIL();
  } catch (const grain::future_error& e) {
    EXPECT_EQ(e.code(), grain::future_errc::future_already_retrieved);
  }
  p.set_value(1);
  try {
    p.set_value(2);
    FAIL();
  } catch (const grain::future_error& e) {
    EXPECT_EQ(e.code(), grain::future_errc::promise_already_satisfied);
  }
  grain::future<int> broken;
  {
    grain::promise<int> q;
    broken = q.get_future();
  }
  try {
    broken.get();
    FAIL();
  } catch (const grain::future_error& e) {
    EXPECT_EQ(e.code(), grain::future_errc::broken_promise);
  }
}

TEST_P(FutureTest, SharedFutureManyReaders) {
  grain::promise<std::string> p;
  grain::shared_future<std::string> sf = p.get_future().share();
  std::vector<grain::future<std::size_t>> readers;
  for (int i = 0; i < 50; ++i) readers.push_back(grain::async([sf] { return sf.get().size(); }));
  p.set_value("hello");
  for (auto& r : readers) EXPECT_EQ(r.get(), 5u);
  EXPECT_EQ(sf.get(), "hello");
}

TEST_P(FutureTest, PromiseSetFromAnotherTask) {
  grain::promise<int> p;
  auto f = p.get_future();
  auto waiter = grain::async([&f] { return f.get() * 2; });
  grain::async([&p] { p.set_value(21); }).get();
  EXPECT_EQ(waiter.get(), 42);
}

TEST_P(FutureTest, ThenChains) {
  auto f = grain::async([] {
             return 1;
           }).then([](grain::future<int> x) {
               return x.get() + 1;
             }).then([](grain::future<int> x) { return std::to_string(x.get()); });
  EXPECT_EQ(f.get(), "2");
  auto ready = grain::make_ready_future(5).then([](grain::future<int> x) { return x.get() * 3; });
  EXPECT_EQ(ready.get(), 15);
  auto err = grain::async([]() -> int {
               throw std::logic_error("x");
             }).then([](grain::future<int> x) { return x.has_exception(); });
  EXPECT_TRUE(err.get());
  grain::shared_future<int> sf = grain::make_ready_future(2).share();
  EXPECT_EQ(sf.then([](grain::shared_future<int> s) { return s.get() + 1; }).get(), 3);
}

TEST_P(FutureTest, WhenAllAndWhenAny) {
  std::vector<grain::future<int>> v;
  for (int i = 0; i < 100; ++i) v.push_back(grain::async([i] { return i; }));
  auto all = grain::when_all(v.begin(), v.end()).get();
  int sum = 0;
  for (auto& f : all) sum += f.get();
  EXPECT_EQ(sum, 4950);

  auto t =
      grain::when_all(grain::async([] { return 1; }), grain::make_ready_future(std::string("x")))
          .get();
  EXPECT_EQ(std::get<0>(t).get(), 1);
  EXPECT_EQ(std::get<1>(t).get(), "x");

  grain::promise<int> never;
  std::vector<grain::future<int>> w;
  w.push_back(never.get_future());
  w.push_back(grain::async([] { return 9; }));
  auto any = grain::when_any(w).get();
  EXPECT_EQ(any.index, 1u);
  EXPECT_EQ(any.futures[1].get(), 9);
  never.set_value(0);

  EXPECT_EQ(grain::when_all(std::vector<grain::future<int>>{}).get().size(), 0u);
}

TEST_P(FutureTest, DataflowAndUnwrapping) {
  auto a = grain::async([] { return 2; });
  auto b = grain::make_ready_future(3);
  auto c = grain::dataflow(
      [](grain::future<int> x, grain::future<int> y, int z) { return x.get() * y.get() + z; },
      std::move(a), std::move(b), 4);
  EXPECT_EQ(c.get(), 10);
  std::vector<grain::shared_future<int>> parts;
  for (int i = 0; i < 10; ++i) parts.push_back(grain::async([i] { return i; }).share());
  auto total = grain::dataflow(grain::unwrapping([](std::vector<int> xs) {
                                 return std::accumulate(xs.begin(), xs.end(), 0);
                               }),
                               parts);
  EXPECT_EQ(total.get(), 45);
}

TEST_P(FutureTest, PackagedTask) {
  grain::packaged_task<int(int)> task([](int x) { return x + 1; });
  auto f = task.get_future();
  grain::async([&task] { task(41); }).get();
  EXPECT_EQ(f.get(), 42);
  grain::packaged_task<void()> thrower([] { throw std::runtime_error("p"); });
  auto g = thrower.get_future();
  thrower();
  EXPECT_THROW(g.get(), std::runtime_error);
}

TEST_P(FutureTest, ChainOfTenThousandNestedFutures) {
  // Each task waits on the next one: 10,000 suspended user threads in a chain.
  std::function<int(int)> nest = [&](int depth) -> int {
    if (depth == 0) return 0;
    return grain::async(grain::launch::async, nest, depth - 1).get() + 1;
  };
  EXPECT_EQ(grain::async(nest, 10000).get(), 10000);
}

TEST_P(FutureTest, SleepForSuspends) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<grain::future<void>> v;
  for (int i = 0; i < 40; ++i) v.push_back(grain::async([] { grain::this_task::sleep_for(50ms); }));
  for (auto& f : v) f.get();
  auto dt = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(dt, 50ms);
  // Blocking sleeps would need 40 x 50 ms / 2 workers = 1 s; suspended ones overlap.
  EXPECT_LT(dt, 700ms);
}
