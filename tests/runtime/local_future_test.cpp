// Futures that hold an inlined call's result themselves (no shared state): everything a future
// can do must work on them, and what needs a state gets one made from the value.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "grain/async.hpp"
#include "grain/dataflow.hpp"
#include "grain/future.hpp"
#include "grain/when_all.hpp"
#include "runtime_fixture.hpp"

using namespace std::chrono_literals;
using grain::test::RuntimeTest;

namespace {

template <class R, class... V>
grain::future<R> local(V&&... v) {
  return grain::detail::future_access::local<R>(std::forward<V>(v)...);
}

struct pair_value {
  long a, b;
};

static_assert(grain::detail::local_result_v<long>);
static_assert(grain::detail::local_result_v<void>);
static_assert(grain::detail::local_result_v<pair_value>);
static_assert(!grain::detail::local_result_v<std::string>, "not trivially copyable");
static_assert(!grain::detail::local_result_v<int&>, "references keep their state");
static_assert(sizeof(grain::future<void>) == sizeof(void*), "void needs no room for a value");

class LocalFutureTest : public RuntimeTest {};

}  // namespace

TEST(LocalFuture, ObserversAndGet) {
  grain::future<long> f = local<long>(42L);
  EXPECT_TRUE(f.valid());
  EXPECT_TRUE(f.is_ready());
  EXPECT_TRUE(f.has_value());
  EXPECT_FALSE(f.has_exception());
  f.wait();
  EXPECT_EQ(f.wait_for(0ms), grain::future_status::ready);
  EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now()), grain::future_status::ready);
  EXPECT_EQ(f.get(), 42);
  EXPECT_FALSE(f.valid());
  EXPECT_THROW((void)f.get(), grain::future_error) << "a second get has no state";

  grain::future<void> v = local<void>();
  EXPECT_TRUE(v.is_ready());
  v.get();
  EXPECT_FALSE(v.valid());

  auto p = local<pair_value>(pair_value{3, 4});
  const pair_value got = p.get();
  EXPECT_EQ(got.a + got.b, 7);
}

TEST(LocalFuture, MovesCarryTheValue) {
  grain::future<long> a = local<long>(7L);
  grain::future<long> b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  grain::future<long> c;
  c = std::move(b);
  EXPECT_FALSE(b.valid());  // NOLINT(bugprone-use-after-move)
  c = local<long>(8L);      // replaces a local value with another
  EXPECT_EQ(c.get(), 8);
  std::vector<grain::future<long>> many;
  for (long i = 0; i < 100; ++i) many.push_back(local<long>(i));  // reallocation moves them
  long sum = 0;
  for (auto& f : many) sum += f.get();
  EXPECT_EQ(sum, 99 * 100 / 2);
}

TEST(LocalFuture, ShareMakesAState) {
  grain::shared_future<long> s = local<long>(5L).share();
  grain::shared_future<long> t = s;
  EXPECT_TRUE(s.is_ready());
  EXPECT_EQ(s.get(), 5);
  EXPECT_EQ(t.get(), 5);
  grain::shared_future<void> sv = local<void>().share();
  sv.get();
}

TEST_F(LocalFutureTest, ThenWhenAllAndDataflowTakeLocalFutures) {
  grain::async([] {
    auto next = local<long>(20L).then([](grain::future<long> f) { return f.get() + 1; });
    EXPECT_EQ(next.get(), 21);

    std::vector<grain::future<long>> inputs;
    inputs.push_back(local<long>(1L));
    inputs.push_back(grain::async([] { return 2L; }));
    inputs.push_back(local<long>(3L));
    auto all = grain::when_all(std::move(inputs)).get();
    long sum = 0;
    for (auto& f : all) sum += f.get();
    EXPECT_EQ(sum, 6);

    auto any = grain::when_any(local<long>(9L), grain::async([] { return 10L; })).get();
    EXPECT_LE(any.index, 1u);

    auto d = grain::dataflow(grain::unwrapping([](long a, long b) { return a * b; }),
                             local<long>(6L), grain::async([] { return 7L; }));
    EXPECT_EQ(d.get(), 42);
    auto dv = grain::dataflow([](grain::future<void> f) { f.get(); }, local<void>());
    dv.get();
  }).get();
}

TEST_F(LocalFutureTest, InlinedCallsReturnLocalValuesAndExceptions) {
  // A task-overhead so large that every kind is inlined once measured.
  rt.reset();
  rt = grain::test::start_runtime({"--grain:threads=1", "--grain:task-overhead=1000000"});
  grain::async([] {
    auto add = grain::annotate("local-add", [](long a, long b) { return a + b; });
    auto fail = grain::annotate("local-fail", [](long i) -> long {
      throw std::runtime_error("local " + std::to_string(i));
    });
    bool saw_inline = false;
    for (long i = 0; i < 100; ++i) {
      auto f = grain::async(grain::launch::adaptive, add, i, 1L);
      saw_inline |= f.is_ready();
      EXPECT_EQ(f.get(), i + 1);
      auto e = grain::async(grain::launch::adaptive, fail, i);
      try {
        (void)e.get();
        ADD_FAILURE() << "no exception at call " << i;
      } catch (const std::runtime_error& x) {
        EXPECT_EQ(std::string(x.what()), "local " + std::to_string(i));
      }
    }
    EXPECT_TRUE(saw_inline) << "a short kind must have been inlined";
  }).get();
}
