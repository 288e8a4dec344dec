// The parts of std's futures API beyond the everyday ones, under grain's names: the
// *_at_thread_exit operations (on an OS thread, and in a task, where "thread exit" is the end of
// the task), allocator-extended promise and packaged_task with std::uses_allocator, the
// non-member swaps, share() noexcept, and packaged_task storing a future_error its callable
// throws.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

#include "grain/async.hpp"
#include "grain/detail/at_thread_exit.hpp"
#include "grain/future.hpp"
#include "grain/this_task.hpp"
#include "runtime_fixture.hpp"

using namespace std::chrono_literals;

namespace {

// An allocator that counts what is allocated through it (and its rebound copies).
struct alloc_counts {
  std::atomic<int> allocations{0};
  std::atomic<int> live{0};
};
alloc_counts g_counts;

template <class T>
struct counting_allocator {
  using value_type = T;
  int id = 0;  // a copy must keep it: the state is given back through the copy it kept
  explicit counting_allocator(int i) noexcept : id(i) {}
  template <class U>
  counting_allocator(const counting_allocator<U>& o) noexcept : id(o.id) {}
  T* allocate(std::size_t n) {
    g_counts.allocations.fetch_add(1);
    g_counts.live.fetch_add(1);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    EXPECT_EQ(id, 7);
    g_counts.live.fetch_sub(1);
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const counting_allocator<U>& o) const noexcept {
    return id == o.id;
  }
};

// Whether a future becomes ready within a bound (a broken build must fail, not hang).
template <class F>
bool ready_within(const F& f, std::chrono::seconds bound = 30s) {
  return f.wait_for(bound) == grain::future_status::ready;
}

}  // namespace

static_assert(std::uses_allocator_v<grain::promise<int>, counting_allocator<int>>);
static_assert(std::uses_allocator_v<grain::promise<void>, std::allocator<int>>);
static_assert(std::uses_allocator_v<grain::packaged_task<int(int)>, counting_allocator<int>>);
static_assert(noexcept(std::declval<grain::future<int>&>().share()));
static_assert(noexcept(std::declval<grain::future<std::string>&>().share()));

// --- On plain OS threads: std's meaning of thread exit --------------------------------------

TEST(StdApiThreadExit, SetValueAtThreadExitIsReadyOnlyAfterTheThreadEnds) {
  grain::promise<int> p;
  grain::future<int> f = p.get_future();
  std::atomic<bool> ready_inside{true};
  std::thread t([&, p = std::move(p)]() mutable {
    p.set_value_at_thread_exit(5);
    EXPECT_THROW(p.set_value(6), grain::future_error);  // satisfied already
    std::this_thread::sleep_for(10ms);
    ready_inside = f.is_ready();
    // p goes here, before the thread exits: the value must survive it (no broken_promise).
  });
  t.join();
  EXPECT_FALSE(ready_inside.load());
  ASSERT_TRUE(f.is_ready());
  EXPECT_EQ(f.get(), 5);
}

TEST(StdApiThreadExit, SetExceptionAtThreadExit) {
  grain::promise<void> p;
  grain::future<void> f = p.get_future();
  std::atomic<bool> ready_inside{true};
  std::thread t([&] {
    p.set_exception_at_thread_exit(std::make_exception_ptr(std::runtime_error("late")));
    EXPECT_THROW(p.set_exception_at_thread_exit(nullptr), grain::future_error);
    ready_inside = f.is_ready();
  });
  t.join();
  EXPECT_FALSE(ready_inside.load());
  EXPECT_THROW(f.get(), std::runtime_error);
}

TEST(StdApiThreadExit, SetValueAtThreadExitOfAReference) {
  int x = 3;
  grain::promise<int&> p;
  grain::future<int&> f = p.get_future();
  std::thread([&] { p.set_value_at_thread_exit(x); }).join();
  EXPECT_EQ(&f.get(), &x);
}

TEST(StdApiThreadExit, MakeReadyAtThreadExitRunsNowPublishesAtExit) {
  std::atomic<int> calls{0};
  grain::packaged_task<int(int)> task([&](int a) {
    ++calls;
    return a * 2;
  });
  grain::future<int> f = task.get_future();
  std::atomic<bool> ready_inside{true};
  std::atomic<int> calls_inside{0};
  std::thread t([&] {
    task.make_ready_at_thread_exit(21);
    calls_inside = calls.load();
    ready_inside = f.is_ready();
    EXPECT_THROW(task(1), grain::future_error);  // promise_already_satisfied
  });
  t.join();
  EXPECT_EQ(calls_inside.load(), 1);  // the callable ran in the call
  EXPECT_FALSE(ready_inside.load());
  EXPECT_EQ(f.get(), 42);
  EXPECT_EQ(calls.load(), 1);
}

TEST(StdApiThreadExit, MakeReadyAtThreadExitStoresTheException) {
  grain::packaged_task<void()> task([] { throw std::logic_error("no"); });
  grain::future<void> f = task.get_future();
  std::thread([&] { task.make_ready_at_thread_exit(); }).join();
  EXPECT_THROW(f.get(), std::logic_error);
}

// --- In tasks: thread exit is the end of the task -----------------------------------------

class StdApiTaskExit : public grain::test::WorkersTest {};
INSTANTIATE_TEST_SUITE_P(Workers, StdApiTaskExit, grain::test::worker_counts(),
                         grain::test::worker_count_name);

TEST_P(StdApiTaskExit, SetValueAtThreadExitWaitsForTheTasksEnd) {
  grain::promise<int> p;
  grain::future<int> f = p.get_future();
  auto task = grain::async([&, p = std::move(p)]() mutable {
    p.set_value_at_thread_exit(7);
    const grain::promise<int> gone = std::move(p);  // destroyed before the task ends
    grain::this_task::yield();                      // may resume on another worker
    grain::this_task::sleep_for(2ms);
    return f.is_ready();
  });
  EXPECT_FALSE(task.get());
  ASSERT_TRUE(ready_within(f));
  EXPECT_EQ(f.get(), 7);
  EXPECT_TRUE(
      grain::test::eventually([] { return grain::detail::task_exit_actions_pending() == 0; }));
}

// A child run inline by its parent's get() is a task of its own: its end, not its parent's,
// makes the value ready (else the parent would wait for itself).
TEST_P(StdApiTaskExit, AnInlineChildIsATaskOfItsOwn) {
  for (grain::launch policy :
       {grain::launch::async, grain::launch::sync, grain::launch::deferred, grain::launch::fork}) {
    auto parent = grain::async([policy] {
      grain::promise<int> p;
      grain::future<int> f = p.get_future();
      grain::async(policy, [&p] { p.set_value_at_thread_exit(1); }).get();
      return ready_within(f, 10s) ? f.get() : -1;
    });
    EXPECT_EQ(parent.get(), 1) << grain::launch_name(policy);
  }
}

TEST_P(StdApiTaskExit, ExceptionAndPackagedTaskAtTaskExit) {
  grain::promise<long> p;
  grain::future<long> fp = p.get_future();
  grain::packaged_task<long(long)> task([](long a) { return a + 1; });
  grain::future<long> ft = task.get_future();
  auto t = grain::async([&] {
    p.set_exception_at_thread_exit(std::make_exception_ptr(std::out_of_range("x")));
    task.make_ready_at_thread_exit(41);
    grain::this_task::sleep_for(1ms);
    return fp.is_ready() || ft.is_ready();
  });
  EXPECT_FALSE(t.get());
  ASSERT_TRUE(ready_within(ft));
  EXPECT_EQ(ft.get(), 42);
  ASSERT_TRUE(ready_within(fp));
  EXPECT_THROW(fp.get(), std::out_of_range);
}

// Many tasks at once, each with its own promise: each value arrives, none is lost or mixed up.
TEST_P(StdApiTaskExit, ManyTasksEachGetTheirOwn) {
  constexpr int n = 200;
  std::vector<grain::promise<int>> ps(n);
  std::vector<grain::future<int>> fs;
  std::vector<grain::future<void>> ts;
  for (auto& p : ps) fs.push_back(p.get_future());
  for (int i = 0; i < n; ++i)
    ts.push_back(grain::async([&ps, i] {
      ps[i].set_value_at_thread_exit(i);
      if (i % 3 == 0) grain::this_task::yield();
    }));
  for (auto& t : ts) t.get();
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(ready_within(fs[i]));
    EXPECT_EQ(fs[i].get(), i);
  }
}

// --- Allocators, swap, packaged_task's exceptions ------------------------------------------

TEST(StdApiAllocator, PromiseAllocatesItsStateWithTheAllocator) {
  const int before = g_counts.allocations.load();
  {
    grain::promise<int> p(std::allocator_arg, counting_allocator<int>(7));
    EXPECT_EQ(g_counts.allocations.load() - before, 1);
    grain::future<int> f = p.get_future();
    p.set_value(3);
    EXPECT_EQ(f.get(), 3);
  }
  EXPECT_EQ(g_counts.live.load(), 0);
  {
    grain::future<void> f;
    {
      grain::promise<void> p(std::allocator_arg, counting_allocator<char>(7));
      f = p.get_future();
    }
    EXPECT_THROW(f.get(), grain::future_error);  // broken_promise; the state goes with f
  }
  EXPECT_EQ(g_counts.live.load(), 0);
}

TEST(StdApiAllocator, PackagedTaskAllocatesCallableAndState) {
  const int before = g_counts.allocations.load();
  {
    grain::packaged_task<int(int)> t(std::allocator_arg, counting_allocator<int>(7),
                                     [](int a) { return a * 3; });
    EXPECT_EQ(g_counts.allocations.load() - before, 2);  // the callable and the state
    EXPECT_EQ(g_counts.live.load(), 2);
    grain::future<int> f = t.get_future();
    t(5);
    EXPECT_EQ(f.get(), 15);
  }
  EXPECT_EQ(g_counts.live.load(), 0);
}

TEST(StdApiSwap, NonMemberSwapOfPromiseAndPackagedTask) {
  grain::packaged_task<int()> a([] { return 1; });
  grain::packaged_task<int()> b([] { return 2; });
  grain::future<int> fa = a.get_future();
  swap(a, b);  // found by argument-dependent lookup, as std::swap's overload is
  b();
  EXPECT_EQ(fa.get(), 1);
  grain::packaged_task<int()> empty;
  grain::swap(a, empty);
  EXPECT_FALSE(a.valid());
  EXPECT_TRUE(empty.valid());

  grain::promise<int> p, q;
  grain::future<int> fp = p.get_future();
  swap(p, q);
  q.set_value(9);
  EXPECT_EQ(fp.get(), 9);
}

TEST(StdApiPackagedTask, StoresAFutureErrorItsCallableThrows) {
  int calls = 0;
  grain::packaged_task<int()> t([&]() -> int {
    ++calls;
    throw grain::future_error(grain::future_errc::broken_promise);
  });
  grain::future<int> f = t.get_future();
  EXPECT_NO_THROW(t());
  try {
    f.get();
    ADD_FAILURE() << "no exception";
  } catch (const grain::future_error& e) {
    EXPECT_EQ(e.code(), grain::future_errc::broken_promise);
  }
  // A second call throws promise_already_satisfied to the caller, without running the callable.
  try {
    t();
    ADD_FAILURE() << "no exception";
  } catch (const grain::future_error& e) {
    EXPECT_EQ(e.code(), grain::future_errc::promise_already_satisfied);
  }
  EXPECT_EQ(calls, 1);
  grain::packaged_task<void()> empty;
  EXPECT_THROW(empty(), grain::future_error);
}

TEST(StdApiFuture, ShareKeepsTheValue) {
  grain::promise<int> p;
  grain::future<int> f = p.get_future();
  grain::shared_future<int> s = f.share();
  EXPECT_FALSE(f.valid());
  p.set_value(4);
  EXPECT_EQ(s.get(), 4);
}
