#pragma once
// Compact parcels: a parcel alone in its message, with a small payload, travels as its payload
// only, and its kind, action and continuation ride in the MPI tag (docs/distributed.md,
// "Compact parcels"). Open MPI's shared-memory path moves a message of at most ~10 bytes in
// one 32-byte cell, twice as fast as anything larger (bench-mpi-pingpong --bytes=B): with its
// 64-byte headers a parcel of an 8-byte argument could never be that small; as a compact
// parcel it is 8 bytes.
//
// The tag (31 bits; MPI guarantees only 2^15 - 1, so the ranks check MPI_TAG_UB first):
//   bit 30        set: a compact parcel (grain's other tags are below 16)
//   bits 28-29    kind: 0 post, 1 call, 2 result
//   post          bits 0-27: the action's wire index
//   call          bits 16-27: the action's wire index; bits 0-15: the call's short reference
//   result        bits 0-15: the short reference of the call it answers
// A short reference is a slot of the caller's call table and the low bits of the slot's
// generation (call_table.hpp). What a compact parcel leaves out is checked another way: the
// ranks agree on the action table's fingerprint (ids and signatures) before they use wire
// indices, so a wire index means the same action and signature everywhere; the payload's
// size is checked by the action's decoding. Errors always travel in the full format.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "parcel.hpp"

namespace grain::distributed::compact {

inline constexpr int tag_bit = 1 << 30;
// The largest tag a compact parcel uses: MPI_TAG_UB must be at least this.
inline constexpr int max_tag = 0x7fff'ffff;
// Above this, a parcel takes the full format (its headers no longer matter).
inline constexpr std::size_t max_payload = 64;
inline constexpr std::uint32_t post_actions = 1u << 28;
inline constexpr std::uint32_t call_actions = 1u << 12;

// Whether every rank's action table has the same fingerprint (detail::freeze_wire_indices):
// the same program everywhere.
inline bool same_program(std::span<const std::uint64_t> fingerprints) noexcept {
  return !fingerprints.empty() &&
         std::all_of(fingerprints.begin(), fingerprints.end(),
                     [&](std::uint64_t f) { return f == fingerprints.front(); });
}
// Whether the ranks may send compact parcels: the same program, and the network's tags reach
// max_tag.
inline bool usable(std::span<const std::uint64_t> fingerprints, int network_max_tag) noexcept {
  return network_max_tag >= max_tag && same_program(fingerprints);
}

enum class kind : std::uint32_t { post = 0, call = 1, result = 2 };

constexpr bool is_compact(int tag) noexcept {
  return (tag & tag_bit) != 0;
}

constexpr int post_tag(std::uint32_t action_index) noexcept {
  return tag_bit | static_cast<int>(action_index);
}
constexpr int call_tag(std::uint32_t action_index, std::uint32_t short_ref) noexcept {
  return tag_bit | (1 << 28) | static_cast<int>(action_index << 16 | short_ref);
}
constexpr int result_tag(std::uint32_t short_ref) noexcept {
  return tag_bit | (2 << 28) | static_cast<int>(short_ref);
}

struct decoded {
  parcel_kind kind = parcel_kind::post;
  std::uint32_t action_index = 0;  // posts and calls
  std::uint32_t short_ref = 0;     // calls and results
};
// False for kind 3, which no sender writes.
constexpr bool decode(int tag, decoded& out) noexcept {
  const auto bits = static_cast<std::uint32_t>(tag);
  switch ((bits >> 28) & 3u) {
    case 0:
      out = {parcel_kind::post, bits & (post_actions - 1), 0};
      return true;
    case 1:
      out = {parcel_kind::call, (bits >> 16) & (call_actions - 1), bits & 0xffffu};
      return true;
    case 2:
      out = {parcel_kind::result, 0, bits & 0xffffu};
      return true;
    default:
      return false;
  }
}

// A call received as a compact parcel is answered through its short reference: the callee
// keeps it as the parcel's continuation with this bit set (a call table's continuations
// never have it).
inline constexpr std::uint64_t continuation_bit = std::uint64_t{1} << 63;

}  // namespace grain::distributed::compact
