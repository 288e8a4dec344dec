#pragma once
// One LULESH domain: a cube of s^3 hexahedral elements (and (s+1)^3 nodes) of the Sedov blast
// problem, at position (col, row, plane) of a side^3 cube of domains. Structure of arrays, one
// vector per field, indexed by element or by node; elements are numbered x fastest (col), then
// y (row), then z (plane), nodes likewise. The method and its constants are those of LULESH 2.0
// (Karlin, Keasler and Neely, LLNL-TR-641973, 2013): a staggered-grid Lagrangian leapfrog,
// Flanagan-Belytschko hourglass control, a monotonic artificial viscosity and an ideal-gas EOS
// evaluated per region at a region-dependent cost.
#include <cstdint>
#include <vector>

namespace lulesh {

using index_t = std::int32_t;
using real = double;

// Face boundary flags of an element, per face: symmetry plane, free surface or a neighbour
// domain (whose element values sit in the ghost slots after the local elements).
enum face_bc : std::int32_t {
  xi_m_symm = 0x00001,
  xi_m_free = 0x00002,
  xi_m_comm = 0x00004,
  xi_m = 0x00007,
  xi_p_symm = 0x00008,
  xi_p_free = 0x00010,
  xi_p_comm = 0x00020,
  xi_p = 0x00038,
  eta_m_symm = 0x00040,
  eta_m_free = 0x00080,
  eta_m_comm = 0x00100,
  eta_m = 0x001c0,
  eta_p_symm = 0x00200,
  eta_p_free = 0x00400,
  eta_p_comm = 0x00800,
  eta_p = 0x00e00,
  zeta_m_symm = 0x01000,
  zeta_m_free = 0x02000,
  zeta_m_comm = 0x04000,
  zeta_m = 0x07000,
  zeta_p_symm = 0x08000,
  zeta_p_free = 0x10000,
  zeta_p_comm = 0x20000,
  zeta_p = 0x38000,
};

// Node flags: on which symmetry plane (x = 0, y = 0, z = 0) the acceleration is held at zero.
enum node_bc : std::uint8_t { symm_x = 1, symm_y = 2, symm_z = 4 };

struct problem {
  index_t size = 30;     // -s: elements per domain edge
  index_t side = 1;      // domains per edge of the cube of domains
  index_t regions = 11;  // -r
  index_t balance = 1;   // -b
  index_t cost = 1;      // -c
};

// The material and control constants of the problem.
struct constants {
  real e_cut = 1.0e-7, p_cut = 1.0e-7, q_cut = 1.0e-7, v_cut = 1.0e-10, u_cut = 1.0e-7;
  real hgcoef = 3.0;
  real ss4o3 = real(4.0) / real(3.0);
  real qstop = 1.0e+12;
  real monoq_max_slope = 1.0, monoq_limiter_mult = 2.0;
  real qlc_monoq = 0.5, qqc_monoq = real(2.0) / real(3.0), qqc = 2.0;
  real eosvmax = 1.0e+9, eosvmin = 1.0e-9;
  real pmin = 0.0, emin = -1.0e+15;
  real dvovmax = 0.1;
  real refdens = 1.0;
  real stoptime = 1.0e-2;
  real dtmax = 1.0e-2;
  real deltatime_mult_lb = 1.1, deltatime_mult_ub = 1.2;
};

struct domain {
  domain(const problem& p, index_t col, index_t row, index_t plane, int rank);

  problem prob;
  constants k;
  index_t col, row, plane;  // position in the cube of domains
  index_t size;             // elements per edge
  index_t num_elem, num_node;

  // Nodes.
  std::vector<real> x, y, z, xd, yd, zd, fx, fy, fz, nodal_mass;
  std::vector<std::uint8_t> node_symm;  // node_bc flags
  // Elements: connectivity (8 nodes each; face neighbours, ghost slots past num_elem).
  std::vector<index_t> nodelist, lxim, lxip, letam, letap, lzetam, lzetap;
  std::vector<std::int32_t> elem_bc;
  std::vector<real> e, p, q, ql, qq, v, volo, vnew, delv, vdov, arealg, ss, elem_mass;
  // Per element: its region (0-based) and how often its EOS is evaluated (-c, regions).
  std::vector<index_t> region;
  std::vector<std::int32_t> eos_reps;
  // Gradients for the monotonic q: delv_* has room for the ghost elements of neighbours.
  std::vector<real> delx_xi, delx_eta, delx_zeta, delv_xi, delv_eta, delv_zeta;
  // Corner forces of every element (stress and hourglass apart: a node sums each over its
  // corners, in element order, so the sums do not depend on how the work is split).
  std::vector<real> fx_stress, fy_stress, fz_stress, fx_hg, fy_hg, fz_hg;
  // The corners (8 * element + local node) around each node, in element order.
  std::vector<index_t> node_corner_start, node_corners;

  // Time stepping.
  real time = 0, deltatime = 0, dtcourant = 1.0e+20, dthydro = 1.0e+20;
  index_t cycle = 0;

  // The region sizes, for the report of how the EOS cost is spread.
  std::vector<index_t> region_size;

 private:
  void build_mesh();
  void build_corner_lists();
  void build_regions(int rank);
  void build_connectivity();
  void build_boundary_conditions();
  void init_state();
};

// The number of ghost element slots (faces shared with neighbour domains) after the local ones.
index_t ghost_elements(const domain& d);

}  // namespace lulesh
