#pragma once
// grain::future: the result of a task (or a promise), shaped like std::future. get() inside a
// task suspends the user thread, never the worker; on a plain OS thread it blocks the thread.
// A future made by launch::adaptive may hold a small result itself, without a shared state.
#include <chrono>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/futures/continuation.hpp"
#include "grain/futures/future_base.hpp"
#include "grain/launch.hpp"

namespace grain {

template <class R>
class future : public detail::future_base<R> {
  using base = detail::future_base<R>;
  using base::state_;

 public:
  using value_type = R;

  future() noexcept = default;
  future(future&& o) noexcept : base(std::exchange(o.state_, nullptr)) { take_local(o); }
  future& operator=(future&& o) noexcept {
    if (this != &o) {
      reset();
      state_ = std::exchange(o.state_, nullptr);
      take_local(o);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { reset(); }

  // The observers and waits of future_base, which would read a local result's tag as a state.
  bool valid() const noexcept { return state_ != nullptr; }
  bool is_ready() const noexcept { return is_local() || base::is_ready(); }
  bool has_value() const noexcept { return is_local() || base::has_value(); }
  bool has_exception() const noexcept { return !is_local() && base::has_exception(); }
  void wait() const {
    if (!is_local()) base::wait();
  }
  template <class Rep, class Period>
  future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
    return is_local() ? future_status::ready : base::wait_for(d);
  }
  template <class Clock, class Duration>
  future_status wait_until(const std::chrono::time_point<Clock, Duration>& tp) const {
    return is_local() ? future_status::ready : base::wait_until(tp);
  }

  R get() {
    if constexpr (detail::local_result_v<R>) {
      if (is_local()) {
        state_ = nullptr;
        if constexpr (!std::is_void_v<R>)
          return local_ref();
        else
          return;
      }
    }
    if (!state_) detail::throw_future_error(future_errc::no_state);
    detail::shared_state<R>* s = std::exchange(state_, nullptr);
    struct releaser {
      detail::shared_state<R>* s;
      ~releaser() { s->release(); }
    } guard{s};
    if (!s->is_ready()) s->wait(true);
    if constexpr (std::is_void_v<R>) {
      s->value();
    } else if constexpr (std::is_reference_v<R>) {
      return s->value();
    } else {
      return std::move(s->value());
    }
  }

  // noexcept as std's: a future holding a local result (launch::adaptive) gets a state made
  // for it here, and running out of memory for that one small block ends the program.
  shared_future<R> share() noexcept;

  // f(future<R>) runs as a new task once this future is ready; this future becomes invalid.
  template <class F>
  auto then(F&& f) -> future<std::invoke_result_t<std::decay_t<F>, future<R>>> {
    return then(executor{}, std::forward<F>(f));
  }
  template <class F>
  auto then(const executor& ex, F&& f) -> future<std::invoke_result_t<std::decay_t<F>, future<R>>> {
    using R2 = std::invoke_result_t<std::decay_t<F>, future<R>>;
    return detail::then_impl<R2>(std::move(*this), std::forward<F>(f), ex);
  }

 private:
  friend struct detail::future_access;
  explicit future(detail::shared_state<R>* s) noexcept : base(s) {}

  static detail::shared_state<R>* local_tag() noexcept {
    return reinterpret_cast<detail::shared_state<R>*>(&detail::local_result_tag<R>);
  }
  bool is_local() const noexcept {
    if constexpr (detail::local_result_v<R>)
      return state_ == local_tag();
    else
      return false;
  }
  auto& local_ref() noexcept { return *std::launder(reinterpret_cast<R*>(local_.bytes)); }
  template <class... V>
  void set_local(V&&... v) noexcept {
    static_assert(detail::local_result_v<R>);
    if constexpr (!std::is_void_v<R>)
      ::new (static_cast<void*>(local_.bytes)) R(std::forward<V>(v)...);
    state_ = local_tag();
  }
  // Copies the value only when there is one: copying the bytes on every move (the common
  // moves carry a state pointer) made adaptive UTS 30 % slower (0.046 -> 0.06-0.08 s).
  void take_local(future& o) noexcept {
    if constexpr (detail::local_result_v<R>) {
      if (is_local()) {
        if constexpr (!std::is_void_v<R>) local_ = o.local_;
      }
    }
  }
  void reset() noexcept {
    if (is_local())
      state_ = nullptr;
    else
      base::reset();
  }
  // The local result becomes a ready shared state (for what needs one: a join, a continuation,
  // a shared_future).
  void materialize() {
    if constexpr (detail::local_result_v<R>) {
      if (!is_local()) return;
      auto* s = detail::plain_state<R>::create();
      s->claimed.store(true, std::memory_order_relaxed);
      if constexpr (std::is_void_v<R>)
        s->set_value();
      else
        s->set_value(local_ref());
      state_ = s;
    }
  }

  [[no_unique_address]] std::conditional_t<detail::local_result_v<R>, detail::local_value<R>,
                                           detail::local_value<void>>
      local_{};
};

}  // namespace grain

// future::share() needs shared_future: a program including this header alone can call it.
#include "grain/futures/shared_future.hpp"
