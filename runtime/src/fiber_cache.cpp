// The slow paths of fiber_cache (fiber_cache.hpp): the global free list, new fibers, and the
// fibers-in-use accounting that the runtime test fixture reads.
#include "fiber_cache.hpp"

#include "grain/detail/pool_accounting.hpp"
#include "scheduler.hpp"

namespace grain::detail {
namespace {

constexpr std::size_t resident_global_fibers_max = 256;

// fibers_in_use() of the last scheduler that stopped.
std::atomic<std::int64_t> g_fibers_left_at_stop{0};

}  // namespace

fiber_cache::~fiber_cache() {
  for (fiber* f : all_) {
    fiber_destroy(*f);
    delete f;
  }
}

fiber* fiber_cache::get_shared(worker_stats& stats) {
  {
    std::lock_guard lock(mutex_);
    if (fiber* f = free_) {
      free_ = f->next;
      --free_count_;
      return f;
    }
  }
  auto* f = new fiber();
  try {
    fiber_init(*f, stacks_.allocate(), entry_);
  } catch (...) {
    delete f;
    throw;
  }
  stats.stacks_allocated.inc();
  std::lock_guard lock(mutex_);
  all_.push_back(f);
  return f;
}

void fiber_cache::put_shared(fiber* f) noexcept {
  std::lock_guard lock(mutex_);
  if (free_count_ >= resident_global_fibers_max) {
    // Keep the mapping for reuse, give the memory back: after a burst of suspended tasks the
    // resident size returns to normal. Only below the saved stack pointer: a parked loop fiber
    // is resumed later from the frames it saved above it (issue 11: releasing those made the
    // next switch to it jump to address 0).
    stack_pool::release_pages_below(f->stk, f->ctx);
  }
  f->next = free_;
  free_ = f;
  ++free_count_;
}

std::int64_t fiber_cache::outside_shared_list() noexcept {
  std::lock_guard lock(mutex_);
  return static_cast<std::int64_t>(all_.size()) - static_cast<std::int64_t>(free_count_);
}

// Every started worker holds exactly one fiber that is in no free list: the one it runs its
// loop on (after stop: the one that switched back to its OS thread). Any other fiber outside
// the free lists holds a suspended user thread.
std::int64_t scheduler::fibers_in_use() noexcept {
  std::int64_t out = fibers_.outside_shared_list() - loop_fibers_.load(std::memory_order_relaxed);
  for (auto& w : workers_) out -= w->free_fibers.count.load(std::memory_order_relaxed);
  return out;
}

void scheduler::record_fibers_left() noexcept {
  g_fibers_left_at_stop.store(fibers_in_use(), std::memory_order_relaxed);
}

std::int64_t fibers_in_use() noexcept {
  if (scheduler* s = scheduler::instance()) return s->fibers_in_use();
  return g_fibers_left_at_stop.load(std::memory_order_relaxed);
}

}  // namespace grain::detail
