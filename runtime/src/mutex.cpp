// grain::mutex's slow paths (grain/lcos/mutex.hpp; docs/design/locks.md).
//
// A mutex that hands the lock over in FIFO order to a suspended waiter makes every later
// locker wait for that waiter to be resumed: with many tasks on one lock each acquisition then
// costs a suspension, a resumption and a worker's trip through its queues, and on a machine
// where another process holds a core, a preempted worker stalls the whole queue (100,000 tasks
// took 8-19 s on two workers where one worker took 0.05 s). So, as glibc's futex mutex and Go's
// sync.Mutex do, an unlock frees the lock and wakes one waiter, who then competes for it with
// running lockers, and a locker spins for about a microsecond before it suspends (a critical
// section is usually shorter than a suspension). To bound unfairness, a waiter that has been
// passed over for more than starve_ns puts the lock into starvation mode (Go's): unlocks then
// hand it directly to the head of the queue, newcomers queue behind, and the mode ends when
// the queue is empty or a served waiter did not starve.
#include "grain/lcos/mutex.hpp"

#include "grain/clock.hpp"
#include "grain/detail/cpu_relax.hpp"

namespace grain {

namespace {

// PAUSEs before suspending (~40 ns each on recent Intel cores, less on AMD's), a few
// microseconds in all: longer than most critical sections, far shorter than a preempted
// owner's wait for its core. With 32, tasks that gave up too early suspended by the thousand
// on a 2-core machine beside a busy process (grain-bench-locks --busy=1).
constexpr unsigned spin_pauses = 128;
// Go's threshold: a waiter passed over for longer asks for hand-over.
constexpr std::uint64_t starve_ns = 1'000'000;

}  // namespace

// Runs once the locker is off the CPU (detail::park): queue it, unless the lock came free in
// the meantime, in which case take it and go on at once.
struct mutex::enqueue {
  mutex* m;
  bool was_woken;  // holds the `woken` token: give it back with whatever happens here
  bool starve;     // waited longer than starve_ns: ask for hand-over, queue at the head
  detail::waiter* node = nullptr;
  bool acquired = false;

  bool operator()(detail::waiter* w) noexcept {
    m->lk_.lock();
    std::uint32_t s = m->state_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t keep = was_woken ? ~woken : ~0u;
      if (!(s & locked)) {
        if (m->state_.compare_exchange_weak(s, (s | locked) & keep, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
          m->lk_.unlock();
          acquired = true;
          return false;
        }
        continue;
      }
      const std::uint32_t n = ((s | waiters) & keep) | (starve ? starving : 0u);
      if (m->state_.compare_exchange_weak(s, n, std::memory_order_relaxed,
                                          std::memory_order_relaxed))
        break;
    }
    node = w;
    // One that was woken and lost has waited longest: the head (Go's LIFO re-queue).
    if (was_woken || starve)
      m->q_.push_front(w);
    else
      m->q_.push(w);
    m->lk_.unlock();
    return true;
  }
};

void mutex::lock_slow() {
  std::uint64_t since = 0;  // when this locker first suspended
  bool was_woken = false;
  for (;;) {
    // Looks at the lock after 1, 2, 4, ... 16 pauses: a spinner that polled every pause took
    // the lock's cache line from a running owner at each of its acquisitions.
    for (unsigned spent = 0, delay = 1; spent < spin_pauses;) {
      std::uint32_t s = state_.load(std::memory_order_relaxed);
      if (s & starving) break;  // the lock goes to the queue's head: no use spinning
      if (!(s & locked)) {
        if (state_.compare_exchange_weak(s, (s | locked) & (was_woken ? ~woken : ~0u),
                                         std::memory_order_acquire, std::memory_order_relaxed))
          return;
        continue;
      }
      for (unsigned k = 0; k < delay; ++k) detail::cpu_relax();
      spent += delay;
      if (delay < 16) delay *= 2;
    }
    const std::uint64_t now = now_ns();
    if (since == 0) since = now;
    enqueue e{this, was_woken, now - since > starve_ns};
    detail::park(e);
    if (e.acquired) return;
    if (handoff_.load(std::memory_order_acquire) == e.node) {
      // Handed over by a starvation-mode unlock: ours, still marked locked. A waiter that did
      // not starve ends the mode (the queue moves fast enough again).
      handoff_.store(nullptr, std::memory_order_relaxed);
      if (now_ns() - since <= starve_ns) state_.fetch_and(~starving, std::memory_order_relaxed);
      return;
    }
    was_woken = true;  // the unlock that woke us set `woken`: ours to clear
  }
}

void mutex::unlock_slow() noexcept {
  std::uint32_t s = state_.load(std::memory_order_relaxed);
  while (!(s & starving))
    if (state_.compare_exchange_weak(s, s & ~locked, std::memory_order_release,
                                     std::memory_order_relaxed)) {
      // Free. Wake one waiter unless none is queued or one is already on its way; if the lock
      // was taken again meanwhile, that owner's unlock wakes one.
      if (!(s & waiters) || (s & woken)) return;
      lk_.lock();
      s = state_.load(std::memory_order_relaxed);
      for (;;) {
        if ((s & (locked | woken)) || q_.empty()) {
          lk_.unlock();
          return;
        }
        const std::uint32_t n = (s | woken) & (q_.head->next ? ~0u : ~waiters);
        if (state_.compare_exchange_weak(s, n, std::memory_order_relaxed,
                                         std::memory_order_relaxed))
          break;
      }
      detail::waiter* w = q_.pop();
      lk_.unlock();
      w->notify();
      return;
    }
  // Starvation mode: the lock stays marked locked and passes to the queue's head.
  lk_.lock();
  detail::waiter* w = q_.pop();
  if (!w) {  // nobody left to hand it to (cannot happen: the mode ends with the queue)
    state_.fetch_and(~(locked | starving | waiters), std::memory_order_release);
    lk_.unlock();
    return;
  }
  if (q_.empty()) state_.fetch_and(~(waiters | starving), std::memory_order_relaxed);
  handoff_.store(w, std::memory_order_release);
  lk_.unlock();
  w->notify();
}

}  // namespace grain
