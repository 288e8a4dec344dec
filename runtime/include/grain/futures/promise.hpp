#pragma once
// grain::promise: a value or an exception set by hand, read through the future it hands out;
// shaped like std::promise. Destroyed unsatisfied, it leaves broken_promise in its future.
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/futures/allocated_state.hpp"
#include "grain/futures/future.hpp"
#include "grain/futures/future_base.hpp"
#include "grain/futures/result_at_exit.hpp"

namespace grain {

template <class Signature>
class packaged_task;

template <class R>
class promise {
 public:
  promise() : state_(detail::plain_state<R>::create()) {}
  // The shared state is allocated with (a copy of) `alloc`, as std's is.
  template <class Alloc>
  promise(std::allocator_arg_t, const Alloc& alloc)
      : state_(detail::allocated_state<R, Alloc>::create(alloc)) {}
  promise(promise&& o) noexcept
      : state_(std::exchange(o.state_, nullptr)), retrieved_(o.retrieved_) {}
  promise& operator=(promise&& o) noexcept {
    if (this != &o) {
      abandon();
      state_ = std::exchange(o.state_, nullptr);
      retrieved_ = o.retrieved_;
    }
    return *this;
  }
  promise(const promise&) = delete;
  promise& operator=(const promise&) = delete;
  ~promise() { abandon(); }

  void swap(promise& o) noexcept {
    std::swap(state_, o.state_);
    std::swap(retrieved_, o.retrieved_);
  }

  future<R> get_future() {
    if (!state_) detail::throw_future_error(future_errc::no_state);
    if (retrieved_) detail::throw_future_error(future_errc::future_already_retrieved);
    retrieved_ = true;
    state_->add_ref();
    return detail::future_access::adopt<R>(state_);
  }

  template <class... A>
  void set_value(A&&... a) {
    claim();
    state_->set_value(std::forward<A>(a)...);
  }
  void set_exception(std::exception_ptr e) {
    claim();
    state_->set_exception(std::move(e));
  }

  // The value (exception) is stored now and the future becomes ready when the caller
  // finishes: the calling task, or the calling OS thread outside tasks
  // (grain/detail/at_thread_exit.hpp). The promise is satisfied at once: a second set_* throws
  // promise_already_satisfied, and destroying the promise does not break it.
  template <class... A>
  void set_value_at_thread_exit(A&&... a) {
    auto act = std::make_unique<detail::result_at_exit<R>>();
    act->set_value(std::forward<A>(a)...);  // may throw: the promise stays unsatisfied
    defer(std::move(act));
  }
  void set_exception_at_thread_exit(std::exception_ptr e) {
    auto act = std::make_unique<detail::result_at_exit<R>>();
    act->set_exception(std::move(e));
    defer(std::move(act));
  }

 private:
  template <class>
  friend class packaged_task;

  // The state, satisfied by the caller from now on.
  detail::shared_state<R>* claim() {
    if (!state_) detail::throw_future_error(future_errc::no_state);
    if (state_->claimed.exchange(true, std::memory_order_acq_rel))
      detail::throw_future_error(future_errc::promise_already_satisfied);
    return state_;
  }
  void defer(std::unique_ptr<detail::result_at_exit<R>> act) {
    claim();
    state_->add_ref();  // the action's
    act.release()->register_for(state_);
  }
  void abandon() noexcept {
    if (!state_) return;
    if (!state_->claimed.exchange(true, std::memory_order_acq_rel)) {
      state_->set_exception(std::make_exception_ptr(future_error(future_errc::broken_promise)));
      // Nobody can read it: not a lost task exception.
      if (!retrieved_) state_->error_read.store(true, std::memory_order_relaxed);
    }
    std::exchange(state_, nullptr)->release();
  }
  detail::shared_state<R>* state_ = nullptr;
  bool retrieved_ = false;
};

template <class R>
void swap(promise<R>& a, promise<R>& b) noexcept {
  a.swap(b);
}

}  // namespace grain

// A promise takes an allocator (std::allocator_arg): std::uses_allocator says so, as for
// std::promise.
template <class R, class Alloc>
struct std::uses_allocator<grain::promise<R>, Alloc> : std::true_type {};
