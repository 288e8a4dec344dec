#pragma once
// Free loop fibers (each with its stack, docs/design/stacks.md): a short list per
// worker, then a global one, then a new fiber. Separate from the loop because a fiber changes
// hands on every suspension and resumption, and the accounting of fibers in use (what the
// test fixture checks at teardown) must see every hand-over. The per-worker fast path is
// inline: it runs on every suspension.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "fiber.hpp"
#include "grain/ext/worker_stats.hpp"
#include "stack_pool.hpp"

namespace grain::detail {

// A worker's own free fibers. Only the worker changes it; the count is atomic (relaxed: plain
// loads and stores) only so that fibers_in_use() may read it from another thread.
struct local_fibers {
  static constexpr unsigned max = 64;
  fiber* head = nullptr;
  std::atomic<unsigned> count{0};
};

class fiber_cache {
 public:
  fiber_cache(stack_pool& stacks, void (*entry)(bctx::transfer_t)) noexcept
      : stacks_(stacks), entry_(entry) {}
  ~fiber_cache();  // every fiber ever made, whoever holds it
  fiber_cache(const fiber_cache&) = delete;
  fiber_cache& operator=(const fiber_cache&) = delete;

  fiber* get(local_fibers& local, worker_stats& stats) {
    if (fiber* f = local.head) {
      local.head = f->next;
      local.count.store(local.count.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      return f;
    }
    return get_shared(stats);
  }

  void put(local_fibers& local, fiber* f) noexcept {
    f->task = nullptr;
    const unsigned n = local.count.load(std::memory_order_relaxed);
    if (n < local_fibers::max) {
      f->next = local.head;
      local.head = f;
      local.count.store(n + 1, std::memory_order_relaxed);
      return;
    }
    put_shared(f);
  }

  // Fibers made so far and not in the global free list (the workers' lists are theirs).
  std::int64_t outside_shared_list() noexcept;

 private:
  fiber* get_shared(worker_stats& stats);
  void put_shared(fiber* f) noexcept;

  stack_pool& stacks_;
  void (*entry_)(bctx::transfer_t);
  std::mutex mutex_;
  fiber* free_ = nullptr;
  std::size_t free_count_ = 0;
  std::vector<fiber*> all_;  // freed at destruction
};

}  // namespace grain::detail
