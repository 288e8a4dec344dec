#pragma once
// What future and shared_future share: the standard error and status types, the is_future
// trait, a future's access to its state (future_access), the local results of launch::adaptive,
// and future_base (the state pointer, the observers, waiting).
#include <chrono>
#include <cstddef>
#include <exception>
#include <future>
#include <new>
#include <type_traits>
#include <utility>

#include "grain/detail/shared_state.hpp"
#include "grain/detail/waiter.hpp"

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
}  // namespace grain
