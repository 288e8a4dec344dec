// Collectives (grain/distributed/collectives.hpp) under mpirun with 2-4 ranks and as one
// locality: exact results of every operation and value type against a serial computation,
// many generations in flight, contributions from suspended, forked and inlined tasks, a failed
// contributor, a locality with a contribution missing or one too many, the counters. Rank 0
// runs the tests; each test runs the same action on every locality (the others take part
// from their action tasks).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "grain/grain.hpp"
#include "grain/instrumentation/counters.hpp"

namespace grain::test::dist::coll {

struct span_stats {  // a user type with its own combine
  std::int64_t lo = 0, hi = 0, n = 0;
};
span_stats merge(span_stats a, span_stats b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.n + b.n};
}

using quad = std::array<std::int64_t, 4>;
constexpr int gather_max = 32;

// What one locality saw; every one of its contributors must have seen the same (same_everywhere).
struct round_result {
  std::int64_t sum = 0;
  double max = 0;
  std::int32_t min = 0;
  std::uint64_t product = 0;
  quad q{};
  span_stats st{};
  std::int64_t reduced = 0;  // reduce's result (meaningful on the root)
  std::int64_t broadcast = 0;
  std::array<std::int64_t, gather_max> gathered{};
  std::int32_t gathered_n = 0;
  bool same_everywhere = true;
  bool barrier_done = false;
};

std::int64_t value_of(std::uint32_t rank, int i) {
  return 1000 * static_cast<std::int64_t>(rank) + 7 * i + 3;
}

// k contributors on this locality, each taking part in every kind of collective.
round_result every_kind(int k, std::uint32_t root) {
  const std::uint32_t me = find_here().rank();
  std::vector<future<round_result>> fs;
  for (int i = 0; i < k; ++i)
    fs.push_back(grain::async([=] {
      // Ten calls in a row from each contributor: its index keeps them in its own generations.
      const collective_args a{static_cast<std::uint32_t>(k), -1, i};
      const std::int64_t v = value_of(me, i);
      round_result r;
      auto sum = all_reduce(v, std::plus<>{}, a);
      auto max = all_reduce(
          static_cast<double>(v) / 4, [](double x, double y) { return std::max(x, y); }, a);
      auto min = all_reduce(
          static_cast<std::int32_t>(v),
          [](std::int32_t x, std::int32_t y) { return std::min(x, y); }, a);
      const std::uint64_t mod = 1'000'003;  // a capturing op
      auto prod = all_reduce(
          static_cast<std::uint64_t>(v),
          [mod](std::uint64_t x, std::uint64_t y) { return x * y % mod; }, a);
      auto q = all_reduce(
          quad{v, -v, v * v, 1},
          [](quad x, const quad& y) {
            for (std::size_t j = 0; j < 4; ++j) x[j] += y[j];
            return x;
          },
          a);
      auto st = all_reduce(span_stats{v, v, 1}, &merge, a);
      auto red = reduce(v, std::plus<>{}, root, a);
      auto bc = broadcast(v * 10 + 1, root, a);
      auto ga = all_gather(v, a);
      auto ba = collectives::barrier(a);
      r.sum = sum.get();
      r.max = max.get();
      r.min = min.get();
      r.product = prod.get();
      r.q = q.get();
      r.st = st.get();
      r.reduced = red.get();
      r.broadcast = bc.get();
      const std::vector<std::int64_t> g = ga.get();
      r.gathered_n = static_cast<std::int32_t>(g.size());
      std::copy_n(g.begin(), std::min<std::size_t>(g.size(), gather_max), r.gathered.begin());
      ba.get();
      r.barrier_done = true;
      return r;
    }));
  std::vector<round_result> rs;
  for (auto& f : fs) rs.push_back(f.get());
  round_result r = rs[0];
  for (const auto& x : rs)
    r.same_everywhere = r.same_everywhere && x.sum == r.sum && x.max == r.max && x.min == r.min &&
                        x.product == r.product && x.q == r.q && x.st.lo == r.st.lo &&
                        x.st.hi == r.st.hi && x.st.n == r.st.n && x.reduced == r.reduced &&
                        x.broadcast == r.broadcast && x.gathered == r.gathered && x.barrier_done;
  return r;
}

// G generations of all_reduce, contributed in an interleaved order: every result must be its
// own generation's sum. Returns the number of wrong results.
int many_generations(int generations, int k) {
  const std::uint32_t me = find_here().rank();
  const std::uint64_t base = collectives::next_generation(detail::collective_kind::all_reduce);
  std::vector<future<std::int64_t>> fs;
  std::vector<std::int64_t> expect;
  const auto n = static_cast<std::int64_t>(get_num_localities());
  // Later generations first on odd ranks, so that their network operations must wait for
  // earlier ones (they start in generation order).
  for (int j = 0; j < generations; ++j) {
    const int g = (me % 2 == 1) ? generations - 1 - j : j;
    for (int i = 0; i < k; ++i) {
      fs.push_back(grain::async([=] {
        const collective_args a{static_cast<std::uint32_t>(k), static_cast<std::int64_t>(base) + g};
        return all_reduce(std::int64_t{g} * 100 + i + me, std::plus<>{}, a).get();
      }));
      expect.push_back(n * k * g * 100 + n * k * (k - 1) / 2 + k * n * (n - 1) / 2);
    }
  }
  int wrong = 0;
  for (std::size_t i = 0; i < fs.size(); ++i) wrong += fs[i].get() != expect[i];
  return wrong;
}

// Values above direct_exchange_max_block go through MPI's non-blocking collectives, small ones
// through the direct exchange of blocks: both, interleaved with several generations of one
// kind in flight, and reduce and broadcast of large values. Returns the wrong results.
using big = std::array<std::int64_t, 200>;  // 1600 bytes
int large_and_small(int rounds) {
  const std::int64_t me = find_here().rank();
  const auto n = static_cast<std::int64_t>(get_num_localities());
  auto add = [](const big& a, const big& b) {
    big r{};
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = a[i] + b[i];
    return r;
  };
  int wrong = 0;
  for (int j = 0; j < rounds; ++j) {
    big mine{};
    for (std::size_t i = 0; i < mine.size(); ++i)
      mine[i] = me * 1000 + static_cast<std::int64_t>(i) + j;
    auto small1 = all_reduce(me + j, std::plus<>{});
    auto large = all_reduce(mine, add);
    auto small2 = all_reduce(me * 2 + j, std::plus<>{});
    auto reduced = reduce(mine, add, static_cast<std::uint32_t>(n - 1));
    auto bcast = broadcast(mine, 0);
    wrong += small1.get() != n * (n - 1) / 2 + n * j;
    wrong += small2.get() != n * (n - 1) + n * j;
    const big l = large.get(), r = reduced.get(), b = bcast.get();
    for (std::size_t i = 0; i < l.size(); ++i) {
      const auto ii = static_cast<std::int64_t>(i);
      const std::int64_t total = 1000 * n * (n - 1) / 2 + n * (ii + j);
      wrong += l[i] != total;
      wrong += r[i] != (me == n - 1 ? total : mine[i]);
      wrong += b[i] != ii + j;  // locality#0's value
    }
  }
  return wrong;
}

// One contributor per locality, the common case: a generation that is alone goes by the
// engine's lone path, the ones started while it is in flight by the table. Every kind, with
// up to `depth` generations in flight before the results are taken. Returns the wrong results.
int lone_and_table(int rounds, int depth) {
  const std::int64_t me = find_here().rank();
  const auto n = static_cast<std::int64_t>(get_num_localities());
  int wrong = 0;
  for (int j = 0; j < rounds; ++j) {
    const int d = 1 + j % depth;
    std::vector<future<std::int64_t>> sums, roots, casts;
    std::vector<future<std::vector<std::int64_t>>> gathers;
    std::vector<future<void>> barriers;
    for (int i = 0; i < d; ++i) {
      sums.push_back(all_reduce(me + i + j, std::plus<>{}));
      roots.push_back(reduce(me * 2 + i, std::plus<>{}, static_cast<std::uint32_t>(n - 1)));
      casts.push_back(broadcast(me * 100 + i + j, 0));
      gathers.push_back(all_gather(me * 10 + i));
      barriers.push_back(collectives::barrier());
    }
    for (int i = 0; i < d; ++i) {
      wrong += sums[static_cast<std::size_t>(i)].get() != n * (n - 1) / 2 + n * (i + j);
      const std::int64_t total = n * (n - 1) + n * i;
      wrong += roots[static_cast<std::size_t>(i)].get() != (me == n - 1 ? total : me * 2 + i);
      wrong += casts[static_cast<std::size_t>(i)].get() != i + j;  // locality#0's value
      const std::vector<std::int64_t> g = gathers[static_cast<std::size_t>(i)].get();
      wrong += static_cast<std::int64_t>(g.size()) != n;
      for (std::size_t r = 0; r < g.size(); ++r)
        wrong += g[r] != static_cast<std::int64_t>(r) * 10 + i;
      barriers[static_cast<std::size_t>(i)].get();
    }
  }
  return wrong;
}

// Contributors that suspend before contributing, a forked one and an inlined one; each waits
// for the result itself. Returns the sum every one of them saw, or -1 when they disagree.
std::int64_t suspended_and_inlined() {
  const std::int64_t me = find_here().rank();
  const collective_args a{4, -1};
  auto contribute = [a](std::int64_t v) { return all_reduce(v, std::plus<>{}, a).get(); };
  auto slept = grain::async([=] {
    this_task::sleep_for(std::chrono::milliseconds(3));
    return contribute(me + 1);
  });
  auto yielded = grain::async([=] {
    for (int i = 0; i < 50; ++i) this_task::yield();
    return contribute(me + 2);
  });
  auto forked = grain::async(launch::fork, [=] { return contribute(me + 3); });
  auto inlined = grain::async(launch::sync, [=] { return contribute(me + 4); });
  const std::int64_t r = inlined.get();
  return slept.get() == r && yielded.get() == r && forked.get() == r ? r : -1;
}

// One contributor on locality `failing` fails; returns what this locality's contributors saw
// (the same message from both, or a note that they differ).
std::string failed_contributor(std::uint32_t failing) {
  const std::uint32_t me = find_here().rank();
  const collective_args a{2, -1};
  auto good = all_reduce(std::int64_t{1}, std::plus<>{}, a);
  promise<std::int64_t> p;
  auto maybe = all_reduce(p.get_future(), std::plus<>{}, a);
  if (me == failing)
    p.set_exception(std::make_exception_ptr(std::runtime_error("boom in a contributor")));
  else
    p.set_value(2);
  std::string seen[2];
  future<std::int64_t>* fs[2] = {&good, &maybe};
  for (int i = 0; i < 2; ++i) {
    try {
      seen[i] = "value " + std::to_string(fs[i]->get());
    } catch (const collective_error& e) {
      seen[i] = e.what();
    }
  }
  return seen[0] == seen[1] ? seen[0] : "differ: " + seen[0] + " | " + seen[1];
}

// Locality `short_rank` says two local contributors and gives one; the others give one of one.
// Returns what the contributor saw, then whether the next generation works ("next N").
std::string missing_contribution(std::uint32_t short_rank, int timeout_ms) {
  const std::uint32_t me = find_here().rank();
  const std::uint64_t saved = collectives::timeout_ms();
  collectives::set_timeout_ms(static_cast<std::uint64_t>(timeout_ms));
  std::string seen;
  try {
    seen = "value " +
           std::to_string(all_reduce(1, std::plus<>{}, {me == short_rank ? 2U : 1U, -1}).get());
  } catch (const collective_error& e) {
    seen = e.what();
  }
  collectives::set_timeout_ms(saved);
  return seen + " | next " + std::to_string(all_reduce(1, std::plus<>{}).get());
}

// A second contribution to an explicit generation of one contributor: refused at once.
std::string one_too_many() {
  const auto g =
      static_cast<std::int64_t>(collectives::next_generation(detail::collective_kind::all_reduce));
  auto first = all_reduce(5, std::plus<>{}, {1, g});
  auto extra = all_reduce(5, std::plus<>{}, {1, g});
  std::string r;
  try {
    extra.get();
    r = "extra accepted";
  } catch (const collective_error& e) {
    r = e.what();
  }
  return r + " | first " + std::to_string(first.get());
}

template <auto F, class... A>
auto on_every_locality(A... a) {
  using R = typename action<F>::result_type;
  std::vector<future<R>> fs;
  for (locality l : find_all_localities()) fs.push_back(grain::async(l, action<F>{}, a...));
  std::vector<R> out;
  for (auto& f : fs) out.push_back(f.get());
  return out;
}

TEST(Collectives, EveryKindAndTypeExactAgainstSerial) {
  const std::uint32_t n = get_num_localities();
  const int k = 3;
  const std::uint32_t root = n - 1;
  const auto results = on_every_locality<&every_kind>(k, root);
  // The serial computation over every contribution.
  std::int64_t sum = 0, lo = INT64_MAX, hi = INT64_MIN;
  double max = -1e300;
  std::int32_t min = INT32_MAX;
  std::uint64_t product = 1;
  quad q{0, 0, 0, 0};
  std::vector<std::vector<std::int64_t>> per_rank(n);
  for (std::uint32_t r = 0; r < n; ++r)
    for (int i = 0; i < k; ++i) {
      const std::int64_t v = value_of(r, i);
      sum += v;
      max = std::max(max, static_cast<double>(v) / 4);
      min = std::min(min, static_cast<std::int32_t>(v));
      product = product * static_cast<std::uint64_t>(v) % 1'000'003;
      q = {q[0] + v, q[1] - v, q[2] + v * v, q[3] + 1};
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      per_rank[r].push_back(v);
    }
  for (std::uint32_t r = 0; r < n; ++r) {
    SCOPED_TRACE("locality#" + std::to_string(r));
    const round_result& x = results[r];
    EXPECT_TRUE(x.same_everywhere);
    EXPECT_TRUE(x.barrier_done);
    EXPECT_EQ(x.sum, sum);
    EXPECT_EQ(x.max, max);
    EXPECT_EQ(x.min, min);
    EXPECT_EQ(x.product, product);
    EXPECT_EQ(x.q, q);
    EXPECT_EQ(x.st.lo, lo);
    EXPECT_EQ(x.st.hi, hi);
    EXPECT_EQ(x.st.n, static_cast<std::int64_t>(n) * k);
    // reduce: the total on the root, the locality's own sum elsewhere.
    const std::int64_t own =
        std::accumulate(per_rank[r].begin(), per_rank[r].end(), std::int64_t{0});
    EXPECT_EQ(x.reduced, r == root ? sum : own);
    // broadcast: one of root's contributions (the first to arrive there).
    EXPECT_NE(std::find(per_rank[root].begin(), per_rank[root].end(), (x.broadcast - 1) / 10),
              per_rank[root].end());
    EXPECT_EQ(x.broadcast, results[0].broadcast);
    // all_gather: locality-major; within a locality, in arrival order.
    ASSERT_EQ(x.gathered_n, static_cast<std::int32_t>(n) * k);
    for (std::uint32_t s = 0; s < n; ++s) {
      std::vector<std::int64_t> block(x.gathered.begin() + s * k, x.gathered.begin() + (s + 1) * k);
      std::sort(block.begin(), block.end());
      EXPECT_EQ(block, per_rank[s]);
    }
  }
}

TEST(Collectives, LargeValuesThroughMpiCollectivesSmallOnesDirect) {
  for (int wrong : on_every_locality<&large_and_small>(20)) EXPECT_EQ(wrong, 0);
}

TEST(Collectives, LoneGenerationsAndTableGenerationsInterleaved) {
  for (int wrong : on_every_locality<&lone_and_table>(60, 4)) EXPECT_EQ(wrong, 0);
}

TEST(Collectives, ManyGenerationsInFlight) {
  for (int wrong : on_every_locality<&many_generations>(200, 3)) EXPECT_EQ(wrong, 0);
}

TEST(Collectives, SuspendedForkedAndInlinedContributors) {
  const auto n = static_cast<std::int64_t>(get_num_localities());
  // Σ over ranks of (4 * rank + 1 + 2 + 3 + 4)
  const std::int64_t expect = 4 * n * (n - 1) / 2 + 10 * n;
  for (std::int64_t r : on_every_locality<&suspended_and_inlined>()) EXPECT_EQ(r, expect);
}

TEST(Collectives, AFailedContributorFailsTheGenerationEverywhere) {
  const std::uint32_t failing = get_num_localities() - 1;
  for (const std::string& s : on_every_locality<&failed_contributor>(failing)) {
    EXPECT_NE(s.find("boom in a contributor"), std::string::npos) << s;
    EXPECT_NE(s.find("locality#" + std::to_string(failing)), std::string::npos) << s;
    EXPECT_EQ(s.find("differ"), std::string::npos) << s;
  }
  // The next generation is unaffected.
  const auto n = static_cast<std::int64_t>(get_num_localities());
  for (std::int64_t r : on_every_locality<&suspended_and_inlined>())
    EXPECT_EQ(r, 4 * n * (n - 1) / 2 + 10 * n);
}

TEST(Collectives, AMissingContributionIsAnErrorEverywhereNotAHang) {
  const std::uint32_t n = get_num_localities();
  if (n == 1) GTEST_SKIP() << "one locality: no background work enforces the timeout";
  const std::uint32_t short_rank = n - 1;
  for (const std::string& s : on_every_locality<&missing_contribution>(short_rank, 500)) {
    EXPECT_NE(s.find("had 1 of 2 local contributions"), std::string::npos) << s;
    EXPECT_NE(s.find("locality#" + std::to_string(short_rank)), std::string::npos) << s;
    EXPECT_NE(s.find("| next " + std::to_string(n)), std::string::npos) << s;
  }
}

TEST(Collectives, OneContributionTooManyIsRefusedAtOnce) {
  const auto n = static_cast<std::int64_t>(get_num_localities());
  for (const std::string& s : on_every_locality<&one_too_many>()) {
    EXPECT_NE(s.find("already had all its"), std::string::npos) << s;
    EXPECT_NE(s.find("| first " + std::to_string(5 * n)), std::string::npos) << s;
  }
}

TEST(Collectives, BadArgumentsAreErrors) {
  EXPECT_THROW(all_reduce(1, std::plus<>{}, {0, -1}).get(), collective_error);
  EXPECT_THROW(reduce(1, std::plus<>{}, get_num_localities()).get(), collective_error);
  EXPECT_THROW(broadcast(1, get_num_localities() + 3).get(), collective_error);
}

TEST(Collectives, CountersCountOperations) {
  const std::string p = "/collectives{locality#0}/";
  auto value = [&](const std::string& c) {
    auto v = instrumentation::registry().value(p + c);
    return v ? v->value : -1.0;
  };
  const double before = value("count/operations");
  ASSERT_GE(before, 0);
  for (int i = 0; i < 5; ++i) on_every_locality<&suspended_and_inlined>();
  EXPECT_EQ(value("count/operations") - before, 5);
  EXPECT_GT(value("time/average-latency"), 0);
  EXPECT_GE(value("time/average-local-wait"), 0);
}

}  // namespace grain::test::dist::coll
