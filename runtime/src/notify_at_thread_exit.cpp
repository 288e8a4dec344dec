// grain::notify_all_at_thread_exit (grain/lcos/notify_at_thread_exit.hpp): an exit action that
// unlocks, then notifies, as std's does.
#include "grain/lcos/notify_at_thread_exit.hpp"

#include <utility>

#include "grain/detail/at_thread_exit.hpp"
#include "grain/lcos/condition_variable.hpp"

namespace grain {

void notify_all_at_thread_exit(condition_variable& cond, std::unique_lock<mutex> lk) {
  detail::call_at_thread_exit([c = &cond, l = std::move(lk)]() mutable noexcept {
    l.unlock();
    c->notify_all();
  });
}

}  // namespace grain
