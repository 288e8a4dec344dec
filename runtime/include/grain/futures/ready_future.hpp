#pragma once
// Futures that are ready from the start: make_ready_future(v), make_ready_future() and
// make_exceptional_future<T>(e).
#include <exception>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/futures/future.hpp"

namespace grain {

template <class T>
future<std::decay_t<T>> make_ready_future(T&& v) {
  using R = std::decay_t<T>;
  auto* s = detail::plain_state<R>::create();
  s->claimed.store(true, std::memory_order_relaxed);
  s->set_value(std::forward<T>(v));
  return detail::future_access::adopt<R>(s);
}

inline future<void> make_ready_future() {
  auto* s = detail::plain_state<void>::create();
  s->claimed.store(true, std::memory_order_relaxed);
  s->set_value();
  return detail::future_access::adopt<void>(s);
}

template <class T>
future<T> make_exceptional_future(std::exception_ptr e) {
  auto* s = detail::plain_state<T>::create();
  s->claimed.store(true, std::memory_order_relaxed);
  s->set_exception(std::move(e));
  return detail::future_access::adopt<T>(s);
}

}  // namespace grain
