#pragma once
// Localities: one per MPI rank (mpirun -np N prog), or the one process when started without
// mpirun. Rank 0 runs main's program; the others serve actions until it ends.
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace grain {

class locality {
 public:
  constexpr locality() = default;
  constexpr explicit locality(std::uint32_t rank) : rank_(rank) {}
  constexpr std::uint32_t rank() const noexcept { return rank_; }
  constexpr auto operator<=>(const locality&) const = default;
  std::string to_string() const { return "locality#" + std::to_string(rank_); }

 private:
  std::uint32_t rank_ = 0;
};

locality find_here() noexcept;
std::vector<locality> find_all_localities();
std::uint32_t get_num_localities() noexcept;
// The locality that runs main's program (rank 0).
inline locality find_root_locality() noexcept {
  return locality(0);
}

}  // namespace grain
