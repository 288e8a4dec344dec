#pragma once
// The one blocking primitive every waiting construct (futures, LCOs, sleep) is built on:
// park the calling user thread — or block the calling OS thread when it is not a worker —
// until something notifies the waiter node it registered.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "grain/detail/cpu_relax.hpp"

namespace grain::detail {

struct waiter {
  waiter* next = nullptr;
  void (*notify_fn)(waiter*) noexcept = nullptr;
  void notify() noexcept { notify_fn(this); }
};

// Notify every waiter of a list taken out of a queue (read `next` first: a notified node may
// be gone at once).
inline void notify_all(waiter* w) noexcept {
  while (w) {
    waiter* next = w->next;
    w->notify();
    w = next;
  }
}

// park(enqueue): `enqueue(waiter*)` runs once the caller is off the CPU (a user thread has been
// switched out; an OS thread is about to block). It registers the node somewhere (a queue under
// its own lock) and returns true, or returns false when the awaited condition already holds,
// in which case the caller continues immediately. The node is valid until notified.
using enqueue_fn = bool (*)(void* ctx, waiter* node) noexcept;
using dequeue_fn = bool (*)(void* ctx, waiter* node) noexcept;

void park(enqueue_fn enqueue, void* ctx);

// Code that must not wait names itself for its extent: park() and park_until() then throw
// std::logic_error naming it instead of blocking. A direct action (docs/distributed.md) runs
// in the network's progress on a worker outside any task: a wait there would block the worker
// and, on one worker, the very progress that would end the wait.
extern thread_local const char* g_no_wait;
class no_wait_scope {
 public:
  explicit no_wait_scope(const char* who) noexcept : prev_(g_no_wait) { g_no_wait = who; }
  ~no_wait_scope() { g_no_wait = prev_; }
  no_wait_scope(const no_wait_scope&) = delete;
  no_wait_scope& operator=(const no_wait_scope&) = delete;

 private:
  const char* prev_;
};

// As park, but gives up at `deadline_ns` (grain::now_ns clock): then `dequeue(node)` is
// called; it returns true if it removed the node (timed out), false if a notification is
// already on its way (then park_until waits for it). Returns true when notified.
bool park_until(enqueue_fn enqueue, dequeue_fn dequeue, void* ctx, std::uint64_t deadline_ns);

template <class Enqueue>
inline void park(Enqueue& e) {
  park([](void* c, waiter* n) noexcept -> bool { return (*static_cast<Enqueue*>(c))(n); }, &e);
}

template <class Enqueue, class Dequeue>
inline bool park_until(Enqueue& e, Dequeue& d, std::uint64_t deadline_ns) {
  struct both {
    Enqueue& e;
    Dequeue& d;
  } b{e, d};
  return park_until([](void* c, waiter* n) noexcept -> bool { return static_cast<both*>(c)->e(n); },
                    [](void* c, waiter* n) noexcept -> bool { return static_cast<both*>(c)->d(n); },
                    &b, deadline_ns);
}

std::uint64_t deadline_from(std::chrono::steady_clock::time_point tp) noexcept;

template <class Clock, class Duration>
std::uint64_t to_deadline(const std::chrono::time_point<Clock, Duration>& tp) noexcept {
  // Convert any clock's time point to our monotonic ns clock through "time from now".
  auto rel = tp - Clock::now();
  return deadline_from(std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(rel));
}

// A tiny test-and-test-and-set lock for sections of a few dozen instructions (waiter lists,
// the network's and the call table's locks of the distributed part): one locked instruction to
// take it and a plain store to give it back, where a pthread mutex costs two (~6 ns each on
// the 2-vCPU guest). A waiter spins briefly, then yields: ranks and workers may oversubscribe
// the cores, and the holder may be descheduled.
class spinlock {
 public:
  void lock() noexcept {
    for (unsigned spins = 0; flag_.exchange(true, std::memory_order_acquire);) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins < 64)
          cpu_relax();
        else
          std::this_thread::yield();
      }
    }
  }
  // A held lock costs no locked instruction to find held (the network's is tried every poll).
  bool try_lock() noexcept {
    return !flag_.load(std::memory_order_relaxed) &&
           !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// An intrusive FIFO of waiters, protected by the owner's spinlock.
struct waiter_queue {
  waiter* head = nullptr;
  waiter* tail = nullptr;
  bool empty() const noexcept { return head == nullptr; }
  void push(waiter* w) noexcept {
    w->next = nullptr;
    if (tail)
      tail->next = w;
    else
      head = w;
    tail = w;
  }
  // A waiter that was woken and lost the race for the resource goes back to the head (it has
  // waited longest: grain::mutex).
  void push_front(waiter* w) noexcept {
    w->next = head;
    head = w;
    if (!tail) tail = w;
  }
  waiter* pop() noexcept {
    waiter* w = head;
    if (w) {
      head = w->next;
      if (!head) tail = nullptr;
    }
    return w;
  }
  bool remove(waiter* w) noexcept {
    waiter* prev = nullptr;
    for (waiter* c = head; c; prev = c, c = c->next) {
      if (c == w) {
        if (prev)
          prev->next = c->next;
        else
          head = c->next;
        if (tail == c) tail = prev;
        return true;
      }
    }
    return false;
  }
  waiter* take_all() noexcept {
    waiter* h = head;
    head = tail = nullptr;
    return h;
  }
};

}  // namespace grain::detail
