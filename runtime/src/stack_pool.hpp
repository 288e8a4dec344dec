#pragma once
// Stacks for user threads, and how every one of them stays guarded (docs/design/stacks.md).
//
// Each stack has a guard region below it, large enough that a big frame cannot jump over it
// (a 4 KiB page is skipped by any frame over 4 KiB; 40 KB frames are ordinary in std::async
// code). Where the kernel has guard regions (Linux 6.13's MADV_GUARD_INSTALL: markers in the
// page tables) every stack comes from a slab of 64 (one mapping a slab) with a permanent guard.
// Elsewhere (or with GRAIN_STACK_GUARDS=mprotect) a guard costs a mapping of its own, and Linux
// allows vm.max_map_count (65,530 by default) per process. So up to a budget (a quarter of it)
//     a stack gets a permanent mprotect guard: two mappings, no further cost; beyond it slab
//     stacks' guard regions are ordinary memory, protected only while a worker runs on the
//     stack (protected when it is switched to, opened when it is switched away from: two
//     mprotect calls a switch). Only a running stack can overflow, so every stack that runs
//     is guarded, and the mappings this takes are bounded by the number of workers.
// Stacks are reserved with MAP_NORESERVE: a page costs memory only once it is touched.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace grain::detail {

namespace stack_ranges {
struct entry;
}

struct stack {
  char* base = nullptr;         // lowest usable byte
  std::size_t size = 0;         // usable bytes
  char* guard = nullptr;        // lowest byte of the guard region below base, or nullptr
  std::size_t guard_size = 0;   // bytes
  bool switched_guard = false;  // a slab stack: guarded only while it runs
  bool guard_on = false;        // switched_guard: the guard is protected now
  char* top() const noexcept { return base + size; }
  bool in_guard(const void* a) const noexcept {
    auto* p = static_cast<const char*>(a);
    return guard && p >= guard && p < guard + guard_size;
  }
};

class stack_pool {
 public:
  static constexpr std::size_t default_stack_size = 1024 * 1024;
  static constexpr std::size_t max_stack_size = 256 * 1024 * 1024;
  static constexpr std::size_t min_stack_size = 16 * 1024;
  // Larger than the frames of ordinary code. Larger frames can still skip it unless the code is
  // built with -fstack-clash-protection, which grain exports to the programs that use it; a
  // fault in any stack's reservation is reported as an overflow all the same (stack_guard.cpp).
  static constexpr std::size_t guard_bytes = 256 * 1024;

  explicit stack_pool(std::size_t stack_size);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  // Stacks live as long as the pool: fibers keep theirs and are reused whole.
  stack allocate();

  // Give the memory of a parked stack's dead part back to the OS: the pages wholly below
  // `live_low` (its saved stack pointer: the frames above it are still live). The mapping
  // stays for reuse.
  static void release_pages_below(const stack& s, const void* live_low) noexcept;

  // A slab stack's guard while a worker runs on it (the fiber switch path: one test of a flag
  // for every other stack).
  static void protect_guard(stack& s) noexcept {
    if (s.switched_guard && !s.guard_on) switch_guard(s, true);
  }
  static void open_guard(stack& s) noexcept {
    if (s.switched_guard && s.guard_on) switch_guard(s, false);
  }

  std::size_t stack_size() const noexcept { return size_; }
  std::size_t guard_budget() const noexcept { return guard_budget_; }
  static std::size_t page_size() noexcept;

 private:
  static void switch_guard(stack& s, bool on) noexcept;

  std::size_t size_;
  std::size_t guard_budget_;
  std::mutex mutex_;
  std::vector<stack> free_slab_;  // carved from slabs, not yet handed out
  std::vector<std::pair<char*, std::size_t>> slabs_;
  std::vector<stack> all_guarded_;            // to unmap at exit
  std::vector<stack_ranges::entry*> ranges_;  // every mapping above, for the SIGSEGV handler
};

}  // namespace grain::detail
