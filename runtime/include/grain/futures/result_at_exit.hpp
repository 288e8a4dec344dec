#pragma once
// A result stored now and published when the caller finishes (grain/detail/at_thread_exit.hpp):
// promise::set_value_at_thread_exit, set_exception_at_thread_exit and
// packaged_task::make_ready_at_thread_exit. The action holds a reference to the state, so the
// promise or task may go before it runs.
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "grain/detail/at_thread_exit.hpp"
#include "grain/detail/shared_state.hpp"

namespace grain::detail {

// The value kept until then: R itself, a pointer for R&, nothing for void.
template <class R>
struct kept_value {
  std::optional<R> v;
  template <class... A>
  void set(A&&... a) {
    v.emplace(std::forward<A>(a)...);
  }
  void publish(shared_state<R>& s) { s.set_value(std::move(*v)); }
};
template <class R>
struct kept_value<R&> {
  R* p = nullptr;
  void set(R& r) noexcept { p = &r; }
  void publish(shared_state<R&>& s) { s.set_value(*p); }
};
template <>
struct kept_value<void> {
  void set() noexcept {}
  void publish(shared_state<void>& s) { s.set_value(); }
};

template <class R>
class result_at_exit final : public exit_action {
 public:
  result_at_exit() noexcept { run_fn = &publish; }
  result_at_exit(const result_at_exit&) = delete;
  result_at_exit& operator=(const result_at_exit&) = delete;

  template <class... A>
  void set_value(A&&... a) {
    value_.set(std::forward<A>(a)...);
  }
  void set_exception(std::exception_ptr e) noexcept { error_ = std::move(e); }
  // Runs f() and keeps what it returns or throws.
  template <class F>
  void capture(F&& f) noexcept {
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        set_value();
      } else {
        set_value(f());
      }
    } catch (...) {
      set_exception(std::current_exception());
    }
  }
  // Takes over one reference to `s` and registers the action: the runtime owns *this now.
  void register_for(shared_state<R>* s) noexcept {
    state_ = s;
    at_thread_exit(this);
  }

 private:
  static void publish(exit_action* a) noexcept {
    std::unique_ptr<result_at_exit> self(static_cast<result_at_exit*>(a));
    shared_state<R>& s = *self->state_;
    try {
      if (self->error_)
        s.set_exception(std::move(self->error_));
      else
        self->value_.publish(s);
    } catch (...) {
      s.set_exception(std::current_exception());  // R's move constructor threw
    }
    s.release();
  }

  shared_state<R>* state_ = nullptr;
  std::exception_ptr error_;
  kept_value<R> value_;
};

}  // namespace grain::detail
