// The calls waiting for their answer (call_table.hpp).
#include "call_table.hpp"

#include <limits>
#include <stdexcept>

namespace grain::distributed {

namespace {
constexpr std::uint32_t generation_mask = 0x7fff'ffffu;  // 2^31 is even: parity survives
constexpr std::uint32_t short_slots = 1024;
constexpr std::uint32_t short_generation_bits = 6;
constexpr std::uint32_t short_generation_mask = (1u << short_generation_bits) - 1;
}  // namespace

std::uint64_t call_table::add(pending_call&& c) {
  std::uint32_t index = 0;
  if (!free_short_.empty()) {
    index = free_short_.back();
    free_short_.pop_back();
  } else if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    if (slots_.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("grain: more than 2^32 calls waiting for their answers");
    index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
    // take_at() then never allocates.
    if (index < short_slots)
      free_short_.reserve(short_slots);
    else
      free_.reserve(slots_.capacity());
  }
  slot& s = slots_[index];
  s.call = std::move(c);
  // Odd: taken (the first continuation of slot 0 is 1 << 32, never 0). Below 2^31, so that a
  // continuation never has compact::continuation_bit.
  s.generation = (s.generation + 1) & generation_mask;
  return static_cast<std::uint64_t>(s.generation) << 32 | index;
}

bool call_table::take(std::uint64_t continuation, pending_call& out) {
  const auto index = static_cast<std::uint32_t>(continuation);
  const auto generation = static_cast<std::uint32_t>(continuation >> 32);
  if (index >= slots_.size() || slots_[index].generation != generation || (generation & 1) == 0)
    return false;
  take_at(index, out);
  return true;
}

bool call_table::short_ref(std::uint64_t continuation, std::uint32_t& out) noexcept {
  const auto index = static_cast<std::uint32_t>(continuation);
  if (index >= short_slots) return false;
  const auto generation = static_cast<std::uint32_t>(continuation >> 32);
  out = (generation & short_generation_mask) << 10 | index;
  return true;
}

bool call_table::take_short(std::uint32_t ref, pending_call& out) {
  const std::uint32_t index = ref & (short_slots - 1);
  if (ref >> (10 + short_generation_bits) != 0 || index >= slots_.size()) return false;
  const std::uint32_t generation = slots_[index].generation;
  if ((generation & 1) == 0 || (generation & short_generation_mask) != ref >> 10) return false;
  take_at(index, out);
  return true;
}

std::vector<pending_call> call_table::take_all_to(std::uint32_t dest) {
  std::vector<pending_call> out;
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    slot& s = slots_[i];
    if ((s.generation & 1) != 0 && s.call.dest == dest) take_at(i, out.emplace_back());
  }
  return out;
}

void call_table::take_at(std::uint32_t index, pending_call& out) {
  slot& s = slots_[index];
  out = std::move(s.call);  // a moved-from handler holds nothing
  // Even: free; an answer naming the old generation finds nothing.
  s.generation = (s.generation + 1) & generation_mask;
  (index < short_slots ? free_short_ : free_).push_back(index);
}

}  // namespace grain::distributed
