// The calls waiting for their answer (call_table.hpp).
#include "call_table.hpp"

#include <limits>
#include <stdexcept>

namespace grain::distributed {

std::uint64_t call_table::add(pending_call&& c) {
  std::uint32_t index = 0;
  if (free_.empty()) {
    if (slots_.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("grain: more than 2^32 calls waiting for their answers");
    index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
    free_.reserve(slots_.capacity());  // release() then never allocates
  } else {
    index = free_.back();
    free_.pop_back();
  }
  slot& s = slots_[index];
  s.call = std::move(c);
  ++s.generation;  // odd: taken (the first continuation of slot 0 is 1 << 32, never 0)
  return static_cast<std::uint64_t>(s.generation) << 32 | index;
}

bool call_table::take(std::uint64_t continuation, pending_call& out) {
  const auto index = static_cast<std::uint32_t>(continuation);
  const auto generation = static_cast<std::uint32_t>(continuation >> 32);
  if (index >= slots_.size()) return false;
  slot& s = slots_[index];
  if (s.generation != generation || (generation & 1) == 0) return false;
  out = std::move(s.call);
  release(index);
  return true;
}

std::vector<pending_call> call_table::take_all_to(std::uint32_t dest) {
  std::vector<pending_call> out;
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    slot& s = slots_[i];
    if ((s.generation & 1) != 0 && s.call.dest == dest) {
      out.push_back(std::move(s.call));
      release(i);
    }
  }
  return out;
}

// After the call was moved out (a moved-from handler holds nothing).
void call_table::release(std::uint32_t index) {
  ++slots_[index].generation;  // even: free; an answer naming the old generation finds nothing
  free_.push_back(index);
}

}  // namespace grain::distributed
