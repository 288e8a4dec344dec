#pragma once
// grain::packaged_task: a callable whose result (or exception) goes into a future; shaped like
// std::packaged_task. Calling it runs the callable on the caller's stack. Whatever the
// callable throws is stored in the future, a future_error too (as std does); only calling a
// task twice (promise_already_satisfied) or an empty one (no_state) throws to the caller.
#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/futures/future.hpp"
#include "grain/futures/future_base.hpp"
#include "grain/futures/promise.hpp"
#include "grain/futures/result_at_exit.hpp"

namespace grain {

template <class Signature>
class packaged_task;

template <class R, class... Args>
class packaged_task<R(Args...)> {
  // The stored callable, type-erased; it gives its memory back to the allocator it came from.
  struct callable {
    virtual R call(Args&&... a) = 0;
    virtual void destroy() noexcept = 0;

   protected:
    ~callable() = default;
  };
  template <class F, class Alloc>
  struct holder final : callable {
    using alloc_type = typename std::allocator_traits<Alloc>::template rebind_alloc<holder>;
    using traits = std::allocator_traits<alloc_type>;
    F f;
    alloc_type alloc;
    holder(F&& x, const alloc_type& a) : f(std::move(x)), alloc(a) {}
    R call(Args&&... a) override { return std::invoke(f, std::forward<Args>(a)...); }
    void destroy() noexcept override {
      alloc_type al(std::move(alloc));
      auto p = std::pointer_traits<typename traits::pointer>::pointer_to(*this);
      this->~holder();
      traits::deallocate(al, p, 1);
    }
    static holder* create(F&& x, const Alloc& a) {
      alloc_type al(a);
      auto p = traits::allocate(al, 1);
      try {
        return ::new (static_cast<void*>(std::to_address(p))) holder(std::move(x), al);
      } catch (...) {
        traits::deallocate(al, p, 1);
        throw;
      }
    }
  };
  struct destroyer {
    void operator()(callable* c) const noexcept { c->destroy(); }
  };
  template <class F>
  static constexpr bool accepts = !std::is_same_v<std::remove_cvref_t<F>, packaged_task> &&
                                  std::is_invocable_r_v<R, std::decay_t<F>&, Args...>;

 public:
  packaged_task() noexcept = default;
  template <class F>
  requires accepts<F>
  explicit packaged_task(F&& f)
      : packaged_task(std::allocator_arg, std::allocator<char>(), std::forward<F>(f)) {}
  // The callable and the shared state are allocated with (copies of) `alloc`.
  template <class F, class Alloc>
  requires accepts<F> packaged_task(std::allocator_arg_t, const Alloc& alloc, F&& f)
      : fn_(holder<std::decay_t<F>, Alloc>::create(std::decay_t<F>(std::forward<F>(f)), alloc)),
        promise_(std::allocator_arg, alloc) {}
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
    detail::shared_state<R>* s = start();
    auto call = [&]() -> R { return fn_->call(std::forward<Args>(a)...); };
    detail::invoke_into<R>(*s, call);
  }
  // Runs the callable now; its result (or exception) is published when the caller finishes:
  // the calling task, or the calling OS thread outside tasks (grain/detail/at_thread_exit.hpp).
  void make_ready_at_thread_exit(Args... a) {
    auto act = std::make_unique<detail::result_at_exit<R>>();
    detail::shared_state<R>* s = start();
    act->capture([&]() -> R { return fn_->call(std::forward<Args>(a)...); });
    s->add_ref();  // the action's
    act.release()->register_for(s);
  }
  // A new shared state for the same callable (the old future keeps its result, or gets
  // broken_promise if the task was never called).
  void reset() {
    if (!fn_) detail::throw_future_error(future_errc::no_state);
    promise_ = grain::promise<R>();
  }

 private:
  // The state this call satisfies; throws before the callable runs, as std's does.
  detail::shared_state<R>* start() {
    if (!fn_) detail::throw_future_error(future_errc::no_state);
    return promise_.claim();
  }

  std::unique_ptr<callable, destroyer> fn_;
  grain::promise<R> promise_;
};

template <class R, class... Args>
void swap(packaged_task<R(Args...)>& a, packaged_task<R(Args...)>& b) noexcept {
  a.swap(b);
}

}  // namespace grain

// A packaged_task takes an allocator (std::allocator_arg), as std::packaged_task did up to
// C++17: std::uses_allocator says so.
template <class Signature, class Alloc>
struct std::uses_allocator<grain::packaged_task<Signature>, Alloc> : std::true_type {};
