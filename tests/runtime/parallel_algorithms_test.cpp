// for_loop, for_each, transform, reduce, transform_reduce: exact results (integers), every
// policy, from main and from tasks, nested loops, exceptions, seq runs serially in the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "grain/async.hpp"
#include "grain/parallel/algorithms.hpp"
#include "runtime_fixture.hpp"

namespace ex = grain::execution;

namespace {

class ParallelAlgorithms : public grain::test::RuntimeTest {};

const char* const chunkers[] = {"static",   "static:17", "dynamic:64",
                                "guided:8", "auto",      "adaptive"};

std::vector<std::uint64_t> iota_vec(std::size_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), std::uint64_t{0});
  return v;
}

// A value type without a default constructor: reduce must not need one.
struct total {
  explicit total(std::uint64_t x) : v(x) {}
  std::uint64_t v;
};

}  // namespace

TEST_F(ParallelAlgorithms, ReduceIsExactForEveryChunker) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{97}, std::size_t{1'000'003}}) {
    const auto v = iota_vec(n);
    const std::uint64_t expect = n ? n * (n - 1) / 2 : 0;
    for (const char* c : chunkers) {
      const auto pol = ex::par.with(ex::parse_chunker(c));
      EXPECT_EQ(grain::reduce(pol, v.begin(), v.end(), std::uint64_t{7}), expect + 7)
          << c << " n=" << n;
      EXPECT_EQ(grain::reduce(pol, v.begin(), v.end()), expect) << c;
      // From a task as well (the caller is then one of the runners).
      EXPECT_EQ(grain::async([&] { return grain::reduce(pol, v.begin(), v.end()); }).get(), expect)
          << c;
    }
    EXPECT_EQ(grain::reduce(ex::seq, v.begin(), v.end()), expect);
  }
}

TEST_F(ParallelAlgorithms, ReduceWithOtherOperationsAndTypes) {
  const auto v = iota_vec(10'007);
  EXPECT_EQ(grain::reduce(ex::par, v.begin(), v.end(), std::uint64_t{0},
                          [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); }),
            10'006u);
  EXPECT_EQ(grain::reduce(ex::par, v.begin(), v.end(), std::uint64_t{0}, std::bit_xor<>{}),
            std::reduce(v.begin(), v.end(), std::uint64_t{0}, std::bit_xor<>{}));
  // No default constructor, no identity element.
  std::vector<total> t;
  for (std::uint64_t i = 1; i <= 1000; ++i) t.emplace_back(i);
  const total r = grain::reduce(ex::par.with(ex::dynamic_chunk_size(3)), t.begin(), t.end(),
                                total(0), [](total a, total b) { return total(a.v + b.v); });
  EXPECT_EQ(r.v, 500'500u);
}

TEST_F(ParallelAlgorithms, TransformReduceUnaryAndBinary) {
  const std::uint64_t n = 100'003;
  const auto v = iota_vec(n);
  const std::uint64_t squares = (n - 1) * n * (2 * n - 1) / 6;
  for (const char* c : chunkers) {
    const auto pol = ex::par.with(ex::parse_chunker(c));
    EXPECT_EQ(grain::transform_reduce(pol, v.begin(), v.end(), std::uint64_t{0}, std::plus<>{},
                                      [](std::uint64_t x) { return x * x; }),
              squares)
        << c;
    EXPECT_EQ(grain::transform_reduce(pol, v.begin(), v.end(), v.begin(), std::uint64_t{0}),
              squares)
        << c;
    EXPECT_EQ(grain::transform_reduce(pol, v.begin(), v.end(), v.begin(), std::uint64_t{1},
                                      std::plus<>{}, std::minus<>{}),
              1u)
        << c;
  }
  EXPECT_EQ(grain::transform_reduce(ex::seq, v.begin(), v.end(), v.begin(), std::uint64_t{0}),
            squares);
}

TEST_F(ParallelAlgorithms, TransformUnaryAndBinary) {
  const auto v = iota_vec(50'021);
  for (const char* c : chunkers) {
    const auto pol = ex::par.with(ex::parse_chunker(c));
    std::vector<std::uint64_t> out(v.size() + 1, 99);
    auto end = grain::transform(pol, v.begin(), v.end(), out.begin(),
                                [](std::uint64_t x) { return 3 * x + 1; });
    EXPECT_EQ(end, out.begin() + static_cast<std::ptrdiff_t>(v.size())) << c;
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], 3 * i + 1) << c << " " << i;
    EXPECT_EQ(out.back(), 99u) << c;  // nothing written past the end
    std::vector<std::uint64_t> sum(v.size());
    grain::transform(pol, v.begin(), v.end(), out.begin(), sum.begin(), std::plus<>{});
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(sum[i], 4 * i + 1) << c << " " << i;
  }
  std::vector<int> a{1, 2, 3}, b(3);
  EXPECT_EQ(grain::transform(ex::seq, a.begin(), a.end(), b.begin(), [](int x) { return -x; }),
            b.end());
  EXPECT_EQ(b, (std::vector<int>{-1, -2, -3}));
}

TEST_F(ParallelAlgorithms, ForEachAndIteratorForLoop) {
  std::vector<std::uint64_t> v(30'011, 1);
  grain::for_each(ex::par.with(ex::guided_chunk_size(4)), v.begin(), v.end(),
                  [](std::uint64_t& x) { x += 2; });
  EXPECT_EQ(std::reduce(v.begin(), v.end()), 3u * v.size());
  grain::for_loop(ex::par, v.begin(), v.end(),
                  [&](auto it) { *it = static_cast<std::uint64_t>(it - v.begin()); });
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], i);
  // Integer bounds of different types meet in their common type (here std::size_t).
  std::atomic<std::uint64_t> sum{0};
  grain::for_loop(ex::par, 0, v.size(), [&](auto i) {
    static_assert(std::is_same_v<decltype(i), std::size_t>);
    sum.fetch_add(v[i]);
  });
  EXPECT_EQ(sum.load(), v.size() * (v.size() - 1) / 2);
}

TEST_F(ParallelAlgorithms, SeqRunsSeriallyInTheCallerInOrder) {
  const auto me = std::this_thread::get_id();
  std::vector<int> order;
  bool same_thread = true;
  grain::for_loop(ex::seq, 0, 100, [&](int i) {
    order.push_back(i);
    same_thread = same_thread && std::this_thread::get_id() == me;
  });
  std::vector<int> expect(100);
  std::iota(expect.begin(), expect.end(), 0);
  EXPECT_EQ(order, expect);
  EXPECT_TRUE(same_thread);
  const auto calls = grain::loop_statistics().calls.load();
  grain::for_each(ex::seq, expect.begin(), expect.end(), [](int) {});
  EXPECT_EQ(grain::loop_statistics().calls.load(), calls);  // seq loops are not counted
}

TEST_F(ParallelAlgorithms, TaskPoliciesReturnFutures) {
  const auto v = iota_vec(10'000);
  grain::future<std::uint64_t> f = grain::reduce(ex::par(ex::task), v.begin(), v.end());
  grain::future<std::uint64_t> g =
      grain::reduce(ex::par(ex::task).with(ex::static_chunk_size(10)), v.begin(), v.end());
  grain::future<std::uint64_t> s = grain::reduce(ex::seq(ex::task), v.begin(), v.end());
  std::atomic<int> n{0};
  grain::future<void> l = grain::for_loop(ex::par(ex::task), 0, 1000, [&](int) { ++n; });
  EXPECT_EQ(f.get(), 49'995'000u);
  EXPECT_EQ(g.get(), 49'995'000u);
  EXPECT_EQ(s.get(), 49'995'000u);
  l.get();
  EXPECT_EQ(n.load(), 1000);
  auto bad = grain::for_loop(ex::par(ex::task), 0, 10, [](int i) {
    if (i == 3) throw std::runtime_error("three");
  });
  EXPECT_THROW(bad.get(), std::runtime_error);
}

TEST_F(ParallelAlgorithms, NestedLoopsFromMainAndFromTasks) {
  // 16 outer iterations, each an inner parallel reduce with a task it waits for inside: the
  // inner loops and the waits suspend user threads, never a worker.
  auto nested = [] {
    const auto inner = iota_vec(20'000);
    std::vector<std::uint64_t> out(16);
    grain::for_loop(ex::par.with(ex::dynamic_chunk_size(1)), 0, 16, [&](int i) {
      const std::uint64_t s =
          grain::reduce(ex::par.with(ex::static_chunk_size(500)), inner.begin(), inner.end());
      const std::uint64_t t = grain::async([i] { return static_cast<std::uint64_t>(i); }).get();
      out[static_cast<std::size_t>(i)] = s + t;
    });
    return std::reduce(out.begin(), out.end());
  };
  const std::uint64_t expect = 16 * (20'000ull * 19'999 / 2) + 120;
  EXPECT_EQ(nested(), expect);
  EXPECT_EQ(grain::async(nested).get(), expect);
  // Three levels, adaptive everywhere.
  std::atomic<std::uint64_t> leaves{0};
  grain::for_loop(ex::par, 0, 8, [&](int) {
    grain::for_loop(ex::par, 0, 8, [&](int) {
      grain::for_loop(ex::par, 0, 1000,
                      [&](int) { leaves.fetch_add(1, std::memory_order_relaxed); });
    });
  });
  EXPECT_EQ(leaves.load(), 64'000u);
}

TEST_F(ParallelAlgorithms, FirstExceptionPropagatesAfterEveryRunnerFinished) {
  for (const char* c : chunkers) {
    std::atomic<int> in_flight{0}, started{0};
    // The caught message, or why there is none.
    auto run = [&]() -> std::string {
      try {
        grain::for_loop(ex::par.with(ex::parse_chunker(c)), 0, 10'000, [&](int i) {
          in_flight.fetch_add(1);
          started.fetch_add(1);
          if (i == 4'321) {
            in_flight.fetch_sub(1);
            throw std::runtime_error("iteration 4321");
          }
          in_flight.fetch_sub(1);
        });
      } catch (const std::runtime_error& e) {
        return e.what();
      }
      return "no exception";
    };
    EXPECT_EQ(run(), "iteration 4321") << c;  // from main
    EXPECT_EQ(in_flight.load(), 0) << c;      // no iteration still running after the throw
    EXPECT_EQ(grain::async(run).get(), "iteration 4321") << c;  // from a task
    EXPECT_EQ(in_flight.load(), 0) << c;
    EXPECT_GE(started.load(), 2) << c;
  }
}

TEST_F(ParallelAlgorithms, NoNewChunkStartsAfterAnException) {
  // Every iteration throws; chunks of one iteration: a runner checks the stop flag before each
  // chunk, so at most one iteration per runner runs.
  std::atomic<int> calls{0};
  EXPECT_THROW(grain::for_loop(ex::par.with(ex::static_chunk_size(1)), 0, 10'000,
                               [&](int) {
                                 calls.fetch_add(1);
                                 throw std::logic_error("x");
                               }),
               std::logic_error);
  EXPECT_GE(calls.load(), 1);
  EXPECT_LE(calls.load(), static_cast<int>(rt->num_workers()));
  // Exceptions from the operations of a reduction propagate too (every element goes through
  // the transformation; the reduction sees sums of elements, so it throws on a large value).
  const auto v = iota_vec(1000);
  EXPECT_THROW(grain::transform_reduce(ex::par, v.begin(), v.end(), std::uint64_t{0}, std::plus<>{},
                                       [](std::uint64_t x) -> std::uint64_t {
                                         if (x == 500) throw std::out_of_range("500");
                                         return x;
                                       }),
               std::out_of_range);
  EXPECT_THROW(grain::reduce(ex::par, v.begin(), v.end(), std::uint64_t{0},
                             [](std::uint64_t a, std::uint64_t b) -> std::uint64_t {
                               if (a + b > 100'000) throw std::overflow_error("sum");
                               return a + b;
                             }),
               std::overflow_error);
}

TEST_F(ParallelAlgorithms, LoopStatisticsCountCallsIterationsAndChunks) {
  auto& st = grain::loop_statistics();
  const auto calls = st.calls.load(), iters = st.iterations.load(), chunks = st.chunks.load();
  grain::for_loop(ex::par.with(ex::dynamic_chunk_size(10)), 0, 1000, [](int) {});
  grain::for_loop(ex::par.with(ex::static_chunk_size(7)), 0, 70, [](int) {});
  EXPECT_EQ(st.calls.load() - calls, 2u);
  EXPECT_EQ(st.iterations.load() - iters, 1070u);
  EXPECT_EQ(st.chunks.load() - chunks, 110u);
  EXPECT_EQ(st.last_chunk_size.load(), 7u);
  EXPECT_EQ(st.last_kind.load(), static_cast<std::uint8_t>(ex::chunk_kind::static_));
}
