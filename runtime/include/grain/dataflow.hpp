#pragma once
// dataflow(f, args...): run f as a task once every future among args is ready. Futures are
// passed to f as (ready) futures, other arguments as values — like HPX; wrap f with
// grain::unwrapping to receive the values instead.
#include <array>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "grain/async.hpp"
#include "grain/clock.hpp"
#include "grain/detail/critical_tracking.hpp"
#include "grain/when_all.hpp"

namespace grain {

namespace detail {

template <class T>
void collect_states(T& a, std::vector<state_base*>& out) {
  if constexpr (is_future_v<T>) {
    out.push_back(state_ptr(a));
  } else if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
    if constexpr (is_future_v<typename T::value_type>) {
      for (auto& f : a) out.push_back(state_ptr(f));
    }
  }
}

template <class T>
constexpr bool is_future_range_v = [] {
  if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>)
    return is_future_v<typename T::value_type>;
  else
    return false;
}();

template <class T>
decltype(auto) unwrap_one(T&& a) {
  using D = std::decay_t<T>;
  if constexpr (is_future_v<D>) {
    return a.get();
  } else if constexpr (requires { typename D::value_type; } && !std::is_same_v<D, std::string>) {
    if constexpr (is_future_v<typename D::value_type>) {
      using V = std::decay_t<decltype(std::declval<typename D::value_type&>().get())>;
      if constexpr (std::is_void_v<V>) {
        for (auto& f : a) f.get();
        return;
      } else {
        std::vector<V> values;
        values.reserve(a.size());
        for (auto& f : a) values.push_back(f.get());
        return values;
      }
    } else {
      return std::forward<T>(a);
    }
  } else {
    return std::forward<T>(a);
  }
}

// A dataflow task under --grain:critical=auto: times the call and records it with its inputs
// (detail/critical_tracking.hpp). Only built when the tracking is on.
template <class R, class Call, std::size_t N>
struct tracked_call {
  Call call;
  std::array<state_base*, N> in;
  const state_base* self = nullptr;
  const char* kind = nullptr;
  R operator()() {
    const std::uint64_t t0 = now_ns();
    if constexpr (std::is_void_v<R>) {
      call();
      critical_record(self, in.data(), N, kind, now_ns() - t0);
    } else {
      R r = call();
      critical_record(self, in.data(), N, kind, now_ns() - t0);
      return r;
    }
  }
};

template <class F>
struct unwrapped {
  F f;
  template <class... A>
  decltype(auto) operator()(A&&... a) {
    return std::invoke(f, unwrap_one(std::forward<A>(a))...);
  }
};

}  // namespace detail

// unwrapping(f)(args...) calls f with every future argument replaced by its value (and every
// vector of futures by a vector of values).
template <class F>
detail::unwrapped<std::decay_t<F>> unwrapping(F&& f) {
  return {std::forward<F>(f)};
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
auto dataflow(launch policy, const executor& ex, F&& f, A&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>> {
  using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<A>...>;
  const char* name = detail::task_name<std::decay_t<F>>::of(f);
  auto call = detail::make_call(std::forward<F>(f), std::forward<A>(args)...);
  using Call = decltype(call);
  auto spawn_when_ready = [](auto* op) {
    return [op] {
      if (detail::runtime_running())
        detail::spawn(op);
      else
        detail::run_inline(op);
    };
  };
  using op_t = detail::async_op<R, Call>;
  if constexpr (!(detail::is_future_range_v<std::decay_t<A>> || ...)) {
    // Only single futures among the arguments: their number is known here, so the join is one
    // pooled block (dataflow on a few futures is the stencil's per-partition hot path).
    constexpr std::size_t n = (std::size_t{0} + ... + (is_future_v<std::decay_t<A>> ? 1 : 0));
    if constexpr (n == 0) {
      return detail::launch_task<R>(policy, ex, name, std::move(call));
    } else {
      std::array<detail::state_base*, n> inputs;
      std::size_t k = 0;
      auto add = [&](auto& a) {
        if constexpr (is_future_v<std::decay_t<decltype(a)>>) inputs[k++] = detail::state_ptr(a);
      };
      std::apply([&](auto&... a) { (add(a), ...); }, call.args);
      if (detail::critical_tracking_on()) {
        using tracked_t = detail::tracked_call<R, Call, n>;
        using top_t = detail::async_op<R, tracked_t>;
        top_t* op =
            top_t::create(tracked_t{std::move(call), inputs, nullptr, name}, ex, name, false);
        op->fn.self = static_cast<const detail::state_base*>(op);
        op->producer = nullptr;
        detail::join_counter::run(inputs, spawn_when_ready(op));
        (void)policy;
        return detail::future_access::adopt<R>(op);
      }
      // The task object is created now and spawned when the last input is ready.
      op_t* op = op_t::create(std::move(call), ex, name, false);
      op->producer = nullptr;
      detail::join_counter::run(inputs, spawn_when_ready(op));
      (void)policy;
      return detail::future_access::adopt<R>(op);
    }
  } else {
    std::vector<detail::state_base*> inputs;
    std::apply([&](auto&... a) { (detail::collect_states(a, inputs), ...); }, call.args);
    if (inputs.empty()) return detail::launch_task<R>(policy, ex, name, std::move(call));
    op_t* op = op_t::create(std::move(call), ex, name, false);
    op->producer = nullptr;
    detail::join_counter::run(std::move(inputs), spawn_when_ready(op));
    (void)policy;
    return detail::future_access::adopt<R>(op);
  }
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
auto dataflow(F&& f, A&&... args) {
  return dataflow(launch::async, executor{}, std::forward<F>(f), std::forward<A>(args)...);
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
auto dataflow(launch policy, F&& f, A&&... args) {
  return dataflow(policy, executor{}, std::forward<F>(f), std::forward<A>(args)...);
}

template <class F, class... A>
requires std::is_invocable_v<std::decay_t<F>, std::decay_t<A>...>
auto dataflow(const executor& ex, F&& f, A&&... args) {
  return dataflow(launch::async, ex, std::forward<F>(f), std::forward<A>(args)...);
}

}  // namespace grain
