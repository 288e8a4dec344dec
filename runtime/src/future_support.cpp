// Out-of-line parts of futures, launch policies and executors.
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "grain/async.hpp"
#include "grain/ext/runtime_core.hpp"
#include "scheduler.hpp"

namespace grain {

namespace detail {

std::atomic<unsigned> g_default_policy{static_cast<unsigned>(launch::async)};

namespace {

struct state_ops {
  state_base* s;
  bool operator()(waiter* w) noexcept { return s->add_waiter(w); }
};
struct state_remove {
  state_base* s;
  bool operator()(waiter* w) noexcept { return s->remove_waiter(w); }
};

void run_deferred_if_unclaimed(state_base* s) {
  if (s->deferred_fn && !s->claimed.exchange(true, std::memory_order_acq_rel)) s->deferred_fn(s);
}
}  // namespace

namespace {
std::atomic<std::uint64_t> g_unread_exceptions{0};

std::string describe(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}
}  // namespace

void report_unread_exception(const std::exception_ptr& e) noexcept {
  const std::uint64_t n = g_unread_exceptions.fetch_add(1, std::memory_order_relaxed) + 1;
  try {
    if (n == 1)
      spdlog::warn(
          "grain: a task threw an exception that nobody read (its future was dropped without "
          "get()): {}. Later ones are counted (/threads/count/unread-exceptions) and logged at "
          "debug level.",
          describe(e));
    else
      spdlog::debug("grain: unread task exception #{}: {}", n, describe(e));
  } catch (...) {
  }
}

std::uint64_t unread_exceptions() noexcept {
  return g_unread_exceptions.load(std::memory_order_relaxed);
}

void warn_serial_without_runtime() noexcept {
  static std::atomic<bool> said{false};
  if (said.exchange(true, std::memory_order_relaxed)) return;
  std::fputs(
      "grain: no grain::runtime is running: grain::async with a policy that allows deferred or "
      "sync runs the work on the calling thread, one task after another. Start a "
      "grain::runtime (grain/runtime.hpp) for tasks to run in parallel. (Said once.)\n",
      stderr);
}

void set_default_policy(launch l) noexcept {
  g_default_policy.store(static_cast<unsigned>(l), std::memory_order_relaxed);
}

void state_base::wait(bool private_ref) {
  if (is_ready()) return;
  run_deferred_if_unclaimed(this);
  if (is_ready()) return;
  // The value is computed by a task still at the bottom of our own queue: run it here, on this
  // stack, instead of suspending (the common case in divide and conquer).
  if (producer && try_run_inline(producer, private_ref ? this : nullptr) && is_ready()) return;
  // No task here computes it (a promise: a remote result, a collective): poll the network
  // while this worker has nothing else to do.
  if (!producer &&
      wait_by_polling_background(
          [](const void* s) { return static_cast<const state_base*>(s)->is_ready(); }, this))
    return;
  state_ops enq{this};
  park(enq);
}

bool state_base::wait_until(std::uint64_t deadline_ns) {
  if (is_ready()) return true;
  state_ops enq{this};
  state_remove deq{this};
  return park_until(enq, deq, deadline_ns);
}

void attach_continuation(state_base* parent, task_base* t, waiter* w) {
  // A deferred parent would never run by itself: start it now so the continuation can follow.
  run_deferred_if_unclaimed(parent);
  if (!parent->add_waiter(w)) {
    if (runtime_running())
      spawn(t);
    else
      run_inline(t);
  }
}

}  // namespace detail

executor::executor(std::string_view pool_name, priority p) : prio(p) {
  runtime_core* rt = runtime_core::current();
  if (!rt) detail::throw_no_runtime();
  int idx = rt->pool_index(pool_name);
  if (idx < 0) {
    std::string names;
    for (auto& pi : rt->pools()) names += (names.empty() ? "" : ", ") + pi.name;
    throw std::invalid_argument("grain: no pool named '" + std::string(pool_name) +
                                "' (pools: " + names + ")");
  }
  pool = static_cast<std::int16_t>(idx);
}

}  // namespace grain
