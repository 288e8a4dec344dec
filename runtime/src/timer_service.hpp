#pragma once
// Deadlines for timed waits and sleeps of user threads: one OS thread that fires entries in
// deadline order. Firing and cancelling are serialised by one mutex, which is what lets a
// timed-out wait and a notification race safely (see park.cpp, park_until).
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace grain::detail {

struct timer_entry {
  std::uint64_t deadline_ns = 0;
  void (*fire)(timer_entry*) = nullptr;  // called with the service mutex held
  std::multimap<std::uint64_t, timer_entry*>::iterator it;
  bool armed = false;
};

class timer_service {
 public:
  timer_service();
  ~timer_service();
  std::mutex& mutex() noexcept { return mutex_; }
  // With mutex() held.
  void arm_locked(timer_entry* e);
  // Takes the mutex; true if the entry was still armed (it will not fire now).
  bool cancel(timer_entry* e);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::multimap<std::uint64_t, timer_entry*> entries_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace grain::detail
