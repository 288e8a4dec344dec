#pragma once
// launch::adaptive (docs/inlining.md; the decisions: runtime/src/adaptive_inlining.cpp): run a
// call inline or spawn it, from measured durations of its kind. Apart from grain/async.hpp
// because it is the larger part of launching and a reader of async should see async; it is
// included from there and uses its async_op, which is complete wherever a launch is
// instantiated.
#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>

#include "grain/clock.hpp"
#include "grain/future.hpp"
#include "grain/launch.hpp"

namespace grain::detail {

template <class R, class F>
struct async_op;  // grain/async.hpp

// An inlined call runs inside an adaptive_frame on the caller's stack: it is the "current task"
// while it runs, so its own adaptive launches see its depth, and waits inside it suspend
// correctly.
struct adaptive_frame : task_base {
  task_base* saved = nullptr;  // the task that was current before the frame was entered
};
enum class adaptive_choice : unsigned char { spawn_timed, inline_untimed, inline_timed };
// Decides for fr.info.name at the caller's depth (sets fr.depth). inline_*: the frame has been
// entered (stats, hooks) and adaptive_leave must follow the call. The caller has ruled out
// that it runs inside an inlined call (adaptive_in_inlined_call).
adaptive_choice adaptive_decide(adaptive_frame& fr) noexcept;
void adaptive_leave(adaptive_frame& fr) noexcept;
// A measured inclusive duration for the (kind, depth) estimate of t.
void adaptive_record(const task_base* t, std::uint64_t ns) noexcept;
// True (and counted as an inline task) when the caller runs inside an inlined adaptive call:
// inclusive durations nest, so below a call predicted short every call is shorter and runs as
// a plain call (no frame). Checked first because it is by far the most frequent case.
bool adaptive_in_inlined_call() noexcept;

// The run function of a spawned adaptive task: it reports its duration (wall time, suspensions
// included). The clock stops before the result is published: a woken waiter may preempt this
// thread.
template <class R, class F>
void run_timed_and_release(task_base* t) {
  auto* self = static_cast<async_op<R, F>*>(t);
  const std::uint64_t t0 = now_ns();
  try {
    if constexpr (std::is_void_v<R>) {
      self->fn();
      callable_returned(self);
      adaptive_record(self, now_ns() - t0);
      self->set_value();
    } else {
      R r = self->fn();
      callable_returned(self);
      adaptive_record(self, now_ns() - t0);
      self->set_value(static_cast<R&&>(r));
    }
  } catch (...) {
    callable_returned(self);
    adaptive_record(self, now_ns() - t0);
    self->set_exception(std::current_exception());
  }
  self->fn.~F();
  self->fn_alive = false;
  self->release();
}

template <class R, class F>
future<R> call_unpublished(plain_state<R>* s, F& f) {
  invoke_into<R>(*s, f);
  return future_access::adopt<R>(s);
}

// An inlined call whose result the future holds itself (local_result_v<R>): no shared state.
// A thrown exception is kept and returned as an exceptional future by the caller, after it
// left the frame (making that future allocates).
template <class R, class F>
GRAIN_ALWAYS_INLINE future<R> call_local(F& f, std::exception_ptr& error) noexcept {
  try {
    if constexpr (std::is_void_v<R>) {
      f();
      return future_access::local<R>();
    } else {
      return future_access::local<R>(f());
    }
  } catch (...) {
    error = std::current_exception();
    return future<R>();
  }
}

// A call inside an inlined adaptive call: a plain call, no frame.
template <class R, class F>
GRAIN_ALWAYS_INLINE future<R> call_nested(F& f) {
  if constexpr (local_result_v<R>) {
    std::exception_ptr error;
    future<R> r = call_local<R>(f, error);
    if (error) return make_exceptional_future<R>(std::move(error));
    return r;
  } else {
    auto* s = plain_state<R>::create();
    s->set_unpublished();
    return call_unpublished<R>(s, f);
  }
}

// Runs `call` in the entered frame fr (timed when the choice says so), then leaves it.
template <class Call>
GRAIN_ALWAYS_INLINE void call_in_frame(adaptive_frame& fr, adaptive_choice choice, Call&& call) {
  if (choice == adaptive_choice::inline_timed) {
    const std::uint64_t t0 = now_ns();
    call();
    adaptive_record(&fr, now_ns() - t0);
  } else {
    call();
  }
  adaptive_leave(fr);
}

// launch::adaptive. Inlined: a plain call inside a frame, its result held by the future itself
// (local_result_v) or in a state nobody else can see yet (no task object, no atomic
// read-modify-write). Spawned: a task that times itself.
template <class R, class F>
future<R> launch_adaptive(const executor& ex, const char* name, F&& f) {
  adaptive_frame fr;
  fr.info.name = name;
  const adaptive_choice choice = adaptive_decide(fr);
  if (choice == adaptive_choice::spawn_timed) {
    using op_t = async_op<R, std::decay_t<F>>;
    op_t* op = op_t::create(std::forward<F>(f), ex, name, false);
    op->depth = fr.depth;
    op->run_fn = &run_timed_and_release<R, std::decay_t<F>>;
    spawn(op);
    return future_access::adopt<R>(op);
  }
  if constexpr (local_result_v<R>) {
    std::exception_ptr error;
    future<R> r;
    call_in_frame(fr, choice, [&] { r = call_local<R>(f, error); });
    if (error) return make_exceptional_future<R>(std::move(error));
    return r;
  } else {
    plain_state<R>* s = nullptr;
    try {
      s = plain_state<R>::create();
    } catch (...) {
      adaptive_leave(fr);  // the frame must not dangle
      throw;
    }
    s->set_unpublished();
    call_in_frame(fr, choice, [&] { invoke_into<R>(*s, f); });
    return future_access::adopt<R>(s);
  }
}

}  // namespace grain::detail
