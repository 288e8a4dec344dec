// Direct actions (run by the receiving locality in its network progress, without a task) and
// the transport's receive path: messages below, at and above the ring's slot size arrive
// intact and in order, and several ranks flooding one at once overflow its ring without loss
// or reordering. Run under mpirun with 2..4 ranks by ctest, and without mpirun.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "actions.hpp"
#include "grain/detail/waiter.hpp"

namespace grain::test::dist {
namespace {

std::uint32_t last() {
  return get_num_localities() - 1;
}

int twice(int x) {
  return 2 * x;
}
int throw_direct(int code) {
  throw std::runtime_error("direct failure " + std::to_string(code));
}
// True when it runs where waiting is refused: in the network's progress, not in a task.
bool runs_in_progress() {
  return detail::g_no_wait != nullptr;
}
// The same as an ordinary action (one function cannot be both).
bool runs_in_progress_as_task() {
  return detail::g_no_wait != nullptr;
}
int wait_for_nothing() {
  // Never set, never destroyed (a broken promise would be logged).
  static auto* never = new promise<int>();
  static auto* f = new shared_future<int>(never->get_future().share());
  return f->get();
}

// Per (round, source): how many records arrived and how many came out of order.
struct tally {
  long count = 0;
  long next = 0;
  long disorders = 0;
  long bad_bytes = 0;
};
std::mutex g_tallies_mutex;
std::map<std::pair<int, std::uint32_t>, tally> g_tallies;

// The pad's bytes are a function of (seq, i): a message cut or mixed with another shows.
char pad_byte(long seq, std::size_t i) {
  return static_cast<char>(seq * 31 + static_cast<long>(i) * 7);
}
std::vector<char> make_pad(long seq, std::size_t n) {
  std::vector<char> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = pad_byte(seq, i);
  return p;
}

void record(int round, std::uint32_t from, long seq, const std::vector<char>& pad) {
  std::lock_guard lock(g_tallies_mutex);
  tally& t = g_tallies[{round, from}];
  t.count += 1;
  if (seq != t.next) t.disorders += 1;
  t.next = seq + 1;
  for (std::size_t i = 0; i < pad.size(); ++i)
    if (pad[i] != pad_byte(seq, i)) {
      t.bad_bytes += 1;
      break;
    }
}
// {count, disorders, bad payloads} of (round, from).
std::vector<long> recorded(int round, std::uint32_t from) {
  std::lock_guard lock(g_tallies_mutex);
  const tally& t = g_tallies[{round, from}];
  return {t.count, t.disorders, t.bad_bytes};
}

// Pads from 1 byte to beyond the ring's 8 KiB slots, the boundary densely.
std::size_t pad_size(long seq) {
  static const std::size_t sizes[] = {1,    16,   4000, 8000, 8100, 8110,  8120,  8128,
                                      8130, 8140, 8150, 8192, 8300, 12000, 100000};
  return sizes[static_cast<std::size_t>(seq) % std::size(sizes)];
}

// Posts n records of `round` to `target`, most small, every 50th above the slot size.
void flood(int round, std::uint32_t target, long n) {
  for (long s = 0; s < n; ++s)
    grain::post(locality(target), direct_action<&record>{}, round, find_here().rank(), s,
                make_pad(s, s % 50 == 49 ? 12000 : 32));
}

// Polls `target` until `n` records of (round, from) arrived; its tally.
std::vector<long> wait_for(std::uint32_t target, int round, std::uint32_t from, long n) {
  std::vector<long> t;
  for (int k = 0; k < 200000; ++k) {
    t = grain::async(locality(target), direct_action<&recorded>{}, round, from).get();
    if (t[0] >= n) break;
  }
  return t;
}

TEST(DirectActions, ResultsComeBackFromEveryLocality) {
  for (auto l : find_all_localities())
    EXPECT_EQ(grain::async(l, direct_action<&twice>{}, 21).get(), 42);
}

TEST(DirectActions, RunInTheNetworksProgressNotAsTasks) {
  if (get_num_localities() == 1) GTEST_SKIP() << "one locality: every call is a local task";
  EXPECT_TRUE(grain::async(locality(last()), direct_action<&runs_in_progress>{}).get());
  EXPECT_FALSE(grain::async(locality(last()), action<&runs_in_progress_as_task>{}).get());
}

TEST(DirectActions, AnExceptionReachesTheCallersFuture) {
  if (get_num_localities() == 1) GTEST_SKIP() << "one locality: covered by local tasks";
  try {
    grain::async(locality(last()), direct_action<&throw_direct>{}, 7).get();
    FAIL() << "no exception";
  } catch (const remote_exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("direct failure 7"), std::string::npos) << what;
    EXPECT_NE(what.find("throw_direct'"), std::string::npos) << what;
  }
  EXPECT_EQ(grain::async(locality(last()), direct_action<&twice>{}, 4).get(), 8);
}

TEST(DirectActions, AWaitInsideIsRefusedAndTheLocalityGoesOn) {
  // One locality: a local call is a task, which would wait for ever.
  if (get_num_localities() == 1) GTEST_SKIP() << "one locality: the call would be a task";
  try {
    grain::async(locality(last()), direct_action<&wait_for_nothing>{}).get();
    FAIL() << "no exception";
  } catch (const remote_exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a direct action must not wait"), std::string::npos) << what;
    EXPECT_NE(what.find("wait_for_nothing'"), std::string::npos) << what;
  }
  EXPECT_EQ(grain::async(locality(last()), direct_action<&twice>{}, 5).get(), 10);
  EXPECT_EQ(grain::async(locality(last()), action<&square>{}, 5).get(), 25);
}

TEST(Transport, MessagesAroundTheRingSlotSizeArriveWholeAndInOrder) {
  const std::uint32_t to = last();
  // Round trips of every size: the bytes come back as sent.
  for (long s = 0; s < 15; ++s) {
    const std::vector<char> pad = make_pad(s, pad_size(s));
    EXPECT_EQ(grain::async(locality(to), action<&echo>{}, pad).get(), pad) << pad.size();
  }
  // One-way, sizes interleaved: the receiver meets them in the order they were posted.
  constexpr long n = 600;
  for (long s = 0; s < n; ++s)
    grain::post(locality(to), direct_action<&record>{}, 1, find_here().rank(), s,
                make_pad(s, pad_size(s)));
  const std::vector<long> t = wait_for(to, 1, find_here().rank(), n);
  EXPECT_EQ(t[0], n);
  EXPECT_EQ(t[2], 0) << "records with wrong bytes";
  // One locality: the posts are local tasks, which run in any order.
  if (to != find_here().rank()) {
    EXPECT_EQ(t[1], 0) << "records out of order";
  }
}

TEST(Transport, ManyRanksFloodingOneOverflowItsRingWithoutLossOrReordering) {
  if (get_num_localities() == 1) GTEST_SKIP() << "one locality: nothing crosses a network";
  // Every other rank posts to rank 0 at once, far more messages than the ring has slots.
  constexpr long n = 4000;
  std::vector<future<void>> started;
  for (std::uint32_t r = 1; r < get_num_localities(); ++r)
    started.push_back(grain::async(locality(r), action<&flood>{}, 2, 0u, n));
  for (auto& f : started) f.get();
  for (std::uint32_t r = 1; r < get_num_localities(); ++r) {
    const std::vector<long> t = wait_for(0, 2, r, n);
    EXPECT_EQ(t[0], n) << "from rank " << r;
    EXPECT_EQ(t[1], 0) << "out of order from rank " << r;
    EXPECT_EQ(t[2], 0) << "wrong bytes from rank " << r;
  }
}

}  // namespace
}  // namespace grain::test::dist
