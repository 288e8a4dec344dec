#pragma once
// grain::this_thread: std::this_thread's names for code ported from std::async by renaming
// std:: to grain:: (docs/user-guide.md, "Code written for std::async"). Tasks are not
// time-sliced, so code that waits by sleeping or yielding must give its worker up: here
// sleep_for/sleep_until suspend the calling task (the worker runs other tasks meanwhile) and
// yield lets the pool's other tasks run first, where std::this_thread's would block or keep
// the worker's OS thread. On a thread that is not a worker they are std::this_thread's.
#include <chrono>
#include <thread>

#include "grain/this_task.hpp"

namespace grain::this_thread {

inline void yield() {
  this_task::yield();
}

template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& d) {
  if (d > d.zero()) this_task::sleep_for(d);
}

template <class Clock, class Duration>
void sleep_until(const std::chrono::time_point<Clock, Duration>& tp) {
  this_task::sleep_until(tp);
}

// The OS thread running the caller: a task's worker, shared by every task that worker runs,
// and possibly another one after the task suspends and resumes. grain::this_task::get_id()
// identifies the task itself.
inline std::thread::id get_id() noexcept {
  return std::this_thread::get_id();
}

}  // namespace grain::this_thread
