#pragma once
// grain::shared_future: a future many may read, shaped like std::shared_future; copies share
// one state. Made from a future (its constructor or future::share()).
#include <chrono>
#include <type_traits>
#include <utility>

#include "grain/futures/continuation.hpp"
#include "grain/futures/future.hpp"
#include "grain/futures/future_base.hpp"
#include "grain/launch.hpp"

namespace grain {

template <class R>
class shared_future : public detail::future_base<R> {
  using base = detail::future_base<R>;
  using base::reset;
  using base::state_;

 public:
  using value_type = R;

  shared_future() noexcept = default;
  // Not noexcept: a future holding a local result needs a state made for it.
  shared_future(future<R>&& f)  // NOLINT(google-explicit-constructor)
      : base(detail::future_access::state(f)) {
    if (state_) {
      state_->add_ref();
      f = future<R>();
    }
  }
  shared_future(const shared_future& o) noexcept : base(o.state_) {
    if (state_) state_->add_ref();
  }
  shared_future(shared_future&& o) noexcept : base(std::exchange(o.state_, nullptr)) {}
  shared_future& operator=(const shared_future& o) noexcept {
    if (o.state_) o.state_->add_ref();
    reset();
    state_ = o.state_;
    return *this;
  }
  shared_future& operator=(shared_future&& o) noexcept {
    if (this != &o) {
      reset();
      state_ = std::exchange(o.state_, nullptr);
    }
    return *this;
  }

  decltype(auto) get() const {
    if (!state_) detail::throw_future_error(future_errc::no_state);
    state_->wait();
    if constexpr (std::is_void_v<R>) {
      state_->value();
    } else if constexpr (std::is_reference_v<R>) {
      return static_cast<R>(state_->value());
    } else {
      return static_cast<const R&>(state_->value());
    }
  }

  template <class F>
  auto then(F&& f) const -> future<std::invoke_result_t<std::decay_t<F>, shared_future<R>>> {
    return then(executor{}, std::forward<F>(f));
  }
  template <class F>
  auto then(const executor& ex, F&& f) const
      -> future<std::invoke_result_t<std::decay_t<F>, shared_future<R>>> {
    using R2 = std::invoke_result_t<std::decay_t<F>, shared_future<R>>;
    return detail::then_impl<R2>(shared_future(*this), std::forward<F>(f), ex);
  }

 private:
  friend struct detail::future_access;
};

template <class R>
shared_future<R> future<R>::share() noexcept {
  return shared_future<R>(std::move(*this));
}

}  // namespace grain
