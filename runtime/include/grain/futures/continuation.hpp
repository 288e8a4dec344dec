#pragma once
// then(): a continuation is a task that runs f(argument future) once the argument is ready.
// The task and the shared state of the future then() returns are one pooled block.
#include <functional>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/futures/future_base.hpp"
#include "grain/launch.hpp"

namespace grain::detail {

template <class R, class F, class Arg>
struct continuation final : shared_state<R>, task_base, waiter {
  F fn;
  Arg arg;
  continuation(F&& f, Arg&& a) : fn(std::move(f)), arg(std::move(a)) {}

  static void run(task_base* t) {
    auto* self = static_cast<continuation*>(t);
    auto call = [self]() -> R { return std::invoke(std::move(self->fn), std::move(self->arg)); };
    invoke_into<R>(*self, call, static_cast<const task_base*>(self));
    self->release();
  }
  static void notified(waiter* w) noexcept {
    auto* self = static_cast<continuation*>(w);
    if (runtime_running())
      spawn(self);
    else
      run_inline(self);
  }
};

void attach_continuation(state_base* parent, task_base* t, waiter* w);

template <class R, class F, class Arg>
future<R> then_impl(Arg&& arg, F&& f, const executor& ex) {
  using C = continuation<R, std::decay_t<F>, std::decay_t<Arg>>;
  state_base* parent = future_access::state(arg);
  if (!parent) throw_future_error(future_errc::no_state);
  auto* c = ::new (allocate_for<C>()) C(std::forward<F>(f), std::forward<Arg>(arg));
  c->init_refs(2);  // the returned future + the execution
  c->destroy_fn = [](state_base* b) noexcept {
    auto* self = static_cast<C*>(static_cast<shared_state<R>*>(b));
    self->~C();
    deallocate_for<C>(self);
  };
  c->run_fn = &C::run;
  c->notify_fn = &C::notified;
  assign_ids(c->info);
  c->info.name = type_name_of<std::decay_t<F>>();
  c->prio = ex.prio;
  c->pool = ex.pool;
  attach_continuation(parent, c, c);
  return future_access::adopt<R>(c);
}

}  // namespace grain::detail
