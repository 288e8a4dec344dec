#include "stack_pool.hpp"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

namespace grain::detail {
namespace {

constexpr std::size_t slab_stacks = 64;

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
    throw std::runtime_error("grain: cannot map " + std::to_string(bytes) +
                             " bytes for user-thread stacks (out of address space or "
                             "vm.max_map_count reached); lower --grain:stack-size");
  }
  return static_cast<char*>(p);
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
  for (auto& s : all_guarded_) ::munmap(s.guard, s.size + page_size());
  for (auto& [p, n] : slabs_) ::munmap(p, n);
}

stack stack_pool::allocate() {
  std::lock_guard lock(mutex_);
  if (all_guarded_.size() < guard_budget_) {
    const std::size_t page = page_size();
    char* m = map_or_throw(size_ + page);
    if (::mprotect(m, page, PROT_NONE) != 0) {
      ::munmap(m, size_ + page);
      throw std::runtime_error("grain: mprotect of a stack guard page failed");
    }
    stack s{m + page, size_, m};
    all_guarded_.push_back(s);
    return s;
  }
  if (!warned_) {
    warned_ = true;
    spdlog::warn(
        "grain: {} user-thread stacks with guard pages use half of vm.max_map_count={}; "
        "further stacks come without a guard page, so an overflow there is not detected. "
        "Raise vm.max_map_count (sysctl) to guard them all.",
        all_guarded_.size(), read_max_map_count());
  }
  if (free_unguarded_.empty()) {
    char* m = map_or_throw(size_ * slab_stacks);
    slabs_.emplace_back(m, size_ * slab_stacks);
    for (std::size_t i = 0; i < slab_stacks; ++i)
      free_unguarded_.push_back({m + i * size_, size_, nullptr});
  }
  stack s = free_unguarded_.back();
  free_unguarded_.pop_back();
  return s;
}

void stack_pool::release_pages(const stack& s) noexcept {
  ::madvise(s.base, s.size, MADV_DONTNEED);
}

}  // namespace grain::detail
