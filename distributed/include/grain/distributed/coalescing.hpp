#pragma once
// Parcel coalescing per action (docs/coalescing.md): parcels of a coalesced action bound for
// one locality leave together, up to coalescing.<action>.parcels per message or after
// coalescing.<action>.interval µs, whichever comes first. Enable it with
// --grain:coalescing=ACTION[,ACTION] or, from the program, with enable_coalescing: it applies
// to the parcels this locality sends (receivers need nothing).
#include <string_view>

#include "grain/distributed/action.hpp"

namespace grain {

namespace detail {
bool enable_coalescing(const action_info& a);
}

// Coalesce the parcels of action<F> that this locality sends from now on. False when the
// program is one locality (nothing to coalesce). Throws std::invalid_argument when another
// coalesced action has the same name after its last "::" (their knob names would clash).
template <auto F, action_mode M = action_mode::task>
bool enable_coalescing(action<F, M> = {}) {
  return detail::enable_coalescing(action<F, M>::info());
}

}  // namespace grain
