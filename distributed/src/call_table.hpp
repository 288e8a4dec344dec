#pragma once
// The calls this locality made that wait for their answer, by continuation (parcelport.hpp).
// A call takes a slot from a free list and gives it back with its answer, so that a call costs
// no allocation and no hashing; the continuation names the slot and the slot's generation, so
// an answer to a call already answered, failed or never made finds nothing. Not thread-safe:
// the parcel port holds its calls mutex around every use.
#include <cstdint>
#include <vector>

#include "grain/distributed/remote_async.hpp"

namespace grain::distributed {

struct pending_call {
  detail::response_handler on_response;
  std::uint64_t sent_ns = 0;  // 0: not timed
  std::uint32_t dest = 0;
  const detail::action_info* action = nullptr;
};

class call_table {
 public:
  // Keeps `c` until its answer; returns its continuation (never 0).
  std::uint64_t add(pending_call&& c);
  // The call waiting under `continuation`, taken out into `out`; false when none is.
  bool take(std::uint64_t continuation, pending_call& out);
  // A compact parcel's 16-bit reference to the call (compact_parcel.hpp): its slot, when the
  // slot is one of the first 1024, and the low 6 bits of the slot's generation. False when
  // the slot has none (the call then travels in the full format).
  static bool short_ref(std::uint64_t continuation, std::uint32_t& out) noexcept;
  // The call waiting under a short reference, taken out into `out`; false when none is. Six
  // bits of generation tell an answer from a call 64 uses of its slot ago: MPI delivers each
  // answer once, so only a broken peer sends a stale one.
  bool take_short(std::uint32_t ref, pending_call& out);
  // Every waiting call to rank `dest`, taken out.
  std::vector<pending_call> take_all_to(std::uint32_t dest);
  std::size_t waiting() const noexcept { return slots_.size() - free_short_.size() - free_.size(); }

 private:
  struct slot {
    pending_call call;
    std::uint32_t generation = 0;  // odd while it holds a call; below 2^31
  };
  // Moves the call in a held slot out and frees the slot.
  void take_at(std::uint32_t index, pending_call& out);
  std::vector<slot> slots_;
  // Free slots with a short reference first: after a burst of calls, later ones are compact
  // again.
  std::vector<std::uint32_t> free_short_;
  std::vector<std::uint32_t> free_;
};

}  // namespace grain::distributed
