#pragma once
// The inputs on their way from other threads to the policy thread: events, the latest counter
// snapshot (one slot, not a queue: only the newest matters), commands (rules added or removed
// while it runs) and pump()'s sync tickets. Separate from the rules: everything here is
// shared between threads and guarded by `m`; the rules belong to the policy thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "grain/instrumentation/listener.hpp"

namespace grain::policy {

struct queued {
  enum kind_t { sample, event, command, sync } kind = event;
  instrumentation::app_event ev;
  std::function<void()> fn;
  std::uint64_t sync_ticket = 0;
};

struct input_queue {
  std::mutex m;
  std::condition_variable cv;  // an input arrived or stopping was set
  std::deque<queued> items;
  instrumentation::counter_snapshot slot;  // latest sample not yet processed
  bool sample_queued = false;
  std::uint64_t sync_issued = 0, sync_done = 0;
  std::condition_variable done_cv;  // sync_done advanced, or the thread ended
  bool stopping = false;
  bool thread_done = false;
  std::atomic<std::uint64_t> dropped{0};  // events over the limit

  // Under `m`.
  void push(queued q) {
    items.push_back(std::move(q));
    cv.notify_one();
  }
};

}  // namespace grain::policy
