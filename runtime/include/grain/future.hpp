#pragma once
// future, shared_future, promise, packaged_task, make_ready_future: shaped like the standard
// ones, so code written for std::future compiles with grain:: instead. Waiting inside a task
// suspends the user thread, never the worker; waiting on a plain OS thread blocks it.
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/detail/waiter.hpp"
#include "grain/launch.hpp"

namespace grain {

using future_error = std::future_error;
using future_errc = std::future_errc;
using future_status = std::future_status;

template <class R>
class future;
template <class R>
class shared_future;

template <class T>
struct is_future : std::false_type {};
template <class T>
struct is_future<future<T>> : std::true_type {};
template <class T>
struct is_future<shared_future<T>> : std::true_type {};
template <class T>
inline constexpr bool is_future_v = is_future<std::decay_t<T>>::value;

namespace detail {

// A future whose value was computed inline, before the future existed (launch::adaptive), can
// hold it in place of a shared state (local_result_v: small, trivially copyable values and
// void): no allocation, no reference count, no synchronisation. Everything that needs a state
// (when_all, dataflow, then, share) gets one made from the value on first use.
template <class R>
inline constexpr bool local_result_v = [] {
  if constexpr (std::is_void_v<R>)
    return true;
  else if constexpr (std::is_reference_v<R>)
    return false;
  else
    return std::is_trivially_copyable_v<R> && sizeof(R) <= 2 * sizeof(void*) &&
           alignof(R) <= alignof(std::max_align_t);
}();

template <class R>
struct local_value {
  alignas(R) unsigned char bytes[sizeof(R)];
};
template <>
struct local_value<void> {};

// The state pointer of a future that holds a local result: never dereferenced. It is storage
// of a state's size all the same: where a local future is the only non-null value GCC sees
// (call_nested's error path), its flow analysis cannot rule out the release() behind
// !is_local(), and at -O3 it warned (-Wstringop-overflow) of an atomic access past a 1-byte
// tag in every user's build.
template <class R>
struct local_result_tag_storage {
  alignas(shared_state<R>) unsigned char bytes[sizeof(shared_state<R>)];
};
template <class R>
inline local_result_tag_storage<R> local_result_tag;

struct future_access {
  template <class F>
  static auto* state(const F& f) noexcept {
    return f.state_;
  }
  // A future's state, made from its local result if it holds one. (A const future too: the
  // state stands for the same value, so this does not change what the future holds.)
  template <class R>
  static shared_state<R>* state(const future<R>& f) {
    auto& m = const_cast<future<R>&>(f);
    m.materialize();
    return m.state_;
  }
  template <class R>
  static future<R> adopt(shared_state<R>* s) noexcept {
    return future<R>(s);
  }
  // A ready future holding `v` without a shared state (local_result_v<R> only).
  template <class R, class... V>
  static future<R> local(V&&... v) noexcept {
    future<R> f;
    f.set_local(std::forward<V>(v)...);
    return f;
  }
};

[[noreturn]] inline void throw_future_error(future_errc e) {
  throw future_error(e);
}

template <class Rep, class Period>
std::uint64_t deadline_after(const std::chrono::duration<Rep, Period>& d) {
  return deadline_from(std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(d));
}

inline future_status wait_status(state_base* s, std::uint64_t deadline) {
  if (!s) throw_future_error(future_errc::no_state);
  if (s->deferred_fn && !s->claimed.load(std::memory_order_acquire) && !s->is_ready())
    return future_status::deferred;
  return s->wait_until(deadline) ? future_status::ready : future_status::timeout;
}

// A continuation (then): a task that runs f(argument future) when the argument is ready.
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

// What future and shared_future have in common: the state pointer, the observers, waiting.
template <class R>
class future_base {
 public:
  bool valid() const noexcept { return state_ != nullptr; }
  bool is_ready() const noexcept { return state_ && state_->is_ready(); }
  bool has_value() const noexcept { return is_ready() && !state_->error; }
  bool has_exception() const noexcept {
    if (!is_ready() || !state_->error) return false;
    state_->error_read.store(true, std::memory_order_relaxed);
    return true;
  }

  void wait() const {
    if (!state_) throw_future_error(future_errc::no_state);
    state_->wait();
  }
  template <class Rep, class Period>
  future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
    return wait_status(state_, deadline_after(d));
  }
  template <class Clock, class Duration>
  future_status wait_until(const std::chrono::time_point<Clock, Duration>& tp) const {
    return wait_status(state_, to_deadline(tp));
  }

 protected:
  future_base() noexcept = default;
  explicit future_base(shared_state<R>* s) noexcept : state_(s) {}
  ~future_base() { reset(); }
  void reset() noexcept {
    if (state_) std::exchange(state_, nullptr)->release();
  }
  shared_state<R>* state_ = nullptr;
};

}  // namespace detail

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

  shared_future<R> share();

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
shared_future<R> future<R>::share() {
  return shared_future<R>(std::move(*this));
}

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

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
