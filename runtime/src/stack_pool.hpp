#pragma once
// Stacks for user threads. A stack normally gets a guard page below it, which costs two memory
// mappings; Linux allows vm.max_map_count (65,530 by default) per process. So guarded stacks
// are handed out only up to a budget (a quarter of max_map_count); beyond it stacks come
// without guard from slabs of 64 (one mapping per slab) and a one-time warning says so. This is
// how 100,000 simultaneously suspended tasks fit in the default limit.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace grain::detail {

struct stack {
  char* base = nullptr;   // lowest usable byte
  std::size_t size = 0;   // usable bytes
  char* guard = nullptr;  // the guard page, or nullptr
  char* top() const noexcept { return base + size; }
};

class stack_pool {
 public:
  explicit stack_pool(std::size_t stack_size);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  // Stacks live as long as the pool: fibers keep theirs and are reused whole.
  stack allocate();
  // Give a parked stack's memory back to the OS; the mapping stays for reuse.
  static void release_pages(const stack& s) noexcept;

  std::size_t stack_size() const noexcept { return size_; }
  std::size_t guard_budget() const noexcept { return guard_budget_; }
  static std::size_t page_size() noexcept;

 private:
  std::size_t size_;
  std::size_t guard_budget_;
  std::mutex mutex_;
  bool warned_ = false;
  std::vector<stack> free_unguarded_;  // carved from slabs, not yet handed out
  std::vector<std::pair<char*, std::size_t>> slabs_;
  std::vector<stack> all_guarded_;  // to unmap at exit
};

}  // namespace grain::detail
