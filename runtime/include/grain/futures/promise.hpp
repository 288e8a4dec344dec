#pragma once
// grain::promise: a value or an exception set by hand, read through the future it hands out;
// shaped like std::promise. Destroyed unsatisfied, it leaves broken_promise in its future.
#include <exception>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/futures/future.hpp"
#include "grain/futures/future_base.hpp"

namespace grain {

template <class R>
class promise {
 public:
  promise() : state_(detail::plain_state<R>::create()) {}
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

 private:
  void claim() {
    if (!state_) detail::throw_future_error(future_errc::no_state);
    if (state_->claimed.exchange(true, std::memory_order_acq_rel))
      detail::throw_future_error(future_errc::promise_already_satisfied);
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
  detail::plain_state<R>* state_ = nullptr;
  bool retrieved_ = false;
};

template <class R>
void swap(promise<R>& a, promise<R>& b) noexcept {
  a.swap(b);
}

}  // namespace grain
