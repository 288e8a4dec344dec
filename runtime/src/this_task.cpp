// grain::this_task (grain/this_task.hpp): what a running task may do to itself — yield, sleep,
// ask which worker runs it.
#include "grain/this_task.hpp"

#include <thread>

#include "grain/clock.hpp"
#include "scheduler.hpp"
#include "suspend.hpp"
#include "wake.hpp"

namespace grain::this_task {

void yield() {
  using namespace detail;
  worker* w = current_worker();
  if (!w || !w->current_task) {
    std::this_thread::yield();
    return;
  }
  // Through the pool's FIFO injection queue: this worker's own queued work runs first.
  suspend_current(
      w,
      [](void*, fiber* from) {
#if GRAIN_TIMING
        from->ready_ns = now_ns();
#endif
        scheduler* s = scheduler::instance();
        inject_fiber(s->pool_at(static_cast<unsigned>(from->pool)), from);
      },
      nullptr);
}

void sleep_until_ns(std::uint64_t deadline_ns) {
  auto registered = [](detail::waiter*) noexcept { return true; };
  auto removed = [](detail::waiter*) noexcept { return true; };
  while (now_ns() < deadline_ns) (void)detail::park_until(registered, removed, deadline_ns);
}

int worker_index() noexcept {
  detail::worker* w = detail::current_worker();
  return w ? static_cast<int>(w->id) : -1;
}

}  // namespace grain::this_task
