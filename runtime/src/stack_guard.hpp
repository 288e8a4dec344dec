#pragma once
// Reporting a user thread's stack overflow: the SIGSEGV handler that recognises a hit on the
// running stack's guard region (stack_pool.hpp) and the alternate signal stack it runs on.
// Separate from the stacks themselves: this is signal handling, process-wide state that the
// scheduler installs for as long as it runs.
#include <cstddef>

namespace grain::detail {

// Counted: the handler stays while any scheduler needs it.
void install_segv_handler();
void uninstall_segv_handler();

// The calling worker thread's alternate signal stack, for as long as the object lives: the
// handler cannot run on the stack that overflowed.
class alt_signal_stack {
 public:
  alt_signal_stack() noexcept;
  ~alt_signal_stack();
  alt_signal_stack(const alt_signal_stack&) = delete;
  alt_signal_stack& operator=(const alt_signal_stack&) = delete;

 private:
  static constexpr std::size_t size = 64 * 1024;
  void* mem_;
};

}  // namespace grain::detail
