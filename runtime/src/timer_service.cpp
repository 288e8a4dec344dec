#include "timer_service.hpp"

#include <chrono>

#include "grain/clock.hpp"

namespace grain::detail {

timer_service::timer_service() : thread_([this] { run(); }) {}

timer_service::~timer_service() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void timer_service::arm_locked(timer_entry* e) {
  e->it = entries_.emplace(e->deadline_ns, e);
  e->armed = true;
  if (e->it == entries_.begin()) cv_.notify_one();
}

bool timer_service::cancel(timer_entry* e) {
  std::lock_guard lock(mutex_);
  if (!e->armed) return false;
  entries_.erase(e->it);
  e->armed = false;
  return true;
}

void timer_service::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (entries_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = entries_.begin();
    std::uint64_t now = now_ns();
    if (first->first > now) {
      // Relative: now_ns() may be the TSC clock, which tracks steady_clock only to within
      // microseconds (grain/clock.hpp).
      cv_.wait_for(lock, std::chrono::nanoseconds(first->first - now));
      continue;
    }
    timer_entry* e = first->second;
    entries_.erase(first);
    e->armed = false;
    e->fire(e);
  }
}

}  // namespace grain::detail
