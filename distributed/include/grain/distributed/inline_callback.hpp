#pragma once
// detail::inline_callback<void(A...)>: a move-only callable with room for a small target
// (a promise and a pointer or two) inline. std::function needs a copyable target, so a
// promise has to sit behind a shared_ptr there: an allocation and atomic counts per call,
// plus the function's own allocation once the capture outgrows its 16 bytes. What a remote
// call's answer (remote_async.hpp) and a collective's result (collectives.hpp) go to.
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace grain::detail {

template <class Signature>
class inline_callback;

template <class... A>
class inline_callback<void(A...)> {
 public:
  static constexpr std::size_t capacity = 32;

  inline_callback() noexcept = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, inline_callback>>>
  inline_callback(F&& f) {  // NOLINT(google-explicit-constructor): like std::function
    using T = std::decay_t<F>;
    static_assert(sizeof(T) <= capacity && alignof(T) <= alignof(std::max_align_t) &&
                      std::is_nothrow_move_constructible_v<T>,
                  "inline_callback holds small callables inline only");
    ::new (static_cast<void*>(buf_)) T(std::forward<F>(f));
    call_ = [](void* self, A... a) { (*static_cast<T*>(self))(std::forward<A>(a)...); };
    move_or_destroy_ = [](void* self, void* to) noexcept {
      if (to) ::new (to) T(std::move(*static_cast<T*>(self)));
      static_cast<T*>(self)->~T();
    };
  }
  inline_callback(inline_callback&& o) noexcept { take(o); }
  inline_callback& operator=(inline_callback&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  inline_callback(const inline_callback&) = delete;
  inline_callback& operator=(const inline_callback&) = delete;
  ~inline_callback() { reset(); }

  explicit operator bool() const noexcept { return call_ != nullptr; }
  void operator()(A... a) { call_(buf_, std::forward<A>(a)...); }

 private:
  void take(inline_callback& o) noexcept {
    if (!o.call_) return;
    o.move_or_destroy_(o.buf_, buf_);
    call_ = std::exchange(o.call_, nullptr);
    move_or_destroy_ = std::exchange(o.move_or_destroy_, nullptr);
  }
  void reset() noexcept {
    if (!call_) return;
    move_or_destroy_(buf_, nullptr);
    call_ = nullptr;
    move_or_destroy_ = nullptr;
  }
  alignas(std::max_align_t) unsigned char buf_[capacity];
  void (*call_)(void*, A...) = nullptr;
  void (*move_or_destroy_)(void*, void*) noexcept = nullptr;
};

}  // namespace grain::detail
