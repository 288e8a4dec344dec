// Suspending the calling user thread until a waker (an LCO, a shared state) notifies it, with
// or without a deadline (grain/detail/waiter.hpp), and the same waits for callers that are not
// user threads (they block their OS thread). Separate from suspend.cpp, which only knows how
// to leave; this file owns the waiter nodes and the race between a deadline and a notify.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>

#include "grain/clock.hpp"
#include "scheduler.hpp"
#include "suspend.hpp"

namespace grain::detail {

namespace {

struct fiber_waiter : waiter {
  fiber* f = nullptr;
  fiber_waiter() {
    notify_fn = [](waiter* self) noexcept {
      scheduler::instance()->make_ready(static_cast<fiber_waiter*>(self)->f);
    };
  }
};

struct thread_waiter : waiter {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  thread_waiter() {
    notify_fn = [](waiter* self) noexcept {
      auto* tw = static_cast<thread_waiter*>(self);
      std::lock_guard lock(tw->m);
      tw->done = true;
      tw->cv.notify_one();
    };
  }
};

struct park_args {
  enqueue_fn enqueue;
  void* ctx;
  fiber_waiter* node;
};

void park_action(void* a, fiber* from) {
  auto* p = static_cast<park_args*>(a);
  p->node->f = from;
  if (!p->enqueue(p->ctx, p->node)) scheduler::instance()->make_ready(from);
}

struct timed_park : timer_entry {
  enqueue_fn enqueue;
  dequeue_fn dequeue;
  void* ctx;
  fiber_waiter node;
  scheduler* sched;
};

void timed_park_action(void* a, fiber* from) {
  auto* p = static_cast<timed_park*>(a);
  p->node.f = from;
  std::unique_lock lock(p->sched->timers().mutex());
  if (!p->enqueue(p->ctx, &p->node)) {
    lock.unlock();
    p->sched->make_ready(from);
    return;
  }
  p->sched->timers().arm_locked(p);
}

void timed_park_fire(timer_entry* e) {
  auto* p = static_cast<timed_park*>(e);
  if (p->dequeue(p->ctx, &p->node)) {
    p->node.f->timed_out = true;
    p->sched->make_ready(p->node.f);
  }
}

[[noreturn]] void refuse_wait() {
  throw std::logic_error(std::string("grain: ") + g_no_wait +
                         " must not wait (for a future that is not ready, a lock, a sleep): it "
                         "would block the worker that progresses the network");
}

}  // namespace

thread_local const char* g_no_wait = nullptr;

void park(enqueue_fn enqueue, void* ctx) {
  if (g_no_wait) refuse_wait();
  worker* w = current_worker();
  if (!w || !w->current_task) {
    thread_waiter node;
    if (!enqueue(ctx, &node)) return;
    std::unique_lock lock(node.m);
    node.cv.wait(lock, [&] { return node.done; });
    return;
  }
  w->stats->suspensions.inc();
  fiber_waiter node;
  park_args args{enqueue, ctx, &node};
  suspend_current(w, park_action, &args);
}

bool park_until(enqueue_fn enqueue, dequeue_fn dequeue, void* ctx, std::uint64_t deadline_ns) {
  if (g_no_wait) refuse_wait();
  worker* w = current_worker();
  if (!w || !w->current_task) {
    thread_waiter node;
    if (!enqueue(ctx, &node)) return true;
    std::unique_lock lock(node.m);
    // In steady_clock's terms through a duration: now_ns() may be the TSC clock.
    const std::uint64_t now = now_ns();
    const auto tp = std::chrono::steady_clock::now() +
                    std::chrono::nanoseconds(deadline_ns > now ? deadline_ns - now : 0);
    if (node.cv.wait_until(lock, tp, [&] { return node.done; })) return true;
    lock.unlock();
    if (dequeue(ctx, &node)) return false;
    lock.lock();  // a notification is on its way
    node.cv.wait(lock, [&] { return node.done; });
    return true;
  }
  scheduler* s = w->sched;
  w->stats->suspensions.inc();
  timed_park tp;
  tp.deadline_ns = deadline_ns;
  tp.fire = timed_park_fire;
  tp.enqueue = enqueue;
  tp.dequeue = dequeue;
  tp.ctx = ctx;
  tp.sched = s;
  fiber* self = w->current;
  self->timed_out = false;
  suspend_current(w, timed_park_action, &tp);
  s->timers().cancel(&tp);  // also waits out a firing in progress
  return !self->timed_out;
}

std::uint64_t deadline_from(std::chrono::steady_clock::time_point tp) noexcept {
  // Through a duration from now: now_ns() may be the TSC clock, not steady_clock itself.
  const auto left =
      std::chrono::duration_cast<std::chrono::nanoseconds>(tp - std::chrono::steady_clock::now())
          .count();
  const std::uint64_t now = now_ns();
  return left <= 0 ? now : now + static_cast<std::uint64_t>(left);
}

}  // namespace grain::detail
