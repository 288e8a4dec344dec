#pragma once
// The work of one leapfrog step, as kernels over ranges of elements or nodes. Every variant
// (serial, OpenMP, grain dataflow) calls these same functions; a kernel writes only the
// entries of its own range, and reads what the step's order of kernels has finished:
//
//   element_forces      elements  stress and hourglass forces at the element's 8 corners
//   gather_node_forces  nodes     each node sums the corners around it, in element order
//   advance_nodes       nodes     acceleration, symmetry planes, velocity, position (dt)
//   element_kinematics  elements  new volume, strain rate, gradients for the q (dt)
//   element_material    elements  monotonic q (reads face neighbours' gradients), EOS,
//                                 new volume; returns the range's time-step bounds
//
// Between them the time step: advance_time() from the bounds of the previous step, reduced
// over the whole mesh.
#include <stdexcept>

#include "domain.hpp"

namespace lulesh {

// The reference exits with -1 (VolumeError) or -2 (QStopError); here a kernel throws.
class physics_error : public std::runtime_error {
 public:
  physics_error(const char* what, int code) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// The smallest Courant and hydro time steps of a set of elements (1e20 where none bounds).
struct dt_bounds {
  real courant = 1.0e+20;
  real hydro = 1.0e+20;
};
inline dt_bounds combine(dt_bounds a, dt_bounds b) {
  return {a.courant < b.courant ? a.courant : b.courant, a.hydro < b.hydro ? a.hydro : b.hydro};
}

void element_forces(domain& d, index_t begin, index_t end);
void gather_node_forces(domain& d, index_t begin, index_t end);
void advance_nodes(domain& d, index_t begin, index_t end, real dt);
void element_kinematics(domain& d, index_t begin, index_t end, real dt);
dt_bounds element_material(domain& d, index_t begin, index_t end);

// The new time step and time from the mesh-wide bounds of the step before (the first step
// keeps the initial time step), clamped so that it grows slowly and ends on the stop time.
void advance_time(domain& d, dt_bounds mesh);

}  // namespace lulesh
