// The policy thread: it takes inputs off the queue in batches and runs the periodic rules
// between them; and the bounded waits of other threads on it (pump, stop), which give up on
// a rule stuck where the time limit cannot cut it.
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine_impl.hpp"
#include "grain/clock.hpp"

namespace grain::policy {

void engine::impl::process(queued& q) {
  std::lock_guard lk(state_m);
  if (watch.abandoned.load()) return;  // the thread came back after stop() left it behind
  switch (q.kind) {
    case queued::sample:
      process_sample();
      break;
    case queued::event:
      dispatch_event(q.ev);
      break;
    case queued::command:
      q.fn();
      break;
    case queued::sync:
      break;
  }
  if (q.kind == queued::sync) {
    std::lock_guard lk2(inputs.m);
    inputs.sync_done = std::max(inputs.sync_done, q.sync_ticket);
    inputs.done_cv.notify_all();
  }
}

void engine::impl::drain() {
  for (;;) {
    queued q;
    {
      std::lock_guard lk(inputs.m);
      if (inputs.items.empty()) return;
      q = std::move(inputs.items.front());
      inputs.items.pop_front();
    }
    process(q);
  }
}

void engine::impl::thread_main() {
  pthread_setname_np(pthread_self(), "grain-policy");
  clockid_t id;
  if (pthread_getcpuclockid(pthread_self(), &id) == 0) {
    thread.cpu_clock = id;
    thread.have_clock.store(true, std::memory_order_release);
  }
  std::uint64_t due = 0;
  for (;;) {
    {
      std::lock_guard lk(state_m);
      run_due_timers();
      due = next_due();
    }
    std::unique_lock lk(inputs.m);
    if (watch.abandoned.load()) break;
    auto woken = [&] { return !inputs.items.empty() || inputs.stopping; };
    if (inputs.items.empty()) {
      if (inputs.stopping) break;
      if (due == ~0ull) {
        inputs.cv.wait(lk, woken);
      } else {
        const std::uint64_t now = now_ns();
        if (due > now) inputs.cv.wait_for(lk, std::chrono::nanoseconds(due - now), woken);
      }
    }
    // Up to a batch of inputs, then the timers again.
    for (int i = 0; i < 64 && !inputs.items.empty(); ++i) {
      queued q = std::move(inputs.items.front());
      inputs.items.pop_front();
      lk.unlock();
      process(q);
      lk.lock();
    }
  }
  thread.final_cpu = grain::thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  thread.have_clock.store(false, std::memory_order_release);
  std::lock_guard lk(inputs.m);
  inputs.thread_done = true;
  inputs.done_cv.notify_all();
}

bool engine::impl::wait_thread_end() {
  // Every call is cut or found stuck within stuck_after_ns; the overall bound covers a long
  // queue of calls that each stay under the limit. Interrupted (the program ends on a signal),
  // the hook cuts every Lua call at once, and a call it cannot reach is not waited for.
  const bool hurry = interrupted.load();
  const std::uint64_t bound =
      now_ns() + (hurry ? interrupt_wait_ns : 2 * watch.stuck_after_ns() + 1'000'000'000ull);
  std::unique_lock lk(inputs.m);
  while (!inputs.thread_done) {
    rule_info info;
    std::string name = hurry ? (now_ns() < bound ? std::string() : watch.running_for(0, &info))
                             : watch.stuck(&info);
    if (name.empty() && now_ns() < bound) {
      inputs.done_cv.wait_for(lk, std::chrono::milliseconds(20));
      continue;
    }
    if (!name.empty()) {
      const std::string why =
          hurry ? "the program is ending on a signal and the rule is inside code that cannot "
                  "be interrupted (a C function such as string.find)"
                : "it has run for more than " + std::to_string(watch.stuck_after_ns() / 1'000'000) +
                      " ms, past its time limit of " + std::to_string(opts.time_limit.count()) +
                      " ms, inside code that cannot be interrupted (a C function such "
                      "as string.find)";
      info.last_error = "abandoned: " + why;
      watch.abandoned_rules.push_back(std::move(info));
      spdlog::error(
          "grain: policy rule '{}' ({}) disabled: {}; the policy thread is abandoned and the "
          "program goes on without it",
          name, watch.abandoned_rules.back().trigger, why);
    } else {
      spdlog::error(
          "grain: the policy thread did not finish its queued work in time; it is abandoned "
          "and the program goes on without it");
    }
    watch.abandoned.store(true);
    return false;
  }
  return true;
}

void engine::impl::wait_ticket(std::unique_lock<std::mutex>& lk, std::uint64_t ticket) {
  const std::uint64_t bound = now_ns() + 2 * watch.stuck_after_ns() + 1'000'000'000ull;
  while (inputs.sync_done < ticket && thread.running.load() && !inputs.thread_done) {
    const std::string name = watch.stuck();
    if (!name.empty()) {
      if (watch.stuck_reported != name) {
        watch.stuck_reported = name;
        spdlog::error(
            "grain: policy rule '{}' has run past its time limit of {} ms inside code that "
            "cannot be interrupted (a C function such as string.find); settle_listeners and "
            "pump do not wait for it",
            name, opts.time_limit.count());
      }
      return;
    }
    if (now_ns() >= bound) {
      spdlog::warn("grain: the policy thread did not handle its inputs in time; not waiting");
      return;
    }
    inputs.done_cv.wait_for(lk, std::chrono::milliseconds(20));
  }
}

}  // namespace grain::policy
