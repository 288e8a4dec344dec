#pragma once
// grain::notify_all_at_thread_exit, like std's: takes over a held lock, and when the caller
// finishes unlocks it and wakes every waiter of the condition variable. The caller is the
// calling task, or the calling OS thread outside tasks (grain/detail/at_thread_exit.hpp); the
// lock stays held until then.
#include <mutex>

namespace grain {

class condition_variable;
class mutex;

void notify_all_at_thread_exit(condition_variable& cond, std::unique_lock<mutex> lk);

}  // namespace grain
