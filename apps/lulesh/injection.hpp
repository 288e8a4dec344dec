#pragma once
// Load injection into the six loops of the step that take the most time (Wickramasinghe et
// al. 2017, section V): LULESH 2.0's stress integration and hourglass control (in
// element_forces), kinematics and q gradients (element_kinematics), monotonic q and EOS
// (element_material). Each
// partition of each of those loops spins its drawn amount of the work quantum before its
// share of the loop, so a variant's partitions carry the same amounts whatever runs them; the
// amounts come from the applications' load-injection library, apps/common (one draw per
// (cycle, rank, loop, partition)).
#include "load_injection.hpp"
#include "options.hpp"

namespace lulesh {

enum class loop : int { stress = 0, hourglass, kinematics, q_gradients, monotonic_q, eos };
inline constexpr int injected_loops = 6;

class injector {
 public:
  injector(const options& o, int rank, int ranks);

  bool enabled() const noexcept { return on_; }
  // The partition count: the `scaled` distribution scales one assignment among all of them.
  void set_partitions(index_t parts) noexcept;
  // Spins the amount of loop `l`, partition `p` in `cycle`.
  void operator()(loop l, index_t cycle, index_t p) const;
  // Both loops of one kernel at once.
  void operator()(loop a, loop b, index_t cycle, index_t p) const {
    if (!on_) return;
    (*this)(a, cycle, p);
    (*this)(b, cycle, p);
  }

 private:
  bool on_;
  load_injection::load_spec spec_;
  int rank_;
  index_t parts_ = 1;
};

}  // namespace lulesh
