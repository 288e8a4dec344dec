#pragma once
// grain::packaged_task: a callable whose result (or exception) goes into a future; shaped like
// std::packaged_task. Calling it runs the callable on the caller's stack.
#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "grain/futures/future.hpp"
#include "grain/futures/future_base.hpp"
#include "grain/futures/promise.hpp"

namespace grain {

template <class Signature>
class packaged_task;

template <class R, class... Args>
class packaged_task<R(Args...)> {
  struct callable {
    virtual ~callable() = default;
    virtual R call(Args&&... a) = 0;
  };
  template <class F>
  struct holder final : callable {
    F f;
    explicit holder(F&& x) : f(std::move(x)) {}
    R call(Args&&... a) override { return std::invoke(f, std::forward<Args>(a)...); }
  };

 public:
  packaged_task() noexcept = default;
  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, packaged_task> &&
           std::is_invocable_r_v<R, std::decay_t<F>&, Args...>) explicit packaged_task(F&& f)
      : fn_(std::make_unique<holder<std::decay_t<F>>>(std::decay_t<F>(std::forward<F>(f)))) {}
  packaged_task(packaged_task&&) noexcept = default;
  packaged_task& operator=(packaged_task&&) noexcept = default;
  packaged_task(const packaged_task&) = delete;
  packaged_task& operator=(const packaged_task&) = delete;

  bool valid() const noexcept { return fn_ != nullptr; }
  void swap(packaged_task& o) noexcept {
    std::swap(fn_, o.fn_);
    std::swap(promise_, o.promise_);
  }
  future<R> get_future() {
    if (!fn_) detail::throw_future_error(future_errc::no_state);
    return promise_.get_future();
  }
  void operator()(Args... a) {
    if (!fn_) detail::throw_future_error(future_errc::no_state);
    try {
      if constexpr (std::is_void_v<R>) {
        fn_->call(std::forward<Args>(a)...);
        promise_.set_value();
      } else {
        promise_.set_value(fn_->call(std::forward<Args>(a)...));
      }
    } catch (const future_error&) {
      throw;  // already satisfied
    } catch (...) {
      promise_.set_exception(std::current_exception());
    }
  }
  void reset() {
    if (!fn_) detail::throw_future_error(future_errc::no_state);
    promise_ = grain::promise<R>();
  }

 private:
  std::unique_ptr<callable> fn_;
  grain::promise<R> promise_;
};

}  // namespace grain
