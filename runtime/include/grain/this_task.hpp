#pragma once
// Operations on the calling task (or the calling OS thread outside the runtime).
#include <chrono>
#include <cstdint>

#include "grain/detail/task.hpp"
#include "grain/detail/waiter.hpp"

namespace grain::this_task {

// Let other tasks of this pool run first; the caller continues later on any worker.
void yield();

// Suspend the user thread until the time has passed (the worker runs other tasks meanwhile).
void sleep_until_ns(std::uint64_t deadline_ns);

template <class Clock, class Duration>
void sleep_until(const std::chrono::time_point<Clock, Duration>& tp) {
  sleep_until_ns(detail::to_deadline(tp));
}
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& d) {
  sleep_until(std::chrono::steady_clock::now() + d);
}

// GUID of the running task (0 outside tasks); the same GUID the tracer records.
inline std::uint64_t get_id() noexcept {
  return detail::current_guid();
}
// Index of the worker running the caller, or -1 on a thread that is not a worker.
int worker_index() noexcept;

}  // namespace grain::this_task
