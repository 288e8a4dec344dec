#pragma once
// The shared state of a promise or packaged_task made with an allocator (std::allocator_arg):
// allocated, and given back, through a copy of the user's allocator (rebound to the state),
// which the state keeps. The other states come from grain's pools (plain_state).
#include <memory>
#include <new>

#include "grain/detail/shared_state.hpp"

namespace grain::detail {

template <class R, class Alloc>
struct allocated_state final : shared_state<R> {
  using alloc_type = typename std::allocator_traits<Alloc>::template rebind_alloc<allocated_state>;
  using traits = std::allocator_traits<alloc_type>;

  explicit allocated_state(const alloc_type& a) : alloc(a) {}

  static allocated_state* create(const Alloc& a) {
    alloc_type al(a);
    auto p = traits::allocate(al, 1);
    allocated_state* s = std::to_address(p);
    try {
      ::new (static_cast<void*>(s)) allocated_state(al);
    } catch (...) {
      traits::deallocate(al, p, 1);
      throw;
    }
    s->destroy_fn = [](state_base* b) noexcept {
      auto* self = static_cast<allocated_state*>(static_cast<shared_state<R>*>(b));
      alloc_type al(std::move(self->alloc));
      auto p = std::pointer_traits<typename traits::pointer>::pointer_to(*self);
      self->~allocated_state();
      traits::deallocate(al, p, 1);
    };
    return s;
  }

  alloc_type alloc;
};

}  // namespace grain::detail
