// Remote async/post/then/dataflow between localities, arguments of every kind, exceptions
// across ranks, large arguments, many small calls, all-to-all traffic. Run under mpirun with
// 2..4 ranks by ctest, and without mpirun (one locality: every call is local).
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "actions.hpp"

namespace grain::test::dist {
namespace {

std::uint32_t last() {
  return get_num_localities() - 1;
}

TEST(Localities, RankZeroRunsTheTestsAndEveryRankIsListed) {
  EXPECT_EQ(find_here().rank(), 0u);
  const auto all = find_all_localities();
  ASSERT_EQ(all.size(), get_num_localities());
  for (std::uint32_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].rank(), i);
  for (auto l : all) EXPECT_EQ(grain::async(l, action<&where>{}).get(), l.rank());
}

TEST(RemoteCalls, ResultsComeBackFromEveryLocality) {
  std::vector<future<int>> fs;
  for (int i = 0; i < 100; ++i)
    fs.push_back(grain::async(locality(static_cast<std::uint32_t>(i) % get_num_localities()),
                              action<&square>{}, i));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), i * i);
}

TEST(RemoteCalls, StringsVectorsAndUserTypes) {
  const locality l(last());
  EXPECT_EQ(grain::async(l, action<&shout>{}, std::string("hello")).get(), "hello!");
  EXPECT_EQ(grain::async(l, action<&scale>{}, std::vector<double>{1, 2, 3}, 2.0).get(),
            (std::vector<double>{2, 4, 6}));
  const point p = grain::async(l, action<&mirror>{}, point{1, 2, "p"}).get();
  EXPECT_EQ(p.x, 2);
  EXPECT_EQ(p.y, 1);
  EXPECT_EQ(p.label, "p@" + std::to_string(last()));
}

TEST(RemoteCalls, OneMegabyteArgumentsAndResults) {
  std::vector<char> big(1 << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + 7);
  const locality l(last());
  EXPECT_EQ(grain::async(l, action<&checksum>{}, big).get(), checksum(big));
  EXPECT_EQ(grain::async(l, action<&echo>{}, big).get(), big);
}

TEST(RemoteCalls, AnExceptionReachesTheCallersFuture) {
  const locality l(last());
  auto f = grain::async(l, action<&fail>{}, 42);
  if (l == find_here()) {  // one locality: a local call, the exception itself comes back
    EXPECT_THROW(f.get(), std::runtime_error);
    return;
  }
  try {
    f.get();
    FAIL() << "no exception";
  } catch (const remote_exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("failing on purpose with 42"), std::string::npos) << what;
    EXPECT_NE(what.find("'grain::test::dist::fail'"), std::string::npos) << what;
    EXPECT_NE(what.find("locality#" + std::to_string(last())), std::string::npos) << what;
  }
  // The locality goes on serving.
  EXPECT_EQ(grain::async(l, action<&square>{}, 5).get(), 25);
}

TEST(RemoteCalls, ThenAndDataflowComposeRemoteFutures) {
  const locality l(last());
  auto a = grain::async(l, action<&square>{}, 3);
  auto b = a.then([](future<int> f) { return f.get() + 1; });
  EXPECT_EQ(b.get(), 10);
  auto x = grain::async(l, action<&square>{}, 4);
  auto y = grain::async(locality(0), action<&square>{}, 5);
  auto z = grain::dataflow([](future<int> p, future<int> q) { return p.get() + q.get(); },
                           std::move(x), std::move(y));
  EXPECT_EQ(z.get(), 41);
}

TEST(RemoteCalls, PostsRunOnTheTargetLocality) {
  const locality l(last());
  const long before = grain::async(l, action<&bumped>{}).get();
  for (int i = 0; i < 1000; ++i) grain::post(l, action<&bump>{}, 2);
  // Posts and calls are separate tasks there: poll until every post has run.
  long now = before;
  for (int k = 0; k < 100000 && now != before + 2000; ++k)
    now = grain::async(l, action<&bumped>{}).get();
  EXPECT_EQ(now, before + 2000);
}

TEST(RemoteCalls, ManySmallCallsInFlight) {
  constexpr int n = 1000000;
  std::vector<future<int>> fs;
  fs.reserve(n);
  for (int i = 0; i < n; ++i)
    fs.push_back(
        grain::async(locality(last() == 0 ? 0 : 1 + static_cast<std::uint32_t>(i) % last()),
                     action<&square>{}, i % 1000));
  long long sum = 0, want = 0;
  for (int i = 0; i < n; ++i) {
    sum += fs[static_cast<std::size_t>(i)].get();
    want += static_cast<long long>(i % 1000) * (i % 1000);
  }
  EXPECT_EQ(sum, want);
}

TEST(RemoteCalls, ActionsCallOtherLocalitiesAllToAll) {
  const long n = get_num_localities();
  const long ranks = n * (n - 1) / 2;
  // depth 2: every locality asks every locality, which asks every locality.
  EXPECT_EQ(grain::async(locality(last()), action<&sum_over_all>{}, 2).get(), n * ranks);
  for (auto l : find_all_localities())
    EXPECT_EQ(grain::async(l, action<&relay>{}, (l.rank() + 1) % n, 6).get(),
              36 + static_cast<long>(l.rank()));
}

TEST(RemoteCalls, ArgumentsThatFailToSerialiseAreAnErrorAtTheCallAndSendNothing) {
  if (get_num_localities() < 2) GTEST_SKIP() << "needs two localities";
  const locality there(1);
  // Serialised straight into the message being built: a throw must leave no half-built
  // message in the sender's reused buffer and no call waiting for an answer.
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(grain::async(there, action<&defuse>{}, exploding{-1, "x"}), std::runtime_error);
    EXPECT_THROW(grain::post(there, action<&defuse>{}, exploding{-1, "x"}), std::runtime_error);
    EXPECT_EQ(grain::async(there, action<&defuse>{}, exploding{i, "x"}).get(), i);
  }
  EXPECT_EQ(grain::async(there, action<&square>{}, 12).get(), 144);
}

TEST(RemoteCalls, ALocalityThatDoesNotExistIsAnErrorAtTheCall) {
  EXPECT_THROW(grain::async(locality(get_num_localities()), action<&square>{}, 1),
               std::out_of_range);
  EXPECT_THROW(grain::post(locality(1000), action<&bump>{}, 1), std::out_of_range);
}

TEST(RemoteCalls, MainThreadWaitsOnRemoteFuturesOutsideTasks) {
  // The test body runs on main's OS thread, not in a task: get() blocks it while the
  // workers progress the network.
  EXPECT_EQ(grain::async(locality(last()), action<&square>{}, 9).get(), 81);
}

}  // namespace
}  // namespace grain::test::dist
