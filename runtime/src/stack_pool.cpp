#include "stack_pool.hpp"

#include "stack_ranges.hpp"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace grain::detail {
namespace {

constexpr std::size_t stacks_per_slab = 64;

// Linux 6.13's guard regions: page-table markers that fault on access without a mapping of
// their own (glibc 2.36's headers do not name them yet).
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

// Whether stacks get guard regions in the page tables: this kernel installs them (probed once,
// on a mapping of two pages) and GRAIN_STACK_GUARDS is not "mprotect" (the older scheme, for
// kernels before 6.13: kept testable on newer ones).
bool page_table_guards() {
  static const bool yes = [] {
    if (const char* e = std::getenv("GRAIN_STACK_GUARDS"); e && std::string(e) == "mprotect")
      return false;
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* p = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    const bool ok = ::madvise(p, page, MADV_GUARD_INSTALL) == 0;
    ::munmap(p, 2 * page);
    return ok;
  }();
  return yes;
}

std::size_t read_max_map_count() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  std::size_t n = 0;
  if (f >> n && n > 0) return n;
  return 65530;
}

char* map_or_throw(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    throw std::runtime_error("grain: cannot map " + std::to_string(bytes) +
                             " bytes for user-thread stacks (" + std::strerror(err) +
                             "; out of address space, vm.max_map_count reached, or "
                             "vm.overcommit_memory=2); lower --grain:stack-size");
  }
  return static_cast<char*>(p);
}

// mprotect of a switched guard fails only when the process is out of mappings (ENOMEM): the
// stack then runs unguarded, which the user must hear about, once.
std::atomic<bool> g_switch_failure_reported{false};

void report_switch_failure(int err) noexcept {
  if (g_switch_failure_reported.exchange(true)) return;
  char buf[256];
  int n = std::snprintf(buf, sizeof buf,
                        "grain: cannot protect a user-thread stack's guard region (%s): the "
                        "process is out of memory mappings (vm.max_map_count); stack overflows "
                        "may go undetected from here on\n",
                        std::strerror(err));
  if (n > 0) {
    ssize_t r = ::write(2, buf, static_cast<std::size_t>(n < 255 ? n : 255));
    (void)r;
  }
}

}  // namespace

std::size_t stack_pool::page_size() noexcept {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

stack_pool::stack_pool(std::size_t stack_size)
    : size_((stack_size + page_size() - 1) / page_size() * page_size()),
      guard_budget_(read_max_map_count() / 4) {}

stack_pool::~stack_pool() {
  for (auto* e : ranges_) stack_ranges::remove(e);
  for (auto& s : all_guarded_) ::munmap(s.guard, s.guard_size + s.size);
  for (auto& [p, n] : slabs_) ::munmap(p, n);
}

stack stack_pool::allocate() {
  std::lock_guard lock(mutex_);
  if (!page_table_guards() && all_guarded_.size() < guard_budget_) {
    char* m = map_or_throw(guard_bytes + size_);
    if (::mprotect(m, guard_bytes, PROT_NONE) != 0) {
      ::munmap(m, guard_bytes + size_);
      throw std::runtime_error("grain: mprotect of a stack guard region failed");
    }
    stack s{m + guard_bytes, size_, m, guard_bytes, false, true};
    ranges_.push_back(stack_ranges::add(m, guard_bytes + size_));
    all_guarded_.push_back(s);
    return s;
  }
  if (free_slab_.empty()) {
    if (slabs_.empty() && !page_table_guards())
      spdlog::debug(
          "grain: {} user-thread stacks with permanent guards (a quarter of vm.max_map_count={}); "
          "further stacks come from slabs and are guarded while they run",
          all_guarded_.size(), read_max_map_count());
    const std::size_t slot = guard_bytes + size_;
    char* m = map_or_throw(slot * stacks_per_slab);
    slabs_.emplace_back(m, slot * stacks_per_slab);
    ranges_.push_back(stack_ranges::add(m, slot * stacks_per_slab));
    for (std::size_t i = 0; i < stacks_per_slab; ++i) {
      char* g = m + i * slot;
      free_slab_.push_back({g + guard_bytes, size_, g, guard_bytes, true, false});
    }
  }
  stack s = free_slab_.back();
  free_slab_.pop_back();
  // A permanent guard in the page tables, once per stack: no mapping of its own, and no
  // mprotect when a worker switches to the stack or away from it.
  if (page_table_guards() && ::madvise(s.guard, s.guard_size, MADV_GUARD_INSTALL) == 0) {
    s.switched_guard = false;
    s.guard_on = true;
  }
  return s;
}

void stack_pool::release_pages_below(const stack& s, const void* live_low) noexcept {
  auto lo = reinterpret_cast<std::uintptr_t>(s.base);
  auto hi = reinterpret_cast<std::uintptr_t>(live_low) & ~(page_size() - 1);
  if (hi > reinterpret_cast<std::uintptr_t>(s.top()))
    hi = reinterpret_cast<std::uintptr_t>(s.top());
  if (hi > lo) ::madvise(s.base, hi - lo, MADV_DONTNEED);
}

void stack_pool::switch_guard(stack& s, bool on) noexcept {
  if (on) {
    if (::mprotect(s.guard, s.guard_size, PROT_NONE) == 0)
      s.guard_on = true;
    else
      report_switch_failure(errno);
    return;
  }
  // Opening merges the region back into its slab's mapping; it cannot fail for want of one.
  if (::mprotect(s.guard, s.guard_size, PROT_READ | PROT_WRITE) == 0) s.guard_on = false;
}

}  // namespace grain::detail
