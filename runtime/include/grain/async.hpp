#pragma once
// grain::async: start a task and get a future for its result. The task object and the
// shared state of its future are one pooled block; spawning allocates nothing from the heap.
// launch::adaptive (inline or spawn, decided per call) is grain/detail/adaptive_launch.hpp.
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "grain/detail/adaptive_launch.hpp"
#include "grain/future.hpp"
#include "grain/launch.hpp"

namespace grain {

// A callable with a task name: tasks made from it appear as "task:<name>" in traces.
// `name` must outlive the tasks (a string literal is the usual choice).
template <class F>
struct annotated_function {
  const char* name;
  F fn;
  template <class... A>
  decltype(auto) operator()(A&&... a) {
    return std::invoke(fn, std::forward<A>(a)...);
  }
};

template <class F>
annotated_function<std::decay_t<F>> annotate(const char* name, F&& f) {
  return {name, std::forward<F>(f)};
}

namespace detail {

template <class F>
struct task_name {
  static const char* of(const F&) { return type_name_of<F>(); }
};
template <class F>
struct task_name<annotated_function<F>> {
  static const char* of(const annotated_function<F>& a) { return a.name; }
};

// f with its arguments decay-copied, invoked once with them as rvalues (like std::async).
template <class F, class... Args>
struct bound_call {
  F f;
  std::tuple<Args...> args;
  decltype(auto) operator()() { return std::apply(std::move(f), std::move(args)); }
};

template <class R, class F>
struct async_op final : shared_state<R>, task_base {
  union {
    F fn;
  };
  bool fn_alive = true;

  explicit async_op(F&& f) : fn(std::move(f)) {}
  ~async_op() {
    if (fn_alive) fn.~F();
  }

  void invoke() {
    invoke_into<R>(*this, fn, static_cast<const task_base*>(this));
    fn.~F();  // captures go away as soon as the work is done, not when the future dies
    fn_alive = false;
  }
  static void run_and_release(task_base* t) {
    auto* self = static_cast<async_op*>(t);
    invoke_and_release<R>(*self, self->fn, t, [self]() noexcept {
      self->fn.~F();
      self->fn_alive = false;
    });
  }
  static void run_deferred(task_base* t) { static_cast<async_op*>(t)->invoke(); }

  // ids: assign the GUIDs here; false when spawn_new will (it looks the worker up anyway).
  static async_op* create(F&& f, const executor& ex, const char* name, bool deferred,
                          bool ids = true) {
    auto* op = ::new (allocate_for<async_op>()) async_op(std::move(f));
    op->init_refs(deferred ? 1 : 2);
    op->destroy_fn = [](state_base* b) noexcept {
      auto* self = static_cast<async_op*>(static_cast<shared_state<R>*>(b));
      self->~async_op();
      deallocate_for<async_op>(self);
    };
    if (ids) assign_ids(op->info);
    op->info.name = name;
    op->prio = ex.prio;
    op->pool = ex.pool;
    if (deferred) {
      op->run_fn = &run_deferred;
      op->deferred_fn = [](state_base* b) {
        run_inline(static_cast<async_op*>(static_cast<shared_state<R>*>(b)));
      };
    } else {
      op->run_fn = &run_and_release;
      op->producer = op;
    }
    return op;
  }
};

// No runtime runs, and grain::async's policy asked for parallelism but lets the work run on
// the calling thread: one warning on stderr per process, so that a program that forgot its
// grain::runtime does not run serially unawares (future_support.cpp).
void warn_serial_without_runtime() noexcept;

template <class R, class F>
future<R> launch_task(launch policy, const executor& ex, const char* name, F&& f) {
  using op_t = async_op<R, std::decay_t<F>>;
  // The default policy with a runtime running: a task on this worker's deque, whatever the
  // pool (what the general path below decides too, after a dozen more tests per call).
  if (GRAIN_LIKELY(policy == launch::async && runtime_running())) {
    op_t* op = op_t::create(std::forward<F>(f), ex, name, false, false);
    spawn_new(op);
    return future_access::adopt<R>(op);
  }
  const bool adaptive = any(policy & launch::adaptive) &&
                        !any(policy & (launch::sync | launch::deferred)) && ex.pool < 0;
  if (adaptive && adaptive_in_inlined_call())  // implies a running runtime
    return call_nested<R>(f);
  const bool running = runtime_running();
  // Without a runtime, a policy that asks for parallelism but allows the work on this thread
  // (async | deferred, async | sync) runs it here: say so once.
  if (!running && any(policy & (launch::async | launch::fork | launch::adaptive)) &&
      any(policy & (launch::deferred | launch::sync)))
    warn_serial_without_runtime();
  if (policy == launch::deferred || (!running && any(policy & launch::deferred))) {
    return future_access::adopt<R>(op_t::create(std::forward<F>(f), ex, name, true));
  }
  if (!running) {
    if (any(policy & launch::sync)) {
      op_t* op = op_t::create(std::forward<F>(f), ex, name, false);
      op->producer = nullptr;
      run_inline(op);
      return future_access::adopt<R>(op);
    }
    throw_no_runtime();
  }
  if (adaptive) return launch_adaptive<R>(ex, name, std::forward<F>(f));
  const bool sync = any(policy & launch::sync);
  const bool fork = !sync && any(policy & launch::fork) && ex.pool < 0;
  op_t* op = op_t::create(std::forward<F>(f), ex, name, false, sync || fork);
  if (sync) {
    op->producer = nullptr;
    run_inline(op);
  } else if (fork) {
    op->producer = nullptr;
    fork_run(op);
  } else {
    spawn_new(op);
  }
  return future_access::adopt<R>(op);
}

// post(): a task whose result nobody can ask for. It holds the only reference to its state,
// and no one can wait for it, so it becomes ready and goes without a lock or a
// read-modify-write (async + dropping the future took two locked instructions per task: the
// future's release and the completion's compare-and-swap). An exception it throws is reported
// when the state goes, as for any future dropped unread.
template <class R, class F>
void post_task(const executor& ex, const char* name, F&& f) {
  if (!runtime_running()) throw_no_runtime();
  using op_t = async_op<R, std::decay_t<F>>;
  op_t* op = op_t::create(std::forward<F>(f), ex, name, false, false);
  op->init_refs(1);
  op->set_unpublished();
  spawn_new(op);
}

template <class F, class... A>
auto make_call(F&& f, A&&... a) {
  if constexpr (sizeof...(A) == 0) {
    return std::decay_t<F>(std::forward<F>(f));
  } else {
    return bound_call<std::decay_t<F>, std::decay_t<A>...>{std::forward<F>(f),
                                                           {std::forward<A>(a)...}};
  }
}

}  // namespace detail

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
[[nodiscard]] auto async(launch policy, const executor& ex, F&& f, A&&... a)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  const char* name = detail::task_name<std::decay_t<F>>::of(f);
  return detail::launch_task<R>(policy, ex, name,
                                detail::make_call(std::forward<F>(f), std::forward<A>(a)...));
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
[[nodiscard]] auto async(launch policy, F&& f, A&&... a) {
  return grain::async(policy, executor{}, std::forward<F>(f), std::forward<A>(a)...);
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
[[nodiscard]] auto async(const executor& ex, F&& f, A&&... a) {
  return grain::async(detail::default_policy(), ex, std::forward<F>(f), std::forward<A>(a)...);
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
[[nodiscard]] auto async(F&& f, A&&... a) {
  return grain::async(detail::default_policy(), executor{}, std::forward<F>(f),
                      std::forward<A>(a)...);
}

// Fire and forget: run f as a task; its result is discarded (exceptions are logged).
template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
void post(const executor& ex, F&& f, A&&... a) {
  using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  detail::post_task<R>(ex, detail::task_name<std::decay_t<F>>::of(f),
                       detail::make_call(std::forward<F>(f), std::forward<A>(a)...));
}

}  // namespace grain
