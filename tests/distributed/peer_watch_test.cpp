// The peer watch (distributed/src/peer_watch.hpp): how a dead rank's process is recognised,
// checked on child processes of this test (no MPI needed).
#include "peer_watch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace grain::distributed {
namespace {

// A child that waits until it is killed; only async-signal-safe calls after fork.
pid_t sleeping_child() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) ::pause();
  }
  return pid;
}

process_identity identity_of(pid_t pid) {
  process_identity p = this_process();  // the host
  p.pid = static_cast<std::uint64_t>(pid);
  p.start_ticks = 0;  // unknown: any process under the pid counts
  return p;
}

template <class F>
bool eventually(F f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(PeerWatch, ThisProcessIsAlive) {
  const process_identity me = this_process();
  EXPECT_EQ(me.pid, static_cast<std::uint64_t>(::getpid()));
  EXPECT_GT(me.start_ticks, 0u);
  EXPECT_GT(std::strlen(me.host), 0u);
  EXPECT_TRUE(process_alive(me));
}

TEST(PeerWatch, AReusedPidIsNotTheSameProcess) {
  process_identity other = this_process();
  other.start_ticks += 1;
  EXPECT_FALSE(process_alive(other));
}

TEST(PeerWatch, AZombieAndAReapedProcessAreDead) {
  const pid_t pid = sleeping_child();
  ASSERT_GT(pid, 0);
  process_identity child = identity_of(pid);
  EXPECT_TRUE(process_alive(child));
  ::kill(pid, SIGKILL);
  // Not reaped yet: a zombie.
  EXPECT_TRUE(eventually([&] { return !process_alive(child); }));
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_FALSE(process_alive(child));
}

TEST(PeerWatch, ReportsAKilledPeerThenEndsTheGrace) {
  const pid_t pid = sleeping_child();
  ASSERT_GT(pid, 0);
  process_identity far = this_process();
  std::strcpy(far.host, "another-host");  // not watched: /proc here says nothing about it
  std::atomic<int> dead{-1}, graces{0};
  {
    peer_watch w(
        0, {this_process(), identity_of(pid), far},
        [&](std::uint32_t r) { dead = static_cast<int>(r); }, [&] { ++graces; }, 10, 100);
    ASSERT_EQ(w.watched(), std::vector<std::uint32_t>{1});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(dead.load(), -1);  // alive: nothing reported
    ::kill(pid, SIGKILL);
    EXPECT_TRUE(eventually([&] { return dead.load() == 1; }));
    EXPECT_TRUE(eventually([&] { return graces.load() == 1; }));
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_EQ(graces.load(), 1);
}

TEST(PeerWatch, StopsWithoutAnyDeath) {
  const pid_t pid = sleeping_child();
  ASSERT_GT(pid, 0);
  std::atomic<int> calls{0};
  {
    peer_watch w(
        0, {this_process(), identity_of(pid)}, [&](std::uint32_t) { ++calls; }, [&] { ++calls; },
        10, 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }  // destroyed while the peer lives: no report, no hang
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace grain::distributed
